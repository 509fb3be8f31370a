package dev.sluice.compat;

import static dev.sluice.compat.Clients.consumerProps;
import static dev.sluice.compat.Clients.partitions;
import static dev.sluice.compat.Clients.producer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.tools.streams.StreamsGroupCommand;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams 4.4 with {@code group.protocol=streams} (KIP-1071): the broker takes the
 * topology, creates the repartition and changelog topics, and assigns the tasks. A word count
 * under exactly_once_v2 must give exact counts, alone and with two instances sharing the tasks
 * (with a standby replica each, set as a group config), one of which then stops. Kafka's
 * kafka-streams-groups tool describes the group. One broker for the class.
 *
 * <p>Kafka 4.4 holds a streams group's first assignment back for
 * {@code streams.initial.rebalance.delay.ms} after a member joins the empty group
 * ({@code group.streams.initial.rebalance.delay.ms}, 3000, on the broker); the two-instance
 * test sets a longer one for its group and checks that no member holds a task meanwhile.
 */
class StreamsGroupTest {

    private static SluiceBroker broker;
    private static Admin admin;

    /** The two-instance group's initial rebalance delay, set as its group config. */
    private static final long GROUP_DELAY_MS = 12000;
    /** The broker's default (group.streams.initial.rebalance.delay.ms). */
    private static final long BROKER_DELAY_MS = 3000;

