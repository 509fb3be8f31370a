package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.errors.LogDirNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Several log dirs (KIP-113): the admin's describeLogDirs and describeReplicaLogDirs, and
 * alterReplicaLogDirs moving every partition to the other dir while an acks=all producer
 * writes; every acknowledged record is then read back exactly once.
 */
class LogDirsTest {

    private static final String TOPIC = "jbod";
    private static final int PARTITIONS = 4;
    private static final int BROKER = SluiceBroker.NODE_ID;

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        broker = SluiceBroker.start("log-dirs", SluiceBroker.settings("log.dirs", "{data}/d1,{data}/d2"));
        admin = Clients.admin(broker);
        Clients.get(admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all());
    }

    @AfterAll
    static void stop() {
        Clients.close(admin, broker);
    }

    private static Map<String, LogDirDescription> dirs() throws Exception {
        return Clients.get(admin.describeLogDirs(List.of(BROKER)).allDescriptions()).get(BROKER);
    }

    /** The log dir holding each partition of the topic. */
    private static Map<Integer, String> placement() throws Exception {
        Map<Integer, String> at = new HashMap<>();
        for (Map.Entry<String, LogDirDescription> d : dirs().entrySet()) {
            for (Map.Entry<TopicPartition, ReplicaInfo> r : d.getValue().replicaInfos().entrySet()) {
                if (r.getKey().topic().equals(TOPIC) && !r.getValue().isFuture()) {
                    at.put(r.getKey().partition(), d.getKey());
                }
            }
        }
        return at;
    }

    @Test
    void describeLogDirsListsBothDirsWithTheirVolumesAndSpreadsPartitions() throws Exception {
        Map<String, LogDirDescription> dirs = dirs();
        assertEquals(2, dirs.size(), "both configured dirs: " + dirs.keySet());
        for (Map.Entry<String, LogDirDescription> d : dirs.entrySet()) {
            assertNull(d.getValue().error(), d.getKey());
            long total = d.getValue().totalBytes().orElse(-1);
            long usable = d.getValue().usableBytes().orElse(-1);
            assertTrue(total > 0 && usable >= 0 && usable <= total, d.getKey() + ": total " + total + ", usable " + usable);
        }
        Map<Integer, String> at = placement();
        assertEquals(PARTITIONS, at.size(), "every partition is in some dir: " + at);
        Set<String> used = new HashSet<>(at.values());
        assertEquals(2, used.size(), "new partitions go to the dir with the fewest: " + at);
    }

    @Test
    void badDirsAndUnknownPartitionsAreRefused() throws Exception {
        Map<TopicPartitionReplica, String> bad = Map.of(new TopicPartitionReplica(TOPIC, 0, BROKER), "/no/such/log/dir");
        Clients.expectFailure(LogDirNotFoundException.class, admin.alterReplicaLogDirs(bad).all());
        String someDir = dirs().keySet().iterator().next();
        Map<TopicPartitionReplica, String> unknown = Map.of(new TopicPartitionReplica("no-such-topic", 0, BROKER), someDir);
        Clients.expectFailure(UnknownTopicOrPartitionException.class, admin.alterReplicaLogDirs(unknown).all());
    }

    @Test
    void everyPartitionMovesUnderAcksAllLoadAndNothingAcknowledgedIsLost() throws Exception {
        Map<Integer, String> before = placement();
        List<String> dirNames = new ArrayList<>(dirs().keySet());
        Set<String> acked = ConcurrentHashMap.newKeySet();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicReference<Exception> sendError = new AtomicReference<>();
        AtomicInteger sent = new AtomicInteger();
        Thread writer = new Thread(() -> {
            try (KafkaProducer<String, String> p = Clients.producer(broker, Map.of("acks", "all", "linger.ms", "5"))) {
                while (running.get()) {
                    int i = sent.getAndIncrement();
                    String v = "v" + i;
                    p.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, null, v), (md, e) -> {
                        if (e == null) {
                            acked.add(v);
                        } else {
                            sendError.compareAndSet(null, e);
                        }
                    });
                    if (i % 200 == 199) {
                        p.flush();
                    }
                }
                p.flush();
            }
        }, "log-dirs-writer");
        writer.start();
        try {
            waitFor(() -> acked.size() >= 2000, "the producer's first acknowledgements");
            Map<TopicPartitionReplica, String> moves = new HashMap<>();
            before.forEach((p, dir) -> moves.put(new TopicPartitionReplica(TOPIC, p, BROKER),
                    dirNames.get(0).equals(dir) ? dirNames.get(1) : dirNames.get(0)));
            Clients.get(admin.alterReplicaLogDirs(moves).all());
            waitFor(() -> {
                Map<TopicPartitionReplica, ReplicaLogDirInfo> now = Clients.get(admin.describeReplicaLogDirs(moves.keySet()).all());
                return moves.entrySet().stream().allMatch(m -> m.getValue().equals(now.get(m.getKey()).getCurrentReplicaLogDir())
                        && now.get(m.getKey()).getFutureReplicaLogDir() == null);
            }, "every replica in its new dir");
            int movedAt = acked.size();
            waitFor(() -> acked.size() >= movedAt + 2000, "acknowledgements after the moves");
        } finally {
            running.set(false);
            writer.join(60_000);
        }
        if (sendError.get() != null) {
            fail("a send failed during the moves: " + sendError.get());
        }
        Map<Integer, String> after = placement();
        before.forEach((p, dir) -> assertTrue(!dir.equals(after.get(p)), "partition " + p + " moved off " + dir + ": " + after));
        List<ConsumerRecord<String, String>> read = Clients.readAll(broker.bootstrap(), Clients.partitions(TOPIC, PARTITIONS), "read_uncommitted");
        Map<String, Integer> seen = new HashMap<>();
        for (ConsumerRecord<String, String> r : read) {
            seen.merge(r.value(), 1, Integer::sum);
        }
        List<String> lost = acked.stream().filter(v -> !seen.containsKey(v)).limit(10).toList();
        assertTrue(lost.isEmpty(), "acknowledged records lost in the moves: " + lost);
        List<String> twice = seen.entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).limit(10).toList();
        assertTrue(twice.isEmpty(), "records read more than once: " + twice);
        System.out.printf("[log-dirs] %d records acknowledged, %d read back, partitions moved %s -> %s%n",
                acked.size(), read.size(), before, after);
    }

    private interface Check {
        boolean ok() throws Exception;
    }

    private static void waitFor(Check check, String what) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!check.ok()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting for " + what);
            }
            Thread.sleep(100);
        }
    }
}
