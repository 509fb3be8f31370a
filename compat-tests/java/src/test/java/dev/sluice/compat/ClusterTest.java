package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.activeControllerId;
import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.controllerId;
import static dev.sluice.compat.ClusterProbes.describe;
import static dev.sluice.compat.ClusterProbes.describeTopic;
import static dev.sluice.compat.ClusterProbes.ids;
import static dev.sluice.compat.ClusterProbes.leaderId;
import static dev.sluice.compat.ClusterProbes.millisSince;
import static dev.sluice.compat.ClusterProbes.quorum;
import static dev.sluice.compat.ClusterProbes.voter;
import static dev.sluice.compat.ClusterProbes.voterIds;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Multi-node clusters (every node a broker and a controller-quorum voter) driven by the Java
 * admin client, producer and consumer: even replica placement, controller failover, broker
 * fencing after a kill -9, and a quorum that refuses metadata changes once it lost its majority.
 * Each test starts its own cluster and stops it afterwards; on failure every node's log tail is
 * printed.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterTest {

    /** A new active controller must be reported within this long of killing the old one. */
    static final Duration ELECTION = Duration.ofSeconds(2);
    /** Allowance for the polling describeCluster round trips on top of {@link #ELECTION}. */
    static final Duration OBSERVE_SLACK = Duration.ofMillis(500);
    /** How long to wait for a killed broker to be fenced (session timeout 3 s + slack). */
    static final Duration FENCE_WAIT = Duration.ofSeconds(10);
    static final Duration REJOIN_WAIT = Duration.ofSeconds(15);
    /** A restarted voter counts as caught up when its log end offset is this close to the leader's. */
    static final long MAX_VOTER_LAG = 10;

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    private final List<Admin> admins = new ArrayList<>();

    @AfterEach
    void stopEverything() {
        for (Admin a : admins) {
            try {
                a.close(Duration.ofSeconds(5));
            } catch (Exception e) {
                System.err.println("closing admin: " + e);
            }
        }
        admins.clear();
        clusters.closeAll(); // SIGTERM each node by its pid, SIGKILL if it does not exit
    }

    private Admin admin(String bootstrap, String... overrides) {
        Admin a = Clients.clusterAdmin(bootstrap, overrides);
        admins.add(a);
        return a;
    }

    private static Set<Integer> idSet(int... ids) {
        return IntStream.of(ids).boxed().collect(Collectors.toCollection(TreeSet::new));
    }

    private static Set<Integer> allIds(SluiceCluster c) {
        return new TreeSet<>(c.ids());
    }

    /** The quorum description for the test output, or why there is none (the checks are elsewhere). */
    private static String quorumOrError(Admin admin) {
        try {
            return describe(quorum(admin));
        } catch (Exception e) {
            return "(describeMetadataQuorum failed: " + e + ")";
        }
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[cluster-test] " + fmt + "%n", args);
    }

    // ------------------------------------------------------------------------------------------
    // a. 6 partitions x RF 3 over 3 brokers: even placement, produce and fetch through the leaders
    // ------------------------------------------------------------------------------------------

    @Test
    void sixPartitionsWithRf3AreSpreadEvenlyAndEveryRecordRoundTrips() throws Exception {
        SluiceCluster cluster = clusters.start("cluster-spread", 3, Map.of());
        Admin admin = admin(cluster.bootstrap(1)); // bootstrapped from ONE broker
        awaitLiveNodes(admin, allIds(cluster), Duration.ofSeconds(10));

        final String topic = "spread";
        final int partitions = 6;
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 3))).all());
        TopicDescription d = await("all " + partitions + " partitions of " + topic + " have a leader",
                Duration.ofSeconds(10), seen -> {
                    TopicDescription t = describeTopic(admin, topic);
                    seen.set(describe(t));
                    return t.partitions().size() == partitions
                            && t.partitions().stream().allMatch(p -> leaderId(p) != null) ? t : null;
                });
        log("placement: %s", describe(d));

        Map<Integer, Integer> ledPerBroker = new TreeMap<>();
        for (TopicPartitionInfo p : d.partitions()) {
            List<Integer> replicas = ids(p.replicas());
            assertEquals(3, replicas.size(), "replica count of partition " + p.partition() + ": " + describe(d));
            assertEquals(allIds(cluster), new TreeSet<>(replicas),
                    "partition " + p.partition() + " is replicated to the 3 distinct brokers: " + describe(d));
            Integer leader = leaderId(p);
            assertTrue(replicas.contains(leader),
                    "leader of partition " + p.partition() + " is one of its replicas: " + describe(d));
            ledPerBroker.merge(leader, 1, Integer::sum);
        }
        assertEquals(Map.of(1, 2, 2, 2, 3, 2), ledPerBroker,
                "partitions led per broker (each of 3 brokers leads 2 of 6): " + describe(d));

        // 600 keyed records, 100 to each partition by explicit partition number, default producer
        // settings (acks=all, idempotent) and a single bootstrap broker.
        final int perPartition = 100;
        final int n = partitions * perPartition;
        Map<Integer, List<String>> expected = new TreeMap<>();
        List<Future<RecordMetadata>> acks = new ArrayList<>(n);
        try (KafkaProducer<String, String> producer = Clients.producer(cluster.bootstrap(2), Map.of())) {
            for (int i = 0; i < n; i++) {
                int p = i % partitions;
                int seq = i / partitions;
                String key = "key-" + i;
                String value = "p" + p + "-v" + seq;
                expected.computeIfAbsent(p, k -> new ArrayList<>()).add(seq + " " + key + " " + value);
                acks.add(producer.send(new ProducerRecord<>(topic, p, key, value)));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = Clients.get(acks.get(i));
                assertEquals(i % partitions, md.partition(), "partition of record " + i);
                assertEquals(i / partitions, md.offset(), "offset of record " + i + " in partition " + md.partition());
            }
        }
        log("all %d records acked", n);

        List<TopicPartition> tps = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition(topic, p)).toList();
        Map<Integer, List<String>> got = new TreeMap<>();
        int count = 0;
        try (KafkaConsumer<String, String> consumer = Clients.consumer(cluster.bootstrap(3))) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (count < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                            .add(r.offset() + " " + r.key() + " " + r.value());
                    count++;
                }
            }
            long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(1); // anything beyond the 600?
            while (System.nanoTime() < settle) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    got.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                            .add(r.offset() + " " + r.key() + " " + r.value());
                    count++;
                }
            }
        }
        final int consumed = count;
        Map<Integer, Integer> perPartitionCounts = new TreeMap<>();
        got.forEach((p, l) -> perPartitionCounts.put(p, l.size()));
        assertEquals(n, consumed, "records consumed (per partition: " + perPartitionCounts + ")");
        assertEquals(expected, got, "consumed records (offset key value) per partition");
    }

    // ------------------------------------------------------------------------------------------
    // b. kill -9 the active controller: a new one within ~2 s; metadata writes continue; the old
    //    node rejoins as a broker and as a caught-up quorum follower
    // ------------------------------------------------------------------------------------------

    @Test
    void killingTheActiveControllerElectsANewOneAndTheOldNodeRejoinsAsFollower() throws Exception {
        SluiceCluster cluster = clusters.start("cluster-controller-failover", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, allIds(cluster), Duration.ofSeconds(10));

        int oldController = await("describeMetadataQuorum() reports a leader", Duration.ofSeconds(10),
                seen -> activeControllerId(admin));
        log("active controller: node %d; quorum %s", oldController, quorumOrError(admin));

        long killedAt = System.nanoTime();
        cluster.kill(oldController);
        Duration budget = ELECTION.plus(OBSERVE_SLACK);
        int newController = await("a controller other than node " + oldController + " is reported within "
                + budget.toMillis() + " ms of the kill", budget.minusMillis(millisSince(killedAt)), seen -> {
                    Integer c = activeControllerId(admin);
                    seen.set("quorum leader " + c);
                    return c != null && c != oldController ? c : null;
                });
        log("new controller node %d reported %d ms after the kill", newController, millisSince(killedAt));
        assertTrue(cluster.isRunning(newController), "the new controller " + newController + " is a live node");

        // Metadata changes go through the new controller.
        Clients.get(admin.createTopics(List.of(new NewTopic("after-failover", 3, (short) 2))).all());
        await("the topic created after the failover is visible", Duration.ofSeconds(10), seen -> {
            TopicDescription t = describeTopic(admin, "after-failover");
            seen.set(describe(t));
            return t.partitions().size() == 3 ? t : null;
        });
        Integer named = controllerId(admin);
        assertTrue(named != null && named != oldController && cluster.isRunning(named),
                "describeCluster().controller() after createTopics names a live broker: " + named);

        // The old controller comes back as a broker and as a voter following the new leader.
        cluster.restart(oldController);
        awaitLiveNodes(admin, allIds(cluster), REJOIN_WAIT);
        QuorumInfo rejoined = await("node " + oldController + " is a voter whose log end offset is within "
                + MAX_VOTER_LAG + " of the leader's", REJOIN_WAIT, seen -> {
                    QuorumInfo q = quorum(admin);
                    seen.set(describe(q));
                    QuorumInfo.ReplicaState me = voter(q, oldController);
                    QuorumInfo.ReplicaState leader = voter(q, q.leaderId());
                    return me != null && leader != null && me.logEndOffset() >= 0
                            && leader.logEndOffset() - me.logEndOffset() <= MAX_VOTER_LAG ? q : null;
                });
        log("after the restart: %s", describe(rejoined));
        assertEquals(allIds(cluster), voterIds(rejoined), "voters after the restart: " + describe(rejoined));
        assertNotEquals(oldController, rejoined.leaderId(),
                "the restarted node rejoins as a follower without taking leadership: " + describe(rejoined));
        Integer namedAfter = controllerId(admin);
        assertTrue(namedAfter != null && allIds(cluster).contains(namedAfter),
                "describeCluster().controller() names a live broker: " + namedAfter);
    }

    // ------------------------------------------------------------------------------------------
    // c. kill -9 a broker that is not the controller: fenced after the session timeout, back after
    //    a restart
    // ------------------------------------------------------------------------------------------

    @Test
    void aKilledBrokerIsFencedAfterTheSessionTimeoutAndComesBackAfterARestart() throws Exception {
        SluiceCluster cluster = clusters.start("cluster-fencing", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, allIds(cluster), Duration.ofSeconds(10));
        int controller = await("a quorum leader is reported", Duration.ofSeconds(10), seen -> activeControllerId(admin));
        int victim = cluster.ids().stream().filter(id -> id != controller).findFirst().orElseThrow();

        long killedAt = System.nanoTime();
        cluster.kill(victim);
        Set<Integer> survivors = new TreeSet<>(allIds(cluster));
        survivors.remove(victim);
        awaitLiveNodes(admin, survivors, FENCE_WAIT);
        log("node %d left describeCluster %d ms after kill -9 (session timeout %d ms)", victim,
                millisSince(killedAt), SluiceCluster.SESSION_TIMEOUT_MS);

        cluster.restart(victim);
        long restartedAt = System.nanoTime();
        awaitLiveNodes(admin, allIds(cluster), REJOIN_WAIT);
        log("node %d listed again %d ms after it was ready", victim, millisSince(restartedAt));
    }

    // ------------------------------------------------------------------------------------------
    // d. 5 voters: metadata writes work with 3 of them, fail (no hang) with 2, work again with 3
    // ------------------------------------------------------------------------------------------

    @Test
    void fiveNodeQuorumToleratesTwoLostVotersButNotThree() throws Exception {
        SluiceCluster cluster = clusters.start("cluster-quorum5", 5, Map.of());
        Admin admin = admin(cluster.bootstrap(), AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        awaitLiveNodes(admin, allIds(cluster), Duration.ofSeconds(15));
        int controller = await("describeMetadataQuorum() reports a leader", Duration.ofSeconds(10),
                seen -> activeControllerId(admin));
        log("controller: node %d; quorum %s", controller, quorumOrError(admin));
        List<Integer> others = cluster.ids().stream().filter(id -> id != controller).toList();

        // 2 of 5 voters gone: the majority (3) still commits metadata.
        cluster.kill(others.get(0));
        cluster.kill(others.get(1));
        Clients.get(admin.createTopics(List.of(new NewTopic("quorum-3-of-5", 1, (short) 1))).all());
        log("createTopics works with 3 of 5 voters");

        // 3 of 5 gone: no majority, so createTopics must fail -- and must not hang.
        cluster.kill(others.get(2));
        long t0 = System.nanoTime();
        Future<Void> noQuorum = admin.createTopics(List.of(new NewTopic("quorum-2-of-5", 1, (short) 1)),
                new CreateTopicsOptions().timeoutMs(5000)).all();
        try {
            noQuorum.get(25, TimeUnit.SECONDS);
            fail("createTopics succeeded with only 2 of 5 voters alive (nodes " + cluster.runningIds() + ")");
        } catch (ExecutionException expected) {
            log("createTopics without a quorum failed after %d ms: %s", millisSince(t0), expected.getCause());
        } catch (TimeoutException hung) {
            fail("createTopics without a quorum neither succeeded nor failed within 25 s (hang)");
        }

        // A third voter back: the majority is restored and metadata writes work again.
        cluster.restart(others.get(2));
        await("createTopics succeeds again once 3 of 5 voters are up", Duration.ofSeconds(30), seen -> {
            try {
                admin.createTopics(List.of(new NewTopic("quorum-regained", 1, (short) 1)),
                        new CreateTopicsOptions().timeoutMs(5000)).all().get(12, TimeUnit.SECONDS);
                return true;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    return true; // an earlier attempt got through after all
                }
                seen.set(String.valueOf(e.getCause()));
                return null;
            }
        });
        // The broker that forwarded the create waited for its own image; the one describeTopics
        // asks may still be a fetch behind (Kafka's metadata is eventually consistent too).
        TopicDescription regained = await("quorum-regained is described", Duration.ofSeconds(10),
                seen -> describeTopic(admin, "quorum-regained"));
        assertNotNull(regained, "quorum-regained is described");
        // With a majority again, the two voters killed first get fenced and the restarted one is live.
        awaitLiveNodes(admin, new TreeSet<>(cluster.runningIds()), FENCE_WAIT);
    }
}
