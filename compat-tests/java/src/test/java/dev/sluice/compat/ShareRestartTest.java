package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Share-group state survives a kill -9 of the only broker (KIP-932's {@code __share_group_state}):
 * records a {@link KafkaShareConsumer} accepted (and whose commit succeeded) are never delivered
 * again, and records it held without acknowledging come back with a higher delivery count; and
 * deleting the group deletes that state.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShareRestartTest {

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    @Test
    void acceptedRecordsStayAcceptedAndHeldOnesComeBackCountedAfterKill9() throws Exception {
        // A short session: the member from before the crash, whose leave never arrived, is
        // read back with the group (membership is durable) and stays until its session runs out.
        SluiceCluster cluster = clusters.start("share-restart", 1, Map.of("group.share.heartbeat.interval.ms", "500",
                "group.share.min.session.timeout.ms", "6000", "group.share.session.timeout.ms", "6000"));
        String topic = "share-restart";
        String group = "sg-restart";
        int n = 100;
        Map<String, Short> firstCounts = new TreeMap<>();
        KafkaShareConsumer<String, String> before = ShareProbes.consumer(cluster.bootstrap(), group, "explicit");
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            Clients.get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
            // Joined (and its share partition started at the log end) before anything is written.
            ShareProbes.joinAlone(admin, before, group, topic, 1);
            long deadline;
            try (KafkaProducer<String, String> producer = Clients.producer(cluster.bootstrap(), Map.of("linger.ms", "1000"))) {
                for (int i = 0; i < n; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "r" + i));
                }
                producer.flush();
            }
            List<ConsumerRecord<String, String>> held = new ArrayList<>();
            deadline = System.currentTimeMillis() + 30_000;
            while (held.isEmpty() && System.currentTimeMillis() < deadline) {
                before.poll(Duration.ofMillis(200)).forEach(held::add);
            }
            assertEquals(n, held.size(), "one poll took every record");
            // The first half accepted and committed; the second half held, never acknowledged.
            for (ConsumerRecord<String, String> r : held) {
                firstCounts.put(r.value(), r.deliveryCount().orElse((short) -1));
                if (Integer.parseInt(r.value().substring(1)) < n / 2) {
                    before.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            }
            Map<TopicIdPartition, Optional<KafkaException>> result = before.commitSync();
            assertEquals(1, result.size(), "commit result " + result);
            result.forEach((tp, e) -> assertTrue(e.isEmpty(), "the accept of the first half failed: " + e));
            firstCounts.values().forEach(c -> assertEquals((short) 1, c, "first deliveries " + firstCounts));
            cluster.kill(1);
        } finally {
            before.close(Duration.ZERO);
        }
        cluster.restart(1);

        Map<String, Short> after = new TreeMap<>();
        try (KafkaShareConsumer<String, String> c = ShareProbes.consumer(cluster.bootstrap(), group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (after.size() < n / 2 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    after.merge(r.value(), r.deliveryCount().orElse((short) -1), (a, b) -> (short) Math.max(a, b));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
            // A while longer: an accepted record coming back would show up now.
            long quiet = System.currentTimeMillis() + 2000;
            while (System.currentTimeMillis() < quiet) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    after.merge(r.value(), r.deliveryCount().orElse((short) -1), (a, b) -> (short) Math.max(a, b));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
        }
        Map<String, Short> expected = new TreeMap<>();
        for (int i = n / 2; i < n; i++) {
            expected.put("r" + i, (short) 2);
        }
        assertEquals(expected, after, "after the restart: only the held records, each delivered a second time");

        // DeleteGroups takes the durable state with it: the group made again starts afresh.
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            ClusterProbes.await("the member to leave", Duration.ofSeconds(30), seen ->
                    admin.describeShareGroups(List.of(group)).all().get().get(group).members().isEmpty() ? true : null);
            Clients.get(admin.deleteShareGroups(List.of(group)).all());
            Clients.get(admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), List.of(
                    new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all());
            Map<String, Short> again = new TreeMap<>();
            try (KafkaShareConsumer<String, String> c = ShareProbes.consumer(cluster.bootstrap(), group, "implicit")) {
                c.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 30_000;
                while (again.size() < n && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(r -> again.put(r.value(), r.deliveryCount().orElse((short) -1)));
                }
            }
            assertEquals(n, again.size(), "the group made again reads every record: " + again.keySet());
            again.forEach((v, count) -> assertEquals((short) 1, count, v + "'s delivery count in the new group"));
        }
    }
}
