package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InconsistentGroupProtocolException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-932 share groups with kafka-clients 4.4's {@link KafkaShareConsumer}: ShareGroupHeartbeat,
 * ShareFetch and ShareAcknowledge, in implicit and explicit acknowledgement mode, and what needs
 * their v2: {@code share.acquire.mode=record_limit} (KIP-1206) and {@link AcknowledgeType#RENEW}
 * (KIP-1222). One broker for the class, with a short record lock so locks that run out are seen
 * quickly.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShareConsumerTest {

    private static final long LOCK_MS = 3000;

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("share", SluiceBroker.settings(
                "group.share.record.lock.duration.ms", Long.toString(LOCK_MS),
                "group.share.heartbeat.interval.ms", "500"));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static KafkaShareConsumer<String, String> shareConsumer(String group, String mode) {
        return ShareProbes.consumer(broker.bootstrap(), group, mode);
    }

    private static void createTopic(String name, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all());
    }

    private static void produce(String topic, int partitions, int count) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, null, "r" + i));
            }
            producer.flush();
        }
    }

    /** Writes r0..r{n-1} to partition 0 as one batch (the producer sends only on flush). */
    private static void produceOneBatch(String topic, int n) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker, Map.of("linger.ms", "60000"))) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "r" + i));
            }
            producer.flush();
        }
    }

    /** The values of the first poll of {@code c} that returns records (within 20 s). */
    private static List<String> firstPoll(KafkaShareConsumer<String, String> c) {
        List<String> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 20_000;
        while (got.isEmpty() && System.currentTimeMillis() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
        }
        return got;
    }

    private static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    private static void joinAlone(KafkaShareConsumer<String, String> c, String group, String topic, int partitions)
            throws InterruptedException {
        ShareProbes.joinAlone(admin, c, group, topic, partitions);
    }

    private static boolean assigned(String group, int members, int partitions) {
        return ShareProbes.assigned(admin, group, members, partitions);
    }

    /** A thread that polls until stopped, handing each record to {@code onRecord}. */
    private static Thread poller(KafkaShareConsumer<String, String> c, AtomicBoolean stop,
            java.util.function.BiConsumer<KafkaShareConsumer<String, String>, ConsumerRecord<String, String>> onRecord) {
        Thread t = new Thread(() -> {
            try {
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        onRecord.accept(c, r);
                    }
                }
            } finally {
                c.close(Duration.ofSeconds(10));
            }
        });
        t.start();
        return t;
    }

    @Test
    void threeConsumersShareThreePartitionsEachRecordOnce() throws Exception {
        String topic = "share-implicit";
        String group = "sg-implicit";
        createTopic(topic, 3);
        AtomicBoolean stop = new AtomicBoolean();
        Map<String, Integer> deliveries = new ConcurrentHashMap<>();
        Map<Integer, Integer> perConsumer = new ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int id = i;
            KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit");
            c.subscribe(List.of(topic));
            threads.add(poller(c, stop, (consumer, r) -> {
                deliveries.merge(r.value(), 1, Integer::sum);
                perConsumer.merge(id, 1, Integer::sum);
            }));
        }
        try {
            waitFor("three members sharing three partitions", () -> assigned(group, 3, 3));
            // A fetch sent before a member heard of its smaller share may still be waiting.
            Thread.sleep(1000);
            int n = 300;
            produce(topic, 3, n);
            waitFor("every record", () -> deliveries.size() == n);
            // Longer than a lock: a record acknowledged late would come back by now.
            Thread.sleep(LOCK_MS + 1000);
            assertEquals(n, deliveries.size());
            deliveries.forEach((v, times) -> assertEquals(1, times, v + " delivered " + times + " times"));
            assertEquals(3, perConsumer.size(), "every consumer got records: " + perConsumer);
        } finally {
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
        }
    }

    @Test
    void releasedRecordsComeBackRejectedDoNot() throws Exception {
        String topic = "share-explicit";
        String group = "sg-explicit";
        createTopic(topic, 1);
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "explicit")) {
            joinAlone(c, group, topic, 1);
            produce(topic, 1, 9);
            Map<String, List<Short>> seen = new HashMap<>();
            long deadline = System.currentTimeMillis() + 30_000;
            // r0, r3, r6 are released once, r1, r4, r7 rejected, the rest accepted.
            while (System.currentTimeMillis() < deadline && !(seen.size() == 9 && redelivered(seen) == 3)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    List<Short> counts = seen.computeIfAbsent(r.value(), k -> new ArrayList<>());
                    counts.add(r.deliveryCount().orElse((short) -1));
                    int i = Integer.parseInt(r.value().substring(1));
                    AcknowledgeType t = i % 3 == 1 ? AcknowledgeType.REJECT
                            : (i % 3 == 0 && counts.size() == 1) ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    c.acknowledge(r, t);
                }
                c.commitSync();
            }
            // Nothing more comes: the rejected and accepted records are done.
            long quiet = System.currentTimeMillis() + 1500;
            while (System.currentTimeMillis() < quiet) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    seen.computeIfAbsent(r.value(), k -> new ArrayList<>()).add(r.deliveryCount().orElse((short) -1));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
            for (int i = 0; i < 9; i++) {
                List<Short> counts = seen.get("r" + i);
                List<Short> expected = i % 3 == 0 ? List.of((short) 1, (short) 2) : List.of((short) 1);
                assertEquals(expected, counts, "delivery counts of r" + i);
            }
        }
    }

    @Test
    void recordLimitAcquiresNoMoreThanMaxPollRecords() throws Exception {
        String topic = "share-record-limit";
        String group = "sg-record-limit";
        createTopic(topic, 1);
        // A lock longer than the test: what a acquires stays a's, however slowly b joins.
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        Clients.get(admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.record.lock.duration.ms", "60000"), AlterConfigOp.OpType.SET)))).all());
        Properties strict = new Properties();
        strict.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "3");
        strict.put(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit");
        try (KafkaShareConsumer<String, String> a = ShareProbes.consumer(broker.bootstrap(), group, "explicit", strict);
                KafkaShareConsumer<String, String> b = shareConsumer(group, "explicit")) {
            joinAlone(a, group, topic, 1);
            // One batch of ten: batch_optimized would hand all of it to a's first fetch.
            produceOneBatch(topic, 10);
            assertEquals(List.of("r0", "r1", "r2"), firstPoll(a));
            // a's client may have sent one more ShareFetch while its first poll returned (a poll
            // that found its buffer empty asks for more, and the answer can land first), so a
            // holds r0-r2 or r0-r5. What it never acquired goes to b on its first delivery.
            b.subscribe(List.of(topic));
            Map<String, Short> others = new HashMap<>();
            long deadline = System.currentTimeMillis() + 30_000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                for (ConsumerRecord<String, String> r : b.poll(Duration.ofMillis(200))) {
                    others.put(r.value(), r.deliveryCount().orElse((short) -1));
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                b.commitSync();
                if (others.containsKey("r9") && quietUntil == Long.MAX_VALUE) {
                    quietUntil = System.currentTimeMillis() + 1000;
                }
            }
            // b has a tail of the batch, each record once: r{first}..r9.
            int first = 10 - others.size();
            Map<String, Short> expected = new HashMap<>();
            for (int i = first; i < 10; i++) {
                expected.put("r" + i, (short) 1);
            }
            assertEquals(expected, others, "b's records and their delivery counts");
            assertTrue(first == 3 || first == 6, "a acquired " + first + " records, not whole fetches of 3: " + others);
        }
    }

    @Test
    void renewKeepsARecordPastItsLock() throws Exception {
        String topic = "share-renew";
        String group = "sg-renew";
        createTopic(topic, 1);
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "explicit")) {
            joinAlone(c, group, topic, 1);
            produce(topic, 1, 1);
            List<Short> deliveries = new ArrayList<>();
            long start = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            boolean accepted = false;
            // RENEW each time the record comes back (the client hands a renewed record to the
            // next poll), for more than two lock durations; then ACCEPT it.
            while (!accepted && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    deliveries.add(r.deliveryCount().orElse((short) -1));
                    if (start == 0) {
                        start = System.currentTimeMillis();
                    }
                    boolean hold = System.currentTimeMillis() - start < 2 * LOCK_MS + 500;
                    c.acknowledge(r, hold ? AcknowledgeType.RENEW : AcknowledgeType.ACCEPT);
                    accepted = !hold;
                }
                Map<TopicIdPartition, Optional<KafkaException>> results = c.commitSync();
                results.forEach((tp, e) -> assertTrue(e.isEmpty(), tp + ": " + e));
            }
            assertTrue(accepted, "the record was accepted after " + deliveries.size() + " deliveries");
            assertTrue(deliveries.size() > 1, "a renewed record comes back to the next poll");
            // Had the lock run out once, the record would have come back with a higher count.
            deliveries.forEach(d -> assertEquals((short) 1, d, "delivery counts " + deliveries));
        }
    }

    private static int redelivered(Map<String, List<Short>> seen) {
        return (int) seen.values().stream().filter(c -> c.size() > 1).count();
    }

    @Test
    void aStalledConsumersRecordsGoToTheOthersAfterTheLock() throws Exception {
        String topic = "share-stalled";
        String group = "sg-stalled";
        createTopic(topic, 1);
        int n = 20;
        // Implicit mode: it acknowledges a batch only on its next poll, which never comes.
        KafkaShareConsumer<String, String> stalled = shareConsumer(group, "implicit");
        stalled.subscribe(List.of(topic));
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        try {
            waitFor("the first member's assignment", () -> {
                stalled.poll(Duration.ofMillis(100));
                return assigned(group, 1, 1);
            });
            // One batch, so the one poll below acquires all of it.
            produceOneBatch(topic, n);
            // It takes the records and then stops polling without acknowledging them.
            Set<String> held = new HashSet<>(firstPoll(stalled));
            assertEquals(n, held.size(), "the stalled consumer acquired every record first");
            long stalledAt = System.currentTimeMillis();
            Map<String, Short> others = new ConcurrentHashMap<>();
            for (int i = 0; i < 2; i++) {
                KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit");
                c.subscribe(List.of(topic));
                threads.add(poller(c, stop, (consumer, r) -> others.merge(r.value(),
                        r.deliveryCount().orElse((short) -1), (a, b) -> (short) Math.max(a, b))));
            }
            waitFor("the other consumers to get every record", () -> others.size() == n);
            assertTrue(System.currentTimeMillis() - stalledAt >= LOCK_MS - 500,
                    "records came back before the lock ran out");
            // At least 2: a record whose second holder is slow past the lock (a loaded CI
            // machine) comes back once more, with a higher count again.
            others.forEach((v, count) -> assertTrue(count >= 2, v + "'s delivery count " + count));
        } finally {
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
            stalled.close(Duration.ofSeconds(10));
        }
    }

    @Test
    void groupConfigsStartTheGroupAtEarliestAndSetItsLock() throws Exception {
        String topic = "share-group-config";
        String group = "sg-group-config";
        createTopic(topic, 1);
        // Written before the group exists: at the default (latest) it would never see them.
        produce(topic, 1, 5);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        Clients.get(admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", "20000"), AlterConfigOp.OpType.SET)))).all());
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            Set<String> seen = new HashSet<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen.size() < 5 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
            }
            assertEquals(Set.of("r0", "r1", "r2", "r3", "r4"), seen);
            // The group's lock, not the broker's (LOCK_MS).
            assertEquals(Optional.of(20000), c.acquisitionLockTimeoutMs());
        }
    }

    @Test
    void describeListAndDeleteAShareGroup() throws Exception {
        String topic = "share-describe";
        String group = "sg-describe";
        createTopic(topic, 2);
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            joinAlone(c, group, topic, 2);
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
            assertEquals(GroupState.STABLE, d.groupState());
            ShareMemberDescription m = d.members().iterator().next();
            assertEquals("sluice-compat-share", m.clientId());
            assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), m.assignment().topicPartitions());
            assertTrue(Clients.get(admin.listGroups().all()).stream()
                    .anyMatch(g -> g.groupId().equals(group) && g.type().equals(Optional.of(GroupType.SHARE))),
                    "ListGroups shows the share group");
        }
        // Its one member left on close, so the empty group can be deleted (DeleteGroups).
        waitFor("the member to leave", () -> {
            try {
                return admin.describeShareGroups(List.of(group)).all().get().get(group).members().isEmpty();
            } catch (Exception e) {
                return false;
            }
        });
        Clients.get(admin.deleteShareGroups(List.of(group)).all());
        assertTrue(Clients.get(admin.listGroups().all()).stream().noneMatch(g -> g.groupId().equals(group)));
    }

    @Test
    void aClassicConsumerCannotJoinAShareGroupsId() throws Exception {
        String topic = "share-taken";
        String group = "sg-taken";
        createTopic(topic, 1);
        try (KafkaShareConsumer<String, String> share = shareConsumer(group, "implicit")) {
            joinAlone(share, group, topic, 1);
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            try (KafkaConsumer<String, String> classic = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
                classic.subscribe(List.of(topic));
                // JoinGroup on a share group's id: INCONSISTENT_GROUP_PROTOCOL, as in Kafka 4.4.
                assertThrows(InconsistentGroupProtocolException.class, () -> {
                    long deadline = System.currentTimeMillis() + 30_000;
                    while (System.currentTimeMillis() < deadline) {
                        classic.poll(Duration.ofMillis(200));
                    }
                });
            }
        }
    }
}
