package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.describe;
import static dev.sluice.compat.ClusterProbes.millisSince;
import static dev.sluice.compat.ClusterProbes.quorum;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Admin requests right after kill -9 of the active controller (issue 27): a Java admin client
 * created on the survivors during the election must get its createTopics through within 5 s, and
 * describeCluster must name a live broker as the controller, never the dead node (that broker
 * forwards to whichever node wins the election). One 3-node cluster for every round; after each round the killed node is restarted and
 * the next round starts once it is listed again and its metadata log has caught up.
 */
@Timeout(value = 170, unit = TimeUnit.SECONDS)
class ControllerFailoverTest {

    static final int ROUNDS = Integer.getInteger("sluice.failoverRounds", 10);
    /** createTopics must be answered within this long of the kill. */
    static final Duration ROUND_BUDGET = Duration.ofSeconds(5);
    static final Duration REJOIN_WAIT = Duration.ofSeconds(20);

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    private static void log(String fmt, Object... args) {
        System.out.printf("[controller-failover] " + fmt + "%n", args);
    }

    /** The quorum's leader (the active controller), once there is one. */
    private static int activeController(Admin probe) throws InterruptedException {
        return await("the metadata quorum has a leader", Duration.ofSeconds(10), seen -> {
            QuorumInfo q = quorum(probe);
            seen.set(describe(q));
            return q.leaderId() >= 0 ? q.leaderId() : null;
        });
    }

    /** Every voter's log end offset equals the leader's: the restarted node has applied what the others have. */
    private static void awaitVotersCaughtUp(Admin probe) throws InterruptedException {
        await("every voter has the leader's log end offset", REJOIN_WAIT, seen -> {
            QuorumInfo q = quorum(probe);
            seen.set(describe(q));
            long leaderEnd = q.voters().stream().filter(v -> v.replicaId() == q.leaderId())
                    .mapToLong(QuorumInfo.ReplicaState::logEndOffset).findFirst().orElse(-1);
            return leaderEnd > 0 && q.voters().stream().allMatch(v -> v.logEndOffset() == leaderEnd) ? q : null;
        });
    }

    /**
     * One round: kill, then at once createTopics and describeCluster from a new admin client on the
     * survivors. Null if createTopics succeeded within the budget and describeCluster named a
     * survivor as the controller, else what went wrong.
     */
    private static String createTopicRightAfterKill(SluiceCluster cluster, int killed, String topic)
            throws InterruptedException {
        List<Integer> survivors = cluster.ids().stream().filter(id -> id != killed).toList();
        String bootstrap = survivors.stream().map(cluster::bootstrap).collect(Collectors.joining(","));
        cluster.kill(killed);
        long killedAt = System.nanoTime();
        Admin admin = Clients.admin(bootstrap, Map.of(
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000",
                AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500"));
        String step = "createTopics";
        try {
            KafkaFuture<Void> created = admin.createTopics(List.of(new NewTopic(topic, 1, (short) 2)),
                    new CreateTopicsOptions().timeoutMs(5000)).all();
            KafkaFuture<Node> named = admin.describeCluster(new DescribeClusterOptions().timeoutMs(5000)).controller();
            created.get(Math.max(1, ROUND_BUDGET.toMillis() - millisSince(killedAt)), TimeUnit.MILLISECONDS);
            long took = millisSince(killedAt);
            step = "describeCluster";
            Node controller = named.get(Math.max(1, ROUND_BUDGET.toMillis() - millisSince(killedAt)), TimeUnit.MILLISECONDS);
            log("killed node %d: createTopics(%s) via %s done %d ms after the kill; describeCluster named %s",
                    killed, topic, survivors, took, controller);
            if (controller == null || !survivors.contains(controller.id())) {
                return "describeCluster named controller " + controller + ", not a survivor " + survivors;
            }
            return took <= ROUND_BUDGET.toMillis() ? null : "createTopics took " + took + " ms";
        } catch (ExecutionException e) {
            return step + " failed after " + millisSince(killedAt) + " ms: " + e.getCause();
        } catch (TimeoutException e) {
            return step + " not answered within " + ROUND_BUDGET.toMillis() + " ms of the kill";
        } finally {
            admin.close(Duration.ofSeconds(1));
        }
    }

    @Test
    void createTopicsRightAfterKillingTheActiveControllerSucceedsWithinFiveSeconds() throws Exception {
        SluiceCluster cluster = clusters.start("controller-failover", 3, Map.of());
        Set<Integer> all = new TreeSet<>(cluster.ids());
        List<String> rounds = new ArrayList<>();
        int failed = 0;
        long start = System.nanoTime();
        try (Admin probe = Clients.clusterAdmin(cluster.bootstrap())) {
            awaitLiveNodes(probe, all, Duration.ofSeconds(10));
            for (int round = 0; round < ROUNDS; round++) {
                int killed = activeController(probe);
                String problem = createTopicRightAfterKill(cluster, killed, "failover-" + round);
                String line = "round " + round + ": killed node " + killed + (problem == null ? ": ok" : ": FAILED, " + problem);
                rounds.add(line);
                if (problem != null) {
                    failed++;
                    log("%s", line);
                }
                cluster.restart(killed);
                awaitLiveNodes(probe, all, REJOIN_WAIT);
                awaitVotersCaughtUp(probe);
            }
        }
        log("%d of %d rounds ok in %d ms", ROUNDS - failed, ROUNDS, millisSince(start));
        assertTrue(failed == 0, failed + " of " + ROUNDS + " rounds failed:\n" + String.join("\n", rounds));
    }
}
