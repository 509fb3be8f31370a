package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.awaitIsr;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.describe;
import static dev.sluice.compat.ClusterProbes.leaderId;
import static dev.sluice.compat.ClusterProbes.partition;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 20's durability test: on a 3-node cluster, kill -9 the share coordinator of a share
 * partition (the leader of its {@code __share_group_state} partition, a node that neither leads
 * nor follows the topic partition) while records are produced and a {@link KafkaShareConsumer}
 * accepts them. Every record must end up accepted; none is delivered again after an accept whose
 * commit succeeded; and each record delivered more than once comes back with a higher delivery count.
 * Then the old coordinator comes back and the topic partition's leader is killed too: the new leader
 * reads the share partition from the share coordinator and delivers nothing more, although the group
 * starts at the earliest offset (without the durable state it would deliver every record again).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ShareCoordinatorFailoverTest {

    private static final String STATE_TOPIC = "__share_group_state";
    private static final int STATE_PARTITIONS = 50;
    private static final Map<String, String> SETTINGS = Map.of(
            "group.share.heartbeat.interval.ms", "500",
            "group.share.record.lock.duration.ms", "5000",
            "group.initial.rebalance.delay.ms", "0");

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    /** Sluice's (and Kafka's) coordinator partition of a key: String.hashCode, made non-negative, modulo. */
    static int statePartition(String group, Uuid topicId, int partition) {
        String key = group + ":" + topicId + ":" + partition;
        return (key.hashCode() & 0x7fffffff) % STATE_PARTITIONS;
    }

    @Test
    void killingTheShareCoordinatorUnderLoadLosesNoAcceptAndRedeliversCounted() throws Exception {
        SluiceCluster cluster = clusters.start("share-failover", 3, SETTINGS);
        int n = 3000;
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            Set<Integer> all = new TreeSet<>(cluster.ids());
            awaitLiveNodes(admin, all, Duration.ofSeconds(10));
            // The topic on two nodes; the third is to be the share coordinator, killed alone.
            String topic = "share-failover";
            Clients.get(admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(1, 2))))).all());
            TopicDescription td = awaitIsr(admin, topic, 1, 2, Duration.ofSeconds(20));
            Uuid topicId = td.topicId();

            // A first share group creates __share_group_state.
            try (KafkaShareConsumer<String, String> warm = ShareProbes.consumer(cluster.bootstrap(), "sg-warm", "implicit")) {
                ShareProbes.joinAlone(admin, warm, "sg-warm", topic, 1);
            }
            TopicDescription state = awaitIsr(admin, STATE_TOPIC, STATE_PARTITIONS, 3, Duration.ofSeconds(30));
            String group = null;
            int coordinator = -1;
            for (int i = 0; group == null; i++) {
                String g = "sg-failover-" + i;
                Integer leader = leaderId(partition(state, statePartition(g, topicId, 0)));
                if (leader != null && leader == 3) {
                    group = g;
                    coordinator = leader;
                }
            }
            SluiceCluster.log("group %s: share coordinator node %d; %s", group, coordinator, describe(td));
            ConfigResource groupResource = new ConfigResource(ConfigResource.Type.GROUP, group);
            Clients.get(admin.incrementalAlterConfigs(Map.of(groupResource, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all());

            Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
            Set<String> accepted = new HashSet<>();
            List<String> violations = new ArrayList<>();
            AtomicInteger produced = new AtomicInteger();
            AtomicBoolean stop = new AtomicBoolean();
            int failedCommits = 0;
            KafkaShareConsumer<String, String> c = ShareProbes.consumer(cluster.bootstrap(), group, "explicit");
            Thread producer = null;
            try {
                ShareProbes.joinAlone(admin, c, group, topic, 1);
                producer = new Thread(() -> {
                    try (KafkaProducer<String, String> p = Clients.producer(cluster.bootstrap(), Map.of("linger.ms", "5"))) {
                        for (int i = 0; i < n && !stop.get(); i++) {
                            p.send(new ProducerRecord<>(topic, 0, null, "v" + i));
                            produced.incrementAndGet();
                            if (i % 50 == 49) {
                                p.flush();
                                Thread.sleep(20);
                            }
                        }
                        p.flush();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                producer.start();
                boolean killed = false;
                long deadline = System.currentTimeMillis() + 120_000;
                while (accepted.size() < n && System.currentTimeMillis() < deadline) {
                    List<String> batch = new ArrayList<>();
                    try {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            deliveries.computeIfAbsent(r.value(), k -> new ArrayList<>()).add(r.deliveryCount().orElse((short) -1));
                            if (accepted.contains(r.value())) {
                                violations.add(r.value() + " delivered again after its accept was committed");
                            }
                            batch.add(r.value());
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                        }
                        Map<TopicIdPartition, Optional<KafkaException>> result = c.commitSync();
                        boolean ok = !result.isEmpty() && result.values().stream().allMatch(Optional::isEmpty);
                        if (ok || batch.isEmpty()) {
                            accepted.addAll(batch);
                        } else {
                            failedCommits++;
                            SluiceCluster.log("commit of %d accepts failed: %s", batch.size(), result);
                        }
                    } catch (KafkaException e) {
                        failedCommits++;
                        SluiceCluster.log("poll or commit failed: %s", e);
                    }
                    if (!killed && accepted.size() >= n / 3) {
                        SluiceCluster.log("%d of %d records accepted; killing the share coordinator, node %d",
                                accepted.size(), n, coordinator);
                        cluster.kill(coordinator);
                        killed = true;
                    }
                }
                assertTrue(killed, "the coordinator was killed mid-way");
            } finally {
                stop.set(true);
                if (producer != null) {
                    producer.join(30_000);
                }
                c.close(Duration.ofSeconds(5));
            }
            SluiceCluster.log("%d produced, %d accepted, %d failed commits, %d records delivered more than once",
                    produced.get(), accepted.size(), failedCommits,
                    deliveries.values().stream().filter(d -> d.size() > 1).count());
            assertEquals(List.of(), violations, "accepted records delivered again");
            Set<String> missing = new TreeSet<>();
            for (int i = 0; i < n; i++) {
                if (!accepted.contains("v" + i)) {
                    missing.add("v" + i);
                }
            }
            assertEquals(Set.of(), missing, "records never accepted");
            deliveries.forEach((v, counts) -> {
                for (int i = 1; i < counts.size(); i++) {
                    assertTrue(counts.get(i) > counts.get(i - 1), v + " delivered again without a higher count: " + counts);
                }
            });

            // The old coordinator back, then the share-partition leader gone: node 2 takes over
            // the topic partition and reads its share partition from the share coordinator.
            cluster.restart(coordinator);
            awaitLiveNodes(admin, all, Duration.ofSeconds(20));
            awaitIsr(admin, STATE_TOPIC, STATE_PARTITIONS, 3, Duration.ofSeconds(30));
            int leader = leaderId(partition(ClusterProbes.describeTopic(admin, topic), 0));
            SluiceCluster.log("killing the topic partition's leader, node %d", leader);
            cluster.kill(leader);
            List<String> again = new ArrayList<>();
            final String shareGroup = group;
            try (KafkaShareConsumer<String, String> after = ShareProbes.consumer(cluster.bootstrapRunning(), group, "implicit")) {
                after.subscribe(List.of(topic));
                // Joined, fetching from the new leader, and then a while longer.
                ClusterProbes.await("the group's new member's assignment", Duration.ofSeconds(60), seen -> {
                    after.poll(Duration.ofMillis(100)).forEach(r -> again.add(r.value()));
                    return ShareProbes.assigned(admin, shareGroup, 1, 1) ? true : null;
                });
                long quiet = System.currentTimeMillis() + 5000;
                while (System.currentTimeMillis() < quiet) {
                    after.poll(Duration.ofMillis(200)).forEach(r -> again.add(r.value()));
                }
            }
            assertEquals(List.of(), again, "records delivered after the share-partition leader failed over");
        }
    }
}
