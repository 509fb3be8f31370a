package dev.sluice.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * KIP-966: the Java admin's {@code describeTopics} uses DescribeTopicPartitions when the broker
 * advertises it, following the response cursor page by page. The broker's page is set to
 * {@value #PAGE} partitions with Kafka's {@code max.request.partition.size.limit}, so each topic
 * here spans several pages, and the broker's request counter shows the pages were fetched.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DescribeTopicPartitionsTest {

    private static final int PAGE = 5;
    private static final Pattern DTP_REQUESTS =
            Pattern.compile("^sluice_requests_total\\{api=\"DescribeTopicPartitions\"\\} (\\d+(?:\\.\\d+)?)", Pattern.MULTILINE);

    private static SluiceBroker broker;
    private static Admin admin;
    private static int httpPort;

    @BeforeAll
    static void startBroker() throws Exception {
        httpPort = SluiceBroker.freePort();
        broker = SluiceBroker.start("describe-topic-partitions", SluiceBroker.settings(
                "max.request.partition.size.limit", Integer.toString(PAGE),
                "http.listener", "127.0.0.1:" + httpPort));
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    /** How many DescribeTopicPartitions requests the broker has answered. */
    private static long pagesServed() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), "GET /metrics");
        Matcher m = DTP_REQUESTS.matcher(r.body());
        return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
    }

    private static void assertComplete(TopicDescription d, int partitions) {
        assertEquals(partitions, d.partitions().size(), d.name() + ": every partition, across the pages");
        for (int i = 0; i < partitions; i++) {
            TopicPartitionInfo p = d.partitions().get(i);
            assertEquals(i, p.partition(), d.name() + ": partitions in order");
            assertEquals(SluiceBroker.NODE_ID, p.leader().id(), d.name() + "-" + i + " leader");
            assertEquals(List.of(SluiceBroker.NODE_ID), p.replicas().stream().map(n -> n.id()).toList(), d.name() + "-" + i + " replicas");
            assertEquals(List.of(SluiceBroker.NODE_ID), p.isr().stream().map(n -> n.id()).toList(), d.name() + "-" + i + " isr");
            assertTrue(p.elr().isEmpty() && p.lastKnownElr().isEmpty(), d.name() + "-" + i + ": no eligible leader replicas");
        }
        assertFalse(d.isInternal());
        assertFalse(d.topicId().toString().equals("AAAAAAAAAAAAAAAAAAAAAA"), d.name() + " has its id");
    }

    @Test
    void describeTopicsPagesThroughEveryPartition() throws Exception {
        String big = "dtp-big";
        String small = "dtp-small";
        admin.createTopics(List.of(new NewTopic(big, 12, (short) 1), new NewTopic(small, 3, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
        long before = pagesServed();

        Map<String, TopicDescription> got = admin.describeTopics(List.of(big, small)).allTopicNames().get(30, TimeUnit.SECONDS);

        assertComplete(got.get(big), 12);
        assertComplete(got.get(small), 3);
        // 15 partitions at 5 a page: dtp-big's 12 over three pages, dtp-small filling the third.
        long pages = pagesServed() - before;
        assertTrue(pages >= 3, "describeTopics used DescribeTopicPartitions page by page, got " + pages + " requests");
    }

    @Test
    void unknownTopicFailsAlone() throws Exception {
        String known = "dtp-known";
        admin.createTopics(List.of(new NewTopic(known, 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        var result = admin.describeTopics(List.of(known, "dtp-no-such-topic")).topicNameValues();
        assertComplete(result.get(known).get(30, TimeUnit.SECONDS), 2);
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> result.get("dtp-no-such-topic").get(30, TimeUnit.SECONDS));
        assertInstanceOf(UnknownTopicOrPartitionException.class, e.getCause());
    }
}
