package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Features (KIP-584/KIP-1022) with kafka-clients 4.4's admin: describeFeatures shows the
 * supported ranges and finalized levels, updateFeatures upgrades, downgrades and validates
 * with Kafka's errors, and group.version 0 turns the KIP-848 consumer protocol off as in
 * Kafka. One broker for the class.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FeaturesTest {

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("features");
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static FeatureMetadata describe() throws Exception {
        return Clients.get(admin.describeFeatures().featureMetadata());
    }

    private static short finalized(String feature) throws Exception {
        FinalizedVersionRange r = describe().finalizedFeatures().get(feature);
        return r == null ? 0 : r.maxVersionLevel();
    }

    private static void update(String feature, int level, FeatureUpdate.UpgradeType type, boolean validateOnly) throws Exception {
        UpdateFeaturesOptions options = new UpdateFeaturesOptions().validateOnly(validateOnly);
        Clients.get(admin.updateFeatures(Map.of(feature, new FeatureUpdate((short) level, type)), options).all());
    }

    @Test
    void describeFeaturesShowsSupportedRangesAndFinalizedLevels() throws Exception {
        FeatureMetadata m = describe();
        Map<String, SupportedVersionRange> supported = m.supportedFeatures();
        assertEquals(Map.of("metadata.version", new SupportedVersionRange((short) 7, (short) 33),
                "transaction.version", new SupportedVersionRange((short) 0, (short) 2),
                "group.version", new SupportedVersionRange((short) 0, (short) 1),
                "kraft.version", new SupportedVersionRange((short) 0, (short) 1)), supported);
        assertEquals(33, finalized("metadata.version"));
        assertEquals(1, finalized("kraft.version"));
        assertEquals(2, finalized("transaction.version"));
        assertEquals(1, finalized("group.version"));
        assertTrue(m.finalizedFeaturesEpoch().isPresent(), "a finalized features epoch");
    }

    @Test
    void updateFeaturesDowngradesValidatesAndUpgrades() throws Exception {
        update("transaction.version", 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, true);
        assertEquals(2, finalized("transaction.version"), "validateOnly changes nothing");
        update("transaction.version", 1, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
        assertEquals(1, finalized("transaction.version"));
        update("transaction.version", 2, FeatureUpdate.UpgradeType.UPGRADE, false);
        assertEquals(2, finalized("transaction.version"));
    }

    private static String refusal(String feature, int level, FeatureUpdate.UpgradeType type) throws Exception {
        return Clients.expectFailure(InvalidUpdateVersionException.class,
                admin.updateFeatures(Map.of(feature, new FeatureUpdate((short) level, type)), new UpdateFeaturesOptions()).all())
                .getMessage();
    }

    @Test
    void badUpdatesGetKafkasInvalidUpdateVersion() throws Exception {
        assertTrue(refusal("no.such.feature", 1, FeatureUpdate.UpgradeType.UPGRADE)
                .contains("Invalid update version 1 for feature no.such.feature. Local controller 1 does not support this feature."));
        assertTrue(refusal("group.version", 2, FeatureUpdate.UpgradeType.UPGRADE)
                .contains("Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"));
        assertTrue(refusal("metadata.version", 30, FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE)
                .contains("Unsupported metadata.version downgrade from 33 to 30. Unsafe metadata downgrade is not supported in this version."));
        assertEquals(33, finalized("metadata.version"));
    }

    private static KafkaConsumer<String, String> consumerProtocolMember(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    @Test
    void groupVersionZeroTurnsTheConsumerProtocolOff() throws Exception {
        String topic = "features-gv";
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        update("group.version", 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
        try {
            assertFalse(describe().finalizedFeatures().containsKey("group.version"), "level 0 is not finalized");
            try (KafkaConsumer<String, String> c = consumerProtocolMember("gv-off-" + UUID.randomUUID())) {
                c.subscribe(List.of(topic));
                assertThrows(UnsupportedVersionException.class, () -> {
                    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                    while (System.nanoTime() < deadline) {
                        c.poll(Duration.ofMillis(200));
                    }
                });
            }
        } finally {
            update("group.version", 1, FeatureUpdate.UpgradeType.UPGRADE, false);
        }
        try (KafkaConsumer<String, String> c = consumerProtocolMember("gv-on-" + UUID.randomUUID())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (c.assignment().isEmpty() && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200));
            }
            assertEquals(1, c.assignment().size(), "with group.version 1 the member gets its partition");
        }
    }
}
