"""Transactions with confluent-kafka / librdkafka (transactional producer, TV1 protocol).

* Committed and aborted transactions over 3 partitions: read_committed sees exactly the
  committed records, each transaction all-or-nothing; read_uncommitted sees both.
* An open transaction stays invisible to read_committed until it commits, then appears whole.
* Zombie fencing: a second producer with the same transactional.id fences the first (_FENCED).
* send_offsets_to_transaction from a subscribed consumer: the offsets become the group's
  committed offsets when the transaction commits, and are discarded when it aborts.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka import ConsumerGroupTopicPartitions

from helpers import admin, create_topic, read_all

PARTITIONS = 3
TXN_TIMEOUT = 30  # seconds, for init/commit/abort calls
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": 0}


@pytest.fixture
def txn_broker(start_broker):
    return start_broker(GROUP_SETTINGS)


class TxnProducer:
    """A transactional Producer plus what its delivery and error callbacks reported."""

    def __init__(self, bootstrap, txn_id, **extra):
        self.delivery_errors = []
        self.errors = []  # (code, fatal, str) from error_cb
        conf = {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "linger.ms": 5,
            "error_cb": self._on_error,
        }
        conf.update(extra)
        self.p = Producer(conf)

    def _on_error(self, err):
        self.errors.append((err.code(), err.fatal(), str(err)))

    def _on_delivery(self, err, msg):
        if err is not None:
            self.delivery_errors.append(err)

    def produce(self, topic, value, partition, key=None):
        self.p.produce(topic, key=key if key is not None else value, value=value,
                       partition=partition, on_delivery=self._on_delivery)
        self.p.poll(0)

    def flush(self):
        remaining = self.p.flush(TXN_TIMEOUT)
        assert remaining == 0, f"{remaining} records not delivered within {TXN_TIMEOUT}s"


def values(by_partition):
    return [m.value().decode() for msgs in by_partition.values() for m in msgs]


def read_values(bootstrap, topic, isolation, expected=None):
    return values(read_all(bootstrap, topic, PARTITIONS, expected=expected, timeout=60,
                           **{"isolation.level": isolation}))


def test_read_committed_sees_exactly_the_committed_transactions(txn_broker):
    topic = "txn-commit-abort"
    create_topic(txn_broker.bootstrap, topic, partitions=PARTITIONS)
    tp = TxnProducer(txn_broker.bootstrap, "txn-commit-abort-app")
    tp.p.init_transactions(TXN_TIMEOUT)

    committed, aborted = {}, {}
    for t in range(12):
        tp.p.begin_transaction()
        vals = [f"t{t:02d}-{i:03d}" for i in range(60)]
        for i, v in enumerate(vals):
            tp.produce(topic, v, partition=i % PARTITIONS)
        # Flush first so that the records of aborted transactions really are in the log.
        tp.flush()
        if t % 3 == 1:
            tp.p.abort_transaction(TXN_TIMEOUT)
            aborted[t] = vals
        else:
            tp.p.commit_transaction(TXN_TIMEOUT)
            committed[t] = vals
    assert not tp.delivery_errors, f"delivery errors: {tp.delivery_errors[:5]}"
    all_committed = [v for vals in committed.values() for v in vals]
    all_aborted = [v for vals in aborted.values() for v in vals]

    rc = read_values(txn_broker.bootstrap, topic, "read_committed")
    seen = {}
    for v in rc:
        seen.setdefault(int(v[1:3]), []).append(v)
    partial = {t: f"{len(seen.get(t, []))} of 60" for t in committed if len(seen.get(t, [])) != 60}
    assert not partial, f"committed transactions not (fully) visible to read_committed: {partial}"
    leaked = sorted(t for t in aborted if t in seen)
    assert not leaked, (f"read_committed shows records of aborted transactions {leaked}, "
                        f"e.g. {seen[leaked[0]][:3]}")
    assert sorted(rc) == sorted(all_committed), (
        f"read_committed: {len(rc)} records, expected the {len(all_committed)} committed ones")

    # Within a partition, committed transactions appear in commit order.
    by_part = read_all(txn_broker.bootstrap, topic, PARTITIONS, timeout=60,
                       **{"isolation.level": "read_committed"})
    for part, msgs in by_part.items():
        vs = [m.value().decode() for m in msgs]
        assert vs == sorted(vs), f"partition {part} out of order: {vs[:10]}"

    ru = read_values(txn_broker.bootstrap, topic, "read_uncommitted",
                     expected=len(all_committed) + len(all_aborted))
    assert sorted(ru) == sorted(all_committed + all_aborted), (
        f"read_uncommitted: {len(ru)} records, expected {len(all_committed)} committed + "
        f"{len(all_aborted)} aborted; missing aborted: "
        f"{sorted(set(all_aborted) - set(ru))[:5]}")


def test_open_transaction_is_invisible_until_commit(txn_broker):
    topic = "txn-atomic"
    create_topic(txn_broker.bootstrap, topic, partitions=PARTITIONS)
    tp = TxnProducer(txn_broker.bootstrap, "txn-atomic-app")
    tp.p.init_transactions(TXN_TIMEOUT)

    tp.p.begin_transaction()
    first = [f"first-{i:02d}" for i in range(30)]
    for i, v in enumerate(first):
        tp.produce(topic, v, partition=i % PARTITIONS)
    tp.p.commit_transaction(TXN_TIMEOUT)

    tp.p.begin_transaction()
    second = [f"second-{i:02d}" for i in range(30)]
    for i, v in enumerate(second):
        tp.produce(topic, v, partition=i % PARTITIONS)
    tp.flush()  # every record of the open transaction is written to all 3 partitions

    rc = read_values(txn_broker.bootstrap, topic, "read_committed")
    assert sorted(rc) == first, f"read_committed with the transaction open: {sorted(rc)}"
    ru = read_values(txn_broker.bootstrap, topic, "read_uncommitted", expected=60)
    assert sorted(ru) == first + second, f"read_uncommitted with the transaction open: {sorted(ru)}"

    tp.p.commit_transaction(TXN_TIMEOUT)
    rc = read_values(txn_broker.bootstrap, topic, "read_committed", expected=60)
    assert sorted(rc) == first + second, f"read_committed after the commit: {sorted(rc)}"
    assert not tp.delivery_errors, tp.delivery_errors


FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def test_second_producer_fences_the_first(txn_broker):
    topic = "txn-zombie"
    create_topic(txn_broker.bootstrap, topic, partitions=PARTITIONS)
    zombie = TxnProducer(txn_broker.bootstrap, "txn-zombie-app")
    zombie.p.init_transactions(TXN_TIMEOUT)
    zombie.p.begin_transaction()
    zombie.produce(topic, "zombie-open", partition=0)
    zombie.flush()

    successor = TxnProducer(txn_broker.bootstrap, "txn-zombie-app")
    successor.p.init_transactions(TXN_TIMEOUT)  # bumps the epoch, aborts the zombie's transaction

    failure = None
    try:
        # One record to a partition already in the transaction (goes straight to the partition
        # leader with the old epoch), one to a new partition (AddPartitionsToTxn with the old epoch).
        zombie.produce(topic, "zombie-late", partition=0)
        zombie.produce(topic, "zombie-late-1", partition=1)
        zombie.p.commit_transaction(TXN_TIMEOUT)
    except KafkaException as e:
        failure = e.args[0]
    assert failure is not None, "the fenced producer committed its transaction"
    print(f"fenced producer: commit failed with {failure!r}; error_cb saw {zombie.errors}; "
          f"delivery errors {zombie.delivery_errors}")
    fatal = [(c, s) for c, f, s in zombie.errors if f]
    codes = {failure.code()} | {c for c, _ in fatal} | {e.code() for e in zombie.delivery_errors}
    assert codes & FENCED_CODES, (
        f"expected _FENCED; commit failed with {failure} (code {failure.code()}), "
        f"fatal errors {fatal}, delivery errors {zombie.delivery_errors}")
    assert failure.fatal() or fatal, f"fencing should be fatal: {failure}, {zombie.errors}"

    successor.p.begin_transaction()
    successor.produce(topic, "successor", partition=0)
    successor.p.commit_transaction(TXN_TIMEOUT)

    rc = read_values(txn_broker.bootstrap, topic, "read_committed")
    assert rc == ["successor"], f"read_committed: {rc}"
    ru = read_values(txn_broker.bootstrap, topic, "read_uncommitted")
    assert "zombie-open" in ru, f"read_uncommitted should show the aborted record: {ru}"
    assert "zombie-late" not in ru and "zombie-late-1" not in ru, (
        f"the broker accepted records from the fenced producer: {ru}")


def _group_offsets(bootstrap, group, topic):
    """The group's committed offsets as a plain OffsetFetch (require_stable=false) reports them."""
    a = admin(bootstrap)
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTITIONS)])
    res = a.list_consumer_group_offsets([req], require_stable=False, request_timeout=15)[group]
    out = {}
    for tp in res.result(timeout=30).topic_partitions:
        assert tp.error is None, f"offset fetch error for {tp}: {tp.error}"
        out[tp.partition] = tp.offset
    return out


