package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitIsr;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.controllerId;
import static dev.sluice.compat.ClusterProbes.describe;
import static dev.sluice.compat.ClusterProbes.describeTopic;
import static dev.sluice.compat.ClusterProbes.ids;
import static dev.sluice.compat.ClusterProbes.leaderId;
import static dev.sluice.compat.ClusterProbes.millisSince;
import static dev.sluice.compat.ClusterProbes.partition;
import static dev.sluice.compat.ClusterProbes.quorum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Replication across brokers (RF=3, topic min.insync.replicas=2): no acked record is lost or
 * duplicated when a partition leader is killed with -9 under an acks=all idempotent producer and a
 * continuously tailing consumer (librdkafka when the compat-tests Python venv is there, else the
 * Java client), and acks=all is refused with NOT_ENOUGH_REPLICAS once both followers of a partition
 * are fenced while acks=1 still works.
 *
 * <p>{@code SLUICE_PYTHON} / {@code -Dsluice.python} name the Python with confluent-kafka (pom.xml
 * sets {@code compat-tests/.venv/bin/python}); without a usable one the Java consumer stands in and
 * the test output says so.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ReplicationTest {

    static final String MIN_INSYNC_REPLICAS = "2";
    static final Duration ISR_WAIT = Duration.ofSeconds(20);
    /** Time for a new controller, when the killed node was the active one. */
    static final Duration ELECTION = Duration.ofSeconds(2);
    static final Duration FENCE_WAIT = Duration.ofSeconds(10);

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    private final List<Admin> admins = new ArrayList<>();
    private LedgerProducer ledgerProducer;
    private TailConsumer tail;

    @AfterEach
    void stopEverything() {
        if (ledgerProducer != null) {
            ledgerProducer.stop(Duration.ofSeconds(30));
            ledgerProducer = null;
        }
        if (tail != null) {
            tail.close(); // SIGTERM the librdkafka consumer by its pid, SIGKILL if it lingers
            tail = null;
        }
        for (Admin a : admins) {
            try {
                a.close(Duration.ofSeconds(5));
            } catch (Exception e) {
                System.err.println("closing admin: " + e);
            }
        }
        admins.clear();
        clusters.closeAll();
    }

    private Admin admin(String bootstrap) {
        Admin a = Clients.clusterAdmin(bootstrap);
        admins.add(a);
        return a;
    }

    private static void createReplicatedTopic(Admin admin, String topic, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 3)
                .configs(Map.of("min.insync.replicas", MIN_INSYNC_REPLICAS)))).all());
    }

    /**
     * The active controller: the Raft quorum's leader, else describeCluster().controller(), else
     * null. Only used to allow for a controller election in a time budget.
     */
    private static Integer activeControllerOrNull(Admin admin) {
        try {
            int leader = quorum(admin).leaderId();
            if (leader >= 0) {
                return leader;
            }
        } catch (Exception e) {
            // fall through to describeCluster
        }
        try {
            return controllerId(admin);
        } catch (Exception e) {
            return null;
        }
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[replication-test] " + fmt + "%n", args);
    }

    private static <T> String head(Collection<T> items) {
        return items.stream().limit(10).map(String::valueOf).collect(Collectors.joining(", ", "[", "]"))
                + (items.size() > 10 ? " (" + items.size() + " in all)" : "");
    }

    // ------------------------------------------------------------------------------------------
    // a. kill -9 the leader of partition 0 under load: every acked record consumed exactly once
    // ------------------------------------------------------------------------------------------

    @Test
    void killingAPartitionLeaderLosesNoAckedRecordAndDuplicatesNone() throws Exception {
        SluiceCluster cluster = clusters.start("repl-leader-crash", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
        final String topic = "repl-crash";
        final int partitions = 3;
        createReplicatedTopic(admin, topic, partitions);
        log("placement: %s", describe(awaitIsr(admin, topic, partitions, 3, ISR_WAIT)));

        ledgerProducer = new LedgerProducer(cluster.bootstrap(), topic, partitions);
        tail = TailConsumer.start(clusters, "repl-leader-crash", cluster.bootstrap(), topic, partitions);
        log("consumer: %s", tail.kind());
        await("the consumer has read records of every partition", Duration.ofSeconds(30), seen -> {
            ledgerProducer.checkHealthy();
            tail.checkHealthy();
            Map<Integer, Integer> counts = tail.countsByPartition();
            seen.set("consumed " + counts + ", acked " + ledgerProducer.ackCounts());
            return counts.size() == partitions && counts.values().stream().allMatch(c -> c >= 20) ? counts : null;
        });

        TopicPartitionInfo p0 = partition(describeTopic(admin, topic), 0);
        Integer leaderBefore = leaderId(p0);
        assertTrue(leaderBefore != null, "partition 0 has a leader: " + p0);
        final int oldLeader = leaderBefore;
        List<Integer> isrBefore = ids(p0.isr());
        Integer controller = activeControllerOrNull(admin);
        Duration budget = Duration.ofMillis(SluiceCluster.SESSION_TIMEOUT_MS + 2000L)
                .plus(Objects.equals(controller, oldLeader) ? ELECTION : Duration.ZERO);
        log("killing node %d, leader of partition 0 (isr %s, active controller %s); new leader expected within %d ms",
                oldLeader, isrBefore, controller, budget.toMillis());

        long killedAt = System.nanoTime();
        cluster.kill(oldLeader);
        int newLeader = await("partition 0 has a leader other than node " + oldLeader + " within "
                + budget.toMillis() + " ms of the kill", budget.minusMillis(millisSince(killedAt)), seen -> {
                    TopicPartitionInfo p = partition(describeTopic(admin, topic), 0);
                    seen.set("p0 leader " + leaderId(p) + " isr " + ids(p.isr()));
                    Integer l = leaderId(p);
                    return l != null && l != oldLeader ? l : null;
                });
        long failoverAt = System.nanoTime();
        log("partition 0: node %d took over %d ms after the kill", newLeader, millisSince(killedAt));
        assertTrue(isrBefore.contains(newLeader),
                "the new leader " + newLeader + " comes from the ISR before the crash " + isrBefore);

        // Keep producing a while on the new leader, then stop the producer and drain the consumer.
        long p0AcksAtFailover = ledgerProducer.ackCount(0);
        Thread.sleep(3000);
        await("the new leader acks records of partition 0", Duration.ofSeconds(30), seen -> {
            ledgerProducer.checkHealthy();
            long acks = ledgerProducer.ackCount(0);
            seen.set("partition 0 acks " + acks + " (at failover " + p0AcksAtFailover + ")");
            return acks >= p0AcksAtFailover + 20 ? acks : null;
        });
        ledgerProducer.stop(Duration.ofSeconds(90));
        ledgerProducer.checkHealthy();
        List<String> failures = List.copyOf(ledgerProducer.failures);
        assertTrue(failures.isEmpty(), "the idempotent acks=all producer had " + failures.size()
                + " failed sends: " + head(failures));
        Map<Integer, List<Acked>> acked = ledgerProducer.ledger();
        Map<Integer, Integer> ackedCounts = new TreeMap<>();
        acked.forEach((p, l) -> ackedCounts.put(p, l.size()));
        log("producer stopped: %d sent, acked per partition %s", ledgerProducer.sent.get(), ackedCounts);

        await("the consumer has read as many records as were acked", Duration.ofSeconds(60), seen -> {
            tail.checkHealthy();
            Map<Integer, Integer> counts = tail.countsByPartition();
            seen.set("consumed " + counts + ", acked " + ackedCounts);
            return IntStream.range(0, partitions)
                    .allMatch(p -> counts.getOrDefault(p, 0) >= ackedCounts.getOrDefault(p, 0)) ? true : null;
        });
        Thread.sleep(1000); // duplicates or strays would show up now
        tail.checkHealthy();
        tail.close();
        List<String> junk = List.copyOf(tail.junk);
        assertTrue(junk.isEmpty(), "unparseable consumer output: " + head(junk));

        List<String> problems = exactlyOnceInOrder(partitions, acked, tail.byPartition());
        assertTrue(problems.isEmpty(), "consumed (" + tail.kind() + ") vs acked: " + String.join("; ", problems));
        log("every one of %d acked records consumed exactly once, in order",
                ackedCounts.values().stream().mapToInt(Integer::intValue).sum());

        // The records written by the new leader carry a higher leader epoch than the old leader's.
        List<Acked> p0Acked = acked.get(0);
        Map<Long, Integer> epochs = leaderEpochs(cluster.bootstrapRunning(), topic, 0,
                p0Acked.get(p0Acked.size() - 1).offset() + 1);
        List<String> epochProblems = new ArrayList<>();
        int maxBefore = -1;
        int minAfter = Integer.MAX_VALUE;
        int previous = -1;
        for (Acked a : p0Acked) {
            Integer e = epochs.get(a.offset());
            if (e == null || e < 0) {
                epochProblems.add("offset " + a.offset() + " has no leader epoch");
                continue;
            }
            if (e < previous) {
                epochProblems.add("leader epoch goes down at offset " + a.offset() + ": " + previous + " -> " + e);
            }
            previous = e;
            // Acked before the kill: written by the old leader. Sent after the new leader was
            // reported: written by the new one. (A record acked late may still be an old-leader
            // write: the idempotent retry of a send whose ack the crash swallowed.)
            if (a.ackNanos() < killedAt) {
                maxBefore = Math.max(maxBefore, e);
            } else if (a.sendNanos() > failoverAt) {
                minAfter = Math.min(minAfter, e);
            }
        }
        Map<Integer, Long> epochHistogram = epochs.values().stream()
                .collect(Collectors.groupingBy(e -> e, TreeMap::new, Collectors.counting()));
        log("partition 0: records per leader epoch %s", epochHistogram);
        assertTrue(epochProblems.isEmpty(), "partition 0 leader epochs: " + head(epochProblems));
        assertTrue(maxBefore >= 0 && minAfter != Integer.MAX_VALUE, "records on both sides of the failover");
        assertTrue(minAfter > maxBefore, "records written after the failover have a higher leader epoch ("
                + minAfter + ") than those written before the crash (" + maxBefore + ")");
        log("partition 0 leader epoch %d before the crash, %d after", maxBefore, minAfter);
    }

    /**
     * For each partition: the acked offsets are distinct and follow the send order, and the
     * consumer saw exactly the acked (offset, value) pairs, each once, in offset order.
     */
    static List<String> exactlyOnceInOrder(int partitions, Map<Integer, List<Acked>> acked,
                                           Map<Integer, List<Consumed>> consumed) {
        List<String> problems = new ArrayList<>();
        Set<Integer> all = new TreeSet<>(consumed.keySet());
        all.addAll(acked.keySet());
        IntStream.range(0, partitions).forEach(all::add);
        for (int p : all) {
            List<Acked> a = acked.getOrDefault(p, List.of());
            List<Consumed> c = consumed.getOrDefault(p, List.of());
            List<String> sameOffset = new ArrayList<>();
            List<String> reordered = new ArrayList<>();
            Map<String, Long> ackedOffset = new HashMap<>();
            for (int i = 0; i < a.size(); i++) {
                ackedOffset.put(a.get(i).value(), a.get(i).offset());
                if (i > 0 && a.get(i).offset() == a.get(i - 1).offset()) {
                    sameOffset.add(a.get(i).offset() + ": " + a.get(i - 1).value() + " & " + a.get(i).value());
                } else if (i > 0 && a.get(i).seq() <= a.get(i - 1).seq()) {
                    reordered.add(a.get(i - 1).value() + "@" + a.get(i - 1).offset() + " before "
                            + a.get(i).value() + "@" + a.get(i).offset());
                }
            }
            if (!sameOffset.isEmpty()) {
                problems.add("p" + p + ": offsets acked for two records (one of them was lost) " + head(sameOffset));
            }
            if (!reordered.isEmpty()) {
                problems.add("p" + p + ": acked offsets out of send order " + head(reordered));
            }
            Map<String, Integer> times = new HashMap<>();
            List<String> backwards = new ArrayList<>();
            List<String> wrongOffset = new ArrayList<>();
            List<String> unexpected = new ArrayList<>();
            for (int i = 0; i < c.size(); i++) {
                Consumed r = c.get(i);
                times.merge(r.value(), 1, Integer::sum);
                if (i > 0 && r.offset() <= c.get(i - 1).offset()) {
                    backwards.add(c.get(i - 1).offset() + " then " + r.offset());
                }
                Long at = ackedOffset.get(r.value());
                if (at == null) {
                    unexpected.add(r.value() + "@" + r.offset());
                } else if (at != r.offset()) {
                    wrongOffset.add(r.value() + " acked at " + at + ", consumed at " + r.offset());
                }
            }
            List<String> missing = a.stream().filter(x -> !times.containsKey(x.value()))
                    .map(x -> x.value() + "@" + x.offset()).toList();
            List<String> duplicated = times.entrySet().stream().filter(e -> e.getValue() > 1)
                    .map(e -> e.getKey() + " x" + e.getValue()).sorted().toList();
            if (!missing.isEmpty()) {
                problems.add("p" + p + ": " + missing.size() + " acked records never consumed " + head(missing));
            }
            if (!duplicated.isEmpty()) {
                problems.add("p" + p + ": " + duplicated.size() + " records consumed more than once " + head(duplicated));
            }
            if (!unexpected.isEmpty()) {
                problems.add("p" + p + ": " + unexpected.size() + " consumed records that were never acked "
                        + head(unexpected));
            }
            if (!wrongOffset.isEmpty()) {
                problems.add("p" + p + ": records consumed at another offset than acked " + head(wrongOffset));
            }
            if (!backwards.isEmpty()) {
                problems.add("p" + p + ": consumed out of offset order " + head(backwards));
            }
        }
        return problems;
    }

    /** Offset -> leader epoch (-1 if absent) of {@code topic}/{@code partition} up to {@code end}, via the Java consumer. */
    private static Map<Long, Integer> leaderEpochs(String bootstrap, String topic, int partition, long end) {
        Map<Long, Integer> out = new TreeMap<>();
        TopicPartition tp = new TopicPartition(topic, partition);
        try (KafkaConsumer<String, String> c = Clients.consumer(bootstrap)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.put(r.offset(), r.leaderEpoch().orElse(-1));
                }
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // b. min.insync.replicas=2 and both followers fenced: acks=all refused, acks=1 accepted
    // ------------------------------------------------------------------------------------------

    /**
     * Runs on FIVE nodes: with every node a controller-quorum voter, killing both followers of a
     * partition on a 3-node cluster would also take the controller quorum down, and then nothing
     * could fence them. With 5 voters, 3 stay up.
     */
    @Test
    void acksAllIsRefusedWithNotEnoughReplicasOnceBothFollowersAreFencedButAcksOneWorks() throws Exception {
        SluiceCluster cluster = clusters.start("repl-min-isr", 5, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(15));
        final String topic = "repl-min-isr";
        createReplicatedTopic(admin, topic, 1);
        TopicPartitionInfo p0 = partition(awaitIsr(admin, topic, 1, 3, ISR_WAIT), 0);
        final int leader = leaderId(p0);
        List<Integer> followers = ids(p0.replicas()).stream().filter(id -> id != leader).toList();
        assertEquals(2, followers.size(), "followers of partition 0: " + p0);

        Map<String, String> common = Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.RETRIES_CONFIG, "0", // NOT_ENOUGH_REPLICAS is retriable: surface it at once
                ProducerConfig.LINGER_MS_CONFIG, "0",
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000",
                ProducerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        Map<String, String> strictCfg = new HashMap<>(common);
        strictCfg.put(ProducerConfig.ACKS_CONFIG, "all");
        Map<String, String> looseCfg = new HashMap<>(common);
        looseCfg.put(ProducerConfig.ACKS_CONFIG, "1");

        try (KafkaProducer<String, String> strict = Clients.producer(cluster.bootstrap(), strictCfg);
             KafkaProducer<String, String> loose = Clients.producer(cluster.bootstrap(), looseCfg)) {
            RecordMetadata before = Clients.get(strict.send(new ProducerRecord<>(topic, 0, "k", "acks-all-before")));

            Integer controller = activeControllerOrNull(admin);
            log("partition 0: leader %d, killing followers %s (active controller %s)", leader, followers, controller);
            for (int f : followers) {
                cluster.kill(f);
            }
            Set<Integer> survivors = new TreeSet<>(cluster.ids());
            survivors.removeAll(followers);
            awaitLiveNodes(admin, survivors,
                    followers.contains(controller) ? FENCE_WAIT.plus(ELECTION) : FENCE_WAIT);
            TopicPartitionInfo shrunk = await("the ISR of partition 0 shrinks to its leader " + leader,
                    Duration.ofSeconds(10), seen -> {
                        TopicPartitionInfo p = partition(describeTopic(admin, topic), 0);
                        seen.set("leader " + leaderId(p) + " isr " + ids(p.isr()));
                        return Objects.equals(leaderId(p), leader) && ids(p.isr()).equals(List.of(leader)) ? p : null;
                    });
            log("followers fenced: %s", shrunk);

            NotEnoughReplicasException refused = Clients.expectFailure(NotEnoughReplicasException.class,
                    strict.send(new ProducerRecord<>(topic, 0, "k", "acks-all-refused")));
            log("acks=all refused as expected: %s", refused);
            RecordMetadata accepted = Clients.get(loose.send(new ProducerRecord<>(topic, 0, "k", "acks-1-accepted")));
            assertEquals(before.offset() + 1, accepted.offset(),
                    "offset of the acks=1 record: the refused acks=all record must not have been appended");

            // Followers back: they rejoin the ISR, and acks=all works again.
            for (int f : followers) {
                cluster.restart(f);
            }
            awaitIsr(admin, topic, 1, 3, Duration.ofSeconds(30));
            RecordMetadata after = Clients.get(strict.send(new ProducerRecord<>(topic, 0, "k", "acks-all-after")));
            assertEquals(accepted.offset() + 1, after.offset(), "offset of the acks=all record after recovery");
            List<String> values = values(cluster.bootstrapRunning(), topic, 0, after.offset() + 1);
            assertEquals(List.of("acks-all-before", "acks-1-accepted", "acks-all-after"), values,
                    "partition 0 holds exactly the accepted records");
        }
    }

    private static List<String> values(String bootstrap, String topic, int partition, long end) {
        List<String> out = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, partition);
        try (KafkaConsumer<String, String> c = Clients.consumer(bootstrap)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // load generator and tailing consumers
    // ------------------------------------------------------------------------------------------

    /** One acked send: where the broker put it, its per-partition send sequence number, when it was sent and acked. */
    record Acked(int partition, long offset, long seq, String value, long sendNanos, long ackNanos) {
    }

    /** One consumed record, in the order the consumer delivered it. */
    record Consumed(int partition, long offset, String value) {
    }

    /**
     * An acks=all idempotent producer sending to every partition in turn (a few hundred records a
     * second, at most {@value #MAX_IN_FLIGHT} unacked) from its own thread until stopped; records
     * every ack in a ledger and every failed send.
     */
    static final class LedgerProducer {
        static final int MAX_IN_FLIGHT = 1000;
        private static final long SEND_PAUSE_MS = 5;

        final Queue<String> failures = new ConcurrentLinkedQueue<>();
        final AtomicLong sent = new AtomicLong();
        private final Queue<Acked> acked = new ConcurrentLinkedQueue<>();
        private final AtomicLong[] ackCounts;
        private final AtomicReference<Throwable> error = new AtomicReference<>();
        private final Semaphore inFlight = new Semaphore(MAX_IN_FLIGHT);
        private final Thread thread;
        private volatile boolean running = true;

        LedgerProducer(String bootstrap, String topic, int partitions) {
            ackCounts = new AtomicLong[partitions];
            for (int p = 0; p < partitions; p++) {
                ackCounts[p] = new AtomicLong();
            }
            thread = new Thread(() -> run(bootstrap, topic, partitions), "ledger-producer");
            thread.setDaemon(true);
            thread.start();
        }

        private void run(String bootstrap, String topic, int partitions) {
            Map<String, String> cfg = Map.of(
                    ProducerConfig.ACKS_CONFIG, "all",
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000",
                    ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
                    ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000",
                    ProducerConfig.METADATA_MAX_AGE_CONFIG, "2000",
                    ProducerConfig.CLIENT_ID_CONFIG, "replication-ledger-producer");
            try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, cfg)) {
                long[] seq = new long[partitions];
                while (running) {
                    for (int p = 0; p < partitions && running; p++) {
                        if (!inFlight.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                            continue;
                        }
                        final int part = p;
                        final long s = seq[p]++;
                        final String value = String.format("p%d-%08d", p, s);
                        final long sentAt = System.nanoTime();
                        producer.send(new ProducerRecord<>(topic, part, "k" + part, value), (md, err) -> {
                            inFlight.release();
                            if (err != null) {
                                failures.add(value + ": " + err);
                            } else if (md.partition() != part) {
                                failures.add(value + ": acked for partition " + md.partition());
                            } else {
                                acked.add(new Acked(part, md.offset(), s, value, sentAt, System.nanoTime()));
                                ackCounts[part].incrementAndGet();
                            }
                        });
                        sent.incrementAndGet();
                    }
                    Thread.sleep(SEND_PAUSE_MS);
                }
                producer.flush();
            } catch (Throwable t) {
                error.set(t);
            }
        }

        long ackCount(int partition) {
            return ackCounts[partition].get();
        }

        List<Long> ackCounts() {
            return Arrays.stream(ackCounts).map(AtomicLong::get).toList();
        }

        /** Partition -> acked records sorted by offset. */
        Map<Integer, List<Acked>> ledger() {
            Map<Integer, List<Acked>> out = new TreeMap<>();
            for (Acked a : acked) {
                out.computeIfAbsent(a.partition(), k -> new ArrayList<>()).add(a);
            }
            out.values().forEach(l -> l.sort(Comparator.comparingLong(Acked::offset).thenComparingLong(Acked::seq)));
            return out;
        }

        void checkHealthy() {
            Throwable t = error.get();
            if (t != null) {
                throw new AssertionError("the producer thread failed: " + t, t);
            }
        }

        /** Stops sending, waits for every outstanding send to be acked or failed, closes the producer. */
        void stop(Duration timeout) {
            running = false;
            try {
                thread.join(timeout.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                thread.interrupt();
                error.compareAndSet(null, new IllegalStateException("producer did not stop within " + timeout));
            }
        }
    }

    /** A consumer assigned to every partition from the beginning, collecting records until closed. */
    abstract static class TailConsumer implements AutoCloseable {
        final Queue<Consumed> records = new ConcurrentLinkedQueue<>();
        final Queue<String> junk = new ConcurrentLinkedQueue<>();
        volatile boolean closing;

        abstract String kind();

        /** Throws if the consumer died. */
        abstract void checkHealthy();

        @Override
        public abstract void close();

        Map<Integer, Integer> countsByPartition() {
            Map<Integer, Integer> out = new TreeMap<>();
            for (Consumed c : records) {
                out.merge(c.partition(), 1, Integer::sum);
            }
            return out;
        }

        /** Partition -> records in delivery order. */
        Map<Integer, List<Consumed>> byPartition() {
            Map<Integer, List<Consumed>> out = new TreeMap<>();
            for (Consumed c : records) {
                out.computeIfAbsent(c.partition(), k -> new ArrayList<>()).add(c);
            }
            return out;
        }

        /** librdkafka through the compat-tests venv if it has confluent-kafka, else the Java client (said so on stdout). */
        static TailConsumer start(SluiceCluster.Tracker tracker, String name, String bootstrap, String topic,
                                  int partitions) throws Exception {
            Path python = python();
            String why = usablePython(python);
            if (why == null) {
                return new LibrdkafkaTail(tracker, name, python, bootstrap, topic, partitions);
            }
            log("NOTE: %s -- falling back to a Java consumer instead of librdkafka", why);
            return new JavaTail(bootstrap, topic, partitions);
        }

        static Path python() {
            String configured = System.getenv("SLUICE_PYTHON");
            if (configured == null || configured.isBlank()) {
                configured = System.getProperty("sluice.python", "../.venv/bin/python");
            }
            return Paths.get(configured).toAbsolutePath().normalize();
        }

        /** Null if {@code python} runs and imports confluent_kafka; otherwise why not. */
        private static String usablePython(Path python) throws InterruptedException {
            if (!Files.isExecutable(python)) {
                return "no Python venv at " + python;
            }
            try {
                Process p = new ProcessBuilder(python.toString(), "-c", "import confluent_kafka")
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                        .start();
                if (!p.waitFor(30, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    return python + " did not import confluent_kafka within 30 s";
                }
                return p.exitValue() == 0 ? null : python + " cannot import confluent_kafka";
            } catch (IOException e) {
                return "cannot run " + python + ": " + e;
            }
        }
    }

    /** {@code librdkafka_tail_consumer.py} in a child process; one stdout line per record. */
    static final class LibrdkafkaTail extends TailConsumer {
        private final Process process;
        private final Path script;
        private final Path logFile;
        private final Thread reader;
        private final Thread shutdownHook;
        private volatile Throwable readerError;

        LibrdkafkaTail(SluiceCluster.Tracker tracker, String name, Path python, String bootstrap, String topic,
                       int partitions) throws IOException {
            script = Files.createTempFile("librdkafka_tail_consumer-", ".py");
            try (InputStream in = ReplicationTest.class.getResourceAsStream("/librdkafka_tail_consumer.py")) {
                if (in == null) {
                    throw new IllegalStateException("librdkafka_tail_consumer.py is not on the test classpath");
                }
                Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
            }
            Path logDir = Paths.get(System.getProperty("sluice.logDir", "target/sluice-logs")).toAbsolutePath();
            Files.createDirectories(logDir);
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
            logFile = logDir.resolve(name + "-" + stamp + "-librdkafka-consumer.log");
            tracker.addLog("librdkafka consumer (stderr)", logFile);
            process = new ProcessBuilder(python.toString(), "-u", script.toString(), bootstrap, topic,
                    Integer.toString(partitions))
                    .redirectError(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            shutdownHook = new Thread(process::destroyForcibly, "librdkafka-tail-shutdown");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
            log("librdkafka consumer: pid %d (%s, stderr in %s)", process.pid(), python, logFile);
            reader = new Thread(this::readLines, "librdkafka-tail-reader");
            reader.setDaemon(true);
            reader.start();
        }

        private void readLines() {
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    String[] f = line.split(" ", 3);
                    try {
                        if (f.length != 3) {
                            throw new NumberFormatException("not 3 fields");
                        }
                        records.add(new Consumed(Integer.parseInt(f[0]), Long.parseLong(f[1]), f[2]));
                    } catch (NumberFormatException e) {
                        junk.add(line);
                    }
                }
            } catch (IOException | UncheckedIOException e) {
                if (!closing) {
                    readerError = e;
                }
            }
        }

        @Override
        String kind() {
            return "librdkafka (confluent-kafka, pid " + process.pid() + ")";
        }

        @Override
        void checkHealthy() {
            if (readerError != null) {
                throw new AssertionError("reading the librdkafka consumer's output failed: " + readerError, readerError);
            }
            if (!closing && !process.isAlive()) {
                throw new AssertionError("the librdkafka consumer (pid " + process.pid() + ") exited with code "
                        + process.exitValue() + "; stderr tail:\n" + tail(logFile, 30));
            }
        }

        @Override
        public void close() {
            if (closing) {
                return;
            }
            closing = true;
            try {
                process.destroy(); // SIGTERM: the script closes its consumer and exits
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(5, TimeUnit.SECONDS);
                }
                reader.join(5000);
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException shuttingDown) {
                    // the hook runs anyway
                }
                try {
                    Files.deleteIfExists(script);
                } catch (IOException ignored) {
                    // best effort
                }
            }
        }

        private static String tail(Path file, int lines) {
            try {
                List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
                return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
            } catch (IOException | UncheckedIOException e) {
                return "(could not read " + file + ": " + e + ")";
            }
        }
    }

    /** Fallback: the Java consumer polling in its own thread. */
    static final class JavaTail extends TailConsumer {
        private final Thread thread;
        private volatile Throwable error;

        JavaTail(String bootstrap, String topic, int partitions) {
            thread = new Thread(() -> {
                List<TopicPartition> tps = IntStream.range(0, partitions)
                        .mapToObj(p -> new TopicPartition(topic, p)).toList();
                try (KafkaConsumer<String, String> c = Clients.consumer(bootstrap)) {
                    c.assign(tps);
                    c.seekToBeginning(tps);
                    while (!closing) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            records.add(new Consumed(r.partition(), r.offset(), r.value()));
                        }
                    }
                } catch (Throwable t) {
                    if (!closing) {
                        error = t;
                    }
                }
            }, "java-tail-consumer");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        String kind() {
            return "Java consumer (fallback: no usable librdkafka venv)";
        }

        @Override
        void checkHealthy() {
            if (error != null) {
                throw new AssertionError("the Java consumer failed: " + error, error);
            }
        }

        @Override
        public void close() {
            closing = true;
            try {
                thread.join(40_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
