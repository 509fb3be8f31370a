package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** AdminClient operations against one broker started with {@code --set num.partitions=3}. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AdminTest {

    /** Broker-level default for topics created without an explicit partition count. */
    private static final int BROKER_NUM_PARTITIONS = 3;
    /** Kafka's default retention.ms (log.retention.hours=168). */
    private static final String DEFAULT_RETENTION_MS = "604800000";

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("admin",
                SluiceBroker.settings("num.partitions", Integer.toString(BROKER_NUM_PARTITIONS)));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    // ---------------------------------------------------------------- helpers

    private static void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all());
    }

    /** describeTopics, tolerating the short window in which Kafka brokers may not know a new topic yet. */
    private static TopicDescription describe(String topic) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                return admin.describeTopics(List.of(topic)).topicNameValues().get(topic)
                        .get(30, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException) || System.nanoTime() > deadline) {
                    throw new AssertionError("describeTopics(" + topic + ") failed: " + e.getCause(), e.getCause());
                }
                Thread.sleep(200);
            }
        }
    }

    private static Config describeConfigs(ConfigResource resource) throws Exception {
        Config config = Clients.get(admin.describeConfigs(List.of(resource)).all()).get(resource);
        assertNotNull(config, "no config returned for " + resource);
        return config;
    }

    private static ConfigEntry entry(Config config, String name) {
        ConfigEntry e = config.get(name);
        assertNotNull(e, () -> "config " + name + " missing; got " + names(config.entries()));
        return e;
    }

    private static List<String> names(Collection<ConfigEntry> entries) {
        List<String> out = new ArrayList<>();
        for (ConfigEntry e : entries) {
            out.add(e.name());
        }
        out.sort(String::compareTo);
        return out;
    }

    private static void assertEntry(Config config, String name, String value, ConfigSource source) {
        ConfigEntry e = entry(config, name);
        assertEquals(value, e.value(), () -> name + " value; entry " + e);
        assertEquals(source, e.source(), () -> name + " source; entry " + e);
    }

    private static ConfigResource topicResource(String topic) {
        return new ConfigResource(ConfigResource.Type.TOPIC, topic);
    }

    private static void incrementalAlter(ConfigResource resource, AlterConfigOp... ops) throws Exception {
        Clients.get(admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all());
    }

    private static AlterConfigOp set(String name, String value) {
        return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
    }

    private static AlterConfigOp delete(String name) {
        return new AlterConfigOp(new ConfigEntry(name, ""), AlterConfigOp.OpType.DELETE);
    }

    private static void assertSingleReplicaLedByNode1(TopicDescription d) {
        for (TopicPartitionInfo p : d.partitions()) {
            assertNotNull(p.leader(), "partition " + p.partition() + " has no leader");
            assertEquals(SluiceBroker.NODE_ID, p.leader().id(), "leader of partition " + p.partition());
            assertEquals(List.of(SluiceBroker.NODE_ID), p.replicas().stream().map(Node::id).toList(),
                    "replicas of partition " + p.partition());
            assertEquals(List.of(SluiceBroker.NODE_ID), p.isr().stream().map(Node::id).toList(),
                    "ISR of partition " + p.partition());
        }
    }

    // ---------------------------------------------------------------- topics

    @Test
    void createTopicWithConfigThenListAndDescribeIt() throws Exception {
        String topic = "admin-created";
        CreateTopicsResult result = admin.createTopics(List.of(
                new NewTopic(topic, 2, (short) 1).configs(Map.of("retention.ms", "3600000"))));
        Clients.get(result.all());
        assertEquals(2, Clients.get(result.numPartitions(topic)), "numPartitions in CreateTopics response");
        assertEquals(1, Clients.get(result.replicationFactor(topic)), "replicationFactor in CreateTopics response");

        Set<String> listed = Clients.get(admin.listTopics().names());
        assertTrue(listed.contains(topic), "listTopics: " + listed);

        TopicDescription d = describe(topic);
        assertEquals(topic, d.name());
        assertFalse(d.isInternal());
        assertEquals(List.of(0, 1), d.partitions().stream().map(TopicPartitionInfo::partition).toList(),
                "partition ids");
        assertSingleReplicaLedByNode1(d);

        Clients.expectFailure(TopicExistsException.class,
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all());
    }

    @Test
    void topicIdsAreAssignedAndConsistent() throws Exception {
        String topic = "admin-topic-id";
        CreateTopicsResult result = admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1)));
        Clients.get(result.all());
        Uuid fromCreate = Clients.get(result.topicId(topic));
        Uuid fromDescribe = describe(topic).topicId();
        assertNotEquals(Uuid.ZERO_UUID, fromCreate, "CreateTopics returned no topic id");
        assertEquals(fromCreate, fromDescribe, "topic id differs between CreateTopics and Metadata");
    }

    @Test
    void createTopicWithoutPartitionCountUsesBrokerNumPartitions() throws Exception {
        String topic = "admin-default-partitions";
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, Optional.empty(), Optional.empty()))).all());
        TopicDescription d = describe(topic);
        assertEquals(BROKER_NUM_PARTITIONS, d.partitions().size(), "partitions from --set num.partitions");
        assertSingleReplicaLedByNode1(d);
    }

    @Test
    void describeUnknownTopicFails() throws Exception {
        Clients.expectFailure(UnknownTopicOrPartitionException.class,
                admin.describeTopics(List.of("admin-no-such-topic")).allTopicNames());
    }

    @Test
    void createPartitionsGrowsTopicAndRejectsShrinking() throws Exception {
        String topic = "admin-grow";
        createTopic(topic, 2, Map.of());
        Clients.get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all());
        TopicDescription d = describe(topic);
        assertEquals(List.of(0, 1, 2, 3), d.partitions().stream().map(TopicPartitionInfo::partition).toList());
        assertSingleReplicaLedByNode1(d);

        Clients.expectFailure(InvalidPartitionsException.class,
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all());
        assertEquals(4, describe(topic).partitions().size(), "partition count after a rejected shrink");
    }

    @Test
    void deleteTopicRemovesIt() throws Exception {
        String topic = "admin-deleted";
        createTopic(topic, 1, Map.of());
        describe(topic);
        Clients.get(admin.deleteTopics(List.of(topic)).all());

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Set<String> listed = Clients.get(admin.listTopics().names());
        while (listed.contains(topic) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            listed = Clients.get(admin.listTopics().names());
        }
        assertFalse(listed.contains(topic), "still listed after delete: " + listed);
        Clients.expectFailure(UnknownTopicOrPartitionException.class,
                admin.describeTopics(List.of(topic)).allTopicNames());
        Clients.expectFailure(UnknownTopicOrPartitionException.class,
                admin.deleteTopics(List.of(topic)).all());
    }

    // ---------------------------------------------------------------- offsets

    @Test
    void listOffsetsEarliestLatestAndByTimestamp() throws Exception {
        String topic = "admin-offsets";
        createTopic(topic, 2, Map.of());
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);

        // Ten records in partition 0, timestamps base + i*1000, except offset 7 which is far newer
        // than the rest: the max-timestamp record is not the last one, and timestamps are not monotonic.
        long base = System.currentTimeMillis() - 30 * 60_000L;
        base -= base % 1000;
        final int count = 10;
        final int maxIndex = 7;
        final long maxTs = base + 100_000;
        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                long ts = i == maxIndex ? maxTs : base + i * 1000L;
                fs.add(producer.send(new ProducerRecord<>(topic, 0, ts, "k" + i, "v" + i)));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                assertEquals(i, Clients.get(fs.get(i)).offset(), "offset of record " + i);
            }
        }

        Map<TopicPartition, ListOffsetsResultInfo> edges = Clients.get(admin.listOffsets(Map.of(
                p0, OffsetSpec.earliest(), p1, OffsetSpec.earliest())).all());
        assertEquals(0, edges.get(p0).offset(), "earliest of partition 0");
        assertEquals(0, edges.get(p1).offset(), "earliest of empty partition 1");
        edges = Clients.get(admin.listOffsets(Map.of(p0, OffsetSpec.latest(), p1, OffsetSpec.latest())).all());
        assertEquals(count, edges.get(p0).offset(), "latest of partition 0");
        assertEquals(0, edges.get(p1).offset(), "latest of empty partition 1");

        // First offset whose timestamp is >= the target.
        assertOffsetForTimestamp(p0, base - 10_000, 0, base);
        assertOffsetForTimestamp(p0, base, 0, base);
        assertOffsetForTimestamp(p0, base + 3_500, 4, base + 4_000);
        assertOffsetForTimestamp(p0, base + 9_000, 7, maxTs); // offset 8 has ts base+8000 < target, 7 has maxTs
        assertOffsetForTimestamp(p0, base + 50_000, 7, maxTs);
        ListOffsetsResultInfo none = Clients.get(admin.listOffsets(
                Map.of(p0, OffsetSpec.forTimestamp(maxTs + 1))).partitionResult(p0));
        assertEquals(-1L, none.offset(), "no record at/after the newest timestamp: " + none);

        ListOffsetsResultInfo max = Clients.get(admin.listOffsets(
                Map.of(p0, OffsetSpec.maxTimestamp())).partitionResult(p0));
        assertEquals(maxIndex, max.offset(), "offset of the max-timestamp record: " + max);
        assertEquals(maxTs, max.timestamp(), "max timestamp: " + max);
    }

    private static void assertOffsetForTimestamp(TopicPartition tp, long target, long offset, long timestamp)
            throws Exception {
        ListOffsetsResultInfo info = Clients.get(admin.listOffsets(
                Map.of(tp, OffsetSpec.forTimestamp(target))).partitionResult(tp));
        assertEquals(offset, info.offset(), "offset for timestamp " + target + ": " + info);
        assertEquals(timestamp, info.timestamp(), "timestamp for target " + target + ": " + info);
    }

    // ---------------------------------------------------------------- configs

    @Test
    void describeTopicConfigsReportsValuesAndSources() throws Exception {
        String topic = "admin-configs";
        createTopic(topic, 1, Map.of("retention.ms", "3600000"));
        Config config = describeConfigs(topicResource(topic));

        assertEntry(config, "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG);
        assertFalse(entry(config, "retention.ms").isDefault());
        assertFalse(entry(config, "retention.ms").isReadOnly());
        assertFalse(entry(config, "retention.ms").isSensitive());

        assertEntry(config, "cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG);
        assertTrue(entry(config, "cleanup.policy").isDefault());
        assertEntry(config, "retention.bytes", "-1", ConfigSource.DEFAULT_CONFIG);
        assertEntry(config, "compression.type", "producer", ConfigSource.DEFAULT_CONFIG);
        for (String name : List.of("segment.bytes", "max.message.bytes", "min.insync.replicas",
                "message.timestamp.type")) {
            entry(config, name);
        }
    }

    @Test
    void describeConfigsOfUnknownTopicFails() throws Exception {
        Clients.expectFailure(UnknownTopicOrPartitionException.class,
                admin.describeConfigs(List.of(topicResource("admin-no-such-config-topic"))).all());
    }

    @Test
    void describeBrokerConfigs() throws Exception {
        Config config = describeConfigs(new ConfigResource(ConfigResource.Type.BROKER,
                Integer.toString(SluiceBroker.NODE_ID)));
        // Given on the command line (--set), like a server.properties entry in Kafka.
        assertEntry(config, "num.partitions", Integer.toString(BROKER_NUM_PARTITIONS),
                ConfigSource.STATIC_BROKER_CONFIG);
        assertEquals(Integer.toString(SluiceBroker.NODE_ID), entry(config, "node.id").value(), "node.id");
        // Left alone: Kafka's default.
        assertEntry(config, "message.max.bytes", "1048588", ConfigSource.DEFAULT_CONFIG);
        assertEntry(config, "log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG);
    }

    @Test
    void incrementalAlterConfigsSetThenDelete() throws Exception {
        String topic = "admin-alter";
        createTopic(topic, 1, Map.of());
        ConfigResource res = topicResource(topic);
        assertEntry(describeConfigs(res), "retention.ms", DEFAULT_RETENTION_MS, ConfigSource.DEFAULT_CONFIG);

        incrementalAlter(res, set("retention.ms", "7200000"), set("max.message.bytes", "2000000"));
        Config afterSet = describeConfigs(res);
        assertEntry(afterSet, "retention.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG);
        assertEntry(afterSet, "max.message.bytes", "2000000", ConfigSource.DYNAMIC_TOPIC_CONFIG);

        incrementalAlter(res, set("retention.ms", "10800000"));
        Config afterSecondSet = describeConfigs(res);
        assertEntry(afterSecondSet, "retention.ms", "10800000", ConfigSource.DYNAMIC_TOPIC_CONFIG);
        assertEntry(afterSecondSet, "max.message.bytes", "2000000", ConfigSource.DYNAMIC_TOPIC_CONFIG);

        incrementalAlter(res, delete("retention.ms"));
        Config afterDelete = describeConfigs(res);
        assertEntry(afterDelete, "retention.ms", DEFAULT_RETENTION_MS, ConfigSource.DEFAULT_CONFIG);
        assertEntry(afterDelete, "max.message.bytes", "2000000", ConfigSource.DYNAMIC_TOPIC_CONFIG);

        incrementalAlter(res, delete("max.message.bytes"));
        assertEquals(ConfigSource.DEFAULT_CONFIG, entry(describeConfigs(res), "max.message.bytes").source(),
                "max.message.bytes source after DELETE");
    }

    @Test
    void incrementalAlterConfigsValidateOnlyAndInvalidValue() throws Exception {
        String topic = "admin-alter-validate";
        createTopic(topic, 1, Map.of("retention.ms", "3600000"));
        ConfigResource res = topicResource(topic);

        Clients.get(admin.incrementalAlterConfigs(Map.of(res, List.of(set("retention.ms", "7200000"))),
                new AlterConfigsOptions().validateOnly(true)).all());
        assertEntry(describeConfigs(res), "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG);

        Clients.expectFailure(InvalidConfigurationException.class,
                admin.incrementalAlterConfigs(Map.of(res, List.of(set("retention.ms", "not-a-number")))).all());
        assertEntry(describeConfigs(res), "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG);
    }

    @Test
    void incrementalAlterConfigsAppendAndSubtractOnListConfig() throws Exception {
        String topic = "admin-alter-list";
        createTopic(topic, 1, Map.of());
        ConfigResource res = topicResource(topic);

        incrementalAlter(res, new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                AlterConfigOp.OpType.APPEND));
        assertEntry(describeConfigs(res), "cleanup.policy", "delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG);

        incrementalAlter(res, new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"),
                AlterConfigOp.OpType.SUBTRACT));
        assertEntry(describeConfigs(res), "cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG);
    }

    // ---------------------------------------------------------------- cluster

    @Test
    void describeClusterReportsTheSingleNode() throws Exception {
        DescribeClusterResult r = admin.describeCluster();
        Collection<Node> nodes = Clients.get(r.nodes());
        assertEquals(1, nodes.size(), "nodes: " + nodes);
        Node node = nodes.iterator().next();
        assertEquals(SluiceBroker.NODE_ID, node.id());
        assertEquals("127.0.0.1", node.host(), "advertised host");
        assertEquals(broker.port(), node.port(), "advertised port");

        String clusterId = Clients.get(r.clusterId());
        assertNotNull(clusterId, "clusterId");
        assertFalse(clusterId.isBlank(), "clusterId is blank");

        Node controller = Clients.get(r.controller());
        assertNotNull(controller, "controller");
        if (controller.isEmpty()) {
            fail("controller is Node.noNode()");
        }
        assertEquals(SluiceBroker.NODE_ID, controller.id(), "controller id");

        assertEquals(clusterId, Clients.get(admin.describeCluster().clusterId()), "clusterId changed between calls");
    }
}
