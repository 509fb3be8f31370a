package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * UnregisterBroker (the admin's {@code unregisterBroker}, {@code kafka-cluster unregister}): a
 * stopped broker's registration goes from the metadata on every node, a second or an unknown id is
 * refused with BROKER_ID_NOT_REGISTERED, and the broker registers anew when it starts again.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UnregisterBrokerTest {

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    /** Every registered broker, fenced ones included (DescribeCluster v2), as id -> fenced. */
    private static Map<Integer, Boolean> registered(Admin admin) throws Exception {
        Map<Integer, Boolean> out = new TreeMap<>();
        for (Node n : admin.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)).nodes().get()) {
            out.put(n.id(), n.isFenced());
        }
        return out;
    }

    private static Throwable unregisterFails(Admin admin, int id) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.unregisterBroker(id).all().get());
        return e.getCause();
    }

    @Test
    void aStoppedBrokerIsUnregisteredAndComesBackWhenStarted() throws Exception {
        SluiceCluster cluster = clusters.start("unregister", 3, Map.of());
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(1)))) {
            awaitLiveNodes(admin, Set.of(1, 2, 3), Duration.ofSeconds(20));

            cluster.stop(3);
            await("node 3 is registered but fenced", Duration.ofSeconds(20), seen -> {
                Map<Integer, Boolean> r = registered(admin);
                seen.set(r.toString());
                return Boolean.TRUE.equals(r.get(3)) ? r : null;
            });

            admin.unregisterBroker(3).all().get();
            // The request was answered once the node serving it applied the change; every other
            // node follows the same metadata log.
            for (int id : new int[] {1, 2}) {
                try (Admin one = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(id)))) {
                    await("node " + id + " no longer lists broker 3", Duration.ofSeconds(10), seen -> {
                        Map<Integer, Boolean> r = registered(one);
                        seen.set(r.toString());
                        return r.keySet().equals(Set.of(1, 2)) ? r : null;
                    });
                }
            }

            assertInstanceOf(BrokerIdNotRegisteredException.class, unregisterFails(admin, 3),
                    "a broker that is already unregistered");
            assertInstanceOf(BrokerIdNotRegisteredException.class, unregisterFails(admin, 42),
                    "a broker id that never registered");

            cluster.restart(3);
            awaitLiveNodes(admin, Set.of(1, 2, 3), Duration.ofSeconds(30));
            assertEquals(Map.of(1, false, 2, false, 3, false), registered(admin));
        }
    }
}
