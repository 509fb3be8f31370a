package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Consumer groups with the classic protocol ({@code group.protocol=classic}): rebalancing among
 * three members as one leaves and another joins (range and cooperative-sticky), committed offsets
 * and resuming from them, and static membership (a restarted static member causes no rebalance).
 *
 * <p>The member/scenario helpers here are shared with {@link GroupConsumerProtocolTest}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GroupTest {

    static final int PARTITIONS = 6;
    static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(45);
    /** Assignments must stay unchanged this long before they count as settled. */
    static final Duration STABLE_FOR = Duration.ofMillis(1500);

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("groups", SluiceBroker.settings("group.initial.rebalance.delay.ms", "0"));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    // ------------------------------------------------------------------ tests

    @ParameterizedTest
    @ValueSource(strings = {"range", "cooperative-sticky"})
    void threeMembersLeaveAndJoin(String strategy) throws Exception {
        String name = "java-rebalance-" + strategy;
        leaveJoinScenario(broker, admin, name, name, Map.of(
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(strategy),
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000",
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500"),
                strategy.equals("cooperative-sticky"), true);
    }

    @Test
    void committedOffsetsAreWhereTheNextMemberResumes() throws Exception {
        String topic = "java-commit-resume";
        String group = "java-commit-resume";
        int parts = 3;
        int perPart = 20;
        createTopic(admin, topic, parts);
        produce(broker, topic, parts, perPart);
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        TopicPartition tp2 = new TopicPartition(topic, 2);
        Map<TopicPartition, OffsetAndMetadata> commit = Map.of(
                tp0, new OffsetAndMetadata(6, "after-6"),
                tp1, new OffsetAndMetadata(15, "after-15"));

        Properties p1 = groupProps(broker, group, "first", Map.of(
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass("cooperative-sticky")));
        try (KafkaConsumer<String, String> c1 = new KafkaConsumer<>(p1, new StringDeserializer(), new StringDeserializer())) {
            c1.subscribe(List.of(topic));
            Map<Integer, List<Long>> got = pollOffsets(c1, parts * perPart, Duration.ZERO);
            for (int p = 0; p < parts; p++) {
                assertEquals(range(0, perPart), got.get(p), "first member, partition " + p);
            }
            c1.commitSync(commit);
            Map<TopicPartition, OffsetAndMetadata> committed = c1.committed(Set.of(tp0, tp1, tp2));
            assertEquals(commit.get(tp0), committed.get(tp0));
            assertEquals(commit.get(tp1), committed.get(tp1));
            assertNull(committed.get(tp2), "partition 2 was never committed");
        }

        Map<TopicPartition, OffsetAndMetadata> fetched =
                Clients.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        fetched.values().removeIf(v -> v == null);
        assertEquals(commit, fetched, "ListConsumerGroupOffsets (OffsetFetch) after the member left");
        ConsumerGroupDescription d = describe(admin, group);
        assertEquals(GroupState.EMPTY, d.groupState(), "state after the only member closed: " + d);
        assertTrue(d.members().isEmpty(), "members after the only member closed: " + d);

        Properties p2 = groupProps(broker, group, "second", Map.of(
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass("range")));
        try (KafkaConsumer<String, String> c2 = new KafkaConsumer<>(p2, new StringDeserializer(), new StringDeserializer())) {
            c2.subscribe(List.of(topic));
            int want = (perPart - 6) + (perPart - 15) + perPart;
            Map<Integer, List<Long>> got = pollOffsets(c2, want, Duration.ofSeconds(1));
            assertEquals(range(6, perPart), got.get(0), "second member resumes partition 0 at the commit");
            assertEquals(range(15, perPart), got.get(1), "second member resumes partition 1 at the commit");
            assertEquals(range(0, perPart), got.get(2), "partition 2 (no commit) from auto.offset.reset=earliest");
        }
    }

    /**
     * Three static members (group.instance.id); one is closed without leaving the group and a new
     * consumer with the same instance id starts within session.timeout.ms. The coordinator hands it
     * the old assignment: no rebalance, so the other members' rebalance listeners stay silent and
     * their generation, member ids and assignments do not change. Which member restarts:
     * "last-joined" joined in the last rebalance (its new JoinGroup metadata is byte-identical to
     * its old one: no owned partitions, generation -1); "rejoined-follower" and "leader" (the first
     * to join) went through a later rebalance, so their stored subscription metadata lists owned
     * partitions and a generation that the new instance's does not. Kafka keeps the group Stable in
     * all three cases (the selected protocol does not change); for the leader it answers the
     * JoinGroup with skipAssignment (KIP-814).
     */
    @ParameterizedTest
    @ValueSource(strings = {"last-joined", "rejoined-follower", "leader"})
    void staticMemberRestartCausesNoRebalance(String which) throws Exception {
        String topic = "java-static-" + which;
        String group = "java-static-" + which;
        createTopic(admin, topic, PARTITIONS);
        Map<String, String> common = Map.of(
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass("range"),
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000",
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        List<Member> members = new ArrayList<>();
        try {
            // One at a time, so the first one is (and stays) the leader.
            for (int i = 0; i < 3; i++) {
                members.add(staticMember(group, topic, i, common));
                awaitBalanced(members, PARTITIONS);
            }
            int victimIndex = switch (which) {
                case "leader" -> 0;
                case "rejoined-follower" -> 1;
                default -> 2;
            };
            Member victim = members.get(victimIndex);
            List<Member> others = new ArrayList<>(members);
            others.remove(victim);

            Map<String, List<Integer>> before = awaitBalanced(members, PARTITIONS);
            int generation = victim.generation();
            for (Member m : members) {
                assertEquals(generation, m.generation(), m.name + " generation vs " + victim.name);
            }
            Map<String, Integer> assignedCalls = new HashMap<>();
            Map<String, Integer> revokedCalls = new HashMap<>();
            for (Member m : others) {
                assignedCalls.put(m.name, m.assignedCalls.get());
                revokedCalls.put(m.name, m.revokedCalls.get());
            }
            Map<String, MemberDescription> described = byInstanceId(describe(admin, group));
            assertEquals(3, described.size(), "members before the restart: " + described);

            victim.close(); // static member: no LeaveGroup
            members.remove(victim);
            Thread.sleep(1000);
            ConsumerGroupDescription during = describe(admin, group);
            assertEquals(3, during.members().size(),
                    "a closed static member stays in the group until its session times out: " + during);
            assertEquals(GroupState.STABLE, during.groupState(), "state while the static member is away: " + during);

            Member restarted = staticMember(group, topic, victimIndex, common);
            members.add(victimIndex, restarted);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!before.get(victim.name).equals(restarted.owned)) {
                restarted.checkHealthy();
                if (System.nanoTime() > deadline) {
                    fail("restarted static member " + restarted.name + " owns " + restarted.owned
                            + ", expected its old partitions " + before.get(victim.name));
                }
                Thread.sleep(50);
            }
            // Long enough for several heartbeats: a rebalance would show up by now.
            Thread.sleep(3000);
            Map<String, List<Integer>> after = awaitBalanced(members, PARTITIONS);
            assertEquals(before, after, "assignments after the static member came back");
            for (Member m : others) {
                m.checkHealthy();
                assertEquals(assignedCalls.get(m.name), m.assignedCalls.get(),
                        m.name + ": onPartitionsAssigned ran again (a rebalance happened)");
                assertEquals(revokedCalls.get(m.name), m.revokedCalls.get(),
                        m.name + ": onPartitionsRevoked ran (a rebalance happened)");
                assertEquals(0, m.lostCalls.get(), m.name + ": onPartitionsLost ran");
                assertEquals(generation, m.generation(), m.name + ": generation changed");
            }
            assertEquals(generation, restarted.generation(),
                    "the restarted static member rejoined into the same generation");
            assertTrue(restarted.assignedCalls.get() >= 1, "restarted member's onPartitionsAssigned never ran");

            ConsumerGroupDescription d = describe(admin, group);
            assertEquals(GroupState.STABLE, d.groupState(), "state after the restart: " + d);
            Map<String, MemberDescription> afterDescribed = byInstanceId(d);
            assertEquals(described.keySet(), afterDescribed.keySet(), "instance ids after the restart");
            for (Member m : others) {
                String id = m.instanceId;
                assertEquals(described.get(id).consumerId(), afterDescribed.get(id).consumerId(),
                        id + ": member id changed (it rejoined)");
                assertEquals(described.get(id).assignment(), afterDescribed.get(id).assignment(),
                        id + ": assignment changed");
            }
            assertEquals(described.get(victim.instanceId).assignment(),
                    afterDescribed.get(victim.instanceId).assignment(), "restarted member's assignment");
        } finally {
            closeAll(members);
        }
    }

    // ------------------------------------------------------------------ the shared scenario

    /**
     * Three members share a 6-partition topic; after the first rebalance every partition is owned
     * exactly once (two each), and again after one member closes (three each) and after a new
     * member joins (two each). The coordinator's DescribeGroups view must match the members' own.
     * {@code sticky}: survivors keep their partitions across each rebalance. {@code classic}: the
     * members' generation ids agree and increase with every rebalance.
     */
    static void leaveJoinScenario(SluiceBroker broker, Admin admin, String topic, String group,
                                  Map<String, String> props, boolean sticky, boolean classic) throws Exception {
        createTopic(admin, topic, PARTITIONS);
        int perPart = 5;
        produce(broker, topic, PARTITIONS, perPart);
        List<Member> members = new ArrayList<>();
        List<Member> closed = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                members.add(new Member("c" + i, groupProps(broker, group, "c" + i, props), topic, null,
                        GroupMembershipOperation.DEFAULT));
            }
            Map<String, List<Integer>> view1 = awaitBalanced(members, PARTITIONS);
            view1.values().forEach(ps -> assertEquals(2, ps.size(), "3 members: " + view1));
            checkCoordinatorView(admin, group, members);
            int gen1 = checkGeneration(members, classic, -1);

            Member leaving = members.remove(1);
            leaving.close(); // a dynamic member's close() sends LeaveGroup
            closed.add(leaving);
            Map<String, List<Integer>> view2 = awaitBalanced(members, PARTITIONS);
            view2.values().forEach(ps -> assertEquals(3, ps.size(), "2 members: " + view2));
            Set<Integer> orphans = new HashSet<>(view1.get(leaving.name));
            Set<Integer> takenOver = view2.values().stream().flatMap(List::stream)
                    .filter(orphans::contains).collect(Collectors.toSet());
            assertEquals(orphans, takenOver, "the leaver's partitions were taken over: " + view1 + " -> " + view2);
            if (sticky) {
                for (Member m : members) {
                    assertTrue(view2.get(m.name).containsAll(view1.get(m.name)),
                            m.name + " kept its partitions: " + view1 + " -> " + view2);
                }
            }
            checkCoordinatorView(admin, group, members);
            int gen2 = checkGeneration(members, classic, gen1);

            members.add(new Member("c3", groupProps(broker, group, "c3", props), topic, null,
                    GroupMembershipOperation.DEFAULT));
            Map<String, List<Integer>> view3 = awaitBalanced(members, PARTITIONS);
            view3.values().forEach(ps -> assertEquals(2, ps.size(), "3 members again: " + view3));
            if (sticky) {
                for (Member m : members.subList(0, 2)) {
                    assertTrue(view2.get(m.name).containsAll(view3.get(m.name)),
                            m.name + " only gave partitions away: " + view2 + " -> " + view3);
                }
            }
            checkCoordinatorView(admin, group, members);
            checkGeneration(members, classic, gen2);

            Set<String> seen = new HashSet<>();
            for (Member m : concat(members, closed)) {
                m.checkHealthy();
                assertTrue(m.foreign.isEmpty(), m.name + " got records of partitions it did not own: " + m.foreign);
                assertEquals(0, m.lostCalls.get(), m.name + ": partitions were reported lost");
                m.records.forEach(r -> seen.add(r.partition() + "@" + r.offset()));
            }
            Set<String> all = new HashSet<>();
            for (int p = 0; p < PARTITIONS; p++) {
                for (int o = 0; o < perPart; o++) {
                    all.add(p + "@" + o);
                }
            }
            assertEquals(all, seen, "every record was delivered to some member");
        } finally {
            closeAll(members);
        }
    }

    private static int checkGeneration(List<Member> members, boolean classic, int previous) {
        if (!classic) {
            return -1;
        }
        int gen = members.get(0).generation();
        for (Member m : members) {
            assertEquals(gen, m.generation(), m.name + "'s generation vs " + members.get(0).name + "'s");
        }
        assertTrue(gen > previous, "generation " + gen + " after a rebalance, previously " + previous);
        return gen;
    }

    /** DescribeGroups: Stable, exactly these members, each with the partitions it owns itself. */
    static void checkCoordinatorView(Admin admin, String group, List<Member> members) throws Exception {
        ConsumerGroupDescription d = describe(admin, group);
        assertEquals(GroupState.STABLE, d.groupState(), "group state: " + d);
        Map<String, List<Integer>> described = new TreeMap<>();
        for (MemberDescription md : d.members()) {
            described.put(md.clientId(), md.assignment().topicPartitions().stream()
                    .map(TopicPartition::partition).sorted().toList());
        }
        Map<String, List<Integer>> own = new TreeMap<>();
        for (Member m : members) {
            own.put(m.name, m.owned);
        }
        assertEquals(own, described, "DescribeGroups assignments (by client.id) vs the members' own");
    }

    // ------------------------------------------------------------------ helpers

    static String assignorClass(String strategy) {
        return switch (strategy) {
            case "range" -> "org.apache.kafka.clients.consumer.RangeAssignor";
            case "cooperative-sticky" -> "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            default -> throw new IllegalArgumentException(strategy);
        };
    }

    private Member staticMember(String group, String topic, int i, Map<String, String> common) {
        Map<String, String> props = new HashMap<>(common);
        props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-" + i);
        return new Member("s" + i, groupProps(broker, group, "s" + i, props), topic, "static-" + i,
                GroupMembershipOperation.REMAIN_IN_GROUP);
    }

    static Properties groupProps(SluiceBroker broker, String group, String clientId, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "5000");
        p.putAll(extra);
        return p;
    }

    static void createTopic(Admin admin, String name, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all());
    }

    /** perPartition records ("p<P>-<i>") to each partition; checks they land at offsets 0.. in order. */
    static void produce(SluiceBroker broker, String topic, int partitions, int perPartition) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    futures.add(producer.send(new ProducerRecord<>(topic, p, "k" + i, "p" + p + "-" + i)));
                }
            }
            int n = 0;
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    RecordMetadata md = Clients.get(futures.get(n++));
                    assertEquals(p, md.partition());
                    assertEquals(i, md.offset(), "offset of record " + i + " in partition " + p);
                }
            }
        }
    }

    static ConsumerGroupDescription describe(Admin admin, String group) throws Exception {
        ConsumerGroupDescription d = Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
        assertNotNull(d, "no description of " + group);
        return d;
    }

    private static Map<String, MemberDescription> byInstanceId(ConsumerGroupDescription d) {
        Map<String, MemberDescription> out = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            out.put(m.groupInstanceId().orElseThrow(() -> new AssertionError("member without instance id: " + m)), m);
        }
        return out;
    }

    /** Polls until {@code want} records arrived, then {@code settle} longer; partition -> offsets in order. */
    static Map<Integer, List<Long>> pollOffsets(KafkaConsumer<String, String> c, int want, Duration settle) {
        Map<Integer, List<Long>> out = new TreeMap<>();
        int n = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (n < want) {
            if (System.nanoTime() > deadline) {
                fail("timed out: " + n + " of " + want + " records: " + out);
            }
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                assertEquals("p" + r.partition() + "-" + r.offset(), r.value(), "record value");
                out.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.offset());
                n++;
            }
        }
        long end = System.nanoTime() + settle.toNanos();
        while (System.nanoTime() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                out.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.offset());
            }
        }
        return out;
    }

    static List<Long> range(int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> (long) i).toList();
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        List<T> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    /**
     * Polls every member (each in its own thread) until each partition is owned by exactly one
     * member, every member owns partitions/members (rounded down or up) of them, and that picture
     * held for {@link #STABLE_FOR}. Returns member name -> sorted partitions.
     */
    static Map<String, List<Integer>> awaitBalanced(List<Member> members, int partitions) throws InterruptedException {
        int n = members.size();
        int lo = partitions / n;
        int hi = (partitions + n - 1) / n;
        List<Integer> everyPartition = IntStream.range(0, partitions).boxed().toList();
        long deadline = System.nanoTime() + SETTLE_TIMEOUT.toNanos();
        long stableSince = System.nanoTime();
        Map<String, List<Integer>> last = null;
        while (System.nanoTime() < deadline) {
            Map<String, List<Integer>> view = new TreeMap<>();
            for (Member m : members) {
                m.checkHealthy();
                view.put(m.name, m.owned);
            }
            List<Integer> owned = view.values().stream().flatMap(List::stream).sorted().toList();
            boolean ok = owned.equals(everyPartition)
                    && view.values().stream().allMatch(ps -> ps.size() >= lo && ps.size() <= hi);
            if (ok && view.equals(last)) {
                if (System.nanoTime() - stableSince >= STABLE_FOR.toNanos()) {
                    return view;
                }
            } else {
                stableSince = System.nanoTime();
            }
            last = view;
            Thread.sleep(50);
        }
        return fail("assignment did not settle to every partition owned exactly once (and evenly) within "
                + SETTLE_TIMEOUT.toSeconds() + " s; last view: " + last);
    }

    static void closeAll(List<Member> members) {
        for (Member m : members) {
            try {
                m.close();
            } catch (Exception e) {
                System.err.println("closing " + m.name + ": " + e);
            }
        }
    }

    /** A subscribed consumer polling in its own thread; records what its listener and polls saw. */
    static final class Member implements AutoCloseable {
        final String name;
        final String instanceId;
        final AtomicInteger assignedCalls = new AtomicInteger();
        final AtomicInteger revokedCalls = new AtomicInteger();
        final AtomicInteger lostCalls = new AtomicInteger();
        final Queue<ConsumerRecord<String, String>> records = new ConcurrentLinkedQueue<>();
        final Queue<String> foreign = new ConcurrentLinkedQueue<>();
        volatile List<Integer> owned = List.of();
        private volatile ConsumerGroupMetadata groupMetadata;
        private volatile Throwable error;
        private volatile boolean running = true;
        private final Thread thread;

        Member(String name, Properties props, String topic, String instanceId, GroupMembershipOperation onClose) {
            this.name = name;
            this.instanceId = instanceId;
            this.thread = new Thread(() -> run(props, topic, onClose), "group-member-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        private void run(Properties props, String topic, GroupMembershipOperation onClose) {
            KafkaConsumer<String, String> c;
            try {
                c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
            } catch (Throwable t) {
                error = t;
                return;
            }
            try {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        revokedCalls.incrementAndGet();
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        assignedCalls.incrementAndGet();
                    }

                    @Override
                    public void onPartitionsLost(Collection<TopicPartition> partitions) {
                        lostCalls.incrementAndGet();
                    }
                });
                while (running) {
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                    Set<TopicPartition> assignment = c.assignment();
                    for (ConsumerRecord<String, String> r : recs) {
                        records.add(r);
                        if (!assignment.contains(new TopicPartition(r.topic(), r.partition()))) {
                            foreign.add(r.partition() + "@" + r.offset());
                        }
                    }
                    owned = assignment.stream().filter(tp -> tp.topic().equals(topic))
                            .map(TopicPartition::partition).sorted().toList();
                    groupMetadata = c.groupMetadata();
                }
            } catch (Throwable t) {
                error = t;
            } finally {
                try {
                    c.close(CloseOptions.groupMembershipOperation(onClose).withTimeout(Duration.ofSeconds(10)));
                } catch (Throwable t) {
                    if (error == null) {
                        error = t;
                    }
                }
            }
        }

        int generation() {
            ConsumerGroupMetadata m = groupMetadata;
            return m == null ? -1 : m.generationId();
        }

        void checkHealthy() {
            if (error != null) {
                throw new AssertionError("member " + name + " failed: " + error, error);
            }
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            thread.join(30_000);
            if (thread.isAlive()) {
                throw new AssertionError("member " + name + " did not stop within 30 s");
            }
            checkHealthy();
        }
    }
}
