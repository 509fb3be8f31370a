package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Client telemetry (KIP-714) with kafka-clients 4.4 at its defaults ({@code enable.metrics.push=true}):
 * a {@code client-metrics} subscription set with the admin's incrementalAlterConfigs makes a
 * producer and a consumer push their metrics, which show on the broker's /metrics page with
 * their client ids; a client no subscription matches pushes nothing and works as ever.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TelemetryTest {

    private static final String TOPIC = "telemetry";
    private static SluiceBroker broker;
    private static Admin admin;
    private static int httpPort;

    @BeforeAll
    static void startBroker() throws Exception {
        httpPort = SluiceBroker.freePort();
        broker = SluiceBroker.start("telemetry", SluiceBroker.settings("http.listener", "127.0.0.1:" + httpPort));
        admin = Clients.admin(broker);
        Clients.get(admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all());
        ConfigResource sub = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "java-clients");
        Collection<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer."), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("interval.ms", "1000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("match", "client_id=telemetry-.*,client_software_name=apache-kafka-java"), AlterConfigOp.OpType.SET));
        Clients.get(admin.incrementalAlterConfigs(Map.of(sub, ops)).all());
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static String page() throws Exception {
        return Clients.metricsPage(httpPort);
    }

    /** Waits until a pushed series of {@code clientId} whose name starts with {@code prefix} is on the page. */
    private static boolean waitForSeries(String prefix, String clientId, Runnable work) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        while (System.nanoTime() < deadline) {
            work.run();
            for (String line : page().split("\n")) {
                if (line.startsWith(prefix) && line.contains("client_id=\"" + clientId + "\"") && line.contains("client_instance_id=\"")) {
                    return true;
                }
            }
            Thread.sleep(200);
        }
        return false;
    }

    private static KafkaProducer<String, String> producer(String clientId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    @Test
    void theSubscriptionIsAConfigResource() throws Exception {
        ConfigResource sub = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, "java-clients");
        Config c = Clients.get(admin.describeConfigs(List.of(sub)).all()).get(sub);
        assertEquals("1000", c.get("interval.ms").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_CLIENT_METRICS_CONFIG, c.get("interval.ms").source());
        assertTrue(Clients.get(admin.listConfigResources(java.util.Set.of(ConfigResource.Type.CLIENT_METRICS), new ListConfigResourcesOptions()).all())
                .stream().anyMatch(r -> r.name().equals("java-clients")));
    }

    @Test
    void aSubscribedProducerAndConsumerPushTheirMetrics() throws Exception {
        try (KafkaProducer<String, String> p = producer("telemetry-producer")) {
            assertTrue(waitForSeries("kafka_client_producer_", "telemetry-producer", () -> {
                p.send(new ProducerRecord<>(TOPIC, "k", "v"));
                p.flush();
            }), "the producer's metrics reach /metrics");
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "telemetry-consumer");
        c.put(ConsumerConfig.GROUP_ID_CONFIG, "telemetry-group");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(TOPIC));
            int[] seen = {0};
            assertTrue(waitForSeries("kafka_client_consumer_", "telemetry-consumer",
                    () -> seen[0] += consumer.poll(Duration.ofMillis(200)).count()), "the consumer's metrics reach /metrics");
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (seen[0] == 0 && System.nanoTime() < deadline) {
                seen[0] += consumer.poll(Duration.ofMillis(200)).count();
            }
            assertTrue(seen[0] > 0, "the pushing consumer reads records");
        }
    }

    @Test
    void anUnsubscribedClientPushesNothingAndWorks() throws Exception {
        try (KafkaProducer<String, String> p = producer("unmatched-producer")) {
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(TOPIC, "k", "v" + i)).get(30, TimeUnit.SECONDS);
                Thread.sleep(100);
            }
        }
        assertFalse(page().contains("client_id=\"unmatched-producer\""), "no series of an unsubscribed client");
    }
}
