"""Consumer groups (classic protocol) with confluent-kafka / librdkafka.

* 3 consumers share a 6-partition topic, for the `range` (eager) and `cooperative-sticky`
  (incremental) assignors: after every rebalance (initial join, one member leaving with
  close(), a new member joining) each partition is owned by exactly one member and the
  partitions are spread evenly.
* Committed offsets survive a broker restart (SIGTERM and kill -9): a new consumer in the
  group starts exactly at each partition's committed offset and reads every record after it.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from helpers import create_topic

TOPIC_PARTITIONS = 6
GROUP_SETTINGS = {"group.initial.rebalance.delay.ms": 0}
# A rebalance normally settles in well under a second here; the deadline only bounds a hang.
SETTLE_TIMEOUT = 45.0
# Assignments must stay unchanged this long before they count as settled.
STABLE_FOR = 1.5


@pytest.fixture
def group_broker(start_broker):
    return start_broker(GROUP_SETTINGS)


def group_consumer(bootstrap, group, strategy, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "partition.assignment.strategy": strategy,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 2000,
    }
    conf.update(extra)
    return Consumer(conf)


class Member:
    """One group member plus what its rebalance callbacks and deliveries showed."""

    def __init__(self, name, consumer, topic):
        self.name = name
        self.c = consumer
        self.topic = topic
        self.assign_calls = 0
        self.revoke_calls = 0
        self.lost_calls = 0
        self.errors = []
        self.delivered = []  # (partition, offset)
        self.foreign = []  # records delivered from a partition not in assignment()
        consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)

    def _on_assign(self, consumer, partitions):
        self.assign_calls += 1

    def _on_revoke(self, consumer, partitions):
        self.revoke_calls += 1

    def _on_lost(self, consumer, partitions):
        self.lost_calls += 1

    def poll(self, timeout=0.05):
        # A rebalance callback may run inside consume(): a record counts as foreign only if its
        # partition was owned neither before nor after the call.
        before = set(self.owned())
        msgs = self.c.consume(num_messages=500, timeout=timeout)
        owned = before | set(self.owned())
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    self.errors.append(str(err))
                continue
            self.delivered.append((m.partition(), m.offset()))
            if m.partition() not in owned:
                self.foreign.append((m.partition(), m.offset()))

    def owned(self):
        return sorted(tp.partition for tp in self.c.assignment() if tp.topic == self.topic)

    def close(self):
        self.c.close()


def await_balanced(members, partitions, timeout=SETTLE_TIMEOUT):
    """Polls every member until each of `partitions` is owned exactly once, every member owns
    len(partitions)/len(members) (+1) partitions, and that picture held for STABLE_FOR s."""
    n = len(members)
    lo, hi = len(partitions) // n, -(-len(partitions) // n)
    deadline = time.monotonic() + timeout
    stable_since, last = None, None
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        view = {m.name: m.owned() for m in members}
        owned = sorted(p for ps in view.values() for p in ps)
        ok = owned == sorted(partitions) and all(lo <= len(ps) <= hi for ps in view.values())
        if ok and view == last:
            if time.monotonic() - stable_since >= STABLE_FOR:
                return view
        else:
            stable_since = time.monotonic()
        last = view
    raise AssertionError(
        f"assignment did not settle to every partition owned exactly once (and evenly) within "
        f"{timeout}s; last view: {last}; errors: {[(m.name, m.errors) for m in members]}")


def produce(bootstrap, topic, per_partition, partitions):
    """Produces `per_partition[p]` records to each partition p; returns {p: count}."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failures = []

    def on_delivery(err, msg):
        if err is not None:
            failures.append(err)

    for part in range(partitions):
        for i in range(per_partition[part]):
            p.produce(topic, key=f"k{part}-{i}".encode(), value=f"v{part}-{i}".encode(),
                      partition=part, on_delivery=on_delivery)
    remaining = p.flush(30)
    assert remaining == 0 and not failures, f"produce: {remaining} undelivered, {failures}"


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_members_leave_and_join(group_broker, strategy):
    b = group_broker
    topic = f"grp-rebalance-{strategy}"
    group = f"grp-rebalance-{strategy}"
    create_topic(b.bootstrap, topic, partitions=TOPIC_PARTITIONS)
    # A few records per partition, so members also fetch while the group rebalances.
    produce(b.bootstrap, topic, [5] * TOPIC_PARTITIONS, TOPIC_PARTITIONS)
    all_parts = list(range(TOPIC_PARTITIONS))

    members = [Member(f"c{i}", group_consumer(b.bootstrap, group, strategy), topic)
               for i in range(3)]
    closed = []
    try:
        view = await_balanced(members, all_parts)
        assert all(len(ps) == 2 for ps in view.values()), view
        for m in members:
            assert m.assign_calls >= 1, f"{m.name}: on_assign never called"

        # One member leaves (close() sends LeaveGroup): the two left take over its partitions.
        leaving = members.pop(1)
        leaving_parts = view[leaving.name]
        leaving.close()
        closed.append(leaving)
        view2 = await_balanced(members, all_parts)
        assert all(len(ps) == 3 for ps in view2.values()), view2
        taken_over = sorted(p for ps in view2.values() for p in ps if p in leaving_parts)
        assert taken_over == sorted(leaving_parts), (view, view2)
        if strategy == "cooperative-sticky":
            # Sticky: the survivors keep what they had and only add the orphaned partitions.
            for m in members:
                assert set(view[m.name]) <= set(view2[m.name]), (m.name, view, view2)

        # A new member joins: back to two partitions each.
        joiner = Member("c3", group_consumer(b.bootstrap, group, strategy), topic)
        members.append(joiner)
        view3 = await_balanced(members, all_parts)
        assert all(len(ps) == 2 for ps in view3.values()), view3
        assert len(view3["c3"]) == 2
        if strategy == "cooperative-sticky":
            for m in members[:2]:
                assert set(view3[m.name]) <= set(view2[m.name]), (m.name, view2, view3)

        for m in members + closed:
            assert not m.errors, f"{m.name}: consumer errors {m.errors}"
            assert not m.foreign, f"{m.name}: got records of partitions it did not own: {m.foreign}"
            assert m.lost_calls == 0, f"{m.name}: partitions reported lost"
        # Every record of every partition reached some member.
        seen = {(p, o) for m in members + closed for (p, o) in m.delivered}
        assert seen == {(p, o) for p in all_parts for o in range(5)}, sorted(seen)
    finally:
        for m in members:
            m.close()


