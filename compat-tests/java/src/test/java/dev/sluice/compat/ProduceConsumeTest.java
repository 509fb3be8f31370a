package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Produce with the Java producer, read back with an assign()-based consumer (no consumer group). */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ProduceConsumeTest {

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("produce-consume");
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static void createTopic(String name, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all());
    }

    private static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }

    private static String keyOf(int i) {
        return "key-" + i;
    }

    private static String valueOf(int i) {
        // ~60 bytes per value so 100k records span many batches and several fetch responses per partition.
        return String.format("value-%06d-%s", i, "x".repeat(i % 41 + 10));
    }

    /** Same placement rule the Java client uses for keyed records (murmur2 of the key bytes). */
    private static int expectedPartition(String key, int numPartitions) {
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % numPartitions;
    }

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void defaultProducerSends100kKeyedRecordsAndAssignConsumerReadsThemBackInOrder() throws Exception {
        final String topic = "compat-bulk";
        final int numPartitions = 3;
        final int n = 100_000;
        createTopic(topic, numPartitions);

        int[] partitionOf = new int[n];
        long[] offsetOf = new long[n];
        Arrays.fill(partitionOf, -1);
        Arrays.fill(offsetOf, -1L);
        AtomicInteger failures = new AtomicInteger();
        Queue<Exception> firstFailures = new ConcurrentLinkedQueue<>();
        Deque<Future<RecordMetadata>> lastFutures = new ArrayDeque<>();

        // Defaults only: no acks / enable.idempotence / retries overrides.
        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            for (int i = 0; i < n; i++) {
                final int idx = i;
                Future<RecordMetadata> f = producer.send(new ProducerRecord<>(topic, keyOf(i), valueOf(i)),
                        (md, err) -> {
                            if (err != null) {
                                if (failures.incrementAndGet() <= 5) {
                                    firstFailures.add(err);
                                }
                            } else {
                                partitionOf[idx] = md.partition();
                                offsetOf[idx] = md.offset();
                            }
                        });
                lastFutures.addLast(f);
                if (lastFutures.size() > 200) {
                    lastFutures.removeFirst();
                }
            }
            producer.flush();
            for (Future<RecordMetadata> f : lastFutures) {
                RecordMetadata md = f.get(60, TimeUnit.SECONDS); // throws on a failed send
                assertTrue(md.hasOffset(), "acks=all send must return an offset: " + md);
            }
        }
        assertEquals(0, failures.get(), () -> failures.get() + " sends failed, first: " + firstFailures);

        // What the broker acknowledged: each record in the partition the client chose, offsets dense from 0.
        long[] count = new long[numPartitions];
        long[] lastOffset = new long[numPartitions];
        Arrays.fill(lastOffset, -1L);
        for (int i = 0; i < n; i++) {
            int p = partitionOf[i];
            assertEquals(expectedPartition(keyOf(i), numPartitions), p,
                    "record " + i + " acknowledged for an unexpected partition");
            assertTrue(offsetOf[i] > lastOffset[p],
                    "record " + i + " got offset " + offsetOf[i] + " in partition " + p
                            + ", not after the previous record's " + lastOffset[p]);
            lastOffset[p] = offsetOf[i];
            count[p]++;
        }
        for (int p = 0; p < numPartitions; p++) {
            assertTrue(count[p] > 0, "partition " + p + " got no records");
            assertEquals(count[p] - 1, lastOffset[p],
                    "partition " + p + ": offsets are not dense from 0 (count " + count[p] + ")");
        }

        List<TopicPartition> tps = partitions(topic, numPartitions);
        try (KafkaConsumer<String, String> consumer = Clients.consumer(broker)) {
            consumer.assign(tps);

            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, Duration.ofSeconds(30));
            for (int p = 0; p < numPartitions; p++) {
                assertEquals(0L, begin.get(tps.get(p)), "beginning offset of partition " + p);
                assertEquals(count[p], end.get(tps.get(p)), "end offset of partition " + p);
            }

            long[] nextOffset = new long[numPartitions];
            int[] lastIndex = new int[numPartitions];
            Arrays.fill(lastIndex, -1);
            int total = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
            while (total < n) {
                if (System.nanoTime() > deadline) {
                    fail("only " + total + " of " + n + " records consumed before the deadline; next offsets "
                            + Arrays.toString(nextOffset));
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    int p = r.partition();
                    assertEquals(nextOffset[p], r.offset(), "partition " + p + ": gap or duplicate");
                    nextOffset[p]++;
                    assertNotNull(r.key(), "key at " + p + "@" + r.offset());
                    assertTrue(r.key().startsWith("key-"), "unexpected key " + r.key());
                    int i = Integer.parseInt(r.key().substring(4));
                    assertTrue(i >= 0 && i < n, "key out of range: " + r.key());
                    assertEquals(valueOf(i), r.value(), "value of " + r.key());
                    assertEquals(partitionOf[i], p, "partition of " + r.key());
                    assertEquals(offsetOf[i], r.offset(), "offset of " + r.key() + " differs from the produce ack");
                    assertTrue(i > lastIndex[p], "partition " + p + ": record " + i + " after " + lastIndex[p]);
                    lastIndex[p] = i;
                    assertEquals(TimestampType.CREATE_TIME, r.timestampType(), "timestamp type of " + r.key());
                    assertTrue(r.timestamp() > 0, "timestamp of " + r.key() + ": " + r.timestamp());
                    total++;
                }
            }
            assertEquals(n, total);
            assertArrayEquals(count, nextOffset, "records consumed per partition");
            ConsumerRecords<String, String> extra = consumer.poll(Duration.ofSeconds(1));
            assertEquals(0, extra.count(), "records past the end of what was produced");
        }
    }

    @Test
    void headersTimestampsNullKeysAndNullValuesRoundTrip() throws Exception {
        final String topic = "compat-record-fields";
        createTopic(topic, 1);
        long baseTs = System.currentTimeMillis() - 60_000;

        List<ProducerRecord<String, String>> sent = new ArrayList<>();
        RecordHeaders h1 = new RecordHeaders();
        h1.add("trace-id", "abc-123".getBytes(StandardCharsets.UTF_8));
        h1.add("empty", new byte[0]);
        h1.add("null-valued", null);
        h1.add("trace-id", "second-value-same-key".getBytes(StandardCharsets.UTF_8));
        sent.add(new ProducerRecord<>(topic, 0, baseTs, "with-headers", "v1", h1));
        sent.add(new ProducerRecord<>(topic, 0, baseTs + 1, null, "null-key"));
        sent.add(new ProducerRecord<>(topic, 0, baseTs + 2, "tombstone", (String) null));
        sent.add(new ProducerRecord<>(topic, 0, baseTs + 3, "", ""));
        sent.add(new ProducerRecord<>(topic, 0, baseTs - 5_000, "older-timestamp", "ünïcødé ✓"));

        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            for (int i = 0; i < sent.size(); i++) {
                RecordMetadata md = Clients.get(producer.send(sent.get(i)));
                assertEquals(i, md.offset(), "offset of record " + i);
                assertEquals(sent.get(i).timestamp(), md.timestamp(), "acked timestamp of record " + i);
            }
        }

        List<ConsumerRecord<String, String>> got = readAll(topic, 0, sent.size());
        for (int i = 0; i < sent.size(); i++) {
            ProducerRecord<String, String> s = sent.get(i);
            ConsumerRecord<String, String> r = got.get(i);
            assertEquals(i, r.offset());
            assertEquals(s.key(), r.key(), "key of record " + i);
            assertEquals(s.value(), r.value(), "value of record " + i);
            assertEquals(s.timestamp(), r.timestamp(), "timestamp of record " + i);
            assertEquals(TimestampType.CREATE_TIME, r.timestampType());
            Header[] expected = s.headers().toArray();
            Header[] actual = r.headers().toArray();
            assertEquals(expected.length, actual.length, "header count of record " + i);
            for (int j = 0; j < expected.length; j++) {
                assertEquals(expected[j].key(), actual[j].key(), "header " + j + " key of record " + i);
                if (expected[j].value() == null) {
                    assertNull(actual[j].value(), "header " + j + " value of record " + i);
                } else {
                    assertArrayEquals(expected[j].value(), actual[j].value(), "header " + j + " value of record " + i);
                }
            }
        }
    }

    /** acks=0 and acks=1 need idempotence off (a client rule); the data must still land, in order. */
    @ParameterizedTest(name = "acks={0}")
    @ValueSource(strings = {"0", "1"})
    void nonIdempotentProducerWithAcks(String acks) throws Exception {
        final String topic = "compat-acks-" + acks;
        final int n = 2_000;
        createTopic(topic, 2);
        Map<String, String> overrides = new HashMap<>();
        overrides.put(ProducerConfig.ACKS_CONFIG, acks);
        overrides.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        overrides.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<String, String> producer = Clients.producer(broker, overrides)) {
            for (int i = 0; i < n; i++) {
                futures.add(producer.send(new ProducerRecord<>(topic, i % 2, null, "m-" + i)));
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata md = Clients.get(f);
                if (acks.equals("1")) {
                    assertTrue(md.hasOffset(), "acks=1 must return an offset");
                }
            }
        }
        for (int p = 0; p < 2; p++) {
            List<ConsumerRecord<String, String>> got = readAll(topic, p, n / 2);
            for (int j = 0; j < got.size(); j++) {
                assertEquals("m-" + (j * 2 + p), got.get(j).value(), "partition " + p + " offset " + j);
                if (acks.equals("1")) {
                    assertEquals(j, futures.get(j * 2 + p).get().offset(), "acked offset of m-" + (j * 2 + p));
                }
            }
        }
    }

    /** Reads exactly {@code expected} records from offset 0 of one partition and checks nothing follows. */
    private static List<ConsumerRecord<String, String>> readAll(String topic, int partition, int expected) {
        TopicPartition tp = new TopicPartition(topic, partition);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = Clients.consumer(broker)) {
            consumer.assign(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (out.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    out.add(r);
                }
            }
            assertEquals(expected, out.size(), "records read from " + tp);
            assertEquals(0, consumer.poll(Duration.ofMillis(500)).count(), "unexpected extra records in " + tp);
        }
        for (int i = 0; i < out.size(); i++) {
            assertEquals(i, out.get(i).offset(), "offset sequence in " + tp);
        }
        return out;
    }
}
