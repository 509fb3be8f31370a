package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.DelegationTokenAuthorizationException;
import org.apache.kafka.common.errors.DelegationTokenNotFoundException;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Delegation tokens (KIP-48, KIP-373) with kafka-clients 4.4.0 against one broker that has a
 * PLAINTEXT and a SASL_PLAINTEXT listener, the StandardAuthorizer, and {@code admin} as super
 * user (PLAIN). alice, bob and carol log in with SCRAM; token holders log in with SCRAM and
 * {@code tokenauth=true}, act as the token's owner, and the owner's ACLs decide what they may do.
 * The broker is restarted on the same data directory to show tokens live in the metadata log.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DelegationTokenTest {

    private static final String TOPIC = "dt-orders";
    private static final String SECRET_TOPIC = "dt-secret";
    private static final KafkaPrincipal ALICE = new KafkaPrincipal("User", "alice");
    private static final KafkaPrincipal BOB = new KafkaPrincipal("User", "bob");
    private static final KafkaPrincipal CAROL = new KafkaPrincipal("User", "carol");
    private static final long DAY = 86_400_000L;

    private static Path dataDir;
    private static int plainPort;
    private static int saslPort;
    private static SluiceBroker broker;
    private static Admin superAdmin;
    private static Admin alice;

    private static SluiceBroker start() throws Exception {
        String listeners = "PLAINTEXT://127.0.0.1:" + plainPort + ",SASL_PLAINTEXT://127.0.0.1:" + saslPort;
        return SluiceBroker.startOn("delegation-tokens", dataDir, saslPort, SluiceBroker.settings(
                "listeners", listeners,
                "advertised.listeners", listeners,
                "sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\";",
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:admin",
                "delegation.token.secret.key", "the-cluster-token-secret",
                // Short, so the sweep test below sees an expired token removed within seconds.
                "delegation.token.expiry.check.interval.ms", "500"));
    }

    @BeforeAll
    static void startBroker() throws Exception {
        dataDir = Files.createTempDirectory("sluice-compat-delegation-tokens-");
        plainPort = SluiceBroker.freePort();
        saslPort = SluiceBroker.freePort();
        broker = start();
        superAdmin = Clients.admin(sasl(), sasl("PLAIN", "admin", "admin-secret", false));
        for (String[] user : new String[][] {{"alice", "alice-secret"}, {"bob", "bob-secret"}, {"carol", "carol-secret"}}) {
            for (ScramMechanism m : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
                // One change per user and request, as Kafka's controller takes them.
                get(superAdmin.alterUserScramCredentials(List.of(
                        new UserScramCredentialUpsertion(user[0], new ScramCredentialInfo(m, 4096), user[1]))).all());
            }
        }
        get(superAdmin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1), new NewTopic(SECRET_TOPIC, 1, (short) 1))).all());
        List<AclBinding> acls = new ArrayList<>();
        for (AclOperation op : List.of(AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)) {
            acls.add(allow(ALICE, new ResourcePattern(ResourceType.TOPIC, TOPIC, PatternType.LITERAL), op));
        }
        get(superAdmin.createAcls(acls).all());
        alice = Clients.admin(sasl(), sasl("SCRAM-SHA-512", "alice", "alice-secret", false));
    }

    @AfterAll
    static void stopBroker() throws Exception {
        try {
            for (Admin a : new Admin[] {alice, superAdmin}) {
                if (a != null) {
                    a.close(Duration.ofSeconds(5));
                }
            }
        } finally {
            if (broker != null) {
                broker.close();
            }
            if (dataDir != null) {
                SluiceBroker.deleteRecursively(dataDir);
            }
        }
    }

    private static String sasl() {
        return "127.0.0.1:" + saslPort;
    }

    private static AclBinding allow(KafkaPrincipal who, ResourcePattern what, AclOperation op) {
        return new AclBinding(what, new AccessControlEntry(who.toString(), "*", op, AclPermissionType.ALLOW));
    }

    /** Client settings for a SASL_PLAINTEXT login; with {@code token}, user is a token id and password its HMAC. */
    private static Map<String, String> sasl(String mechanism, String user, String password, boolean token) {
        String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        return SluiceBroker.settings(
                "security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", mechanism,
                "sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\""
                        + (token ? " tokenauth=true" : "") + ";");
    }

    private static Map<String, String> tokenLogin(DelegationToken t, String mechanism) {
        return sasl(mechanism, t.tokenInfo().tokenId(), t.hmacAsBase64String(), true);
    }

    private static <T> T get(Future<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    /** The cause of the future's failure, which must fail. */
    private static Throwable failure(Future<?> f) throws Exception {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        return e.getCause();
    }

    private static List<TokenInformation> describe(Admin a, KafkaPrincipal... owners) throws Exception {
        DescribeDelegationTokenOptions o = new DescribeDelegationTokenOptions();
        if (owners.length > 0) {
            o.owners(List.of(owners));
        }
        return get(a.describeDelegationToken(o).delegationTokens()).stream().map(DelegationToken::tokenInfo).toList();
    }

    private static List<String> ids(List<TokenInformation> tokens) {
        return tokens.stream().map(TokenInformation::tokenId).toList();
    }

    private static DelegationToken createAsAlice(List<KafkaPrincipal> renewers) throws Exception {
        return get(alice.createDelegationToken(new CreateDelegationTokenOptions().renewers(renewers)).delegationToken());
    }

    /** Produces {@code values} to {@code topic} with the given client settings. */
    private static void produce(Map<String, String> login, String topic, List<String> values) throws Exception {
        Map<String, String> conf = new HashMap<>(login);
        conf.put("max.block.ms", "15000");
        conf.put("delivery.timeout.ms", "20000");
        conf.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> p = Clients.producer(sasl(), conf)) {
            List<Future<?>> sent = new ArrayList<>();
            for (String v : values) {
                sent.add(p.send(new ProducerRecord<>(topic, v)));
            }
            for (Future<?> f : sent) {
                f.get(30, TimeUnit.SECONDS);
            }
        }
    }

    /** Every value in partition 0 of {@code topic}, read with the given client settings. */
    private static List<String> consumeAll(Map<String, String> login, String topic, int atLeast) {
        Properties p = new Properties();
        p.put("bootstrap.servers", sasl());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.putAll(login);
        TopicPartition tp = new TopicPartition(topic, 0);
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (got.size() < atLeast) {
                if (System.nanoTime() > deadline) {
                    fail("read only " + got + " from " + topic);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                }
            }
        }
        return got;
    }

    @Test
    @Order(1)
    void createAndDescribeWithOwnerFilters() throws Exception {
        long before = System.currentTimeMillis();
        DelegationToken t = createAsAlice(List.of(BOB));
        TokenInformation info = t.tokenInfo();
        assertEquals(ALICE, info.owner());
        assertEquals(ALICE, info.tokenRequester());
        assertEquals(List.of(BOB), new ArrayList<>(info.renewers()));
        assertEquals(64, t.hmac().length, "HmacSHA512");
        assertTrue(info.issueTimestamp() >= before - 1000 && info.issueTimestamp() <= System.currentTimeMillis() + 1000);
        assertEquals(info.issueTimestamp() + DAY, info.expiryTimestamp(), "delegation.token.expiry.time.ms defaults to a day");
        assertEquals(info.issueTimestamp() + 7 * DAY, info.maxTimestamp(), "delegation.token.max.lifetime.ms defaults to 7 days");

        List<DelegationToken> mine = get(alice.describeDelegationToken().delegationTokens());
        DelegationToken described = mine.stream().filter(d -> d.tokenInfo().tokenId().equals(info.tokenId())).findFirst().orElseThrow();
        assertEquals(t.hmacAsBase64String(), described.hmacAsBase64String(), "describe returns the same HMAC");
        assertEquals(info.expiryTimestamp(), described.tokenInfo().expiryTimestamp());
        assertTrue(ids(describe(alice, ALICE)).contains(info.tokenId()));
        // The owner filter matches owners and renewers: bob renews this one, carol has nothing.
        assertTrue(ids(describe(alice, BOB)).contains(info.tokenId()));
        assertTrue(ids(describe(alice, CAROL)).isEmpty());

        // bob sees it as its renewer; carol sees nothing until she may DESCRIBE_TOKENS of alice.
        try (Admin bob = Clients.admin(sasl(), sasl("SCRAM-SHA-256", "bob", "bob-secret", false));
             Admin carol = Clients.admin(sasl(), sasl("SCRAM-SHA-256", "carol", "carol-secret", false))) {
            assertTrue(ids(describe(bob)).contains(info.tokenId()));
            assertTrue(ids(describe(carol)).isEmpty());
            get(superAdmin.createAcls(List.of(allow(CAROL, new ResourcePattern(ResourceType.USER, ALICE.toString(),
                    PatternType.LITERAL), AclOperation.DESCRIBE_TOKENS))).all());
            assertTrue(ids(describe(carol)).contains(info.tokenId()));
        }
    }

    @Test
    @Order(2)
    void creatingForAnotherOwnerNeedsCreateTokens() throws Exception {
        CreateDelegationTokenOptions forCarol = new CreateDelegationTokenOptions().owner(CAROL);
        assertInstanceOf(DelegationTokenAuthorizationException.class,
                failure(alice.createDelegationToken(forCarol).delegationToken()));
        get(superAdmin.createAcls(List.of(allow(ALICE, new ResourcePattern(ResourceType.USER, CAROL.toString(),
                PatternType.LITERAL), AclOperation.CREATE_TOKENS))).all());
        TokenInformation info = get(alice.createDelegationToken(forCarol).delegationToken()).tokenInfo();
        assertEquals(CAROL, info.owner());
        assertEquals(ALICE, info.tokenRequester());
        try (Admin carol = Clients.admin(sasl(), sasl("SCRAM-SHA-512", "carol", "carol-secret", false))) {
            assertTrue(ids(describe(carol, CAROL)).contains(info.tokenId()));
        }
    }

    @Test
    @Order(3)
    void tokenHoldersActAsTheOwnerUnderTheOwnersAcls() throws Exception {
        DelegationToken t = createAsAlice(List.of());
        for (String mechanism : List.of("SCRAM-SHA-256", "SCRAM-SHA-512")) {
            produce(tokenLogin(t, mechanism), TOPIC, List.of(mechanism + "-a", mechanism + "-b"));
        }
        List<String> got = consumeAll(tokenLogin(t, "SCRAM-SHA-512"), TOPIC, 4);
        assertTrue(got.containsAll(List.of("SCRAM-SHA-256-a", "SCRAM-SHA-256-b", "SCRAM-SHA-512-a", "SCRAM-SHA-512-b")), got.toString());
        // alice has no ACL on the secret topic, so neither has her token.
        ExecutionException e = assertThrows(ExecutionException.class, () -> produce(tokenLogin(t, "SCRAM-SHA-256"), SECRET_TOPIC, List.of("x")));
        assertInstanceOf(TopicAuthorizationException.class, e.getCause());
        // A wrong HMAC is a failed login.
        Map<String, String> wrong = sasl("SCRAM-SHA-256", t.tokenInfo().tokenId(), "bm90LXRoZS1obWFj", true);
        try (Admin a = Clients.admin(sasl(), wrong)) {
            assertInstanceOf(SaslAuthenticationException.class, failure(a.describeCluster().clusterId()));
        }
    }

    @Test
    @Order(4)
    void tokenRequestsNeedAnAuthenticatedConnectionNotATokenOne() throws Exception {
        DelegationToken t = createAsAlice(List.of());
        try (Admin plain = Clients.admin("127.0.0.1:" + plainPort, Map.of())) {
            assertInstanceOf(UnsupportedByAuthenticationException.class, failure(plain.createDelegationToken().delegationToken()));
            assertInstanceOf(UnsupportedByAuthenticationException.class, failure(plain.describeDelegationToken().delegationTokens()));
        }
        try (Admin viaToken = Clients.admin(sasl(), tokenLogin(t, "SCRAM-SHA-256"))) {
            assertInstanceOf(UnsupportedByAuthenticationException.class, failure(viaToken.createDelegationToken().delegationToken()));
            assertInstanceOf(UnsupportedByAuthenticationException.class,
                    failure(viaToken.renewDelegationToken(t.hmac()).expiryTimestamp()));
        }
    }

    @Test
    @Order(5)
    void renewExtendsAndOnlyOwnerAndRenewersMay() throws Exception {
        DelegationToken t = createAsAlice(List.of(BOB));
        long created = t.tokenInfo().expiryTimestamp();
        // Expire in a minute, then renew: back to a day from now, later than at creation.
        long soon = get(alice.expireDelegationToken(t.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(60_000)).expiryTimestamp());
        assertTrue(soon < created && soon > System.currentTimeMillis(), "expiry moved to a minute from now");
        assertEquals(soon, describe(alice).stream().filter(i -> i.tokenId().equals(t.tokenInfo().tokenId())).findFirst().orElseThrow().expiryTimestamp());
        long renewed = get(alice.renewDelegationToken(t.hmac()).expiryTimestamp());
        assertTrue(renewed >= created && renewed > soon, "renew moves expiry a day ahead: " + renewed + " vs " + created);
        // A shorter renew period is taken as asked.
        try (Admin bob = Clients.admin(sasl(), sasl("SCRAM-SHA-256", "bob", "bob-secret", false));
             Admin carol = Clients.admin(sasl(), sasl("SCRAM-SHA-256", "carol", "carol-secret", false))) {
            long byBob = get(bob.renewDelegationToken(t.hmac(), new RenewDelegationTokenOptions().renewTimePeriodMs(3_600_000)).expiryTimestamp());
            assertTrue(byBob < renewed && byBob > System.currentTimeMillis() + 3_500_000L, "an hour from now: " + byBob);
            assertInstanceOf(DelegationTokenOwnerMismatchException.class, failure(carol.renewDelegationToken(t.hmac()).expiryTimestamp()));
            assertInstanceOf(DelegationTokenOwnerMismatchException.class, failure(carol.expireDelegationToken(t.hmac()).expiryTimestamp()));
        }
        assertInstanceOf(DelegationTokenNotFoundException.class,
                failure(alice.renewDelegationToken("not a token's hmac".getBytes()).expiryTimestamp()));
    }

    @Test
    @Order(6)
    void expiredTokensAreSweptAway() throws Exception {
        DelegationToken t = get(alice.createDelegationToken(new CreateDelegationTokenOptions().maxLifetimeMs(1500)).delegationToken());
        assertEquals(t.tokenInfo().issueTimestamp() + 1500, t.tokenInfo().maxTimestamp());
        assertEquals(t.tokenInfo().maxTimestamp(), t.tokenInfo().expiryTimestamp(), "expiry never passes max");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (ids(describe(alice)).contains(t.tokenInfo().tokenId())) {
            if (System.nanoTime() > deadline) {
                fail("the expired token was not removed");
            }
            Thread.sleep(200);
        }
    }

    @Test
    @Order(7)
    void tokensSurviveARestartAndExpireEndsLogins() throws Exception {
        DelegationToken t = createAsAlice(List.of(BOB));
        String id = t.tokenInfo().tokenId();
        alice.close(Duration.ofSeconds(5));
        broker.close();
        broker = start();
        alice = Clients.admin(sasl(), sasl("SCRAM-SHA-512", "alice", "alice-secret", false));
        TokenInformation after = describe(alice).stream().filter(i -> i.tokenId().equals(id)).findFirst().orElseThrow();
        assertEquals(t.tokenInfo().expiryTimestamp(), after.expiryTimestamp());
        assertEquals(List.of(BOB), new ArrayList<>(after.renewers()));
        produce(tokenLogin(t, "SCRAM-SHA-256"), TOPIC, List.of("after-restart"));

        long expired = get(alice.expireDelegationToken(t.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp());
        assertEquals(-1, expired, "an immediate expiry answers the period it was given, as Kafka");
        assertTrue(!ids(describe(alice)).contains(id));
        try (Admin a = Clients.admin(sasl(), tokenLogin(t, "SCRAM-SHA-256"))) {
            assertInstanceOf(SaslAuthenticationException.class, failure(a.describeCluster().clusterId()));
        }
        assertInstanceOf(DelegationTokenNotFoundException.class, failure(alice.renewDelegationToken(t.hmac()).expiryTimestamp()));
        assertNotEquals(0, describe(alice).size(), "the other tokens are still there");
    }
}
