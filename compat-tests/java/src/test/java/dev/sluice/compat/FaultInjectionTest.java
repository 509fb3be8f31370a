package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Request faults (issue 23) with the Java producer: Produce answering NOT_LEADER_OR_FOLLOWER
 * three times is retried by the default (idempotent, acks=all) producer, and every record
 * lands exactly once, in order.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FaultInjectionTest {

    private static SluiceBroker broker;
    private static Admin admin;
    private static String http;
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeAll
    static void startBroker() throws Exception {
        http = "127.0.0.1:" + SluiceBroker.freePort();
        broker = SluiceBroker.start("faults", SluiceBroker.settings("fault.injection.enable", "true", "http.listener", http));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static HttpResponse<String> faults(String method, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + http + "/v1/faults"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json");
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void produceAnsweringNotLeaderThreeTimesIsRetriedAndEveryRecordLandsOnce() throws Exception {
        String topic = "java-inject-produce";
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        HttpResponse<String> added = faults("POST",
                "{\"kind\":\"inject\",\"api\":\"Produce\",\"error\":\"NOT_LEADER_OR_FOLLOWER\",\"count\":3}");
        assertEquals(201, added.statusCode(), added.body());

        int n = 200;
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = Clients.producer(broker, Map.of("linger.ms", "2", "retry.backoff.ms", "50"))) {
            for (int i = 0; i < n; i++) {
                sent.add(p.send(new ProducerRecord<>(topic, 0, null, "j" + i)));
                if (i % 50 == 0) {
                    p.flush(); // several requests, so the errors meet more than the first
                }
            }
            p.flush();
            for (Future<RecordMetadata> f : sent) {
                f.get(30, TimeUnit.SECONDS);
            }
        }

        HttpResponse<String> left = faults("GET", null);
        assertEquals(200, left.statusCode(), left.body());
        assertTrue(left.body().replace(" ", "").contains("\"faults\":[]"),
                "the fault was not used up, so the producer never met the errors: " + left.body());

        List<String> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            expected.add("j" + i);
        }
        List<String> got = Clients.values(Clients.readAll(broker.bootstrap(), List.of(new TopicPartition(topic, 0)), "read_uncommitted"));
        assertEquals(expected, got, "records lost, duplicated or reordered");
    }
}
