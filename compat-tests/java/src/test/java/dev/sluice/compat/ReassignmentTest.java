package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.PROBE_TIMEOUT_MS;
import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.describeTopic;
import static dev.sluice.compat.ClusterProbes.ids;
import static dev.sluice.compat.ClusterProbes.leaderId;
import static dev.sluice.compat.ClusterProbes.millisSince;
import static dev.sluice.compat.ClusterProbes.partition;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListPartitionReassignmentsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Partition reassignment on 3-node clusters through the Java admin client
 * (alterPartitionReassignments / listPartitionReassignments): moving a single-replica partition to
 * two other brokers keeps every record and frees the old broker's files; growing a partition from
 * one replica to three keeps its leader; a target naming an unknown broker and a cancellation with
 * nothing to cancel are refused with Kafka's errors. Each test starts its own cluster and stops it
 * afterwards; on failure every node's log tail is printed.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ReassignmentTest {

    /** A reassignment of a few thousand small records must be finished within this long. */
    static final Duration REASSIGN_WAIT = Duration.ofSeconds(30);
    /** A broker that lost its replica must have removed the partition directory within this long. */
    static final Duration DELETE_WAIT = Duration.ofSeconds(10);
    static final Duration PLACEMENT_WAIT = Duration.ofSeconds(10);

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

    private Admin admin(String bootstrap) {
        Admin a = Clients.admin(bootstrap, Map.of(
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000",
                AdminClientConfig.METADATA_MAX_AGE_CONFIG, "1000",
                AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500"));
        admins.add(a);
        return a;
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[reassignment-test] " + fmt + "%n", args);
    }

    private static String describe(TopicPartitionInfo p) {
        return "p" + p.partition() + "{leader " + leaderId(p) + ", replicas " + ids(p.replicas())
                + ", isr " + ids(p.isr()) + "}";
    }

    private static Set<Integer> idSet(List<Integer> ids) {
        return new TreeSet<>(ids);
    }

    /** Every ongoing reassignment the controller reports (bounded like the other probes). */
    private static Map<TopicPartition, PartitionReassignment> reassignments(Admin admin) throws Exception {
        return admin.listPartitionReassignments(new ListPartitionReassignmentsOptions().timeoutMs(PROBE_TIMEOUT_MS))
                .reassignments().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
    }

    /** The ongoing reassignments among {@code partitions}. */
    private static Map<TopicPartition, PartitionReassignment> reassignments(Admin admin, Set<TopicPartition> partitions)
            throws Exception {
        return admin.listPartitionReassignments(partitions,
                        new ListPartitionReassignmentsOptions().timeoutMs(PROBE_TIMEOUT_MS))
                .reassignments().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
    }

    /**
     * Creates {@code topic} with one partition on exactly {@code replicas} (explicit assignment)
     * and waits until it has a leader and a full ISR; asserts the placement and that the first
     * replica leads.
     */
    private static TopicPartitionInfo createPlacedTopic(Admin admin, String topic, List<Integer> replicas)
            throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, Map.of(0, replicas)))).all());
        TopicPartitionInfo p = await(topic + "-0 has a leader and an ISR of " + replicas.size(), PLACEMENT_WAIT,
                seen -> {
                    TopicPartitionInfo q = partition(describeTopic(admin, topic), 0);
                    seen.set(describe(q));
                    return leaderId(q) != null && q.isr().size() == replicas.size() ? q : null;
                });
        assertEquals(replicas, ids(p.replicas()), "replicas of the explicitly placed " + describe(p));
        assertEquals(replicas.get(0), leaderId(p), "the preferred (first) replica leads " + describe(p));
        return p;
    }

    /** What a partition looked like while its reassignment ran, and how it ended. */
    record Completion(TopicPartitionInfo partition, List<PartitionReassignment> inProgress,
                      Set<Integer> leadersSeen, long completedAtNanos) {
    }

    /**
     * Polls until no reassignment is listed any more and {@code tp} has exactly the replicas and
     * ISR of {@code target} (as sets) and a leader among them; remembers every distinct
     * in-progress state listed on the way and every leader described.
     */
    private static Completion awaitReassigned(Admin admin, TopicPartition tp, List<Integer> target) throws Exception {
        List<PartitionReassignment> inProgress = new ArrayList<>();
        Set<Integer> leaders = new LinkedHashSet<>();
        long t0 = System.nanoTime();
        TopicPartitionInfo done = await("the reassignment of " + tp + " to " + target + " is finished: none listed, "
                + "replicas and ISR " + idSet(target) + ", leader among them", REASSIGN_WAIT, seen -> {
                    Map<TopicPartition, PartitionReassignment> ongoing = reassignments(admin);
                    TopicPartitionInfo p = partition(describeTopic(admin, tp.topic()), tp.partition());
                    seen.set("listed reassignments " + ongoing + "; " + describe(p));
                    Integer leader = leaderId(p);
                    if (leader != null) {
                        leaders.add(leader);
                    }
                    PartitionReassignment r = ongoing.get(tp);
                    if (r != null) {
                        PartitionReassignment last = inProgress.isEmpty() ? null : inProgress.get(inProgress.size() - 1);
                        if (last == null || !last.toString().equals(r.toString())) {
                            inProgress.add(r);
                        }
                        return null;
                    }
                    boolean finished = ongoing.isEmpty()
                            && idSet(ids(p.replicas())).equals(idSet(target))
                            && idSet(ids(p.isr())).equals(idSet(target))
                            && leader != null && target.contains(leader);
                    return finished ? p : null;
                });
        log("%s reassigned to %s in %d ms: %s; in-progress states listed: %s", tp, target, millisSince(t0),
                describe(done), inProgress);
        return new Completion(done, inProgress, leaders, System.nanoTime());
    }

    /**
     * Any in-progress state that was listed must follow Kafka's rules: replicas = target followed
     * by the old replicas not in it, adding = target minus old, removing = old minus target.
     */
    private static void assertInProgressStates(Completion c, List<Integer> old, List<Integer> target) {
        List<Integer> replicas = new ArrayList<>(target);
        old.stream().filter(id -> !target.contains(id)).forEach(replicas::add);
        Set<Integer> adding = target.stream().filter(id -> !old.contains(id)).collect(Collectors.toCollection(TreeSet::new));
        Set<Integer> removing = old.stream().filter(id -> !target.contains(id)).collect(Collectors.toCollection(TreeSet::new));
        for (PartitionReassignment r : c.inProgress()) {
            assertEquals(replicas, r.replicas(), "replicas of the listed in-progress reassignment " + r);
            assertEquals(adding, idSet(r.addingReplicas()), "adding replicas of the listed reassignment " + r);
            assertEquals(removing, idSet(r.removingReplicas()), "removing replicas of the listed reassignment " + r);
        }
    }

    /** Sends {@code values} to partition 0 with acks=all and asserts they land at offsets {@code first}, first+1, ... */
    private static void produce(String bootstrap, String topic, List<String> values, long first) throws Exception {
        Map<String, String> cfg = Map.of(
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000",
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000",
                ProducerConfig.METADATA_MAX_AGE_CONFIG, "1000",
                ProducerConfig.CLIENT_ID_CONFIG, "reassignment-producer");
        List<Future<RecordMetadata>> acks = new ArrayList<>(values.size());
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, cfg)) {
            for (String v : values) {
                acks.add(producer.send(new ProducerRecord<>(topic, 0, "k", v)));
            }
            producer.flush();
            for (int i = 0; i < values.size(); i++) {
                RecordMetadata md = Clients.get(acks.get(i));
                assertEquals(first + i, md.offset(), "offset of " + values.get(i) + " in " + topic + "-0");
            }
        }
    }

    /**
     * Reads partition 0 from offset {@code from} until {@code count} records arrived (30 s at
     * most), plus one more second for anything beyond them; returns "offset value" lines.
     */
    private static List<String> read(String bootstrap, String topic, long from, int count) {
        List<String> out = new ArrayList<>();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = Clients.consumer(bootstrap)) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, from);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (out.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    out.add(r.offset() + " " + r.value());
                }
            }
            long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            while (System.nanoTime() < settle) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    out.add(r.offset() + " " + r.value());
                }
            }
        }
        return out;
    }

    private static List<String> numbered(long from, List<String> values) {
        return IntStream.range(0, values.size()).mapToObj(i -> (from + i) + " " + values.get(i)).toList();
    }

    private static List<String> values(String prefix, int count) {
        return IntStream.range(0, count).mapToObj(i -> String.format("%s-%05d", prefix, i)).toList();
    }

    private static Path partitionDir(SluiceCluster cluster, int node, String topic) {
        return cluster.dataDir(node).resolve(topic + "-0");
    }

    /** The names in node {@code node}'s data directory, for failure messages. */
    private static String listing(SluiceCluster cluster, int node) {
        try (Stream<Path> entries = Files.list(cluster.dataDir(node))) {
            return entries.map(p -> p.getFileName().toString()).sorted().toList().toString();
        } catch (IOException e) {
            return "(cannot list " + cluster.dataDir(node) + ": " + e + ")";
        }
    }

    private static void assertHoldsPartition(SluiceCluster cluster, int node, String topic) {
        Path dir = partitionDir(cluster, node, topic);
        assertTrue(Files.isDirectory(dir), "node " + node + " holds a replica of " + topic + "-0, so " + dir
                + " exists; the data directory has " + listing(cluster, node));
    }

    // ------------------------------------------------------------------------------------------
    // a. RF 1 on broker 1 -> [2, 3]: data copied, leadership moves, broker 1 deletes its files
    // ------------------------------------------------------------------------------------------

    @Test
    void moveAReplicatedPartition() throws Exception {
        SluiceCluster cluster = clusters.start("reassign-move", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
        final String topic = "reassign-move";
        final TopicPartition tp = new TopicPartition(topic, 0);
        final List<Integer> old = List.of(1);
        final List<Integer> target = List.of(2, 3);
        log("placed: %s", describe(createPlacedTopic(admin, topic, old)));

        List<String> before = values("move", 2000);
        produce(cluster.bootstrap(), topic, before, 0);
        assertHoldsPartition(cluster, 1, topic);
        log("%d records acked on node 1", before.size());

        Clients.get(admin.alterPartitionReassignments(
                Map.of(tp, Optional.of(new NewPartitionReassignment(target)))).all());
        Completion c = awaitReassigned(admin, tp, target);
        TopicPartitionInfo p = c.partition();
        assertEquals(target, ids(p.replicas()), "replicas after the reassignment, in the order given: " + describe(p));
        assertEquals(idSet(target), idSet(ids(p.isr())), "ISR after the reassignment: " + describe(p));
        assertTrue(target.contains(leaderId(p)), "the leader is one of " + target + ": " + describe(p));
        assertInProgressStates(c, old, target);
        assertEquals(Map.of(), reassignments(admin, Set.of(tp)), "reassignments listed for " + tp + " once finished");

        // Node 1 no longer holds a replica: its files go (before the data is read back, so the
        // reads below can only be served by the new replicas).
        Path oldDir = partitionDir(cluster, 1, topic);
        await("node 1 removed " + oldDir + " within " + DELETE_WAIT.toMillis() + " ms of the reassignment finishing",
                DELETE_WAIT.minusMillis(millisSince(c.completedAtNanos())), seen -> {
                    seen.set("node 1 data directory " + listing(cluster, 1));
                    return Files.exists(oldDir) ? null : true;
                });
        assertHoldsPartition(cluster, 2, topic);
        assertHoldsPartition(cluster, 3, topic);

        assertEquals(numbered(0, before), read(cluster.bootstrap(), topic, 0, before.size()),
                "offset and value of every record read back after the move");

        List<String> after = values("after-move", 10);
        produce(cluster.bootstrap(), topic, after, before.size());
        assertEquals(numbered(before.size(), after), read(cluster.bootstrap(), topic, before.size(), after.size()),
                "records produced after the move, read back");
    }

    // ------------------------------------------------------------------------------------------
    // b. RF 1 on broker 2 -> [2, 1, 3]: two replicas added, the leader never changes
    // ------------------------------------------------------------------------------------------

    @Test
    void expandReplicationFactor() throws Exception {
        SluiceCluster cluster = clusters.start("reassign-expand", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
        final String topic = "reassign-expand";
        final TopicPartition tp = new TopicPartition(topic, 0);
        final List<Integer> old = List.of(2);
        final List<Integer> target = List.of(2, 1, 3);
        log("placed: %s", describe(createPlacedTopic(admin, topic, old)));

        List<String> records = values("expand", 500);
        produce(cluster.bootstrap(), topic, records, 0);

        Clients.get(admin.alterPartitionReassignments(
                Map.of(tp, Optional.of(new NewPartitionReassignment(target)))).all());
        Completion c = awaitReassigned(admin, tp, target);
        TopicPartitionInfo p = c.partition();
        assertEquals(target, ids(p.replicas()), "replicas after the reassignment, in the order given: " + describe(p));
        assertEquals(3, p.isr().size(), "ISR size after the reassignment: " + describe(p));
        assertEquals(2, leaderId(p), "the leader after the reassignment: " + describe(p));
        assertEquals(Set.of(2), c.leadersSeen(), "leaders described while the reassignment ran (node 2 stays leader)");
        assertInProgressStates(c, old, target);
        assertEquals(Map.of(), reassignments(admin), "reassignments listed once finished");
        for (int node : target) {
            assertHoldsPartition(cluster, node, topic);
        }

        assertEquals(numbered(0, records), read(cluster.bootstrap(), topic, 0, records.size()),
                "offset and value of every record read back after the expansion");
    }

    // ------------------------------------------------------------------------------------------
    // c. a target naming an unknown broker is refused; cancelling with nothing in progress too
    // ------------------------------------------------------------------------------------------

    @Test
    void invalidTargetAndCancelWithoutReassignment() throws Exception {
        SluiceCluster cluster = clusters.start("reassign-invalid", 3, Map.of());
        Admin admin = admin(cluster.bootstrap());
        awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
        final String topic = "reassign-invalid";
        final TopicPartition tp = new TopicPartition(topic, 0);
        createPlacedTopic(admin, topic, List.of(1));

        InvalidReplicaAssignmentException invalid = Clients.expectFailure(InvalidReplicaAssignmentException.class,
                admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(1, 7)))))
                        .values().get(tp));
        log("target [1, 7] refused as expected: %s", invalid);
        assertEquals(Map.of(), reassignments(admin), "reassignments listed after the refused target");
        TopicPartitionInfo p = partition(describeTopic(admin, topic), 0);
        assertEquals(List.of(1), ids(p.replicas()), "replicas after the refused target: " + describe(p));

        NoReassignmentInProgressException none = Clients.expectFailure(NoReassignmentInProgressException.class,
                admin.alterPartitionReassignments(Map.of(tp, Optional.<NewPartitionReassignment>empty()))
                        .values().get(tp));
        log("cancel without a reassignment refused as expected: %s", none);
        p = partition(describeTopic(admin, topic), 0);
        assertEquals(List.of(1), ids(p.replicas()), "replicas after the refused cancellation: " + describe(p));
    }
}
