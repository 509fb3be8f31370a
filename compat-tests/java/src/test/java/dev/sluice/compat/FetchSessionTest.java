package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-227: the Java consumer opens a fetch session with the broker and then sends incremental
 * fetches. The broker's metrics show the session and the incremental fetches; every record
 * arrives exactly once; a topic dropped from the assignment leaves the session (the client
 * names it in the fetch's forgotten topics) while the other topic goes on being consumed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FetchSessionTest {

    private static final String A = "fs-a";
    private static final String B = "fs-b";
    private static SluiceBroker broker;
    private static Admin admin;
    private static int httpPort;

    @BeforeAll
    static void startBroker() throws Exception {
        httpPort = SluiceBroker.freePort();
        broker = SluiceBroker.start("fetch-session", SluiceBroker.settings("http.listener", "127.0.0.1:" + httpPort));
        admin = Clients.admin(broker);
        Clients.get(admin.createTopics(List.of(new NewTopic(A, 3, (short) 1), new NewTopic(B, 2, (short) 1))).all());
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    /** The value of the metric sample {@code name} (no labels) on the broker's page, 0 if absent. */
    private static long metric(String name) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), "GET /metrics");
        Matcher m = Pattern.compile("^" + name + " (\\d+(?:\\.\\d+)?)", Pattern.MULTILINE).matcher(r.body());
        return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
    }

    private static void produce(String topic, int partitions, int from, int count) throws Exception {
        try (KafkaProducer<String, String> p = Clients.producer(broker)) {
            for (int i = from; i < from + count; i++) {
                p.send(new ProducerRecord<>(topic, i % partitions, null, topic + "-" + i));
            }
            p.flush();
        }
    }

    /** Polls until {@code want} records came, counting each value; fails after the timeout. */
    private static Map<String, Integer> pollUntil(KafkaConsumer<String, String> c, int want) {
        Map<String, Integer> seen = new HashMap<>();
        int got = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (got < want && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                seen.merge(r.value(), 1, Integer::sum);
                got++;
            }
        }
        assertEquals(want, got, "records received");
        return seen;
    }

    @Test
    void consumerUsesIncrementalFetchesAndForgetsAnUnassignedTopic() throws Exception {
        produce(A, 3, 0, 300);
        produce(B, 2, 0, 200);
        List<TopicPartition> all = new ArrayList<>(Clients.partitions(A, 3));
        all.addAll(Clients.partitions(B, 2));
        try (KafkaConsumer<String, String> c = Clients.consumer(broker)) {
            c.assign(all);
            Map<String, Integer> seen = pollUntil(c, 500);
            assertEquals(500, seen.size(), "every record, none twice");
            assertTrue(seen.values().stream().allMatch(n -> n == 1), "no record twice");
            // The consumer goes on fetching (empty, long-polled) incrementally.
            long before = metric("sluice_incremental_fetch_requests_total");
            c.poll(Duration.ofMillis(1500));
            assertTrue(metric("sluice_incremental_fetch_sessions") >= 1, "a session is open");
            assertEquals(5, metric("sluice_incremental_fetch_session_partitions"), "it holds the five partitions");
            assertTrue(metric("sluice_incremental_fetch_requests_total") > before, "fetches are incremental");

            c.assign(Clients.partitions(B, 2));
            produce(A, 3, 300, 30);
            produce(B, 2, 200, 20);
            Map<String, Integer> more = pollUntil(c, 20);
            for (int i = 200; i < 220; i++) {
                assertEquals(1, more.getOrDefault(B + "-" + i, 0), B + "-" + i + " once");
            }
            c.poll(Duration.ofMillis(500));
            assertEquals(2, metric("sluice_incremental_fetch_session_partitions"), "topic " + A + " was forgotten");
        }
    }
}
