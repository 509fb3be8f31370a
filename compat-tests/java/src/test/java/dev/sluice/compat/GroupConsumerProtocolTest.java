package dev.sluice.compat;


import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        Clients.close(admin, broker);
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

    /**
     * A broker-side regular expression (KIP-848 {@link SubscriptionPattern}) is resolved
     * against every topic name, internal ones included, as Kafka's coordinator does.
     */
    @Test
    void regexSubscriptionMatchesInternalTopicsToo() throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic("regex-a", 2, (short) 1), new NewTopic("regex-b", 1, (short) 1))).all());
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "java-kip848-regex");
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            // The group's own coordinator creates __consumer_offsets before the first heartbeat resolves this.
            c.subscribe(new SubscriptionPattern("regex-.*|__consumer_offsets"));
            Set<TopicPartition> got = Set.of();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200));
                got = c.assignment();
                if (got.size() == 3 + 50) {
                    break;
                }
            }
            Set<String> topics = new TreeSet<>();
            got.forEach(tp -> topics.add(tp.topic()));
            assertEquals(Set.of("__consumer_offsets", "regex-a", "regex-b"), topics, "assigned: " + got);
            assertTrue(got.size() == 53, "every partition of the three topics: " + got.size());
        }
    }
}
