package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * SASL/OAUTHBEARER over SASL_SSL with kafka-clients' default login callback handler, which
 * makes an unsecured (alg: none) JWT from {@code unsecuredLoginStringClaim_sub}: producer, group
 * consumer and AdminClient as alice, and a token without a subject refused. One broker, its
 * certificate made with {@code openssl}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class OAuthBearerTest {

    private static final String LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    private static Path certs;
    private static SluiceBroker broker;

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(certs.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "openssl " + String.join(" ", args) + ": " + out);
    }

    @BeforeAll
    static void start() throws Exception {
        certs = Files.createTempDirectory("sluice-oauth-certs-");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                "-days", "2", "-subj", "/CN=sluice test ca");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=localhost");
        Files.writeString(certs.resolve("broker.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "broker.pem", "-days", "2", "-extfile", "broker.ext");
        Files.writeString(certs.resolve("broker-keystore.pem"),
                Files.readString(certs.resolve("broker.key")) + Files.readString(certs.resolve("broker.pem")));
        broker = SluiceBroker.start("oauthbearer", SluiceBroker.settings(
                "listeners", "SASL_SSL://127.0.0.1:{port}",
                "advertised.listeners", "SASL_SSL://127.0.0.1:{port}",
                "security.inter.broker.protocol", "SASL_SSL",
                "sasl.enabled.mechanisms", "OAUTHBEARER",
                "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config", LOGIN + " required;",
                "ssl.keystore.type", "PEM",
                "ssl.keystore.location", certs.resolve("broker-keystore.pem").toString(),
                // A SASL_SSL-only node dials its own listener's kind of TLS: it needs a truststore.
                "ssl.truststore.type", "PEM",
                "ssl.truststore.location", certs.resolve("ca.pem").toString(),
                "group.initial.rebalance.delay.ms", "0"));
    }

    @AfterAll
    static void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    private static Properties client(String jaas) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        p.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
        p.put(SaslConfigs.SASL_JAAS_CONFIG, jaas);
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, certs.resolve("ca.pem").toString());
        return p;
    }

    private static Properties alice() {
        return client(LOGIN + " required unsecuredLoginStringClaim_sub=\"alice\";");
    }

    @Test
    void producerGroupConsumerAndAdminAsAlice() throws Exception {
        String topic = "oauth-java-" + System.nanoTime();
        try (Admin admin = Admin.create(alice())) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            assertTrue(admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic));
            assertEquals(1, admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size());
        }
        Properties pp = alice();
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get(30, TimeUnit.SECONDS);
            }
        }
        Properties cp = alice();
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "oauth-group-" + topic);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
            while (got.size() < 10 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
            consumer.commitSync();
        }
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            want.add("v" + i);
        }
        assertEquals(want, got);
    }

    @Test
    void aTokenWithoutASubjectIsRefused() {
        // The unsecured login handler puts the subject in the claim its option names; with
        // unsecuredLoginPrincipalClaimName=user the broker's default (sub) finds none.
        Properties p = client(LOGIN + " required unsecuredLoginStringClaim_user=\"alice\" unsecuredLoginPrincipalClaimName=\"user\";");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        try (Admin admin = Admin.create(p)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> admin.listTopics().names().get(30, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof SaslAuthenticationException, String.valueOf(e.getCause()));
            assertTrue(e.getCause().getMessage().contains("invalid_token"), e.getCause().getMessage());
        }
    }
}
