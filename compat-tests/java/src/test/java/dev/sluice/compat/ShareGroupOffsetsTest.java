package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-932's share-group offsets with kafka-clients 4.4's Admin: listShareGroupOffsets
 * (DescribeShareGroupOffsets, start offset and lag), alterShareGroupOffsets and
 * deleteShareGroupOffsets, seen by a real {@link KafkaShareConsumer} that joins afterwards.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ShareGroupOffsetsTest {

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("share-offsets", SluiceBroker.settings("group.share.heartbeat.interval.ms", "500"));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static void createAndProduce(String topic, int partitions, int perPartition) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all());
        try (KafkaProducer<String, String> producer = Clients.producer(broker)) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    producer.send(new ProducerRecord<>(topic, p, null, "p" + p + "-" + i));
                }
            }
            producer.flush();
        }
    }

    /** The group's offsets of {@code tps} (all of them with none), by partition; null for a partition with none. */
    private static Map<TopicPartition, SharePartitionOffsetInfo> offsets(String group, List<TopicPartition> tps) throws Exception {
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (tps != null) {
            spec.topicPartitions(tps);
        }
        return new java.util.HashMap<>(Clients.get(admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group)));
    }

    /** Consumes {@code count} records with explicit acknowledgement, accepting and committing each; returns their values, sorted. */
    private static List<String> consume(String group, String topic, int count) {
        List<String> got = new ArrayList<>();
        try (KafkaShareConsumer<String, String> c = ShareProbes.consumer(broker.bootstrap(), group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync(Duration.ofSeconds(10));
            }
        }
        Collections.sort(got);
        return got;
    }

    private static List<String> values(int partitions, int perPartition) {
        List<String> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            for (int i = 0; i < perPartition; i++) {
                all.add("p" + p + "-" + i);
            }
        }
        Collections.sort(all);
        return all;
    }

    private static Throwable cause(KafkaFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void describeResetAndDeleteOffsetsAsAShareConsumerSeesThem() throws Exception {
        String topic = "so-reset";
        String group = "sg-offsets";
        createAndProduce(topic, 2, 5);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);

        // Offsets set before the group is first used create it (Kafka 4.4 does the same).
        Clients.get(admin.alterShareGroupOffsets(group, Map.of(p0, 0L, p1, 0L)).all());
        Map<TopicPartition, SharePartitionOffsetInfo> before = offsets(group, null);
        assertEquals(Set.of(p0, p1), before.keySet(), "every partition with offsets, asked for all: " + before);
        for (SharePartitionOffsetInfo o : before.values()) {
            assertEquals(0L, o.startOffset(), before.toString());
            assertEquals(Optional.of(5L), o.lag(), "5 records of each partition are not delivered yet: " + before);
        }

        assertEquals(values(2, 5), consume(group, topic, 10));
        Map<TopicPartition, SharePartitionOffsetInfo> after = offsets(group, List.of(p0, p1));
        for (SharePartitionOffsetInfo o : after.values()) {
            assertEquals(5L, o.startOffset(), "every record accepted: " + after);
            assertEquals(Optional.of(0L), o.lag(), after.toString());
        }

        // A group with a member may not have its offsets changed.
        try (KafkaShareConsumer<String, String> member = ShareProbes.consumer(broker.bootstrap(), group, "implicit")) {
            ShareProbes.joinAlone(admin, member, group, topic, 2);
            assertInstanceOf(GroupNotEmptyException.class, cause(admin.alterShareGroupOffsets(group, Map.of(p0, 0L)).all()));
            assertInstanceOf(GroupNotEmptyException.class, cause(admin.deleteShareGroupOffsets(group, Set.of(topic)).all()));
        }
        assertEquals(5L, offsets(group, List.of(p0)).get(p0).startOffset(), "the refused reset changed nothing");

        // Reset to the earliest offsets: a consumer that joins afterwards gets every record again.
        Clients.get(admin.alterShareGroupOffsets(group, Map.of(p0, 0L, p1, 0L)).all());
        assertEquals(0L, offsets(group, List.of(p1)).get(p1).startOffset());
        assertEquals(values(2, 5), consume(group, topic, 10), "the records again after the reset");

        // Reset one partition past its records: only the other partition's come back.
        Clients.get(admin.alterShareGroupOffsets(group, Map.of(p0, 0L, p1, 5L)).all());
        assertEquals(values(1, 5), consume(group, topic, 5));

        Clients.get(admin.deleteShareGroupOffsets(group, Set.of(topic)).all());
        Map<TopicPartition, SharePartitionOffsetInfo> deleted = offsets(group, List.of(p0, p1));
        assertTrue(deleted.containsKey(p0) && deleted.get(p0) == null && deleted.get(p1) == null, "no offsets after the delete: " + deleted);
        assertFalse(offsets(group, null).containsKey(p0), "asked for all, the deleted topic is gone");
        Throwable again = cause(admin.deleteShareGroupOffsets(group, Set.of(topic)).topicResult(topic));
        assertInstanceOf(UnknownTopicOrPartitionException.class, again, "nothing left to delete: " + again);
    }

    @Test
    void badInputsGetKafkasErrors() throws Exception {
        String topic = "so-bad";
        createAndProduce(topic, 1, 1);
        String group = "sg-offsets-bad";
        TopicPartition missingTopic = new TopicPartition("so-no-such-topic", 0);
        TopicPartition missingPartition = new TopicPartition(topic, 7);
        TopicPartition fine = new TopicPartition(topic, 0);

        var altered = admin.alterShareGroupOffsets(group, Map.of(missingTopic, 0L, missingPartition, 0L, fine, 1L));
        assertInstanceOf(UnknownTopicOrPartitionException.class, cause(altered.partitionResult(missingTopic)));
        assertInstanceOf(UnknownTopicOrPartitionException.class, cause(altered.partitionResult(missingPartition)));
        Clients.get(altered.partitionResult(fine));
        assertEquals(1L, offsets(group, List.of(fine)).get(fine).startOffset());

        // A topic that does not exist is described without offsets, as OffsetFetch does.
        Map<TopicPartition, SharePartitionOffsetInfo> unknown = offsets(group, List.of(missingTopic));
        assertTrue(unknown.containsKey(missingTopic) && unknown.get(missingTopic) == null, unknown.toString());

        var deleted = admin.deleteShareGroupOffsets(group, Set.of("so-no-such-topic"));
        assertInstanceOf(UnknownTopicOrPartitionException.class, cause(deleted.topicResult("so-no-such-topic")));
        assertInstanceOf(GroupIdNotFoundException.class, cause(admin.deleteShareGroupOffsets("sg-never-seen", Set.of(topic)).all()));

        // A consumer group's id is not a share group's.
        String classic = "cg-not-share";
        Clients.get(admin.alterConsumerGroupOffsets(classic, Map.of(fine, new OffsetAndMetadata(0L))).all());
        assertInstanceOf(GroupIdNotFoundException.class, cause(admin.alterShareGroupOffsets(classic, Map.of(fine, 0L)).all()));
        // Describing it is no error, as in Kafka 4.4: it has no share-partition state, so no offsets.
        assertEquals(Map.of(), offsets(classic, null), "a consumer group's id, asked for all");
        Map<TopicPartition, SharePartitionOffsetInfo> named = offsets(classic, List.of(fine));
        assertTrue(named.containsKey(fine) && named.get(fine) == null, "a consumer group's id, asked for " + fine + ": " + named);
        assertNull(offsets(group, List.of(missingPartition)).get(missingPartition));
    }
}
