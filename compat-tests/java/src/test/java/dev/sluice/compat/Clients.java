package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Client factories and future helpers shared by the test classes. */
final class Clients {

    static final Duration OP_TIMEOUT = Duration.ofSeconds(30);

    private Clients() {
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
}
