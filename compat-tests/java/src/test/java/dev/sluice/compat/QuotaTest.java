package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DeleteTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Client quotas with kafka-clients 4.4: Admin.alterClientQuotas and describeClientQuotas
 * (defaults, removal, Kafka's INVALID_REQUEST), a producer and a consumer held to their
 * producer_byte_rate and consumer_byte_rate (their throttle-time metrics show the broker's
 * throttle, each one's rate is the quota to within 10 %, no record is lost), and Admin held to
 * a controller_mutation_rate (KIP-599), and a client held to a request_percentage (KIP-124).
 * One broker for the class, with quota.window.num=4. As in Kafka, a client that goes as fast
 * as it can gets a burst of (windows - 1) windows' worth at first; after that, a client fast
 * enough to take a window's credit at once (a warm JVM consumer) reads in bursts, one per
 * quota.window.num windows (when the sample holding a burst expires, its credit comes back
 * whole), and waits in between, for a few cycles; a slower one is paced evenly. So the rate is
 * measured from SKIP_MS on for MEASURE_MS, a whole number of those cycles: over any such
 * span it is the quota whatever the phase, while a 5 s span caught one or two 4 s bursts
 * (0.5x to 1.54x).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class QuotaTest {

    private static final double QUOTA = 500_000;
    private static final int VALUE_BYTES = 1000;
    /** The first windows let a burst through; the rate is measured after them, for this long. */
    private static final long SKIP_MS = 4_000;
    /** Three cycles of quota.window.num (4) one-second windows (two are enough in the model; a real client jitters). */
    private static final long MEASURE_MS = 12_000;

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("quotas", SluiceBroker.settings("quota.window.num", "4", "controller.quota.window.num", "2"));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static ClientQuotaEntity entity(String... typeAndName) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < typeAndName.length; i += 2) {
            m.put(typeAndName[i], typeAndName[i + 1]);
        }
        return new ClientQuotaEntity(m);
    }

    private static void set(ClientQuotaEntity e, String key, Double value) throws Exception {
        Clients.get(admin.alterClientQuotas(List.of(
                new ClientQuotaAlteration(e, List.of(new ClientQuotaAlteration.Op(key, value))))).all());
    }

    private static Map<ClientQuotaEntity, Map<String, Double>> describe(ClientQuotaFilter f) throws Exception {
        return Clients.get(admin.describeClientQuotas(f).entities());
    }

    private static double metric(Map<org.apache.kafka.common.MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream()
                .filter(e -> e.getKey().name().equals(name))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .filter(v -> !Double.isNaN(v))
                .max().orElse(0);
    }

    private static void createTopic(String name) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all());
    }

    /** Bytes in [start + SKIP_MS, start + SKIP_MS + MEASURE_MS) per second. */
    private static double rate(List<long[]> timedBytes, long start) {
        long from = start + SKIP_MS;
        long to = from + MEASURE_MS;
        long sum = timedBytes.stream().filter(t -> t[0] >= from && t[0] < to).mapToLong(t -> t[1]).sum();
        return sum * 1000.0 / MEASURE_MS;
    }

    private static void assertRate(double rate, String what) {
        System.out.printf("[quota] %s: %.0f B/s against a quota of %.0f%n", what, rate, QUOTA);
        assertTrue(rate >= 0.9 * QUOTA && rate <= 1.1 * QUOTA, what + " rate " + rate + " B/s against a quota of " + QUOTA);
    }

    @Test
    void producerIsThrottledToItsByteRate() throws Exception {
        String topic = "quota-produce";
        String client = "java-quota-producer";
        createTopic(topic);
        set(entity(ClientQuotaEntity.CLIENT_ID, client), "producer_byte_rate", QUOTA);

        List<long[]> acked = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicLong failed = new AtomicLong();
        long sent = 0;
        String value = "v".repeat(VALUE_BYTES);
        long start;
        double throttleAvg;
        double throttleMax;
        try (KafkaProducer<String, String> p = Clients.producer(broker, Map.of(
                "client.id", client, "linger.ms", "5", "batch.size", "16384", "buffer.memory", "1048576"))) {
            // Timed from the first acknowledgement, as the consumer from its first record.
            AtomicLong firstAck = new AtomicLong(Long.MAX_VALUE);
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() - firstAck.get() < SKIP_MS + MEASURE_MS && System.currentTimeMillis() < deadline) {
                p.send(new ProducerRecord<>(topic, value), (md, ex) -> {
                    if (ex != null) {
                        failed.incrementAndGet();
                    } else {
                        long now = System.currentTimeMillis();
                        firstAck.accumulateAndGet(now, Math::min);
                        acked.add(new long[] {now, VALUE_BYTES});
                    }
                });
                sent++;
            }
            start = firstAck.get();
            p.flush();
            throttleAvg = metric(p.metrics(), "produce-throttle-time-avg");
            throttleMax = metric(p.metrics(), "produce-throttle-time-max");
        }
        assertEquals(0, failed.get());
        assertEquals(sent, acked.size(), "every record sent was acknowledged");
        assertTrue(throttleAvg > 0 && throttleMax > 0, "produce-throttle-time avg " + throttleAvg + ", max " + throttleMax);
        assertRate(rate(acked, start), "producer");
        TopicPartition tp = new TopicPartition(topic, 0);
        assertEquals(sent, (long) Clients.endOffsets(broker.bootstrap(), List.of(tp), "read_uncommitted").get(tp),
                "the log holds every record");
    }

    @Test
    void consumerIsThrottledToItsByteRate() throws Exception {
        String topic = "quota-fetch";
        String client = "java-quota-consumer";
        createTopic(topic);
        // More than the consumer can read under its quota in the test's time, written by a
        // producer without one.
        int records = (int) (QUOTA * (SKIP_MS + MEASURE_MS + 4_000) * 1.5 / 1000 / VALUE_BYTES);
        String value = "c".repeat(VALUE_BYTES);
        try (KafkaProducer<String, String> p = Clients.producer(broker, Map.of("linger.ms", "5"))) {
            for (int i = 0; i < records; i++) {
                p.send(new ProducerRecord<>(topic, value));
            }
            p.flush();
        }
        set(entity(ClientQuotaEntity.CLIENT_ID, client), "consumer_byte_rate", QUOTA);

        java.util.Properties props = Clients.consumerProps(broker.bootstrap(), "read_uncommitted");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, client);
        // Each fetch a small part of a window: a fetch that would go over the quota is
        // answered empty (as in Kafka) and its client waits as if it were not, so the
        // quota is met closely only when no single fetch is a large part of it.
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "65536");
        props.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "65536");
        List<long[]> got = new ArrayList<>();
        long next = 0;
        double throttleAvg;
        double throttleMax;
        long start;
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            // The clock starts at the first record, not before the first poll: a client slow
            // to start (a loaded machine) leaves its quota windows empty, and the credit they
            // hold would count as a burst above the quota in the measured span.
            start = Long.MAX_VALUE;
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() - start < SKIP_MS + MEASURE_MS && next < records && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    assertEquals(next, r.offset(), "records arrive in order with none missing");
                    next++;
                    long now = System.currentTimeMillis();
                    start = Math.min(start, now);
                    got.add(new long[] {now, r.value().length()});
                }
            }
            throttleAvg = metric(c.metrics(), "fetch-throttle-time-avg");
            throttleMax = metric(c.metrics(), "fetch-throttle-time-max");
        }
        assertTrue(next < records, "the quota, not the end of the topic, limited the consumer");
        assertTrue(throttleAvg > 0 && throttleMax > 0, "fetch-throttle-time avg " + throttleAvg + ", max " + throttleMax);
        assertRate(rate(got, start), "consumer");
    }

    @Test
    void requestPercentageThrottlesItsClient() throws Exception {
        String topic = "quota-requests";
        String client = "java-busy";
        createTopic(topic);
        // 0.05 % of one thread: half a millisecond of handling a second, which a few dozen
        // requests take, however fast the machine is.
        set(entity(ClientQuotaEntity.CLIENT_ID, client), "request_percentage", 0.05);

        // One record per Produce request, until the broker throttles the client.
        long sent = 0;
        double produceThrottle = 0;
        long deadline = System.currentTimeMillis() + 60_000;
        try (KafkaProducer<String, String> p = Clients.producer(broker, Map.of("client.id", client, "linger.ms", "0"))) {
            while (produceThrottle == 0 && sent < 20_000 && System.currentTimeMillis() < deadline) {
                p.send(new ProducerRecord<>(topic, "r" + sent)).get(30, TimeUnit.SECONDS);
                sent++;
                produceThrottle = metric(p.metrics(), "produce-throttle-time-max");
            }
            // A few more, throttled: they wait their turn and are all written.
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, "r" + sent)).get(30, TimeUnit.SECONDS);
                sent++;
            }
            produceThrottle = metric(p.metrics(), "produce-throttle-time-max");
        }
        System.out.printf("[quota] request_percentage: %d produce requests, produce-throttle-time-max %.0f ms%n", sent, produceThrottle);
        assertTrue(produceThrottle > 0, "the producer saw no throttle after " + sent + " requests");
        TopicPartition tp = new TopicPartition(topic, 0);
        assertEquals(sent, (long) Clients.endOffsets(broker.bootstrap(), List.of(tp), "read_uncommitted").get(tp),
                "the log holds every record");

        // The same client-id consuming (its rate is the producer's, still over the quota), in
        // small fetches: throttled too, it reads everything.
        java.util.Properties props = Clients.consumerProps(broker.bootstrap(), "read_uncommitted");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, client);
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "4096");
        props.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "4096");
        // Short long-polls: once everything is read, it keeps fetching, and its fetches are
        // throttled too (the first throttles may fall on its Metadata or ListOffsets).
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "10");
        long next = 0;
        double fetchThrottle = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            while ((next < sent || fetchThrottle == 0) && System.currentTimeMillis() < deadline + 60_000) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    assertEquals(next, r.offset(), "records arrive in order with none missing");
                    assertEquals("r" + next, r.value());
                    next++;
                }
                fetchThrottle = metric(c.metrics(), "fetch-throttle-time-max");
            }
        }
        assertEquals(sent, next, "the consumer read every record");
        assertTrue(fetchThrottle > 0, "fetch-throttle-time-max " + fetchThrottle);
    }

    @Test
    void adminIsHeldToItsControllerMutationRate() throws Exception {
        String client = "java-mutator";
        // Two partitions a second; with controller.quota.window.num=2, a burst of two.
        set(entity(ClientQuotaEntity.CLIENT_ID, client), "controller_mutation_rate", 2.0);
        Map<String, Object> conf = new HashMap<>();
        conf.put("bootstrap.servers", broker.bootstrap());
        conf.put("client.id", client);
        try (Admin a = Admin.create(conf)) {
            // The bucket is not below zero: this goes through, and overdraws it by two.
            Clients.get(a.createTopics(List.of(new NewTopic("mut-a", 4, (short) 1))).all());
            // Below zero: refused with THROTTLING_QUOTA_EXCEEDED and the time to wait.
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> a.createTopics(List.of(new NewTopic("mut-b", 1, (short) 1)),
                            new CreateTopicsOptions().retryOnQuotaViolation(false)).all().get(30, TimeUnit.SECONDS));
            ThrottlingQuotaExceededException t = assertInstanceOf(ThrottlingQuotaExceededException.class, e.getCause());
            assertTrue(t.throttleTimeMs() > 0 && t.throttleTimeMs() <= 1000, "throttle time " + t.throttleTimeMs());
            assertTrue(!Clients.get(a.listTopics().names()).contains("mut-b"), "a refused topic is not created");
            // Admin's default retries wait out the throttle, then the topic is created.
            Clients.get(a.createTopics(List.of(new NewTopic("mut-b", 1, (short) 1))).all());
            // Deletions and new partitions count too.
            e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> a.deleteTopics(List.of("mut-a"), new DeleteTopicsOptions().retryOnQuotaViolation(false))
                            .all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(ThrottlingQuotaExceededException.class, e.getCause());
            Thread.sleep(((ThrottlingQuotaExceededException) e.getCause()).throttleTimeMs());
            Clients.get(a.createPartitions(Map.of("mut-b", NewPartitions.increaseTo(4))).all());
            e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> a.createPartitions(Map.of("mut-a", NewPartitions.increaseTo(5)),
                            new CreatePartitionsOptions().retryOnQuotaViolation(false)).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(ThrottlingQuotaExceededException.class, e.getCause());
            assertEquals(4, Clients.get(a.describeTopics(List.of("mut-a")).allTopicNames()).get("mut-a").partitions().size());
        }
        // Another client is not held to it.
        Clients.get(admin.createTopics(List.of(new NewTopic("mut-c", 8, (short) 1))).all());
    }

    @Test
    void describeDefaultsRemovalAndBadInput() throws Exception {
        ClientQuotaEntity alice = entity(ClientQuotaEntity.USER, "alice", ClientQuotaEntity.CLIENT_ID, null);
        ClientQuotaEntity defaultUser = entity(ClientQuotaEntity.USER, null);
        ClientQuotaEntity app = entity(ClientQuotaEntity.CLIENT_ID, "desc-app");
        set(alice, "producer_byte_rate", 1024.0);
        set(defaultUser, "request_percentage", 25.5);
        set(app, "consumer_byte_rate", 4096.0);

        assertEquals(Map.of(alice, Map.of("producer_byte_rate", 1024.0)),
                describe(ClientQuotaFilter.containsOnly(List.of(
                        ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, "alice"),
                        ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.CLIENT_ID)))));
        assertEquals(Map.of(defaultUser, Map.of("request_percentage", 25.5)),
                describe(ClientQuotaFilter.containsOnly(List.of(
                        ClientQuotaFilterComponent.ofDefaultEntity(ClientQuotaEntity.USER)))));
        Map<ClientQuotaEntity, Map<String, Double>> users = describe(ClientQuotaFilter.contains(List.of(
                ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER))));
        assertEquals(Map.of(alice, Map.of("producer_byte_rate", 1024.0), defaultUser, Map.of("request_percentage", 25.5)), users);
        assertEquals(Map.of("consumer_byte_rate", 4096.0), describe(ClientQuotaFilter.all()).get(app));

        // A null value removes the key; an entity left without keys is gone.
        set(defaultUser, "request_percentage", null);
        set(alice, "producer_byte_rate", null);
        Map<ClientQuotaEntity, Map<String, Double>> all = describe(ClientQuotaFilter.all());
        assertTrue(!all.containsKey(alice) && !all.containsKey(defaultUser), all.toString());

        // Kafka's INVALID_REQUEST: an unknown key, a key of another entity type.
        for (ClientQuotaAlteration bad : List.of(
                new ClientQuotaAlteration(app, List.of(new ClientQuotaAlteration.Op("no_such_rate", 1.0))),
                new ClientQuotaAlteration(entity(ClientQuotaEntity.IP, "10.0.0.9"),
                        List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1.0))))) {
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> admin.alterClientQuotas(List.of(bad)).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(InvalidRequestException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("Invalid configuration key"), e.getCause().getMessage());
        }
        assertEquals(Map.of("consumer_byte_rate", 4096.0), describe(ClientQuotaFilter.all()).get(app), "nothing else changed");
    }
}