def _consume(c, n, timeout=30):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        for m in c.consume(num_messages=n - len(got), timeout=0.5):
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer error: {m.error()}")
            got.append(m)
    assert len(got) == n, f"consumed {len(got)} of {n} records within {timeout}s"
    return got


def test_send_offsets_to_transaction_commits_group_offsets(txn_broker):
    bootstrap = txn_broker.bootstrap
    src, dst, group = "txn-offsets-in", "txn-offsets-out", "txn-offsets-group"
    create_topic(bootstrap, src, partitions=PARTITIONS)
    create_topic(bootstrap, dst, partitions=PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    inputs = [f"in-{i:03d}" for i in range(90)]
    for i, v in enumerate(inputs):
        p.produce(src, value=v, partition=i % PARTITIONS)
    assert p.flush(30) == 0

    def group_consumer():
        return Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        })

    tp = TxnProducer(bootstrap, "txn-offsets-app")
    tp.p.init_transactions(TXN_TIMEOUT)
    c = group_consumer()
    c.subscribe([src])
    try:
        def process(msgs):
            offsets = {}
            for m in msgs:
                tp.produce(dst, "out-" + m.value().decode(), partition=m.partition())
                offsets[m.partition()] = max(offsets.get(m.partition(), 0), m.offset() + 1)
            return offsets

        # Round 1: committed.
        round1 = _consume(c, 30)
        tp.p.begin_transaction()
        offsets1 = process(round1)
        tp.p.send_offsets_to_transaction(
            [TopicPartition(src, part, off) for part, off in offsets1.items()],
            c.consumer_group_metadata(), TXN_TIMEOUT)
        tp.flush()
        before = _group_offsets(bootstrap, group, src)
        assert all(off < 0 for off in before.values()), (
            f"offsets of an uncommitted transaction are visible to the group: {before}")
        tp.p.commit_transaction(TXN_TIMEOUT)
        expected1 = {part: offsets1.get(part, -1001) for part in range(PARTITIONS)}
        after_commit = _group_offsets(bootstrap, group, src)
        assert after_commit == expected1, (
            f"group offsets after the commit: {after_commit}, expected {expected1}")
        committed = {t.partition: t.offset for t in
                     c.committed([TopicPartition(src, part) for part in offsets1], timeout=15)}
        assert committed == offsets1, f"consumer.committed() after the commit: {committed}"

        # Round 2: aborted (records flushed first so they are in the log).
        round2 = _consume(c, 30)
        tp.p.begin_transaction()
        offsets2 = process(round2)
        tp.p.send_offsets_to_transaction(
            [TopicPartition(src, part, off) for part, off in offsets2.items()],
            c.consumer_group_metadata(), TXN_TIMEOUT)
        tp.flush()
        tp.p.abort_transaction(TXN_TIMEOUT)
        after_abort = _group_offsets(bootstrap, group, src)
        assert after_abort == expected1, (
            f"group offsets after the abort: {after_abort}, expected still {expected1} "
            f"(the aborted transaction carried {offsets2})")
        committed = {t.partition: t.offset for t in
                     c.committed([TopicPartition(src, part) for part in range(PARTITIONS)],
                                 timeout=15)}
        assert committed == expected1, f"consumer.committed() after the abort: {committed}"
    finally:
        c.close()
    assert not tp.delivery_errors, tp.delivery_errors

    out_rc = read_values(bootstrap, dst, "read_committed")
    assert sorted(out_rc) == sorted("out-" + m.value().decode() for m in round1), (
        f"read_committed output: {len(out_rc)} records")

    # A new member of the group resumes at the offsets of the committed transaction.
    c2 = group_consumer()
    c2.subscribe([src])
    try:
        rest = _consume(c2, len(inputs) - len(round1), timeout=45)
        extra = [m for m in c2.consume(num_messages=100, timeout=2.0) if m.error() is None]
    finally:
        c2.close()
    got = sorted(m.value().decode() for m in rest + extra)
    want = sorted(set(inputs) - {m.value().decode() for m in round1})
    assert got == want, (
        f"the resumed consumer read {len(got)} records, expected the {len(want)} after the committed "
        f"offsets {expected1}; unexpected: {sorted(set(got) - set(want))[:5]}")
