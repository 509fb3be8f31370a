package dev.sluice.compat;

import static dev.sluice.compat.ClusterProbes.await;
import static dev.sluice.compat.ClusterProbes.awaitIsr;
import static dev.sluice.compat.ClusterProbes.awaitLiveNodes;
import static dev.sluice.compat.ClusterProbes.awaitTransactionState;
import static dev.sluice.compat.ClusterProbes.describe;
import static dev.sluice.compat.ClusterProbes.ids;
import static dev.sluice.compat.ClusterProbes.liveNodeIds;
import static dev.sluice.compat.ClusterProbes.millisSince;
import static dev.sluice.compat.ClusterProbes.transaction;
import static dev.sluice.compat.Clients.partitions;
import static dev.sluice.compat.Clients.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
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
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Kafka transactions on a 3-node Sluice cluster, driven by the unchanged Java client: a
 * transactional producer writing to partitions led by every broker, the transaction coordinator
 * killed with -9 in the middle of a transaction, and a consume-transform-produce loop whose group
 * and transaction coordinators sit on different brokers. Every case compares exact record lists
 * (per partition, in order) read with {@code read_committed} and {@code read_uncommitted}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TransactionClusterTest {

    private static final Map<String, String> CLUSTER_SETTINGS = Map.of("group.initial.rebalance.delay.ms", "0");
    private static final Duration ISR_WAIT = Duration.ofSeconds(20);
    /** Markers, coordinator state and group offsets must settle this long after a transaction ended. */
    private static final Duration SETTLE = Duration.ofSeconds(15);
    /** Far longer than any case: no transaction may be ended by the coordinator's timeout here. */
    private static final int TXN_TIMEOUT_MS = 60_000;
    private static final String TXN_STATE_TOPIC = "__transaction_state";

    @RegisterExtension
    final SluiceCluster.Tracker clusters = new SluiceCluster.Tracker();

    // ------------------------------------------------------------------------------------------
    // a. 6 partitions led by 3 brokers, 20 transactions: even ones committed, odd ones aborted
    // ------------------------------------------------------------------------------------------

    @Test
    void transactionsSpanningPartitionsOfEveryBrokerCommitAndAbortAsAWhole() throws Exception {
        SluiceCluster cluster = clusters.start("txn-cluster-spread", 3, CLUSTER_SETTINGS);
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
            final String topic = "txn-spread";
            final int partitions = 6;
            TopicDescription d = createReplicatedTopic(admin, topic, partitions);
            Set<Integer> leaders = d.partitions().stream().map(ClusterProbes::leaderId)
                    .collect(Collectors.toCollection(TreeSet::new));
            assertEquals(new TreeSet<>(cluster.ids()), leaders, "partition leaders cover every broker: " + describe(d));

            final String txnId = "spread-app";
            final int transactions = 20;
            final int perPartition = 3;
            Map<Integer, List<String>> committed = emptyLists(partitions);
            Map<Integer, List<String>> written = emptyLists(partitions);
            long t0 = System.nanoTime();
            try (KafkaProducer<String, String> producer = transactionalProducer(cluster.bootstrap(), txnId)) {
                producer.initTransactions();
                for (int t = 0; t < transactions; t++) {
                    boolean commit = t % 2 == 0;
                    producer.beginTransaction();
                    Map<Integer, List<String>> sent = sendToEveryPartition(producer, topic, partitions, perPartition,
                            String.format("t%02d-%s", t, commit ? "commit" : "abort"));
                    if (commit) {
                        producer.commitTransaction();
                    } else {
                        producer.abortTransaction();
                    }
                    addAll(written, sent);
                    if (commit) {
                        addAll(committed, sent);
                    }
                    if (t == transactions - 2) {
                        // The last commit: describeTransactions reports it complete.
                        checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_COMMIT);
                    }
                }
            }
            log("%d transactions (%d records each) in %d ms", transactions, partitions * perPartition, millisSince(t0));
            checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_ABORT);

            List<TopicPartition> tps = partitions(topic, partitions);
            assertBothViews(cluster.bootstrapRunning(), tps, committed, written);
        }
    }

    // ------------------------------------------------------------------------------------------
    // b. kill -9 the transaction coordinator with a transaction open; a new producer takes over
    // ------------------------------------------------------------------------------------------

    @Test
    void aNewProducerAbortsTheTransactionOpenWhenItsCoordinatorWasKilled() throws Exception {
        SluiceCluster cluster = clusters.start("txn-cluster-failover", 3, CLUSTER_SETTINGS);
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            Set<Integer> all = new TreeSet<>(cluster.ids());
            awaitLiveNodes(admin, all, Duration.ofSeconds(10));
            final String topic = "txn-failover";
            final int partitions = 3;
            final int perPartition = 4;
            log("placement: %s", describe(createReplicatedTopic(admin, topic, partitions)));
            List<TopicPartition> tps = partitions(topic, partitions);

            final String txnId = "failover-app";
            Map<Integer, List<String>> committed = emptyLists(partitions);
            Map<Integer, List<String>> written = emptyLists(partitions);
            TransactionDescription ongoing;
            long killedAt;
            KafkaProducer<String, String> first = transactionalProducer(cluster.bootstrap(), txnId);
            try {
                first.initTransactions();
                for (int t = 0; t < 5; t++) {
                    first.beginTransaction();
                    Map<Integer, List<String>> sent = sendToEveryPartition(first, topic, partitions, perPartition,
                            "before-t" + t);
                    first.commitTransaction();
                    addAll(committed, sent);
                    addAll(written, sent);
                }
                TransactionDescription done = checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_COMMIT);

                // A transaction whose records are all acked (in the log of every replica), not ended.
                first.beginTransaction();
                addAll(written, sendToEveryPartition(first, topic, partitions, perPartition, "open"));
                ongoing = transaction(admin, txnId);
                assertEquals(TransactionState.ONGOING, ongoing.state(), "state with the transaction open: " + ongoing);
                assertEquals(new HashSet<>(tps), ongoing.topicPartitions(), "partitions of the open transaction");
                assertEquals(done.coordinatorId(), ongoing.coordinatorId(), "coordinator: " + ongoing);
                log("transaction open on %s; killing its coordinator, node %d (producer id %d, epoch %d)",
                        ongoing.topicPartitions(), ongoing.coordinatorId(), ongoing.producerId(),
                        ongoing.producerEpoch());
                killedAt = System.nanoTime();
                cluster.kill(ongoing.coordinatorId());
            } finally {
                first.close(Duration.ZERO); // forced: no EndTxn from this producer, the open one stays open
            }
            final int oldCoordinator = ongoing.coordinatorId();
            Set<Integer> survivors = new TreeSet<>(all);
            survivors.remove(oldCoordinator);

            try (KafkaProducer<String, String> second = transactionalProducer(cluster.bootstrapRunning(), txnId)) {
                long initAt = System.nanoTime();
                second.initTransactions(); // finds the new coordinator, which aborts the open transaction
                log("the new producer's initTransactions took %d ms (%d ms after the kill)", millisSince(initAt),
                        millisSince(killedAt));
                // Aborted, not just forgotten: every partition's last stable offset passes its records.
                awaitNoOpenTransaction(cluster.bootstrapRunning(), tps);
                assertTrue(millisSince(killedAt) < TXN_TIMEOUT_MS, "the open transaction was aborted by "
                        + "initTransactions, before its " + TXN_TIMEOUT_MS + " ms timeout");
                TransactionDescription taken = transaction(admin, txnId);
                log("after initTransactions: %s", taken);
                assertNotEquals(oldCoordinator, taken.coordinatorId(), "coordinator after the kill: " + taken);
                assertTrue(survivors.contains(taken.coordinatorId()),
                        "the new coordinator is one of the surviving nodes " + survivors + ": " + taken);
                assertTrue(taken.producerId() != ongoing.producerId() || taken.producerEpoch() > ongoing.producerEpoch(),
                        "initTransactions bumps the epoch: " + ongoing + " -> " + taken);
                assertEquals(TransactionState.EMPTY, taken.state(), "state after initTransactions: " + taken);
                assertTrue(taken.topicPartitions().isEmpty(), "no partitions in a transaction: " + taken);

                for (int t = 0; t < 5; t++) {
                    second.beginTransaction();
                    Map<Integer, List<String>> sent = sendToEveryPartition(second, topic, partitions, perPartition,
                            "after-t" + t);
                    second.commitTransaction();
                    addAll(committed, sent);
                    addAll(written, sent);
                }
                checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_COMMIT);
                assertBothViews(cluster.bootstrapRunning(), tps, committed, written);

                // The old coordinator comes back; the cluster is whole and transactions still work.
                cluster.restart(oldCoordinator);
                awaitLiveNodes(admin, all, Duration.ofSeconds(20));
                awaitIsr(admin, topic, partitions, 3, Duration.ofSeconds(30));
                int statePartitions = ClusterProbes.describeTopic(admin, TXN_STATE_TOPIC).partitions().size();
                awaitIsr(admin, TXN_STATE_TOPIC, statePartitions, 3, Duration.ofSeconds(30));
                log("node %d is back; %s and %s in sync on every broker", oldCoordinator, topic, TXN_STATE_TOPIC);
                second.beginTransaction();
                Map<Integer, List<String>> sent = sendToEveryPartition(second, topic, partitions, perPartition,
                        "rejoined");
                second.commitTransaction();
                addAll(committed, sent);
                addAll(written, sent);
                TransactionDescription last = checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_COMMIT);
                // The state written before the restart still holds (TV2 bumps the epoch at every end).
                assertEquals(taken.producerId(), last.producerId(), "producer id after the restart: " + last);
                assertTrue(last.producerEpoch() >= taken.producerEpoch(),
                        "producer epoch after the restart: " + taken + " -> " + last);
            }
            assertBothViews(cluster.bootstrap(), tps, committed, written);
        }
    }

    // ------------------------------------------------------------------------------------------
    // c. consume-transform-produce: group coordinator and transaction coordinator on two brokers
    // ------------------------------------------------------------------------------------------

    @Test
    void consumeTransformProduceCommitsOutputAndGroupOffsetsTogether() throws Exception {
        SluiceCluster cluster = clusters.start("txn-cluster-ctp", 3, CLUSTER_SETTINGS);
        try (Admin admin = Clients.clusterAdmin(cluster.bootstrap())) {
            awaitLiveNodes(admin, new TreeSet<>(cluster.ids()), Duration.ofSeconds(10));
            final String in = "ctp-cluster-in";
            final String out = "ctp-cluster-out";
            final String group = "ctp-cluster-group";
            final int partitions = 3;
            final int n = 300;
            createReplicatedTopic(admin, in, partitions);
            createReplicatedTopic(admin, out, partitions);
            List<TopicPartition> inTps = partitions(in, partitions);
            List<TopicPartition> outTps = partitions(out, partitions);

            Map<Integer, List<String>> expected = emptyLists(partitions);
            try (KafkaProducer<String, String> p = Clients.producer(cluster.bootstrap(), Map.of())) {
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    String value = String.format("in-%03d", i);
                    acks.add(p.send(new ProducerRecord<>(in, i % partitions, "k" + i, value)));
                    expected.get(i % partitions).add(transform(value));
                }
                for (Future<RecordMetadata> f : acks) {
                    Clients.get(f);
                }
            }
            Map<TopicPartition, Long> inEnd = Clients.endOffsets(cluster.bootstrap(), inTps, "read_uncommitted");
            assertEquals(n, inEnd.values().stream().mapToLong(Long::longValue).sum(), "input end offsets " + inEnd);

            Properties cp = Clients.consumerProps(cluster.bootstrap(), "read_committed");
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            cp.put(ConsumerConfig.CLIENT_ID_CONFIG, "ctp-cluster-consumer");
            cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "40"); // several transactions
            KafkaProducer<String, String> producer = null;
            int txns = 0;
            try (KafkaConsumer<String, String> consumer =
                         new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(in));
                await("the consumer is assigned every partition of " + in, Duration.ofSeconds(30), seen -> {
                    consumer.poll(Duration.ofMillis(100)); // whatever it returns is re-read below
                    seen.set("assignment " + consumer.assignment());
                    return consumer.assignment().containsAll(inTps) ? true : null;
                });
                consumer.seekToBeginning(inTps); // nothing is committed yet
                int groupCoordinator = Clients.get(admin.describeConsumerGroups(List.of(group))
                        .describedGroups().get(group)).coordinator().id();

                // A transactional id whose coordinator is not the group's: TxnOffsetCommit, the
                // transaction's offsets and its markers then cross brokers.
                String txnId = null;
                int txnCoordinator = -1;
                for (int k = 0; k < 8 && txnId == null; k++) {
                    String candidate = "ctp-cluster-app-" + k;
                    producer = transactionalProducer(cluster.bootstrap(), candidate);
                    producer.initTransactions();
                    txnCoordinator = transaction(admin, candidate).coordinatorId();
                    if (txnCoordinator != groupCoordinator || k == 7) {
                        txnId = candidate;
                    } else {
                        producer.close(Duration.ofSeconds(5));
                        producer = null;
                    }
                }
                log("group coordinator node %d, transaction coordinator of %s node %d%s", groupCoordinator, txnId,
                        txnCoordinator, txnCoordinator == groupCoordinator ? " (NOTE: the same broker)" : "");

                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (true) {
                    if (System.nanoTime() > deadline) {
                        fail("consume-transform-produce did not reach the input end offsets " + inEnd + " in 60 s; "
                                + txns + " transactions committed, positions " + positions(consumer, inTps));
                    }
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) {
                        if (inTps.stream().allMatch(tp -> consumer.position(tp) >= inEnd.get(tp))) {
                            break;
                        }
                        continue;
                    }
                    producer.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        producer.send(new ProducerRecord<>(out, r.partition(), r.key(), transform(r.value())));
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    producer.commitTransaction();
                    txns++;
                }
                log("%d input records processed in %d transactions", n, txns);
                checkCompleted(admin, cluster, txnId, TransactionState.COMPLETE_COMMIT);

                Map<TopicPartition, Long> groupOffsets = await("the group's committed offsets equal the input end "
                        + "offsets " + inEnd, SETTLE, seen -> {
                    Map<TopicPartition, OffsetAndMetadata> c = admin.listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata().get(ClusterProbes.PROBE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                    Map<TopicPartition, Long> offsets = new HashMap<>();
                    c.forEach((tp, om) -> offsets.put(tp, om == null ? null : om.offset()));
                    seen.set("committed " + offsets);
                    return offsets.equals(inEnd) ? offsets : null;
                });
                log("group %s committed offsets %s", group, new TreeMap<>(groupOffsets.entrySet().stream()
                        .collect(Collectors.toMap(e -> e.getKey().toString(), Map.Entry::getValue))));
            } finally {
                if (producer != null) {
                    producer.close(Duration.ofSeconds(5));
                }
            }

            awaitNoOpenTransaction(cluster.bootstrap(), outTps);
            assertView(cluster.bootstrap(), outTps, "read_committed", expected);
        }
    }

    private static String transform(String value) {
        return "out-" + value;
    }

    private static Map<TopicPartition, Long> positions(KafkaConsumer<?, ?> consumer, List<TopicPartition> tps) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (TopicPartition tp : tps) {
            out.put(tp, consumer.position(tp));
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // helpers
    // ------------------------------------------------------------------------------------------

    /** RF 3 over the 3 brokers; waits until every partition has a leader and all 3 replicas in sync. */
    private static TopicDescription createReplicatedTopic(Admin admin, String topic, int partitions) throws Exception {
        Clients.get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 3))).all());
        TopicDescription d = awaitIsr(admin, topic, partitions, 3, ISR_WAIT);
        for (TopicPartitionInfo p : d.partitions()) {
            assertEquals(3, new HashSet<>(ids(p.replicas())).size(), "replicas of " + topic + "-" + p.partition());
        }
        return d;
    }

    /**
     * A transactional producer for a cluster whose nodes get killed: metadata refreshed every
     * second, quick reconnects, and up to 60 s for initTransactions (and other blocking calls) to
     * find a coordinator. The transaction timeout is {@value #TXN_TIMEOUT_MS} ms.
     */
    private static KafkaProducer<String, String> transactionalProducer(String bootstrap, String txnId) {
        return Clients.producer(bootstrap, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId,
                ProducerConfig.CLIENT_ID_CONFIG, txnId,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(TXN_TIMEOUT_MS),
                ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000",
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000",
                ProducerConfig.METADATA_MAX_AGE_CONFIG, "1000",
                ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500",
                ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "500"));
    }

    /**
     * Sends {@code perPartition} records to each partition (in rounds over the partitions) in the
     * producer's current transaction and waits until every one is acked (so an abort that follows
     * leaves them in the log, hidden only by its marker). Returns partition -> values in send order.
     */
    private static Map<Integer, List<String>> sendToEveryPartition(KafkaProducer<String, String> producer, String topic,
                                                                   int partitions, int perPartition, String tag)
            throws Exception {
        Map<Integer, List<String>> sent = emptyLists(partitions);
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int r = 0; r < perPartition; r++) {
            for (int p = 0; p < partitions; p++) {
                String value = tag + "-p" + p + "-r" + r;
                acks.add(producer.send(new ProducerRecord<>(topic, p, "k" + p, value)));
                sent.get(p).add(value);
            }
        }
        producer.flush();
        for (Future<RecordMetadata> f : acks) {
            Clients.get(f);
        }
        return sent;
    }

    /**
     * Waits until describeTransactions reports {@code state} for {@code txnId} and checks that its
     * coordinator is a running node listed by describeCluster; returns the description.
     */
    private static TransactionDescription checkCompleted(Admin admin, SluiceCluster cluster, String txnId,
                                                         TransactionState state) throws Exception {
        TransactionDescription d = awaitTransactionState(admin, txnId, state, SETTLE);
        Set<Integer> live = liveNodeIds(admin);
        assertTrue(live.contains(d.coordinatorId()) && cluster.isRunning(d.coordinatorId()),
                "coordinator of " + txnId + " is a live broker (describeCluster " + live + ", running "
                        + cluster.runningIds() + "): " + d);
        assertTrue(d.topicPartitions().isEmpty(), "a completed transaction has no partitions: " + d);
        log("%s: %s on coordinator node %d (producer id %d, epoch %d)", txnId, d.state(), d.coordinatorId(),
                d.producerId(), d.producerEpoch());
        return d;
    }

    /**
     * Waits until no transaction is open on {@code tps}: the read_committed end offset (the last
     * stable offset) equals the read_uncommitted one (the high watermark) on every partition.
     */
    private static void awaitNoOpenTransaction(String bootstrap, List<TopicPartition> tps) throws Exception {
        try (KafkaConsumer<String, String> committed = Clients.consumer(bootstrap, "read_committed");
             KafkaConsumer<String, String> uncommitted = Clients.consumer(bootstrap, "read_uncommitted")) {
            await("the last stable offset reaches the high watermark on " + tps, SETTLE, seen -> {
                Map<TopicPartition, Long> lso = committed.endOffsets(tps, Duration.ofSeconds(2));
                Map<TopicPartition, Long> hw = uncommitted.endOffsets(tps, Duration.ofSeconds(2));
                seen.set("LSO " + lso + ", HW " + hw);
                return lso.equals(hw) ? lso : null;
            });
        }
    }

    /** Reads {@code tps} from the beginning with {@code isolation} and compares every partition's values. */
    /** Once no transaction is open: read_committed sees exactly `committed`, read_uncommitted `written`. */
    private static void assertBothViews(String bootstrap, List<TopicPartition> tps, Map<Integer, List<String>> committed,
                                        Map<Integer, List<String>> written) throws Exception {
        awaitNoOpenTransaction(bootstrap, tps);
        assertView(bootstrap, tps, "read_committed", committed);
        assertView(bootstrap, tps, "read_uncommitted", written);
    }

    private static void assertView(String bootstrap, List<TopicPartition> tps, String isolation,
                                   Map<Integer, List<String>> expected) {
        Map<Integer, List<String>> got = emptyLists(tps.size());
        List<ConsumerRecord<String, String>> records = readAll(bootstrap, tps, isolation);
        for (ConsumerRecord<String, String> r : records) {
            got.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
        }
        List<String> problems = new ArrayList<>();
        for (int p : new TreeSet<>(expected.keySet())) {
            problems.addAll(differences("p" + p, expected.get(p), got.getOrDefault(p, List.of())));
        }
        if (!problems.isEmpty()) {
            fail(isolation + " view of " + tps.get(0).topic() + " (" + records.size() + " records, expected "
                    + count(expected) + "): " + String.join("; ", problems));
        }
        log("%s: %d records on %d partitions, exactly as expected", isolation, records.size(), tps.size());
    }

    /** Missing, unexpected and repeated values, or the first position where the order differs. */
    private static List<String> differences(String label, List<String> expected, List<String> got) {
        List<String> out = new ArrayList<>();
        if (expected.equals(got)) {
            return out;
        }
        Set<String> want = new HashSet<>(expected);
        Set<String> have = new HashSet<>();
        List<String> repeated = new ArrayList<>();
        for (String v : got) {
            if (!have.add(v)) {
                repeated.add(v);
            }
        }
        List<String> missing = expected.stream().filter(v -> !have.contains(v)).toList();
        List<String> unexpected = got.stream().filter(v -> !want.contains(v)).distinct().toList();
        out.add(label + ": " + got.size() + " records, expected " + expected.size());
        if (!missing.isEmpty()) {
            out.add(label + " missing " + head(missing));
        }
        if (!unexpected.isEmpty()) {
            out.add(label + " unexpected " + head(unexpected));
        }
        if (!repeated.isEmpty()) {
            out.add(label + " read more than once " + head(repeated));
        }
        if (missing.isEmpty() && unexpected.isEmpty() && repeated.isEmpty()) {
            int i = 0;
            while (expected.get(i).equals(got.get(i))) {
                i++;
            }
            out.add(label + " out of order at index " + i + ": expected " + expected.get(i) + ", got " + got.get(i));
        }
        return out;
    }

    private static String head(List<String> items) {
        return items.stream().limit(8).collect(Collectors.joining(", ", "[", "]"))
                + (items.size() > 8 ? " (" + items.size() + " in all)" : "");
    }

    private static Map<Integer, List<String>> emptyLists(int partitions) {
        Map<Integer, List<String>> m = new TreeMap<>();
        for (int p = 0; p < partitions; p++) {
            m.put(p, new ArrayList<>());
        }
        return m;
    }

    private static void addAll(Map<Integer, List<String>> into, Map<Integer, List<String>> from) {
        from.forEach((p, values) -> into.computeIfAbsent(p, k -> new ArrayList<>()).addAll(values));
    }

    private static int count(Map<Integer, List<String>> m) {
        return m.values().stream().mapToInt(List::size).sum();
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[txn-cluster-test] " + fmt + "%n", args);
    }
}
