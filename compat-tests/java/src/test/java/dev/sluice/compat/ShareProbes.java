package dev.sluice.compat;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/** Share-group helpers the share tests have in common. */
final class ShareProbes {

    private ShareProbes() {
    }

    /** A share consumer of {@code group} in {@code mode} ("implicit" or "explicit"). */
    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String mode) {
        return consumer(bootstrap, group, mode, new Properties());
    }

    /** As {@link #consumer(String, String, String)}, with {@code extra} settings on top. */
    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String mode, Properties extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "sluice-compat-share");
        p.put("share.acknowledgement.mode", mode);
        p.putAll(extra);
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** True when the group has {@code members} members and together they hold {@code partitions} partitions. */
    static boolean assigned(Admin admin, String group, int members, int partitions) {
        try {
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get(10, TimeUnit.SECONDS).get(group);
            Set<TopicPartition> all = new HashSet<>();
            for (ShareMemberDescription m : d.members()) {
                // A member whose epoch is the group's has heard its assignment.
                if (m.assignment().topicPartitions().isEmpty() || m.memberEpoch() != d.groupEpoch()) {
                    return false;
                }
                all.addAll(m.assignment().topicPartitions());
            }
            return d.members().size() == members && all.size() == partitions;
        } catch (Exception e) {
            return false;
        }
    }

    /** Subscribes {@code c}, the group's only member, to {@code topic} and polls until it holds its {@code partitions}. */
    static void joinAlone(Admin admin, KafkaShareConsumer<String, String> c, String group, String topic, int partitions)
            throws InterruptedException {
        c.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            c.poll(Duration.ofMillis(100));
            if (assigned(admin, group, 1, partitions)) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + group + "'s member's assignment");
            }
        }
    }
}
