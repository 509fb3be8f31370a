"""Consumer groups (classic protocol) with kafka-python's KafkaConsumer.

A consumer joins a group, consumes and commits; after it closes, a second consumer in the same
group starts exactly at the committed offsets. The group admin calls (ListGroups, DescribeGroups,
OffsetFetch through KafkaAdminClient) must agree with what the consumers did.
"""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

PARTS = 2


@pytest.fixture
def group_broker(start_broker):
    return start_broker({"group.initial.rebalance.delay.ms": 0})


@pytest.fixture
def kadmin(group_broker):
    a = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap, client_id="compat-groups-admin",
                         request_timeout_ms=15000)
    yield a
    a.close()


def make_topic(broker, kadmin, topic, per_partition):
    kadmin.create_topics([NewTopic(topic, num_partitions=PARTS, replication_factor=1)])
    produce(broker, topic, 0, per_partition)


def produce(broker, topic, start, end):
    """Writes records start..end-1 to every partition (value "p<P>-<i>")."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                             request_timeout_ms=15000)
    try:
        futs = [(p, i, producer.send(topic, value=f"p{p}-{i}".encode(), partition=p))
                for p in range(PARTS) for i in range(start, end)]
        producer.flush(timeout=30)
        for p, i, f in futs:
            md = f.get(timeout=30)
            assert (md.partition, md.offset) == (p, i), f"record p{p}-{i} landed at {md}"
    finally:
        producer.close(timeout=10)


def group_consumer(broker, group, topic):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      session_timeout_ms=10000, heartbeat_interval_ms=500,
                      request_timeout_ms=15000, max_poll_records=500)
    c.subscribe([topic])
    return c


def poll_until(consumer, count, timeout=30.0, settle=0.0):
    """Polls until `count` records arrived (then `settle` s more, to catch extras).
    Returns {partition: [(offset, value), ...]}."""
    out = {p: [] for p in range(PARTS)}
    n = 0
    deadline = time.monotonic() + timeout
    while n < count:
        assert time.monotonic() < deadline, f"timed out: got {n} of {count} records: {out}"
        for tp, recs in consumer.poll(timeout_ms=200).items():
            out[tp.partition] += [(r.offset, r.value) for r in recs]
            n += len(recs)
    end = time.monotonic() + settle
    while time.monotonic() < end:
        for tp, recs in consumer.poll(timeout_ms=100).items():
            out[tp.partition] += [(r.offset, r.value) for r in recs]
    return out


def expect_range(got, start, end):
    for p in range(PARTS):
        assert got[p] == [(i, f"p{p}-{i}".encode()) for i in range(start, end)], (
            f"partition {p}: expected offsets {start}..{end - 1} exactly once, got "
            f"{[o for o, _ in got[p]]}")


def test_second_consumer_resumes_from_commit(group_broker, kadmin):
    b = group_broker
    topic, group = "kp-group-resume", "kp-group-resume"
    make_topic(b, kadmin, topic, 20)

    c1 = group_consumer(b, group, topic)
    try:
        got = poll_until(c1, 2 * 20)
        expect_range(got, 0, 20)
        assert sorted(tp.partition for tp in c1.assignment()) == [0, 1]
        c1.commit()  # the consumed positions: 20 on both partitions
        for p in range(PARTS):
            assert c1.committed(TopicPartition(topic, p)) == 20

        # While c1 is a member: the group is listed, Stable, with c1 owning both partitions.
        listed = {g["group_id"]: g for g in kadmin.list_groups()}
        assert group in listed, listed
        assert listed[group]["protocol_type"] == "consumer", listed[group]
        assert listed[group]["group_state"] == "Stable", listed[group]
        desc = kadmin.describe_groups([group])[group]
        assert desc["group_state"] == "Stable", desc
        assert desc["protocol_type"] == "consumer", desc
        assert desc["protocol_data"] == "range", desc  # kafka-python's default assignor
        assert len(desc["members"]) == 1, desc
        assignment = desc["members"][0]["member_assignment"]["assigned_partitions"]
        assert [(a["topic"], sorted(a["partitions"])) for a in assignment] == [(topic, [0, 1])], desc
    finally:
        c1.close()

    offsets = kadmin.list_group_offsets({group: None})[group]
    assert {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic} == \
        {0: 20, 1: 20}, offsets
    desc = kadmin.describe_groups([group])[group]
    assert desc["group_state"] == "Empty", desc  # c1's close() left the group
    assert desc["members"] == [], desc

    produce(b, topic, 20, 30)
    c2 = group_consumer(b, group, topic)
    try:
        got = poll_until(c2, 2 * 10, settle=1.0)
        expect_range(got, 20, 30)
    finally:
        c2.close()


def test_partial_commit_then_resume(group_broker, kadmin):
    """Explicit offsets committed mid-way: the next member re-reads the uncommitted tail and
    nothing before it."""
    b = group_broker
    topic, group = "kp-group-partial", "kp-group-partial"
    make_topic(b, kadmin, topic, 25)
    commit_at = {0: 9, 1: 17}

    c1 = group_consumer(b, group, topic)
    try:
        poll_until(c1, 2 * 25)
        c1.commit({TopicPartition(topic, p): OffsetAndMetadata(o, f"meta-{p}", -1)
                   for p, o in commit_at.items()})
        for p, o in commit_at.items():
            assert c1.committed(TopicPartition(topic, p)) == o
    finally:
        c1.close()

    offsets = kadmin.list_group_offsets({group: None})[group]
    assert {tp.partition: (om.offset, om.metadata) for tp, om in offsets.items()} == \
        {p: (o, f"meta-{p}") for p, o in commit_at.items()}, offsets

    c2 = group_consumer(b, group, topic)
    try:
        got = poll_until(c2, sum(25 - o for o in commit_at.values()), settle=1.0)
        for p, o in commit_at.items():
            assert got[p] == [(i, f"p{p}-{i}".encode()) for i in range(o, 25)], (
                f"partition {p}: expected to resume at {o}, got offsets {[x for x, _ in got[p]]}")
    finally:
        c2.close()