def consume_until(consumer, want, timeout=30.0):
    """Consumes until `want(received)` is true; returns the records as (partition, offset, value)."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in consumer.consume(num_messages=500, timeout=0.2):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"consumer error: {err}")
            got.append((m.partition(), m.offset(), m.value()))
        if want(got):
            return got
    raise AssertionError(f"timed out consuming; got {len(got)} records: {got[:20]}...")


@pytest.mark.parametrize("restart", ["sigterm", "kill9"])
def test_committed_offsets_survive_broker_restart(group_broker, restart):
    b = group_broker
    topic = f"grp-commit-{restart}"
    group = f"grp-commit-{restart}"
    parts = 3
    per_part = [20, 20, 20]
    # How many records of each partition the first consumer processes and commits. Partition 2
    # gets no commit at all (the new consumer must start there from auto.offset.reset=earliest).
    processed = {0: 7, 1: 13, 2: 0}
    create_topic(b.bootstrap, topic, partitions=parts)
    produce(b.bootstrap, topic, per_part, parts)

    c1 = group_consumer(b.bootstrap, group, "cooperative-sticky")
    c1.subscribe([topic])
    done = {p: 0 for p in range(parts)}
    try:
        deadline = time.monotonic() + 30
        while any(done[p] < processed[p] for p in range(parts)):
            assert time.monotonic() < deadline, f"first consumer stalled: processed {done}"
            for m in c1.consume(num_messages=100, timeout=0.2):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise AssertionError(f"consumer error: {m.error()}")
                p = m.partition()
                if done[p] >= processed[p]:
                    continue  # read but not processed: the uncommitted tail
                assert m.offset() == done[p], f"partition {p}: offset {m.offset()}, expected {done[p]}"
                done[p] += 1
                if p == 0:
                    # commit of the message itself (offset + 1), synchronous
                    c1.commit(message=m, asynchronous=False)
                else:
                    c1.commit(offsets=[TopicPartition(topic, p, m.offset() + 1)], asynchronous=False)
        committed = c1.committed([TopicPartition(topic, p) for p in range(parts)], timeout=15)
        got = {tp.partition: tp.offset for tp in committed}
        assert got[0] == processed[0] and got[1] == processed[1], got
        assert got[2] < 0, f"partition 2 was never committed but reads as {got[2]}"
    finally:
        c1.close()

    rc = b.stop(kill=(restart == "kill9"))
    if restart == "sigterm":
        # (143 = 128 + SIGTERM is what a JVM broker exits with.)
        assert rc in (0, 143) and not b.last_stop_escalated, f"broker exit code {rc} after SIGTERM"
    b.start()

    c2 = group_consumer(b.bootstrap, group, "range")
    try:
        c2.subscribe([topic])
        want_total = sum(per_part[p] - processed[p] for p in range(parts))
        got = consume_until(c2, lambda recs: len(recs) >= want_total)
        time.sleep(0.5)  # anything extra (a re-read) would arrive now
        got += [(m.partition(), m.offset(), m.value())
                for m in c2.consume(num_messages=500, timeout=0.5) if m.error() is None]
        for p in range(parts):
            offs = [o for (pp, o, _) in got if pp == p]
            assert offs == list(range(processed[p], per_part[p])), (
                f"partition {p}: resumed at {offs[:3]}..., expected offsets "
                f"{processed[p]}..{per_part[p] - 1} exactly once, got {offs}")
            vals = [v for (pp, _, v) in got if pp == p]
            assert vals == [f"v{p}-{i}".encode() for i in range(processed[p], per_part[p])]
        # The restarted broker still reports the same committed offsets to the new member.
        again = c2.committed([TopicPartition(topic, p) for p in range(parts)], timeout=15)
        assert {tp.partition: tp.offset for tp in again if tp.partition < 2} == \
            {0: processed[0], 1: processed[1]}
    finally:
        c2.close()
