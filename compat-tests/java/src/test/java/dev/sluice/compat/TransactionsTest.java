package dev.sluice.compat;

import static dev.sluice.compat.Clients.consumer;
import static dev.sluice.compat.Clients.consumerProps;
import static dev.sluice.compat.Clients.endOffsets;
import static dev.sluice.compat.Clients.partitions;
import static dev.sluice.compat.Clients.producer;
import static dev.sluice.compat.Clients.readAll;
import static dev.sluice.compat.Clients.values;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transactions and exactly-once with the official Java client (TV1 protocol): a
 * consume-transform-produce loop that survives a kill -9 of the broker, zombie fencing,
 * coordinator-side transaction timeouts, and a Kafka Streams exactly_once_v2 word count.
 *
 * <p>{@code -Dsluice.txn.records=N} sets the number of input records of the
 * consume-transform-produce test (default {@value #DEFAULT_CTP_RECORDS}).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TransactionsTest {

    /** 100k records take ~15-25 s in all here (incl. a 4 s broker outage and a consumer rejoin). */
    static final int DEFAULT_CTP_RECORDS = 100_000;

    private static final Map<String, String> BROKER_SETTINGS =
            SluiceBroker.settings("group.initial.rebalance.delay.ms", "0");

    private static SluiceBroker broker;
    private static Admin admin;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = SluiceBroker.start("transactions", BROKER_SETTINGS);
        admin = admin(broker.bootstrap());
    }

    @AfterAll
    static void stopBroker() {
        Clients.close(admin, broker);
    }

    // ------------------------------------------------------------------------------------------
    // a. consume-transform-produce, every 7th transaction aborted, one kill -9 of the broker
    // ------------------------------------------------------------------------------------------

    private static final String CTP_IN = "ctp-in";
    private static final String CTP_OUT = "ctp-out";
    private static final String CTP_GROUP = "ctp-group";
    private static final String CTP_TXN_ID = "ctp-app";
    private static final int CTP_PARTITIONS = 3;
    private static final int CTP_TXN_TIMEOUT_MS = 3000;
    private static final int CTP_OUTAGE_MS = 4000;

    /** What the application loop saw; written by the loop thread, read by the checks. */
    private static final class CtpLedger {
        final AtomicLong committedRecords = new AtomicLong();
        long attempts;
        /** Attempt id -> records sent, for transactions whose commitTransaction() returned normally. */
        final Map<Long, Integer> committed = new HashMap<>();
        /** Attempt id -> records sent, for transactions we aborted on purpose after every send was acked. */
        final Map<Long, Integer> aborted = new HashMap<>();
        int producerRecreations;
        int consumerRecreations;
        final List<String> errors = new ArrayList<>();
        /** Transactions whose producer was told it is fenced: they can never have committed. */
        final Set<Long> fenced = new java.util.TreeSet<>();
        long crashedAttempt = -1;
    }

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void consumeTransformProduceIsExactlyOnceAcrossKill9() throws Exception {
        final int n = Integer.getInteger("sluice.txn.records", DEFAULT_CTP_RECORDS);
        final long t0 = System.nanoTime();
        try (CrashableBroker b = CrashableBroker.start("txn-ctp", BROKER_SETTINGS);
             Admin a = admin(b.bootstrap())) {
            Clients.get(a.createTopics(List.of(
                    new NewTopic(CTP_IN, CTP_PARTITIONS, (short) 1),
                    new NewTopic(CTP_OUT, CTP_PARTITIONS, (short) 1))).all());

            // Input: n records "in-0000000".. spread round-robin over the partitions.
            try (KafkaProducer<String, String> p = producer(b.bootstrap(), Map.of(
                    ProducerConfig.LINGER_MS_CONFIG, "20",
                    ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(256 * 1024)))) {
                List<Future<RecordMetadata>> acks = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    acks.add(p.send(new ProducerRecord<>(CTP_IN, i % CTP_PARTITIONS, "k" + i, inValue(i))));
                }
                p.flush();
                for (Future<RecordMetadata> f : acks) {
                    Clients.get(f);
                }
            }
            List<TopicPartition> inTps = partitions(CTP_IN, CTP_PARTITIONS);
            Map<TopicPartition, Long> inEnd = endOffsets(b.bootstrap(), inTps, "read_uncommitted");
            assertEquals(n, inEnd.values().stream().mapToLong(Long::longValue).sum(),
                    "input end offsets " + inEnd);
            long filled = System.nanoTime();

            // kill -9 in the middle of a transaction whose records are already in the output log
            // (written, not yet committed); the broker comes back on the same port and data dir
            // after an outage longer than the producer's transaction.timeout.ms, so the restarted
            // coordinator aborts that transaction and fences the producer, which the application
            // must survive (new producer, initTransactions, resume from the committed offsets).
            CtpLedger ledger = new CtpLedger();
            AtomicBoolean killed = new AtomicBoolean();
            AtomicReference<Throwable> restartFailure = new AtomicReference<>();
            List<Thread> restarter = new ArrayList<>();
            Runnable crash = () -> {
                try {
                    log("kill -9 broker in transaction %d after %d committed records", ledger.attempts,
                            ledger.committedRecords.get());
                    b.kill9();
                    killed.set(true);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                Thread t = new Thread(() -> {
                    try {
                        Thread.sleep(CTP_OUTAGE_MS);
                        b.start();
                        log("broker restarted on %s", b.bootstrap());
                    } catch (Throwable e) {
                        restartFailure.set(e);
                    }
                }, "ctp-restarter");
                t.setDaemon(true);
                t.start();
                restarter.add(t);
            };

            runCtpApp(b.bootstrap(), inTps, inEnd, ledger, n * 2L / 5, crash, restartFailure,
                    Duration.ofSeconds(420));
            for (Thread t : restarter) {
                t.join(TimeUnit.SECONDS.toMillis(60));
            }
            long processed = System.nanoTime();
            if (restartFailure.get() != null) {
                throw new AssertionError("could not restart the broker", restartFailure.get());
            }
            assertTrue(killed.get(), "the broker was never killed; the test is void");
            log("app done: %d transactions (%d committed, %d aborted on purpose), %d producer and %d consumer "
                            + "(re)creations, %d errors handled: %s",
                    ledger.attempts, ledger.committed.size(), ledger.aborted.size(), ledger.producerRecreations,
                    ledger.consumerRecreations, ledger.errors.size(), ledger.errors);
            assertFalse(ledger.aborted.isEmpty(), "no transaction was aborted on purpose; the test is void");

            // The group's committed offsets cover the whole input.
            Map<TopicPartition, OffsetAndMetadata> groupOffsets =
                    Clients.get(a.listConsumerGroupOffsets(CTP_GROUP).partitionsToOffsetAndMetadata());
            for (TopicPartition tp : inTps) {
                OffsetAndMetadata om = groupOffsets.get(tp);
                assertNotNull(om, "no committed offset for " + tp + ": " + groupOffsets);
                assertEquals(inEnd.get(tp).longValue(), om.offset(), "committed offset of " + tp);
            }

            List<TopicPartition> outTps = partitions(CTP_OUT, CTP_PARTITIONS);

            // read_committed: every input record exactly once, nothing from an aborted transaction.
            List<ConsumerRecord<String, String>> committedView = readAll(b.bootstrap(), outTps, "read_committed");
            int[] seen = new int[n];
            Map<Long, Integer> perAttempt = new HashMap<>();
            List<String> bad = new ArrayList<>();
            for (ConsumerRecord<String, String> r : committedView) {
                String[] parts = r.value().split("\\|a", 2);
                int i = parseInput(parts[0]);
                long attempt = Long.parseLong(parts[1]);
                perAttempt.merge(attempt, 1, Integer::sum);
                if (i < 0 || i >= n) {
                    bad.add("unexpected value " + r.value());
                    continue;
                }
                seen[i]++;
                if (!r.key().equals("k" + i)) {
                    bad.add("key " + r.key() + " for " + r.value());
                }
            }
            List<Integer> missing = new ArrayList<>();
            List<String> duplicated = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (seen[i] == 0) {
                    missing.add(i);
                } else if (seen[i] > 1) {
                    duplicated.add(i + "x" + seen[i]);
                }
            }
            assertTrue(bad.isEmpty(), "malformed output records: " + head(bad));
            assertTrue(missing.isEmpty() && duplicated.isEmpty(), String.format(
                    "read_committed output has %d records for %d inputs: %d missing (e.g. %s), %d duplicated (e.g. %s)",
                    committedView.size(), n, missing.size(), head(missing), duplicated.size(), head(duplicated)));
            assertEquals(n, committedView.size(), "read_committed record count");
            List<Long> visibleAborted = perAttempt.keySet().stream().filter(ledger.aborted::containsKey).sorted().toList();
            assertTrue(visibleAborted.isEmpty(),
                    "read_committed shows records of aborted transactions " + head(visibleAborted));
            List<Long> visibleFenced = perAttempt.keySet().stream().filter(ledger.fenced::contains).sorted().toList();
            assertTrue(visibleFenced.isEmpty(),
                    "read_committed shows records of transactions whose producer was fenced " + head(visibleFenced));
            log("the transaction open at the crash (%d) has %d records visible to read_committed; fenced "
                    + "transactions: %s", ledger.crashedAttempt,
                    perAttempt.getOrDefault(ledger.crashedAttempt, 0), ledger.fenced);
            List<String> partial = new ArrayList<>();
            for (Map.Entry<Long, Integer> e : ledger.committed.entrySet()) {
                int got = perAttempt.getOrDefault(e.getKey(), 0);
                if (got != e.getValue()) {
                    partial.add("txn " + e.getKey() + ": " + got + " of " + e.getValue());
                }
            }
            assertTrue(partial.isEmpty(), "committed transactions not fully visible: " + head(partial));

            // read_uncommitted: the records of the aborted transactions are there as well.
            List<ConsumerRecord<String, String>> rawView = readAll(b.bootstrap(), outTps, "read_uncommitted");
            Map<Long, Integer> rawPerAttempt = new HashMap<>();
            for (ConsumerRecord<String, String> r : rawView) {
                rawPerAttempt.merge(Long.parseLong(r.value().split("\\|a", 2)[1]), 1, Integer::sum);
            }
            List<String> abortedMissing = new ArrayList<>();
            for (Map.Entry<Long, Integer> e : ledger.aborted.entrySet()) {
                int got = rawPerAttempt.getOrDefault(e.getKey(), 0);
                if (got != e.getValue()) {
                    abortedMissing.add("txn " + e.getKey() + ": " + got + " of " + e.getValue());
                }
            }
            assertTrue(abortedMissing.isEmpty(),
                    "read_uncommitted does not show the aborted transactions' records: " + head(abortedMissing));
            int abortedRecords = ledger.aborted.values().stream().mapToInt(Integer::intValue).sum();
            assertTrue(rawView.size() >= n + abortedRecords, "read_uncommitted has " + rawView.size()
                    + " records, expected at least " + n + " + " + abortedRecords + " aborted");

            long done = System.nanoTime();
            log("consume-transform-produce with %d records: fill %.1f s, process %.1f s, verify %.1f s, total %.1f s"
                            + " (read_uncommitted saw %d records)",
                    n, secs(filled - t0), secs(processed - filled), secs(done - processed), secs(done - t0),
                    rawView.size());
        }
    }

    private static String inValue(int i) {
        return String.format(Locale.ROOT, "in-%07d", i);
    }

    private static int parseInput(String v) {
        return v.startsWith("in-") ? Integer.parseInt(v.substring(3)) : -1;
    }

    /**
     * The application: poll, transform, produce and commit the consumed offsets in one transaction;
     * every 7th transaction is aborted (after its records were acknowledged) and its input re-read.
     * Once {@code crashAfterRecords} records are committed, {@code crash} runs in the middle of the
     * next committing transaction, after its output records were flushed.
     * Any error tears the producer down (and the consumer, if it failed itself or the producer was
     * fenced) and the loop resumes from the group's committed offsets.
     */
    private static void runCtpApp(String bootstrap, List<TopicPartition> inTps, Map<TopicPartition, Long> inEnd,
                                  CtpLedger ledger, long crashAfterRecords, Runnable crash,
                                  AtomicReference<Throwable> restartFailure, Duration budget) throws Exception {
        boolean crashed = false;
        long current = -1; // the attempt in progress, -1 between transactions
        long deadline = System.nanoTime() + budget.toNanos();
        KafkaProducer<String, String> producer = null;
        KafkaConsumer<String, String> consumer = null;
        boolean needRewind = false;
        try {
            while (true) {
                if (restartFailure.get() != null) {
                    throw new AssertionError("could not restart the broker", restartFailure.get());
                }
                if (System.nanoTime() > deadline) {
                    fail("consume-transform-produce did not finish within " + budget + ": "
                            + ledger.committedRecords.get() + " records committed, errors " + head(ledger.errors));
                }
                String stage = "setup";
                try {
                    if (consumer == null) {
                        consumer = ctpConsumer(bootstrap);
                        consumer.subscribe(List.of(CTP_IN));
                        ledger.consumerRecreations++;
                        needRewind = false; // a new consumer starts at the committed offsets
                    }
                    if (producer == null) {
                        stage = "initTransactions";
                        producer = ctpProducer(bootstrap);
                        ledger.producerRecreations++;
                        producer.initTransactions();
                    }
                    if (needRewind) {
                        stage = "rewind";
                        rewindToCommitted(consumer);
                        needRewind = false;
                    }
                    stage = "poll";
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) {
                        KafkaConsumer<String, String> c = consumer;
                        if (c.assignment().containsAll(inTps)
                                && inTps.stream().allMatch(tp -> c.position(tp) >= inEnd.get(tp))) {
                            return;
                        }
                        continue;
                    }
                    long attempt = ++ledger.attempts;
                    current = attempt;
                    boolean abort = attempt % 7 == 0;
                    stage = "beginTransaction";
                    producer.beginTransaction();
                    stage = "send";
                    Map<TopicPartition, Long> first = new HashMap<>();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    List<Future<RecordMetadata>> sends = new ArrayList<>(records.count());
                    for (ConsumerRecord<String, String> r : records) {
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        first.putIfAbsent(tp, r.offset());
                        next.put(tp, new OffsetAndMetadata(r.offset() + 1));
                        sends.add(producer.send(new ProducerRecord<>(CTP_OUT, r.partition(), r.key(),
                                r.value() + "|a" + attempt)));
                    }
                    if (!crashed && !abort && ledger.committedRecords.get() >= crashAfterRecords) {
                        stage = "flush";
                        producer.flush();
                        crashed = true;
                        ledger.crashedAttempt = attempt;
                        crash.run();
                    }
                    stage = "sendOffsetsToTransaction";
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    if (abort) {
                        stage = "flush";
                        producer.flush();
                        for (Future<RecordMetadata> f : sends) {
                            f.get(); // all written: the records are in the log, only the abort marker hides them
                        }
                        ledger.aborted.put(attempt, records.count());
                        stage = "abortTransaction";
                        producer.abortTransaction();
                        first.forEach(consumer::seek);
                        current = -1;
                    } else {
                        stage = "commitTransaction";
                        producer.commitTransaction();
                        ledger.committed.put(attempt, records.count());
                        ledger.committedRecords.addAndGet(records.count());
                        current = -1;
                    }
                } catch (Exception e) {
                    Throwable root = rootCause(e);
                    String what = stage + ": " + e.getClass().getSimpleName()
                            + (root != e ? " (" + root.getClass().getSimpleName() + ")" : "") + ": " + e.getMessage();
                    ledger.errors.add(what);
                    boolean fatal = isFencedOrEpoch(e);
                    if (current >= 0 && fatal) {
                        ledger.fenced.add(current);
                    }
                    current = -1;
                    log("app error, recovering: %s", what);
                    if (producer != null) {
                        producer.close(Duration.ZERO);
                        producer = null;
                    }
                    // A fenced producer means this instance is a zombie: restart it as a whole (new
                    // consumer too, resuming from the committed offsets). After other errors the
                    // consumer is kept, unless it failed itself, and rewound to the committed offsets.
                    if (fatal || stage.equals("poll") || stage.equals("rewind") || stage.equals("setup")) {
                        if (consumer != null) {
                            closeQuietly(consumer);
                            consumer = null;
                        }
                    } else {
                        needRewind = true;
                    }
                    Thread.sleep(200);
                }
            }
        } finally {
            if (producer != null) {
                producer.close(Duration.ofSeconds(5));
            }
            if (consumer != null) {
                closeQuietly(consumer);
            }
        }
    }

    /** Seeks every assigned partition back to the group's committed offset (the start when there is none). */
    private static void rewindToCommitted(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata om = committed.get(tp);
            if (om == null) {
                consumer.seekToBeginning(List.of(tp));
            } else {
                consumer.seek(tp, om.offset());
            }
        }
    }

    private static KafkaProducer<String, String> ctpProducer(String bootstrap) {
        return producer(bootstrap, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, CTP_TXN_ID,
                ProducerConfig.CLIENT_ID_CONFIG, "ctp-producer",
                ProducerConfig.LINGER_MS_CONFIG, "5",
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(CTP_TXN_TIMEOUT_MS),
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000",
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000",
                ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500",
                ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500"));
    }

    private static KafkaConsumer<String, String> ctpConsumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, CTP_GROUP);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "ctp-consumer");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "60000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        p.put(ConsumerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    // ------------------------------------------------------------------------------------------
    // b. zombie fencing
    // ------------------------------------------------------------------------------------------

    @Test
    void secondProducerWithSameTransactionalIdFencesTheFirst() throws Exception {
        String topic = "txn-zombie";
        createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, String> conf = Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, "zombie-app",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");

        KafkaProducer<String, String> zombie = producer(broker.bootstrap(), conf);
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            Clients.get(zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-committed")));
            zombie.commitTransaction();

            zombie.beginTransaction();
            Clients.get(zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-open")));

            try (KafkaProducer<String, String> successor = producer(broker.bootstrap(), conf)) {
                successor.initTransactions(); // bumps the epoch and aborts the zombie's open transaction

                Throwable failure = null;
                Future<RecordMetadata> late = null;
                try {
                    late = zombie.send(new ProducerRecord<>(topic, 0, "k", "zombie-late"));
                    zombie.flush();
                } catch (Exception e) {
                    failure = e;
                }
                if (late != null) {
                    try {
                        late.get(30, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        failure = failure == null ? e : failure;
                    }
                }
                try {
                    zombie.commitTransaction();
                    if (failure == null) {
                        fail("the fenced producer's send and commitTransaction both succeeded");
                    }
                } catch (Exception e) {
                    log("fenced producer's commitTransaction failed with %s", chain(e));
                    assertFencedOrEpoch(e, "commitTransaction of the fenced producer");
                }
                if (failure != null) {
                    log("fenced producer's send failed with %s", chain(failure));
                    assertFencedOrEpoch(failure, "send of the fenced producer");
                }

                successor.beginTransaction();
                Clients.get(successor.send(new ProducerRecord<>(topic, 0, "k", "successor")));
                successor.commitTransaction();
            }
        } finally {
            zombie.close(Duration.ZERO);
        }

        List<String> committed = values(readAll(broker.bootstrap(), List.of(tp), "read_committed"));
        assertEquals(List.of("zombie-committed", "successor"), committed, "read_committed view");
        List<String> raw = values(readAll(broker.bootstrap(), List.of(tp), "read_uncommitted"));
        assertTrue(raw.contains("zombie-open"), "read_uncommitted should show the aborted record: " + raw);
        assertFalse(raw.contains("zombie-late"), "a record of the fenced producer was written: " + raw);
    }

    private static boolean isFencedOrEpoch(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private static void assertFencedOrEpoch(Throwable t, String what) {
        if (isFencedOrEpoch(t)) {
            return;
        }
        throw new AssertionError(what + " should fail with ProducerFencedException or "
                + "InvalidProducerEpochException, got " + chain(t), t);
    }

    // ------------------------------------------------------------------------------------------
    // c. coordinator aborts a transaction that outlives transaction.timeout.ms
    // ------------------------------------------------------------------------------------------

    @Test
    void coordinatorAbortsTransactionAfterTimeout() throws Exception {
        String topic = "txn-timeout";
        String txnId = "stalling-app";
        createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);

        KafkaProducer<String, String> staller = producer(broker.bootstrap(), Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "2000",
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000"));
        try (KafkaProducer<String, String> plain = producer(broker.bootstrap(), Map.of());
             KafkaConsumer<String, String> committedReader = consumer(broker.bootstrap(), "read_committed")) {
            staller.initTransactions();
            staller.beginTransaction();
            long begun = System.nanoTime();
            long txnOffset = Clients.get(staller.send(new ProducerRecord<>(topic, 0, "k", "stalled"))).offset();
            long afterOffset = Clients.get(plain.send(new ProducerRecord<>(topic, 0, "k", "after"))).offset();
            assertTrue(afterOffset > txnOffset, "offsets " + txnOffset + ", " + afterOffset);

            // While the transaction is open the last stable offset stays at its first record.
            long lso = committedReader.endOffsets(List.of(tp)).get(tp);
            assertEquals(txnOffset, lso, "read_committed end offset (LSO) with the transaction open");
            TransactionDescription open = Clients.get(admin.describeTransactions(List.of(txnId)).description(txnId));
            assertEquals(TransactionState.ONGOING, open.state(), "state with the transaction open: " + open);

            // The stalled producer does nothing more; the coordinator must abort after ~2 s.
            long movedAfterMs = -1;
            while (System.nanoTime() - begun < TimeUnit.SECONDS.toNanos(15)) {
                lso = committedReader.endOffsets(List.of(tp)).get(tp);
                if (lso > afterOffset) {
                    movedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begun);
                    break;
                }
                Thread.sleep(100);
            }
            assertTrue(movedAfterMs >= 0, "LSO still " + lso + " 15 s after the transaction began "
                    + "(transaction.timeout.ms=2000); record 'after' is at " + afterOffset);
            log("LSO moved past the timed-out transaction after %d ms", movedAfterMs);
            assertTrue(movedAfterMs >= 1500, "the transaction was ended after only " + movedAfterMs + " ms");

            TransactionDescription ended = Clients.get(admin.describeTransactions(List.of(txnId)).description(txnId));
            assertEquals(TransactionState.COMPLETE_ABORT, ended.state(), "state after the timeout: " + ended);
            assertTrue(ended.producerEpoch() > open.producerEpoch(),
                    "the timeout abort should bump the epoch: " + open + " -> " + ended);

            List<String> committed = values(readAll(broker.bootstrap(), List.of(tp), "read_committed"));
            assertEquals(List.of("after"), committed, "read_committed view after the timeout abort");

            try {
                staller.commitTransaction();
                fail("commitTransaction of the timed-out transaction succeeded");
            } catch (Exception e) {
                log("commitTransaction after the timeout failed with %s", chain(e));
                assertFencedOrEpoch(e, "commitTransaction after the coordinator aborted the transaction");
            }
            assertEquals(List.of("after"), values(readAll(broker.bootstrap(), List.of(tp), "read_committed")),
                    "read_committed view after the late commit attempt");
        } finally {
            staller.close(Duration.ZERO);
        }
    }

    // ------------------------------------------------------------------------------------------
    // d. Kafka Streams word count, processing.guarantee=exactly_once_v2
    // ------------------------------------------------------------------------------------------

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void streamsWordCountExactlyOnceV2(@TempDir Path stateDir) throws Exception {
        String in = "wc-in";
        String out = "wc-out";
        createTopic(in, 2);
        createTopic(out, 2);

        String[] words = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
        List<String> sentences = new ArrayList<>();
        Map<String, Long> expected = new TreeMap<>();
        for (int s = 0; s < 300; s++) {
            StringBuilder sb = new StringBuilder();
            for (int w = 0; w <= s % 5; w++) {
                String word = words[(s * 3 + w * 5) % words.length];
                sb.append(w == 0 ? "" : " ").append(w % 2 == 0 ? word : word.toUpperCase(Locale.ROOT));
                expected.merge(word, 1L, Long::sum);
            }
            sentences.add(sb.toString());
        }
        try (KafkaProducer<String, String> p = producer(broker.bootstrap(), Map.of())) {
            for (int s = 0; s < sentences.size(); s++) {
                p.send(new ProducerRecord<>(in, "s" + s, sentences.get(s)));
            }
            p.flush();
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "sluice-wordcount-eos");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        AtomicReference<Throwable> streamsError = new AtomicReference<>();
        Map<String, Long> finalCounts = new TreeMap<>();
        Map<String, Long> maxSeen = new TreeMap<>();
        long started = System.nanoTime();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.setUncaughtExceptionHandler(e -> {
                streamsError.compareAndSet(null, e);
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                        .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();

            Properties cp = consumerProps(broker.bootstrap(), "read_committed");
            try (KafkaConsumer<String, Long> reader =
                         new KafkaConsumer<>(cp, new StringDeserializer(), new LongDeserializer())) {
                reader.assign(partitions(out, 2));
                reader.seekToBeginning(reader.assignment());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (!finalCounts.equals(expected) && System.nanoTime() < deadline) {
                    if (streamsError.get() != null || streams.state() == KafkaStreams.State.ERROR
                            || streams.state() == KafkaStreams.State.PENDING_ERROR) {
                        throw new AssertionError("Kafka Streams failed (state " + streams.state() + ")",
                                streamsError.get());
                    }
                    for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
                        finalCounts.put(r.key(), r.value());
                        maxSeen.merge(r.key(), r.value(), Math::max);
                    }
                }
                // Anything still in flight would be a duplicate: read a little longer.
                long settle = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
                while (System.nanoTime() < settle) {
                    for (ConsumerRecord<String, Long> r : reader.poll(Duration.ofMillis(200))) {
                        finalCounts.put(r.key(), r.value());
                        maxSeen.merge(r.key(), r.value(), Math::max);
                    }
                }
            }
            log("word count: state %s after %.1f s, counts %s", streams.state(), secs(System.nanoTime() - started),
                    finalCounts);
            assertEquals(KafkaStreams.State.RUNNING, streams.state(), "Kafka Streams state");

            // exactly_once_v2 really ran transactions: the stream thread's transactional id is known.
            Collection<TransactionListing> txns = Clients.get(admin.listTransactions().all());
            assertTrue(txns.stream().anyMatch(t -> t.transactionalId().startsWith("sluice-wordcount-eos-")),
                    "no transactional id of the Streams app in ListTransactions: " + txns);
        }
        assertEquals(expected, finalCounts, "final word counts (read_committed)");
        assertEquals(expected, maxSeen, "largest count ever emitted per word (a larger one means double counting)");
    }

    // ------------------------------------------------------------------------------------------
    // helpers
    // ------------------------------------------------------------------------------------------

    private static void createTopic(String name, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all());
    }

    private static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "sluice-compat-txn-admin");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(p);
    }

    private static void closeQuietly(KafkaConsumer<?, ?> c) {
        try {
            c.close(Duration.ofSeconds(2));
        } catch (Exception e) {
            log("consumer close failed: %s", e);
        }
    }

    private static Throwable rootCause(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && c.getCause() != c) {
            c = c.getCause();
        }
        return c;
    }

    private static String chain(Throwable t) {
        List<String> parts = new ArrayList<>();
        for (Throwable c = t; c != null; c = c.getCause()) {
            parts.add(c.getClass().getName() + ": " + c.getMessage());
        }
        return String.join(" <- caused by ", parts);
    }

    private static <T> String head(Collection<T> items) {
        return items.stream().limit(10).map(String::valueOf).collect(Collectors.joining(", ", "[", "]"))
                + (items.size() > 10 ? " (" + items.size() + " in all)" : "");
    }

    private static double secs(long nanos) {
        return nanos / 1e9;
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[txn-test] " + fmt + "%n", args);
    }

    /**
     * A broker process this test can kill with SIGKILL and restart on the same port and data
     * directory (the shared {@link SluiceBroker} fixture always starts on a fresh port and dir).
     */
    static final class CrashableBroker implements AutoCloseable {
        private final List<String> command;
        private final int port;
        private final Path dataDir;
        private final Path logFile;
        private Process process;
        private final Thread shutdownHook;

        private CrashableBroker(List<String> command, int port, Path dataDir, Path logFile) {
            this.command = command;
            this.port = port;
            this.dataDir = dataDir;
            this.logFile = logFile;
            this.shutdownHook = new Thread(() -> {
                Process p = process;
                if (p != null && p.isAlive()) {
                    p.destroyForcibly();
                }
            }, "crashable-broker-shutdown-" + port);
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        }

        static CrashableBroker start(String name, Map<String, String> settings) throws Exception {
            Path bin = SluiceBroker.binary();
            if (!Files.isExecutable(bin)) {
                throw new IllegalStateException("sluice binary not found or not executable: " + bin);
            }
            Path logDir = Paths.get(System.getProperty("sluice.logDir", "target/sluice-logs"));
            Files.createDirectories(logDir);
            int port;
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress("127.0.0.1", 0));
                port = s.getLocalPort();
            }
            Path dataDir = Files.createTempDirectory("sluice-compat-" + name + "-");
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
            Path logFile = logDir.resolve(name + "-" + stamp + "-" + port + ".log").toAbsolutePath();
            List<String> cmd = new ArrayList<>(List.of(bin.toString(), "serve",
                    "--listen", "127.0.0.1:" + port, "--advertise", "127.0.0.1:" + port,
                    "--data-dir", dataDir.toString(), "--node-id", Integer.toString(SluiceBroker.NODE_ID)));
            settings.forEach((k, v) -> {
                cmd.add("--set");
                cmd.add(k + "=" + v);
            });
            CrashableBroker b = new CrashableBroker(cmd, port, dataDir, logFile);
            try {
                b.start();
            } catch (Throwable t) {
                b.close();
                throw t;
            }
            return b;
        }

        synchronized void start() throws Exception {
            if (process != null && process.isAlive()) {
                throw new IllegalStateException("already running");
            }
            Files.writeString(logFile, "# " + String.join(" ", command) + System.lineSeparator(),
                    StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) {
                process = new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                        .start();
                while (process.isAlive() && System.nanoTime() < deadline) {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress("127.0.0.1", port), 250);
                        log("broker pid %d listening on %s (log %s)", process.pid(), bootstrap(), logFile);
                        return;
                    } catch (IOException notYet) {
                        Thread.sleep(100);
                    }
                }
                if (process.isAlive() || System.nanoTime() >= deadline) {
                    process.destroyForcibly();
                    throw new IllegalStateException("sluice did not start on port " + port + "\n" + logTail(40));
                }
                Thread.sleep(500); // exited early (e.g. port not yet free): try again
            }
        }

        synchronized void kill9() throws InterruptedException {
            if (process != null && process.isAlive()) {
                process.destroyForcibly(); // SIGKILL
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }

        String bootstrap() {
            return "127.0.0.1:" + port;
        }

        String logTail(int lines) {
            try {
                List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
                return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
            } catch (IOException | UncheckedIOException e) {
                return "(could not read " + logFile + ": " + e + ")";
            }
        }

        @Override
        public synchronized void close() throws InterruptedException {
            try {
                if (process != null && process.isAlive()) {
                    process.destroy();
                    if (!process.waitFor(20, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                        process.waitFor(10, TimeUnit.SECONDS);
                    }
                }
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                } catch (IllegalStateException shuttingDown) {
                    // the hook runs anyway
                }
                if (System.getenv("SLUICE_KEEP_DATA") == null) {
                    try (Stream<Path> walk = Files.walk(dataDir)) {
                        walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                    } catch (IOException ignored) {
                        // best effort
                    }
                }
            }
        }
    }
}
