package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Client factories and future helpers shared by the test classes. */
final class Clients {

    static final Duration OP_TIMEOUT = Duration.ofSeconds(30);

    private Clients() {
    }

    /** Closes a test class's admin client, then its broker, whichever of them was started. */
    static void close(Admin admin, SluiceBroker broker) {
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

    static Admin admin(SluiceBroker broker) {
        return admin(broker.bootstrap(), Map.of());
    }

    /** An admin client for any bootstrap list (e.g. one node of a {@link SluiceCluster}); overrides win. */
    static Admin admin(String bootstrap, Map<String, String> overrides) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "sluice-compat-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.putAll(overrides);
        return Admin.create(p);
    }

    /**
     * An admin client for a {@link SluiceCluster} whose nodes get killed: short request timeout,
     * frequent metadata refresh and quick reconnects; {@code overrides} are key, value pairs and win.
     */
    static Admin clusterAdmin(String bootstrap, String... overrides) {
        Map<String, String> props = new TreeMap<>(Map.of(
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000",
                AdminClientConfig.METADATA_MAX_AGE_CONFIG, "1000",
                AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500"));
        props.putAll(SluiceBroker.settings(overrides));
        return admin(bootstrap, props);
    }

    /**
     * A producer with the client's DEFAULT settings (idempotence on, acks=all, ...): only the
     * bootstrap address and serializers are given, plus whatever {@code overrides} the caller passes.
     */
    static KafkaProducer<String, String> producer(SluiceBroker broker, Map<String, String> overrides) {
        return producer(broker.bootstrap(), overrides);
    }

    /** Same as {@link #producer(SluiceBroker, Map)} for any bootstrap list. */
    static KafkaProducer<String, String> producer(String bootstrap, Map<String, String> overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.putAll(overrides);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static KafkaProducer<String, String> producer(SluiceBroker broker) {
        return producer(broker, Map.of());
    }

    /** A consumer for {@code assign()} use: no group.id, reads from the earliest offset, no commits. */
    static KafkaConsumer<String, String> consumer(SluiceBroker broker) {
        return consumer(broker.bootstrap());
    }

    /** Same as {@link #consumer(SluiceBroker)} for any bootstrap list. */
    static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "sluice-compat-consumer");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /**
     * Properties of an {@code assign()} consumer with the given {@code isolation.level}
     * ({@code read_committed} or {@code read_uncommitted}): earliest, no commits, big polls.
     */
    static Properties consumerProps(String bootstrap, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "sluice-compat-txn-" + isolation);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        return p;
    }

    /** A String consumer built from {@link #consumerProps(String, String)}. */
    static KafkaConsumer<String, String> consumer(String bootstrap, String isolation) {
        return new KafkaConsumer<>(consumerProps(bootstrap, isolation), new StringDeserializer(),
                new StringDeserializer());
    }

    /** Partitions 0..count-1 of {@code topic}. */
    static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }

    /** End offsets as seen with {@code isolation}: the last stable offsets for read_committed. */
    static Map<TopicPartition, Long> endOffsets(String bootstrap, Collection<TopicPartition> tps, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, isolation)) {
            return c.endOffsets(tps);
        }
    }

    /**
     * Reads the partitions from the beginning up to their end offset as seen with {@code isolation}
     * (the LSO for read_committed), in partition order; fails after 60 s.
     */
    static List<ConsumerRecord<String, String>> readAll(String bootstrap, List<TopicPartition> tps, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, isolation)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            Map<TopicPartition, List<ConsumerRecord<String, String>>> byPartition = new LinkedHashMap<>();
            tps.forEach(tp -> byPartition.put(tp, new ArrayList<>()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    fail("timed out reading " + tps + " (" + isolation + ") up to " + end);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    byPartition.get(new TopicPartition(r.topic(), r.partition())).add(r);
                }
            }
            return byPartition.values().stream().flatMap(List::stream).collect(Collectors.toList());
        }
    }

    static List<String> values(List<ConsumerRecord<String, String>> records) {
        return records.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    /** Waits for a future and returns its value; the failure (unwrapped) propagates to fail the test. */
    static <T> T get(Future<T> future) throws Exception {
        try {
            return future.get(OP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw new AssertionError("operation failed: " + cause, cause);
            }
            throw e;
        }
    }

    /** Asserts that the future fails with (a subclass of) {@code expected}; returns that exception. */
    static <T extends Throwable> T expectFailure(Class<T> expected, Future<?> future) throws Exception {
        Object value;
        try {
            value = future.get(OP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            return assertInstanceOf(expected, e.getCause(),
                    () -> "expected " + expected.getSimpleName() + " but got " + e.getCause());
        } catch (TimeoutException e) {
            return fail("expected " + expected.getSimpleName() + " but the operation timed out");
        }
        return fail("expected " + expected.getSimpleName() + " but the operation succeeded with " + value);
    }

    /** The broker's /metrics page, from its HTTP listener on {@code httpPort}. */
    static String metricsPage(int httpPort) throws Exception {
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + httpPort + "/metrics")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new AssertionError("GET /metrics answered " + r.statusCode());
        }
        return r.body();
    }
}
