package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Group configs (ConfigResource GROUP, KIP-848/KIP-932) with kafka-clients 4.4's admin:
 * incrementalAlterConfigs and describeConfigs, Kafka's checks and error codes, the sources
 * and synonyms, a KIP-848 consumer that heartbeats at its group's interval, and the
 * overrides surviving a restart (they are metadata records), and ListConfigResources listing
 * the groups that have them. One broker for the class; it
 * lowers the heartbeat bound so a group may set a short interval.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GroupConfigTest {

    private static Path dataDir;
    private static int port;
    private static SluiceBroker broker;
    private static Admin admin;

    private static SluiceBroker start() throws Exception {
        String listeners = "PLAINTEXT://127.0.0.1:" + port;
        return SluiceBroker.startOn("group-configs", dataDir, port, SluiceBroker.settings(
                "listeners", listeners,
                "advertised.listeners", listeners,
                "group.consumer.min.heartbeat.interval.ms", "100",
                "group.consumer.heartbeat.interval.ms", "10000"));
    }

    @BeforeAll
    static void startBroker() throws Exception {
        dataDir = Files.createTempDirectory("sluice-compat-group-configs-");
        port = SluiceBroker.freePort();
        broker = start();
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
        SluiceBroker.deleteRecursively(dataDir);
    }

    private static ConfigResource group(String id) {
        return new ConfigResource(ConfigResource.Type.GROUP, id);
    }

    private static Config describe(String id) throws Exception {
        return Clients.get(admin.describeConfigs(List.of(group(id)), new DescribeConfigsOptions().includeSynonyms(true)).all())
                .get(group(id));
    }

    private static void alter(String id, AlterConfigOp... ops) throws Exception {
        Clients.get(admin.incrementalAlterConfigs(Map.of(group(id), List.of(ops))).all());
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    private static AlterConfigOp delete(String key) {
        return new AlterConfigOp(new ConfigEntry(key, null), AlterConfigOp.OpType.DELETE);
    }

    private static String failure(String id, AlterConfigOp op, Class<? extends Throwable> expected) throws Exception {
        Map<ConfigResource, Collection<AlterConfigOp>> ops = Map.of(group(id), List.of(op));
        return Clients.expectFailure(expected, admin.incrementalAlterConfigs(ops).all()).getMessage();
    }

    @Test
    void aGroupWithoutOverridesShowsTheBrokersValues() throws Exception {
        Config c = describe("gc-fresh");
        Map<String, ConfigEntry> byName = c.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
        // Set in the broker's config: the static broker value, named by its broker synonym.
        ConfigEntry hb = byName.get("consumer.heartbeat.interval.ms");
        assertEquals("10000", hb.value());
        assertEquals(ConfigSource.STATIC_BROKER_CONFIG, hb.source());
        assertEquals("group.consumer.heartbeat.interval.ms", hb.synonyms().get(0).name());
        ConfigEntry session = byName.get("consumer.session.timeout.ms");
        assertEquals("45000", session.value());
        assertEquals(ConfigSource.DEFAULT_CONFIG, session.source());
        // No broker key: Kafka's own default.
        assertEquals("latest", byName.get("share.auto.offset.reset").value());
        assertEquals("read_uncommitted", byName.get("share.isolation.level").value());
        assertEquals("5", byName.get("share.delivery.count.limit").value());
        assertFalse(byName.containsKey("consumer.assignor.offload.enable"), "internal keys are not described");
        c.entries().forEach(e -> assertFalse(e.isReadOnly(), e.name() + " is read-only"));
    }

    @Test
    void overridesAreSetDescribedAndDeleted() throws Exception {
        String id = "gc-override";
        alter(id, set("consumer.session.timeout.ms", "50000"), set("share.auto.offset.reset", "earliest"));
        ConfigEntry session = describe(id).get("consumer.session.timeout.ms");
        assertEquals("50000", session.value());
        assertEquals(ConfigSource.DYNAMIC_GROUP_CONFIG, session.source());
        assertEquals(List.of(ConfigSource.DYNAMIC_GROUP_CONFIG, ConfigSource.DEFAULT_CONFIG),
                session.synonyms().stream().map(ConfigEntry.ConfigSynonym::source).toList());
        assertEquals("earliest", describe(id).get("share.auto.offset.reset").value());

        // validateOnly checks and changes nothing.
        Clients.get(admin.incrementalAlterConfigs(Map.of(group(id), List.of(set("share.isolation.level", "read_committed"))),
                new AlterConfigsOptions().validateOnly(true)).all());
        assertEquals(ConfigSource.DEFAULT_CONFIG, describe(id).get("share.isolation.level").source());

        alter(id, delete("consumer.session.timeout.ms"));
        ConfigEntry back = describe(id).get("consumer.session.timeout.ms");
        assertEquals("45000", back.value());
        assertEquals(ConfigSource.DEFAULT_CONFIG, back.source());
        assertEquals("earliest", describe(id).get("share.auto.offset.reset").value(), "the other override stays");
    }

    @Test
    void badValuesAndUnknownKeysAreRefusedAsKafkaDoes() throws Exception {
        String id = "gc-bad";
        // Kafka's messages (Sluice puts its error kind before them).
        assertTrue(failure(id, set("no.such.key", "1"), InvalidConfigurationException.class)
                .endsWith("Unknown group config name: no.such.key"));
        assertTrue(failure(id, set("consumer.session.timeout.ms", "1000"), InvalidConfigurationException.class)
                .endsWith("consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."));
        assertTrue(failure(id, set("share.isolation.level", "serializable"), InvalidConfigurationException.class)
                .contains("String must be one of: read_committed, read_uncommitted"));
        assertTrue(failure(id, set("share.auto.offset.reset", "none"), InvalidConfigurationException.class)
                .contains("by_duration:<PnDTnHnMn.nS>"));
        assertTrue(failure(id, set("share.record.lock.duration.ms", "soon"), InvalidConfigurationException.class)
                .contains("Not a number of type INT"));
        failure("", set("share.auto.offset.reset", "earliest"), InvalidRequestException.class);
        // Nothing of the refused changes was kept.
        describe(id).entries().forEach(e -> assertTrue(e.source() != ConfigSource.DYNAMIC_GROUP_CONFIG, e.name() + " was set"));
    }

    private static double heartbeats(KafkaConsumer<?, ?> c) {
        for (Map.Entry<MetricName, ? extends Metric> m : c.metrics().entrySet()) {
            if (m.getKey().name().equals("heartbeat-total") && m.getKey().group().equals("consumer-coordinator-metrics")) {
                return ((Number) m.getValue().metricValue()).doubleValue();
            }
        }
        return 0;
    }

    @Test
    void aConsumerHeartbeatsAtItsGroupsInterval() throws Exception {
        String topic = "gc-heartbeat-topic";
        String id = "gc-heartbeat";
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        // The broker's interval is 10 s; this group's is 200 ms.
        alter(id, set("consumer.heartbeat.interval.ms", "200"));
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, id);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            // At the broker's 10 s it would take well over a minute to send this many.
            long deadline = System.currentTimeMillis() + 30_000;
            while (heartbeats(c) < 20 && System.currentTimeMillis() < deadline) {
                c.poll(Duration.ofMillis(200));
            }
            assertTrue(heartbeats(c) >= 20, "only " + heartbeats(c) + " heartbeats in 30 s");
        }
    }

    @Test
    void overridesSurviveARestart() throws Exception {
        String id = "gc-restart";
        alter(id, set("share.delivery.count.limit", "7"));
        admin.close();
        broker.close();
        broker = start();
        admin = Clients.admin(broker);
        ConfigEntry e = describe(id).get("share.delivery.count.limit");
        assertEquals("7", e.value());
        assertEquals(ConfigSource.DYNAMIC_GROUP_CONFIG, e.source());
        assertNull(describe("gc-other").get("share.delivery.count.limit").synonyms().stream()
                .filter(s -> s.source() == ConfigSource.DYNAMIC_GROUP_CONFIG).findAny().orElse(null));
    }

    @Test
    void listConfigResourcesNamesConfiguredGroupsTopicsAndBrokers() throws Exception {
        alter("gc-listed", set("share.isolation.level", "read_committed"));
        Clients.get(admin.createTopics(List.of(new NewTopic("gc-listed-topic", 1, (short) 1))).all());
        // v1 with a type filter.
        Collection<ConfigResource> groups = Clients.get(admin.listConfigResources(
                Set.of(ConfigResource.Type.GROUP), new ListConfigResourcesOptions()).all());
        assertTrue(groups.contains(group("gc-listed")), "groups with configs: " + groups);
        assertTrue(groups.stream().allMatch(r -> r.type() == ConfigResource.Type.GROUP), groups.toString());
        assertFalse(groups.contains(group("gc-never-configured")));
        // v1, every type.
        Collection<ConfigResource> all = Clients.get(admin.listConfigResources().all());
        assertTrue(all.contains(group("gc-listed")), all.toString());
        assertTrue(all.contains(new ConfigResource(ConfigResource.Type.TOPIC, "gc-listed-topic")), all.toString());
        assertTrue(all.contains(new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(SluiceBroker.NODE_ID))),
                all.toString());
        // v0 (ListClientMetricsResources): none exist.
        @SuppressWarnings("deprecation")
        var metrics = Clients.get(admin.listClientMetricsResources().all());
        assertTrue(metrics.isEmpty(), metrics.toString());
    }
}