    private static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("streams-groups");
        admin = Clients.admin(broker);
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[streams-groups] " + fmt + "%n", args);
    }

    /** Produces {@code count} sentences starting at {@code from}; adds their words to {@code expected}. */
    private static void produce(String topic, int from, int count, Map<String, Long> expected) throws Exception {
        try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of())) {
            for (int s = from; s < from + count; s++) {
                StringBuilder sb = new StringBuilder();
                for (int w = 0; w <= s % 5; w++) {
                    String word = WORDS[(s * 3 + w * 5) % WORDS.length];
                    sb.append(w == 0 ? "" : " ").append(w % 2 == 0 ? word : word.toUpperCase(Locale.ROOT));
                    expected.merge(word, 1L, Long::sum);
                }
                p.send(new ProducerRecord<>(topic, "s" + s, sb.toString()));
            }
            p.flush();
        }
    }

    private static Topology wordCount(String in, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    private static KafkaStreams streams(String app, String in, String out, Path stateDir, AtomicReference<Throwable> error) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        KafkaStreams s = new KafkaStreams(wordCount(in, out), props);
        s.setUncaughtExceptionHandler(e -> {
            error.compareAndSet(null, e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return s;
    }

    /** Reads the output (read_committed) until the counts equal {@code expected}, and a little longer. */
    private static void awaitCounts(KafkaConsumer<String, Long> reader, Map<String, Long> expected, Map<String, Long> last,
                                    Map<String, Long> maxSeen, BooleanSupplier failed) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!last.equals(expected) && System.nanoTime() < deadline) {
            if (failed.getAsBoolean()) {
                throw new AssertionError("Kafka Streams failed");
            }
            poll(reader, last, maxSeen);
        }
        // Anything still in flight would be a duplicate: read a little longer.
        long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (System.nanoTime() < settle) {
            poll(reader, last, maxSeen);
        }
        assertEquals(expected, last, "word counts (read_committed)");
        assertEquals(expected, maxSeen, "largest count ever emitted per word (a larger one means double counting)");
    }

    private static void poll(KafkaConsumer<String, Long> reader, Map<String, Long> last, Map<String, Long> maxSeen) {
        for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
            last.put(r.key(), r.value());
            maxSeen.merge(r.key(), r.value(), Math::max);
        }
    }

    private static KafkaConsumer<String, Long> reader(String out) {
        KafkaConsumer<String, Long> reader =
                new KafkaConsumer<>(consumerProps(broker.bootstrap(), "read_committed"), new StringDeserializer(), new LongDeserializer());
        reader.assign(partitions(out, 2));
        reader.seekToBeginning(reader.assignment());
        return reader;
    }

    /** Runs Kafka's kafka-streams-groups tool in-process; returns what it printed (exit code 0 asserted). */
    private static String streamsGroupsTool(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", broker.bootstrap()));
        all.addAll(Arrays.asList(args));
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int rc;
        try (PrintStream capture = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            rc = StreamsGroupCommand.execute(all.toArray(new String[0]));
        } finally {
            System.setOut(saved);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        log("kafka-streams-groups %s ->%n%s", String.join(" ", args), out);
        assertEquals(0, rc, "kafka-streams-groups " + String.join(" ", args) + " exit code; output:\n" + out);
        return out;
    }

    private static StreamsGroupDescription describe(String app) throws Exception {
        return Clients.get(admin.describeStreamsGroups(List.of(app)).all()).get(app);
    }

    private static Set<String> activeTasks(StreamsGroupMemberDescription m) {
        return tasks(m.assignment().activeTasks());
    }

    private static Set<String> standbyTasks(StreamsGroupMemberDescription m) {
        return tasks(m.assignment().standbyTasks());
    }

    /** The tasks of subtopology 1, the word count's only stateful one. */
    private static Set<String> stateful(Set<String> tasks) {
        Set<String> out = new HashSet<>(tasks);
        out.removeIf(t -> !t.startsWith("1_"));
        return out;
    }

    private static Set<String> tasks(List<StreamsGroupMemberAssignment.TaskIds> ids) {
        Set<String> out = new HashSet<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ids) {
            for (int p : t.partitions()) {
                out.add(t.subtopologyId() + "_" + p);
            }
        }
        return out;
    }

    private static void waitFor(String what, BooleanSupplier cond, BooleanSupplier failed) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (!cond.getAsBoolean()) {
            if (failed.getAsBoolean()) {
                throw new AssertionError("Kafka Streams failed while waiting for " + what);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(200);
        }
    }

    /**
     * Describes the group until its initial rebalance delay has surely run out. A description
     * that came back less than the delay after the members started was taken while the delay
     * ran (they joined after {@code started}), so it must show members without tasks or
     * target tasks. Some of them must come after the broker's default delay: the
     * group's own config is what held the assignment back.
     */
    private static void assertNoTasksDuringTheInitialDelay(String app, long started) throws Exception {
        int seen = 0;
        int pastBrokerDefault = 0;
        while (true) {
            StreamsGroupDescription d = null;
            try {
                d = describe(app);
            } catch (Exception | AssertionError e) {
                // not created yet
            }
            // Half a second of slack for the broker's clock against this one.
            long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            if (elapsedMs >= GROUP_DELAY_MS - 500) {
                break;
            }
            if (d != null && !d.members().isEmpty()) {
                for (StreamsGroupMemberDescription m : d.members()) {
                    assertTrue(activeTasks(m).isEmpty() && standbyTasks(m).isEmpty(), "a task during the initial delay: " + d);
                    assertTrue(tasks(m.targetAssignment().activeTasks()).isEmpty(), "a target during the initial delay: " + d);
                }
                seen++;
                if (elapsedMs > BROKER_DELAY_MS + 500) {
                    pastBrokerDefault++;
                }
            }
            Thread.sleep(200);
        }
        log("initial delay: %d descriptions without tasks, %d after the broker's default delay", seen, pastBrokerDefault);
        assertTrue(pastBrokerDefault > 0, "no description between the broker's default delay and the group's");
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void wordCountExactlyOnceWithTheStreamsProtocol(@TempDir Path stateDir) throws Exception {
        String app = "sg-wc-one";
        String in = app + "-in";
        String out = app + "-out";
        Clients.get(admin.createTopics(List.of(new NewTopic(in, 2, (short) 1), new NewTopic(out, 2, (short) 1))).all());
        Map<String, Long> expected = new TreeMap<>();
        produce(in, 0, 300, expected);
        AtomicReference<Throwable> error = new AtomicReference<>();
        try (KafkaStreams s = streams(app, in, out, stateDir, error);
             KafkaConsumer<String, Long> reader = reader(out)) {
            s.start();
            BooleanSupplier failed = () -> error.get() != null || s.state() == KafkaStreams.State.ERROR;
            awaitCounts(reader, expected, new TreeMap<>(), new TreeMap<>(), failed);
            assertEquals(KafkaStreams.State.RUNNING, s.state());

            // The broker made the internal topics, with the derived partition counts.
            Set<String> names = Clients.get(admin.listTopics().names());
            String repartition = app + "-words-repartition";
            String changelog = app + "-word-counts-changelog";
            assertTrue(names.contains(repartition) && names.contains(changelog), "internal topics: " + names);
            var topics = Clients.get(admin.describeTopics(List.of(repartition, changelog)).allTopicNames());
            assertEquals(2, topics.get(repartition).partitions().size(), "repartition partitions");
            assertEquals(2, topics.get(changelog).partitions().size(), "changelog partitions");

            StreamsGroupDescription d = describe(app);
            log("described: %s", d);
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(1, d.members().size());
            assertEquals(2, d.subtopologies().size());
            assertEquals(Set.of("0_0", "0_1", "1_0", "1_1"), activeTasks(d.members().iterator().next()));

            // Kafka's kafka-streams-groups tool describes the group, its members and its offsets.
            String described = streamsGroupsTool("--describe", "--group", app);
            assertTrue(described.contains(in) && described.contains(app + "-words-repartition"), "kafka-streams-groups --describe:\n" + described);
            String state = streamsGroupsTool("--describe", "--state", "--group", app);
            assertTrue(state.contains("Stable"), "kafka-streams-groups --describe --state:\n" + state);
            String members = streamsGroupsTool("--describe", "--members", "--group", app);
            assertTrue(members.contains(d.members().iterator().next().memberId()), "kafka-streams-groups --describe --members:\n" + members);
            assertTrue(streamsGroupsTool("--list").contains(app), "kafka-streams-groups --list");

            Collection<GroupListing> groups = Clients.get(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all());
            assertTrue(groups.stream().anyMatch(g -> g.groupId().equals(app) && g.type().orElse(null) == GroupType.STREAMS),
                    "ListGroups of type streams: " + groups);
        }
    }

    @Test
    @Timeout(value = 360, unit = TimeUnit.SECONDS)
    void twoInstancesShareTheTasksAndOneTakesOverWhenTheOtherStops(@TempDir Path stateDir) throws Exception {
        String app = "sg-wc-two";
        String in = app + "-in";
        String out = app + "-out";
        Clients.get(admin.createTopics(List.of(new NewTopic(in, 4, (short) 1), new NewTopic(out, 2, (short) 1))).all());
        Map<String, Long> expected = new TreeMap<>();
        Map<String, Long> last = new TreeMap<>();
        Map<String, Long> maxSeen = new TreeMap<>();
        produce(in, 0, 200, expected);
        // One standby replica per task, set as the group's own config (streams.num.standby.replicas).
        ConfigResource groupResource = new ConfigResource(ConfigResource.Type.GROUP, app);
        AlterConfigOp standbys = new AlterConfigOp(new ConfigEntry("streams.num.standby.replicas", "1"), AlterConfigOp.OpType.SET);
        AlterConfigOp delay = new AlterConfigOp(
                new ConfigEntry("streams.initial.rebalance.delay.ms", String.valueOf(GROUP_DELAY_MS)), AlterConfigOp.OpType.SET);
        // Members report their tasks' changelog offsets this often (the least a group may set).
        AlterConfigOp offsetInterval = new AlterConfigOp(new ConfigEntry("streams.task.offset.interval.ms", "15000"), AlterConfigOp.OpType.SET);
        Clients.get(admin.incrementalAlterConfigs(Map.of(groupResource, List.of(standbys, delay, offsetInterval))).all());
        AtomicReference<Throwable> errorA = new AtomicReference<>();
        AtomicReference<Throwable> errorB = new AtomicReference<>();
        KafkaStreams a = streams(app, in, out, Files.createDirectories(stateDir.resolve("a")), errorA);
        try (KafkaStreams b = streams(app, in, out, Files.createDirectories(stateDir.resolve("b")), errorB);
             KafkaConsumer<String, Long> reader = reader(out)) {
            BooleanSupplier failedB = () -> errorB.get() != null || b.state() == KafkaStreams.State.ERROR;
            BooleanSupplier failed = () -> failedB.getAsBoolean() || errorA.get() != null || a.state() == KafkaStreams.State.ERROR;
            long started = System.nanoTime();
            a.start();
            b.start();
            assertNoTasksDuringTheInitialDelay(app, started);
            // Both members hold tasks, none twice, all eight between them; each keeps a standby
            // copy of the other's stateful tasks (the two instances are two processes; the
            // counting subtopology 1 has a store, subtopology 0 none, so as in Kafka 4.4 its
            // tasks get no standby).
            waitFor("two members sharing the tasks, each with standbys of the other's", () -> {
                try {
                    StreamsGroupDescription d = describe(app);
                    if (d.groupState() != GroupState.STABLE || d.members().size() != 2) {
                        return false;
                    }
                    List<Set<String>> held = new ArrayList<>();
                    List<Set<String>> standby = new ArrayList<>();
                    d.members().forEach(m -> {
                        held.add(activeTasks(m));
                        standby.add(standbyTasks(m));
                    });
                    Set<String> all = new HashSet<>(held.get(0));
                    all.addAll(held.get(1));
                    return !held.get(0).isEmpty() && !held.get(1).isEmpty() && all.size() == 8
                            && held.get(0).size() + held.get(1).size() == 8
                            && standby.get(0).equals(stateful(held.get(1))) && standby.get(1).equals(stateful(held.get(0)));
                } catch (Exception | AssertionError e) {
                    return false; // not described yet
                }
            }, failed);
            log("shared: %s", describe(app).members());
            awaitCounts(reader, expected, last, maxSeen, failed);
            // The broker keeps what each member last reported of its tasks' state and shows it
            // (the assignor ranks standby candidates by it): reported at the latest one offset
            // interval after joining.
            waitFor("the members' task offsets in the description", () -> {
                try {
                    StreamsGroupDescription d = describe(app);
                    return d.members().stream().anyMatch(m -> !m.taskOffsets().isEmpty());
                } catch (Exception | AssertionError e) {
                    return false; // not described yet
                }
            }, failed);
            log("task offsets: %s", describe(app).members().stream().map(m -> m.memberId() + "=" + m.taskOffsets()).toList());

            a.close(Duration.ofSeconds(30));
            waitFor("the remaining member to hold every task", () -> {
                try {
                    StreamsGroupDescription d = describe(app);
                    // A lone process has nowhere to keep a standby.
                    return d.groupState() == GroupState.STABLE && d.members().size() == 1
                            && activeTasks(d.members().iterator().next()).size() == 8
                            && standbyTasks(d.members().iterator().next()).isEmpty();
                } catch (Exception | AssertionError e) {
                    return false; // not described yet
                }
            }, failedB);
            produce(in, 200, 200, expected);
            awaitCounts(reader, expected, last, maxSeen, failedB);
            assertEquals(KafkaStreams.State.RUNNING, b.state());
        } finally {
            a.close(Duration.ofSeconds(10));
        }
    }
}
