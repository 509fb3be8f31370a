package dev.sluice.compat;


import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The three-member leave/join scenario of {@link GroupTest} with the KIP-848 consumer protocol
 * ({@code group.protocol=consumer}: ConsumerGroupHeartbeat / ConsumerGroupDescribe, server-side
 * assignors).
 */
@Tag("kip848")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GroupConsumerProtocolTest {

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeEach
    void startBroker() throws Exception {
        if (broker == null) {
            broker = SluiceBroker.start("groups-kip848",
                    SluiceBroker.settings("group.initial.rebalance.delay.ms", "0"));
            admin = Clients.admin(broker);
        }
    }

    @AfterAll
    static void stopBroker() {
        try {
            if (admin != null) {
                admin.close(Duration.ofSeconds(5));
            }
        } finally {
            if (broker != null) {
                broker.close();
            }
        }
    }

    /** "uniform" is the broker's sticky default assignor; "range" is not sticky. */
    @ParameterizedTest
    @ValueSource(strings = {"uniform", "range"})
    void threeMembersLeaveAndJoin(String assignor) throws Exception {
        String name = "java-kip848-" + assignor;
        GroupTest.leaveJoinScenario(broker, admin, name, name, Map.of(
                ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer",
                ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor),
                assignor.equals("uniform"), false);
    }
}
