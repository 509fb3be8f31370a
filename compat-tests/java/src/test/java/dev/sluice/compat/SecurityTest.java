package dev.sluice.compat;

import static dev.sluice.compat.Clients.expectFailure;
import static dev.sluice.compat.Clients.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * kafka-clients over SASL_SSL with SCRAM-SHA-512 against one broker with StandardAuthorizer:
 * the producer, a group consumer, the transactional producer and AdminClient, each allowed or
 * refused by the ACLs as Kafka's brokers allow or refuse them. The client trusts the broker
 * through a PEM truststore; certificates are made with {@code openssl}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecurityTest {

    private static final String APP = "User:app";
    private static Path certs;
    private static SluiceBroker broker;
    private static Admin admin;
    private static List<AclBinding> created;

    @BeforeAll
    static void start() throws Exception {
        certs = Files.createTempDirectory("sluice-security-certs-");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
                "-subj", "/CN=sluice java test ca");
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
                "-subj", "/CN=localhost");
        Files.writeString(certs.resolve("broker.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "broker.pem", "-days", "2", "-extfile", "broker.ext");
        Files.writeString(certs.resolve("broker-keystore.pem"),
                Files.readString(certs.resolve("broker.key")) + Files.readString(certs.resolve("broker.pem")));

        // --listen names the one listener PLAINTEXT; the map makes it SASL_SSL. A single node has
        // no inter-broker links, so SASL there needs no broker credentials.
        broker = SluiceBroker.start("security", SluiceBroker.settings(
                "listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:PLAINTEXT",
                "ssl.keystore.type", "PEM",
                "ssl.keystore.location", certs.resolve("broker-keystore.pem").toString(),
                "ssl.truststore.type", "PEM",
                "ssl.truststore.location", certs.resolve("ca.pem").toString(),
                "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512",
                "listener.name.plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\";",
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:admin"));

        // The bootstrap login is PLAIN (the listener's JAAS users); it gives admin and app SCRAM
        // credentials, and everything after that logs in with SCRAM-SHA-512.
        Map<String, String> plain = new HashMap<>(tls());
        plain.put(SaslConfigs.SASL_MECHANISM, "PLAIN");
        plain.put(SaslConfigs.SASL_JAAS_CONFIG,
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\";");
        try (Admin bootstrap = Clients.admin(broker.bootstrap(), plain)) {
            ScramCredentialInfo info = new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192);
            get(bootstrap.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("admin", info, "admin-scram"),
                    new UserScramCredentialUpsertion("app", info, "app-secret"))).all());
        }
        admin = Clients.admin(broker.bootstrap(), scram("admin", "admin-scram"));
        get(admin.createTopics(List.of(new NewTopic("app.events", 1, (short) 1), new NewTopic("app.tx", 1, (short) 1),
                new NewTopic("locked", 1, (short) 1))).all());
        created = List.of(
                allow(ResourceType.TOPIC, "app.", PatternType.PREFIXED, AclOperation.WRITE),
                allow(ResourceType.TOPIC, "app.", PatternType.PREFIXED, AclOperation.READ),
                allow(ResourceType.TOPIC, "app.", PatternType.PREFIXED, AclOperation.DESCRIBE),
                allow(ResourceType.GROUP, "app-group", PatternType.LITERAL, AclOperation.READ),
                allow(ResourceType.GROUP, "app-share", PatternType.LITERAL, AclOperation.READ),
                allow(ResourceType.TRANSACTIONAL_ID, "app-tx", PatternType.LITERAL, AclOperation.WRITE));
        get(admin.createAcls(created).all());
    }

    @AfterAll
    static void stop() {
        Clients.close(admin, broker);
    }

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(certs.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException("openssl " + String.join(" ", args) + " failed:\n" + out);
        }
    }

    private static Map<String, String> tls() {
        return Map.of(
                CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL",
                SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM",
                SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, certs.resolve("ca.pem").toString());
    }

    private static Map<String, String> scram(String user, String password) {
        Map<String, String> m = new HashMap<>(tls());
        m.put(SaslConfigs.SASL_MECHANISM, "SCRAM-SHA-512");
        m.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        return m;
    }

    private static AclBinding allow(ResourceType type, String name, PatternType pattern, AclOperation op) {
        return new AclBinding(new ResourcePattern(type, name, pattern),
                new AccessControlEntry(APP, "*", op, AclPermissionType.ALLOW));
    }

    private static KafkaProducer<String, String> appProducer(Map<String, String> extra) {
        Map<String, String> p = new HashMap<>(scram("app", "app-secret"));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.putAll(extra);
        return Clients.producer(broker.bootstrap(), p);
    }

    private static KafkaConsumer<String, String> appConsumer(Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(scram("app", "app-secret"));
        p.putAll(extra);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** Polls until {@code want} records came or 30 s passed. */
    private static List<String> pollValues(KafkaConsumer<String, String> c, int want) {
        List<String> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (got.size() < want && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                got.add(r.value());
            }
        }
        return got;
    }

    @Test
    void describeAclsReturnsWhatWasCreated() throws Exception {
        Set<AclBinding> all = new HashSet<>(get(admin.describeAcls(AclBindingFilter.ANY).values()));
        assertEquals(new HashSet<>(created), all);
        Set<AclBinding> groups = new HashSet<>(get(admin.describeAcls(new AclBindingFilter(
                new ResourcePattern(ResourceType.GROUP, "app-group", PatternType.LITERAL).toFilter(),
                AccessControlEntryFilter.ANY)).values()));
        assertEquals(Set.of(created.get(3)), groups);
    }

    @Test
    void scramProducerAndGroupConsumer() throws Exception {
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = appProducer(Map.of())) {
            for (int i = 0; i < 10; i++) {
                sent.add("event-" + i);
                p.send(new ProducerRecord<>("app.events", "k", "event-" + i));
            }
            p.flush();
            get(p.send(new ProducerRecord<>("app.events", "k", "last")));
            sent.add("last");
        }
        try (KafkaConsumer<String, String> c = appConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, "app-group"))) {
            c.subscribe(List.of("app.events"));
            assertEquals(sent, pollValues(c, sent.size()));
            c.commitSync();
        }
    }

    @Test
    void theTransactionalProducerCommitsWithATransactionalIdAcl() throws Exception {
        try (KafkaProducer<String, String> p = appProducer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "app-tx"))) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>("app.tx", "tx-" + i));
            }
            p.commitTransaction();
        }
        try (KafkaConsumer<String, String> c = appConsumer(Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            TopicPartition tp = new TopicPartition("app.tx", 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(List.of("tx-0", "tx-1", "tx-2", "tx-3", "tx-4"), pollValues(c, 5));
        }
    }

    @Test
    void withoutATransactionalIdAclInitTransactionsFails() {
        try (KafkaProducer<String, String> p = appProducer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "other-tx"))) {
            assertThrows(TransactionalIdAuthorizationException.class, p::initTransactions);
        }
    }

    @Test
    void aTopicWithoutWriteIsATopicAuthorizationFailure() throws Exception {
        try (KafkaProducer<String, String> p = appProducer(Map.of())) {
            TopicAuthorizationException e = expectFailure(TopicAuthorizationException.class,
                    p.send(new ProducerRecord<>("locked", "no")));
            assertEquals(Set.of("locked"), e.unauthorizedTopics());
        }
    }

    @Test
    void shareGroupOffsetsNeedTheGroupAndTopicAcls() throws Exception {
        TopicPartition events = new TopicPartition("app.events", 0);
        TopicPartition locked = new TopicPartition("locked", 0);
        try (Admin app = Clients.admin(broker.bootstrap(), scram("app", "app-secret"))) {
            expectFailure(GroupAuthorizationException.class, app.alterShareGroupOffsets("not-my-group", Map.of(events, 0L)).all());
            expectFailure(GroupAuthorizationException.class, app.deleteShareGroupOffsets("not-my-group", Set.of("app.events")).all());
            expectFailure(GroupAuthorizationException.class,
                    app.listShareGroupOffsets(Map.of("not-my-group", new org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec())).all());
            // READ on the group: each topic needs READ too.
            var altered = app.alterShareGroupOffsets("app-share", Map.of(events, 0L, locked, 0L));
            get(altered.partitionResult(events));
            expectFailure(TopicAuthorizationException.class, altered.partitionResult(locked));
        }
    }

    @Test
    void aGroupWithoutReadIsAGroupAuthorizationFailure() {
        try (KafkaConsumer<String, String> c = appConsumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, "not-my-group"))) {
            c.subscribe(List.of("app.events"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                try {
                    c.poll(Duration.ofMillis(200));
                } catch (GroupAuthorizationException e) {
                    assertEquals("not-my-group", e.groupId());
                    return;
                }
            }
            fail("poll never failed with GroupAuthorizationException");
        }
    }

    @Test
    void aWrongScramPasswordIsASaslAuthenticationFailure() throws Exception {
        try (Admin wrong = Clients.admin(broker.bootstrap(), scram("app", "not-the-password"))) {
            expectFailure(SaslAuthenticationException.class, wrong.listTopics().names());
        }
    }
}
