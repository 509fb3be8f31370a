package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.ControllerIdNotRegisteredException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * UnregisterController (KIP-1312, the admin's {@code unregisterController}) against a 3-node
 * cluster: a stopped controller's registration goes, so a second unregistration of it is refused
 * with CONTROLLER_ID_NOT_REGISTERED, as is an id that never registered; the active controller may
 * not unregister itself (INVALID_REQUEST); a controller that starts again registers anew, so it
 * can be unregistered again.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UnregisterControllerTest {

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    private static Throwable unregisterFails(Admin admin, int id) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.unregisterController(id).all().get());
        return e.getCause();
    }

    @Test
    void aStoppedControllerIsUnregisteredOnceAndRegistersAgainWhenStarted() throws Exception {
        SluiceCluster cluster = clusters.start("unregister-controller", 3, Map.of());
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(1)))) {
            awaitLiveNodes(admin, Set.of(1, 2, 3), Duration.ofSeconds(20));
            int leader = admin.describeMetadataQuorum().quorumInfo().get().leaderId();
            assertInstanceOf(InvalidRequestException.class, unregisterFails(admin, leader),
                    "the active controller unregistering itself");
            assertInstanceOf(ControllerIdNotRegisteredException.class, unregisterFails(admin, 42),
                    "a controller id that never registered");

            int follower = leader == 3 ? 2 : 3;
            // A controller registers some time after it starts (Kafka's ControllerRegistrationManager
            // promises no moment either); stopped before its registration landed, it would have
            // none to remove. The active controller logs each registration once it is committed.
            String registered = "controller registered controller_id=" + follower + " ";
            await("controller " + follower + "'s registration committed", Duration.ofSeconds(30),
                    seen -> cluster.anyLogContains(registered) ? true : null);
            cluster.stop(follower);
            // Its registration is there to remove, once.
            admin.unregisterController(follower).all().get();
            assertInstanceOf(ControllerIdNotRegisteredException.class, unregisterFails(admin, follower),
                    "a stopped controller that is already unregistered");

            cluster.restart(follower);
            await("controller " + follower + " registered again, then unregistered", Duration.ofSeconds(30), seen -> {
                try {
                    admin.unregisterController(follower).all().get();
                    return true;
                } catch (ExecutionException e) {
                    seen.set(e.getCause().toString());
                    return null;
                }
            });
        }
    }
}
