package dev.sluice.compat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeMetadataQuorumOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.DescribeTransactionsOptions;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * Short, bounded admin look-ups for multi-node tests (each call gives up after about two seconds,
 * so a dead node cannot stall a polling loop) and a polling helper.
 */
final class ClusterProbes {

    /** Per-call budget for one probe; polling loops retry on failure. */
    static final int PROBE_TIMEOUT_MS = 2000;
    private static final Duration POLL_INTERVAL = Duration.ofMillis(100);

    private ClusterProbes() {
    }

    /** The ids of the brokers describeCluster lists (live, unfenced brokers). */
    static Set<Integer> liveNodeIds(Admin admin) throws Exception {
        var result = admin.describeCluster(new DescribeClusterOptions().timeoutMs(PROBE_TIMEOUT_MS));
        return result.nodes().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS).stream()
                .map(Node::id).collect(Collectors.toCollection(TreeSet::new));
    }

    /**
     * describeCluster().controller() as an id, or null if none is reported: the live broker to
     * send controller-bound requests to (the one that answered, on Sluice), not the quorum leader.
     */
    static Integer controllerId(Admin admin) throws Exception {
        var result = admin.describeCluster(new DescribeClusterOptions().timeoutMs(PROBE_TIMEOUT_MS));
        Node c = result.controller().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
        return c == null || c.isEmpty() || c.id() < 0 ? null : c.id();
    }

    /**
     * The active controller: the metadata quorum's leader from describeMetadataQuorum, or null if
     * there is none. (describeCluster().controller() is only a live broker that forwards to it.)
     */
    static Integer activeControllerId(Admin admin) throws Exception {
        int leader = quorum(admin).leaderId();
        return leader < 0 ? null : leader;
    }

    static QuorumInfo quorum(Admin admin) throws Exception {
        return admin.describeMetadataQuorum(new DescribeMetadataQuorumOptions().timeoutMs(PROBE_TIMEOUT_MS))
                .quorumInfo().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
    }

    static Set<Integer> voterIds(QuorumInfo q) {
        return q.voters().stream().map(QuorumInfo.ReplicaState::replicaId)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static QuorumInfo.ReplicaState voter(QuorumInfo q, int id) {
        return q.voters().stream().filter(v -> v.replicaId() == id).findFirst().orElse(null);
    }

    static String describe(QuorumInfo q) {
        return "leader " + q.leaderId() + " epoch " + q.leaderEpoch() + " hw " + q.highWatermark() + " voters "
                + q.voters().stream().map(v -> v.replicaId() + "@leo" + v.logEndOffset())
                .collect(Collectors.joining(", ", "[", "]"))
                + " observers " + q.observers().stream().map(v -> v.replicaId() + "@leo" + v.logEndOffset())
                .collect(Collectors.joining(", ", "[", "]"));
    }

    static TopicDescription describeTopic(Admin admin, String topic) throws Exception {
        Map<String, TopicDescription> all = admin.describeTopics(List.of(topic),
                        new DescribeTopicsOptions().timeoutMs(PROBE_TIMEOUT_MS))
                .allTopicNames().get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
        return all.get(topic);
    }

    static TopicPartitionInfo partition(TopicDescription d, int partition) {
        return d.partitions().stream().filter(p -> p.partition() == partition).findFirst()
                .orElseThrow(() -> new AssertionError("no partition " + partition + " in " + describe(d)));
    }

    /** The leader's id, or null if the partition has no (known) leader. */
    static Integer leaderId(TopicPartitionInfo p) {
        Node l = p.leader();
        return l == null || l.id() < 0 ? null : l.id();
    }

    static List<Integer> ids(List<Node> nodes) {
        return nodes.stream().map(Node::id).toList();
    }

    static String describe(TopicDescription d) {
        return d.name() + " " + d.partitions().stream()
                .map(p -> "p" + p.partition() + "{leader " + leaderId(p) + ", replicas " + ids(p.replicas())
                        + ", isr " + ids(p.isr()) + "}")
                .collect(Collectors.joining(", ", "[", "]"));
    }

    /**
     * Polls until every partition of {@code topic} ({@code partitions} of them) has a leader and
     * an ISR of {@code isrSize}; returns that description.
     */
    static TopicDescription awaitIsr(Admin admin, String topic, int partitions, int isrSize, Duration timeout)
            throws InterruptedException {
        return await("every partition of " + topic + " has a leader and an ISR of " + isrSize, timeout, seen -> {
            TopicDescription d = describeTopic(admin, topic);
            seen.set(describe(d));
            boolean ok = d.partitions().size() == partitions && d.partitions().stream()
                    .allMatch(p -> leaderId(p) != null && p.isr().size() == isrSize);
            return ok ? d : null;
        });
    }

    /** Polls until describeCluster lists exactly {@code expected}. */
    static void awaitLiveNodes(Admin admin, Set<Integer> expected, Duration timeout) throws InterruptedException {
        await("describeCluster lists exactly the brokers " + expected, timeout, seen -> {
            Set<Integer> live = liveNodeIds(admin);
            seen.set("nodes " + live);
            return live.equals(expected) ? live : null;
        });
    }

    /** describeTransactions of one transactional id (its coordinator, state, producer id and epoch, partitions). */
    static TransactionDescription transaction(Admin admin, String transactionalId) throws Exception {
        return admin.describeTransactions(List.of(transactionalId),
                        new DescribeTransactionsOptions().timeoutMs(PROBE_TIMEOUT_MS))
                .description(transactionalId).get(PROBE_TIMEOUT_MS + 500L, TimeUnit.MILLISECONDS);
    }

    /** Polls describeTransactions until {@code transactionalId} is in {@code state}; returns that description. */
    static TransactionDescription awaitTransactionState(Admin admin, String transactionalId, TransactionState state,
                                                        Duration timeout) throws InterruptedException {
        return await("transaction " + transactionalId + " is in state " + state, timeout, seen -> {
            TransactionDescription d = transaction(admin, transactionalId);
            seen.set(String.valueOf(d));
            return d.state() == state ? d : null;
        });
    }

    /** One polling attempt: a non-null result ends the wait; {@code seen} describes the last observation. */
    interface Probe<T> {
        T poll(AtomicReference<String> seen) throws Exception;
    }

    /**
     * Calls {@code probe} every 100 ms until it returns non-null (returned) or {@code timeout}
     * passes (AssertionError naming the last observation and the last exception); a result that
     * only arrives after the timeout fails too. An exception thrown by the probe counts as "not yet".
     */
    static <T> T await(String what, Duration timeout, Probe<T> probe) throws InterruptedException {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        AtomicReference<String> seen = new AtomicReference<>("nothing yet");
        Throwable lastError = null;
        int attempts = 0;
        while (true) {
            attempts++;
            try {
                T value = probe.poll(seen);
                if (value != null) {
                    long now = System.nanoTime();
                    if (now > deadline) {
                        // A probe that started in time but answered late does not count as "within".
                        throw new AssertionError(String.format("%s only after %d ms, limit %d ms (last seen: %s)",
                                what, TimeUnit.NANOSECONDS.toMillis(now - start), timeout.toMillis(), seen.get()));
                    }
                    return value;
                }
                lastError = null;
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                lastError = e;
            }
            if (System.nanoTime() >= deadline) {
                throw new AssertionError(String.format("timed out after %d ms (%d attempts) waiting until %s; "
                                + "last seen: %s%s", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start),
                        attempts, what, seen.get(), lastError == null ? "" : "; last error: " + lastError),
                        lastError);
            }
            Thread.sleep(POLL_INTERVAL.toMillis());
        }
    }

    static long millisSince(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - nanos);
    }
}
