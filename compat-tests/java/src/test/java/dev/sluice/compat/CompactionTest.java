package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Log compaction at scale with the Java producer and consumer.
 *
 * <p>The expected result comes from the producers' acknowledgements alone: for each key, the
 * record acknowledged at the highest offset, at that offset, with that value and timestamp;
 * tombstoned keys gone (delete.retention.ms=0); log start and end offsets unchanged. That is
 * what Apache Kafka's cleaner leaves once every keyed record sits in a closed segment.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CompactionTest {

    private static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    private static final String FILLER_KEY = "~filler";
    private static final int KEYS = 1000;
    private static final int UPDATES = 50_000;
    private static final int BLOCK = 5_000;
    private static final int TOMBSTONES = 100;
    private static final int REVIVED = 10;
    private static final int SEGMENT_BYTES = 64 * 1024;

    private static SluiceBroker broker;
    private static Admin admin;

    /** One acknowledged record. */
    private record Acked(String key, String value, long timestamp) {
    }

    /** One record as read back. */
    private record Read(long offset, String key, String value, long timestamp) {
    }

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("compaction", SluiceBroker.settings("log.cleaner.backoff.ms", "300"));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    /** Producers per codec (client defaults: idempotent, acks=all) recording every acknowledgement. */
    private static final class Writer implements AutoCloseable {
        final String topic;
        final Map<Long, Acked> acked = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<Exception> errors = new ConcurrentLinkedQueue<>();
        final Map<String, KafkaProducer<String, String>> producers = new LinkedHashMap<>();

        Writer(String topic) {
            this.topic = topic;
            for (String codec : CODECS) {
                producers.put(codec, Clients.producer(broker, Map.of(
                        ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                        ProducerConfig.LINGER_MS_CONFIG, "5",
                        // Batches well below segment.bytes, so every segment holds many batches.
                        ProducerConfig.BATCH_SIZE_CONFIG, "16384")));
            }
        }

        /** Sends the records in order through one producer and waits for all of them. */
        void send(String codec, List<String[]> keyValues) {
            KafkaProducer<String, String> p = producers.get(codec);
            for (String[] kv : keyValues) {
                final String k = kv[0];
                final String v = kv[1];
                p.send(new ProducerRecord<>(topic, 0, k, v), (md, err) -> {
                    if (err != null) {
                        errors.add(err);
                    } else {
                        acked.put(md.offset(), new Acked(k, v, md.timestamp()));
                    }
                });
            }
            p.flush();
            assertTrue(errors.isEmpty(), () -> "send failed: " + errors.peek());
        }

        @Override
        public void close() {
            producers.values().forEach(p -> p.close(Duration.ofSeconds(10)));
        }
    }

    private static List<Read> readAll(String topic) {
        TopicPartition tp = new TopicPartition(topic, 0);
        List<Read> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = Clients.consumer(broker)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (c.position(tp) < end) {
                if (System.nanoTime() > deadline) {
                    fail("timed out reading " + topic + " at position " + c.position(tp) + " of " + end);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    out.add(new Read(r.offset(), r.key(), r.value(), r.timestamp()));
                }
            }
        }
        return out;
    }

    /** key -> newest acknowledged record (offset, record), tombstones included. */
    private static Map<String, Map.Entry<Long, Acked>> latestByKey(Map<Long, Acked> acked) {
        Map<String, Map.Entry<Long, Acked>> out = new HashMap<>();
        for (Map.Entry<Long, Acked> e : new TreeMap<>(acked).entrySet()) {
            out.put(e.getValue().key(), e);
        }
        return out;
    }

    /** Non-filler keys as read: key -> read record; null if some key appears more than once. */
    private static Map<String, Read> survivors(List<Read> recs) {
        Map<String, Read> out = new HashMap<>();
        for (Read r : recs) {
            if (!r.key().equals(FILLER_KEY) && out.put(r.key(), r) != null) {
                return null;
            }
        }
        return out;
    }

    private static boolean converged(List<Read> recs, Map<String, Read> want) {
        Map<String, Read> got = survivors(recs);
        return got != null && got.equals(want);
    }

    @Test
    void compactionKeepsNewestRecordPerKeyAtItsOriginalOffset() throws Exception {
        String topic = "compaction-large";
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of(
                "cleanup.policy", "compact",
                "segment.bytes", Integer.toString(SEGMENT_BYTES),
                "min.cleanable.dirty.ratio", "0.01",
                "delete.retention.ms", "0")))).all());
        TopicPartition tp = new TopicPartition(topic, 0);

        Random rng = new Random(424242);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            keys.add(String.format("key-%04d", i));
        }
        Map<String, Integer> version = new HashMap<>();
        long t0 = System.nanoTime();
        List<String> dead;
        Map<Long, Acked> acked;
        try (Writer w = new Writer(topic)) {
            for (int block = 0; block < UPDATES / BLOCK; block++) {
                String codec = CODECS[block % CODECS.length];
                List<String[]> items = new ArrayList<>();
                for (int i = 0; i < BLOCK; i++) {
                    String k = keys.get(rng.nextInt(KEYS));
                    items.add(new String[] {k, update(k, version, codec, rng)});
                }
                w.send(codec, items);
            }
            // Tombstones for 100 keys spread over all codecs, then 10 of them written again.
            List<String> shuffled = new ArrayList<>(keys);
            java.util.Collections.shuffle(shuffled, rng);
            dead = shuffled.subList(0, TOMBSTONES);
            int per = TOMBSTONES / CODECS.length;
            for (int c = 0; c < CODECS.length; c++) {
                List<String[]> items = new ArrayList<>();
                for (String k : dead.subList(c * per, (c + 1) * per)) {
                    items.add(new String[] {k, null});
                }
                w.send(CODECS[c], items);
            }
            List<String[]> revive = new ArrayList<>();
            for (String k : dead.subList(0, REVIVED)) {
                revive.add(new String[] {k, update(k, version, "zstd", rng)});
            }
            w.send("zstd", revive);
            // Filler on its own key, written last: more than a segment of (uncompressed, random)
            // bytes, so the segment holding the last keyed update is rolled behind it.
            List<String[]> filler = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                filler.add(new String[] {FILLER_KEY, randomText(rng, 1000)});
            }
            w.send("none", filler);
            acked = new HashMap<>(w.acked);
        }
        double produced = (System.nanoTime() - t0) / 1e9;
        long segments = segmentFiles(topic);
        assertTrue(segments >= 20, "expected the updates to span many segments, found " + segments);
        int n = UPDATES + TOMBSTONES + REVIVED + 100;
        assertEquals(n, acked.size());
        for (long o = 0; o < n; o++) {
            assertNotNull(acked.get(o), "acknowledged offsets are not dense: missing " + o);
        }
        // Versions of a key were acknowledged in order (idempotent producers, one block at a time).
        Map<String, Integer> lastVersion = new HashMap<>();
        for (long o = 0; o < n; o++) {
            Acked a = acked.get(o);
            if (a.value() == null || a.key().equals(FILLER_KEY)) {
                continue;
            }
            int ver = Integer.parseInt(a.value().split("\\|")[1].substring(1));
            int prev = lastVersion.getOrDefault(a.key(), 0);
            assertTrue(ver > prev, a.key() + ": version " + ver + " acknowledged after " + prev);
            lastVersion.put(a.key(), ver);
        }

        // Expected survivors: the newest record of every key whose newest record is not a tombstone.
        Map<String, Map.Entry<Long, Acked>> latest = latestByKey(acked);
        Map<String, Read> want = new HashMap<>();
        for (Map.Entry<String, Map.Entry<Long, Acked>> e : latest.entrySet()) {
            Acked a = e.getValue().getValue();
            if (!e.getKey().equals(FILLER_KEY) && a.value() != null) {
                want.put(e.getKey(), new Read(e.getValue().getKey(), a.key(), a.value(), a.timestamp()));
            }
        }
        assertEquals(KEYS - TOMBSTONES + REVIVED, want.size());
        for (String k : want.keySet()) {
            assertTrue(want.get(k).value().startsWith(k + "|v" + String.format("%05d", version.get(k)) + "|"));
        }

        long t1 = System.nanoTime();
        long deadline = t1 + TimeUnit.SECONDS.toNanos(45);
        List<Read> recs = readAll(topic);
        while (!converged(recs, want) && System.nanoTime() < deadline) {
            Thread.sleep(1000);
            recs = readAll(topic);
        }
        double converge = (System.nanoTime() - t1) / 1e9;

        // Every record read is one that was acknowledged, unchanged, at the same offset.
        long prevOffset = -1;
        for (Read r : recs) {
            assertTrue(r.offset() > prevOffset, "offsets not strictly increasing at " + r.offset());
            prevOffset = r.offset();
            Acked a = acked.get(r.offset());
            assertNotNull(a, "offset " + r.offset() + " was never acknowledged");
            assertEquals(a, new Acked(r.key(), r.value(), r.timestamp()), "record at offset " + r.offset());
            assertNotNull(r.value(), "tombstone for " + r.key() + " at " + r.offset()
                    + " survived delete.retention.ms=0");
        }
        Map<String, Integer> counts = new HashMap<>();
        for (Read r : recs) {
            if (!r.key().equals(FILLER_KEY)) {
                counts.merge(r.key(), 1, Integer::sum);
            }
        }
        List<String> dups = counts.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).limit(10).toList();
        assertTrue(dups.isEmpty(), "keys left more than once after compaction, e.g. " + dups);
        Map<String, Read> got = survivors(recs);
        Set<String> missing = new HashSet<>(want.keySet());
        missing.removeAll(got.keySet());
        assertTrue(missing.isEmpty(), missing.size() + " live keys lost, e.g. " + missing.stream().limit(10).toList());
        Set<String> extra = new HashSet<>(got.keySet());
        extra.removeAll(want.keySet());
        assertTrue(extra.isEmpty(), extra.size() + " deleted keys came back, e.g. " + extra.stream().limit(10).toList());
        for (String k : want.keySet()) {
            assertEquals(want.get(k), got.get(k), "newest record of " + k);
        }
        for (String k : dead.subList(REVIVED, TOMBSTONES)) {
            assertFalse(got.containsKey(k), "tombstoned key " + k + " still present");
        }
        // The filler key keeps (at least) its newest record.
        Map.Entry<Long, Acked> fillerLatest = latest.get(FILLER_KEY);
        Read lastFiller = null;
        for (Read r : recs) {
            if (r.key().equals(FILLER_KEY)) {
                lastFiller = r;
            }
        }
        assertNotNull(lastFiller, "no filler record left");
        assertEquals(fillerLatest.getKey(), lastFiller.offset());
        assertTrue(recs.size() < n / 10, "only " + (n - recs.size()) + " of " + n + " records compacted away");

        try (KafkaConsumer<String, String> c = Clients.consumer(broker)) {
            // Compaction moves neither the log start offset nor the log end offset.
            assertEquals(0L, c.beginningOffsets(List.of(tp)).get(tp));
            assertEquals((long) n, c.endOffsets(List.of(tp)).get(tp));

            // Seeking onto an offset that compaction removed yields the next surviving record.
            Set<Long> kept = new HashSet<>();
            recs.forEach(r -> kept.add(r.offset()));
            long gap = -1;
            for (long o = recs.get(0).offset(); o < recs.get(recs.size() - 1).offset(); o++) {
                if (!kept.contains(o) && !kept.contains(o + 1)) {
                    gap = o;
                    break;
                }
            }
            assertTrue(gap >= 0, "no gap found");
            final long g = gap;
            long next = recs.stream().mapToLong(Read::offset).filter(o -> o > g).min().orElseThrow();
            c.assign(List.of(tp));
            c.seek(tp, gap);
            long firstSeen = -1;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (firstSeen < 0 && System.nanoTime() < until) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    if (firstSeen < 0) {
                        firstSeen = r.offset();
                    }
                }
            }
            assertEquals(next, firstSeen, "fetch from compacted-away offset " + gap);
        }
        System.out.printf("[compaction] produced %d records over %d segments in %.1fs, converged in %.1fs, %d left%n",
                n, segments, produced, converge, recs.size());
    }

    /** Counts the partition's segment files; the data dir is read off the command line that
     * SluiceBroker writes at the top of the broker log. */
    private static long segmentFiles(String topic) throws Exception {
        String first = Files.readAllLines(broker.logFile()).get(0);
        String[] words = first.split(" ");
        Path dataDir = null;
        for (int i = 0; i + 1 < words.length; i++) {
            if (words[i].equals("--data-dir")) {
                dataDir = Paths.get(words[i + 1]);
            }
        }
        assertNotNull(dataDir, "no --data-dir in " + first);
        try (Stream<Path> files = Files.list(dataDir.resolve(topic + "-0"))) {
            return files.filter(f -> f.getFileName().toString().endsWith(".log")).count();
        }
    }

    private static String update(String key, Map<String, Integer> version, String codec, Random rng) {
        int v = version.merge(key, 1, Integer::sum);
        return String.format("%s|v%05d|%s|%016x%016x", key, v, codec, rng.nextLong(), rng.nextLong());
    }

    private static String randomText(Random rng, int len) {
        StringBuilder sb = new StringBuilder(len);
        for (int i = 0; i < len; i++) {
            sb.append((char) ('!' + rng.nextInt(90)));
        }
        return sb.toString();
    }
}
