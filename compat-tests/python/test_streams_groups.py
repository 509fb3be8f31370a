"""Streams groups (KIP-1071), bad input on the wire: raw StreamsGroupHeartbeat v0/v1,
StreamsGroupDescribe and StreamsGroupTopologyDescriptionUpdate, checked against Kafka 4.4's
error codes. Kafka Streams itself runs in compat-tests/java (StreamsGroupTest). One broker
for the file, with the initial rebalance delay and the assignment interval off so that each
heartbeat here sees its assignment at once (the pacing is tested in the Rust unit tests and
by StreamsGroupTest).
"""

import time

import pytest

import kproto as kp
from conftest import Broker, normalize_settings

STREAMS_GROUP_HEARTBEAT = 88
STREAMS_GROUP_DESCRIBE = 89
STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 93

UNSUPPORTED_VERSION = 35
UNKNOWN_MEMBER_ID = 25
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110
STREAMS_INVALID_TOPOLOGY = 130
STREAMS_INVALID_TOPOLOGY_EPOCH = 131

STATUS_MISSING_SOURCE_TOPICS = 1
STATUS_MISSING_INTERNAL_TOPICS = 3

TAGS = b"\x00"
INPUT_PARTITIONS = 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("streams-groups"), normalize_settings({
        "num.partitions": INPUT_PARTITIONS,
        "group.streams.initial.rebalance.delay.ms": 0,
        "group.streams.assignment.interval.ms": 0,
    }))
    b.start()
    yield b
    b.stop()


def carray(items, enc):
    """Compact array; None is the null array."""
    if items is None:
        return kp.uvarint(0)
    return kp.uvarint(len(items) + 1) + b"".join(enc(x) for x in items)


def topic_info(name, partitions=0):
    return kp.compact_string(name) + kp.i32(partitions) + kp.i16(-1) + carray([], None) + TAGS


def subtopology(sid, sources=(), sinks=(), repartition_sources=(), changelogs=()):
    """`changelogs` and `repartition_sources` are (name, partitions) pairs."""
    return (kp.compact_string(sid)
            + carray(list(sources), kp.compact_string)
            + carray([], None)  # source topic regex
            + carray(list(changelogs), lambda t: topic_info(*t))
            + carray(list(sinks), kp.compact_string)
            + carray(list(repartition_sources), lambda t: topic_info(*t))
            + carray([], None)  # copartition groups
            + TAGS)


def task_ids(tasks):
    """{subtopology: [partitions]} -> compact array of TaskIds; None stays null."""
    if tasks is None:
        return carray(None, None)
    return carray(sorted(tasks.items()),
                  lambda kv: kp.compact_string(kv[0]) + carray(kv[1], kp.i32) + TAGS)


def task_offsets(offsets):
    """[(subtopology, partition, offset)] -> compact array of TaskOffsets; None stays null."""
    return carray(offsets, lambda o: kp.compact_string(o[0]) + kp.i32(o[1]) + kp.i64(o[2]) + TAGS)


def heartbeat_body(group, member, epoch, topology=None, tasks=None, process="p1", rebalance_timeout=30000,
                   offsets=None, end_offsets=None):
    """topology: (epoch, [encoded subtopologies]) or None. tasks: {sub: [p]} for all three kinds.
    offsets, end_offsets: [(subtopology, partition, offset)] or None (null: unchanged)."""
    body = (kp.compact_string(group) + kp.compact_string(member) + kp.i32(epoch) + kp.i32(0)
            + kp.compact_nullable_string(None) + kp.compact_nullable_string(None) + kp.i32(rebalance_timeout))
    if topology is None:
        body += kp.i8(-1)
    else:
        t_epoch, subs = topology
        body += kp.i8(1) + kp.i32(t_epoch) + carray(subs, lambda s: s) + TAGS
    empty = None if tasks is None else {}
    body += task_ids(tasks) + task_ids(empty) + task_ids(empty)
    body += kp.compact_nullable_string(process) + kp.i8(-1)  # process id, no user endpoint
    body += carray(None if epoch != 0 else [], None)  # client tags
    body += task_offsets(offsets) + task_offsets(end_offsets)
    body += kp.i8(0) + TAGS  # shutdown_application
    return body


def heartbeat(conn, body, version=0):
    """Returns (error, message, member_id, epoch, statuses, active tasks or None)."""
    r = conn.request(STREAMS_GROUP_HEARTBEAT, version, body, flexible=True)
    r.i32()  # throttle
    err = r.i16()
    msg = r.compact_string()
    member = r.compact_string()
    epoch = r.i32()
    r.i32()  # heartbeat interval
    if version == 0:
        r.i32()  # acceptable recovery lag (legacy)
    r.i32()  # task offset interval
    if version >= 1:
        r.i64()  # acceptable recovery lag
    statuses = r.compact_array(lambda rr: (rr.i8(), rr.compact_string(), rr.tagged_fields())[:2]) or []
    active = r.compact_array(lambda rr: (rr.compact_string(), rr.compact_array(lambda x: x.i32()), rr.tagged_fields())[:2])
    return err, msg, member, epoch, statuses, active


def find_coordinator(conn, group):
    """FindCoordinator v3 (creates __consumer_offsets); retried until it answers without error."""
    body = kp.compact_string(group) + kp.i8(0) + TAGS
    deadline = time.monotonic() + 20
    while True:
        r = conn.request(kp.FIND_COORDINATOR, 3, body)
        r.i32()
        err = r.i16()
        if err == 0:
            return
        assert time.monotonic() < deadline, f"FindCoordinator kept failing with {err}"
        time.sleep(0.2)


def word_count_topology(app, epoch=0):
    return (epoch, [
        subtopology("0", sources=[f"{app}-in"], sinks=[f"{app}-repartition"]),
        subtopology("1", repartition_sources=[(f"{app}-repartition", 0)], changelogs=[(f"{app}-changelog", 0)]),
    ])


def partition_counts(conn, names):
    """{topic: partition count} of the topics that exist (Metadata v8, no auto-creation)."""
    md = kp.metadata(conn, 8, names, allow_auto_create=False)
    return {n: len(t["partitions"]) for n, t in md["topics"].items() if t["error"] == 0}


def create_input(conn, name):
    """Auto-created by Metadata with the broker's num.partitions (3 here)."""
    kp.metadata(conn, 8, [name], allow_auto_create=True)
    deadline = time.monotonic() + 20
    while partition_counts(conn, [name]).get(name) != INPUT_PARTITIONS:
        assert time.monotonic() < deadline, f"{name} was not created"
        time.sleep(0.2)


def joined_member(conn, group):
    """A member "m1" of a new word-count group, once it holds its tasks: (epoch, tasks)."""
    create_input(conn, f"{group}-in")
    find_coordinator(conn, group)
    err, msg, member, epoch, statuses, active = heartbeat(
        conn, heartbeat_body(group, "m1", 0, topology=word_count_topology(group), tasks={}))
    assert err == 0, msg
    deadline = time.monotonic() + 20
    while not active:
        assert time.monotonic() < deadline, f"no tasks assigned; statuses {statuses}"
        time.sleep(0.2)
        err, msg, member, epoch, statuses, active = heartbeat(conn, heartbeat_body(group, "m1", epoch, tasks={}))
        assert err == 0, msg
    return epoch, {s: ps for s, ps in active}


def test_internal_topics_are_created_then_tasks_assigned(broker):
    with kp.Conn(broker.port) as c:
        group = "sg-raw-create"
        create_input(c, f"{group}-in")
        find_coordinator(c, group)
        err, msg, _, epoch, statuses, active = heartbeat(
            c, heartbeat_body(group, "m1", 0, topology=word_count_topology(group), tasks={}))
        assert err == 0, msg
        assert [s[0] for s in statuses] == [STATUS_MISSING_INTERNAL_TOPICS], statuses
        assert active == []
        # The broker created them with the input's partition count; the next heartbeat gets tasks.
        parts = partition_counts(c, [f"{group}-repartition", f"{group}-changelog"])
        assert parts == {f"{group}-repartition": 3, f"{group}-changelog": 3}
        err, msg, _, epoch, statuses, active = heartbeat(c, heartbeat_body(group, "m1", epoch, tasks={}))
        assert err == 0 and statuses == [], (msg, statuses)
        assert dict(active) == {"0": [0, 1, 2], "1": [0, 1, 2]}


def test_missing_source_topic_is_a_status_not_an_error(broker):
    with kp.Conn(broker.port) as c:
        group = "sg-raw-nosource"
        find_coordinator(c, group)
        err, msg, _, _, statuses, active = heartbeat(
            c, heartbeat_body(group, "m1", 0, topology=word_count_topology(group), tasks={}))
        assert err == 0, msg
        assert [s[0] for s in statuses] == [STATUS_MISSING_SOURCE_TOPICS], statuses
        assert f"{group}-in" in statuses[0][1]
        assert active == []


@pytest.mark.parametrize("version", [0, 1])
def test_invalid_topology_is_refused(broker, version):
    with kp.Conn(broker.port) as c:
        group = f"sg-raw-invalid-{version}"
        find_coordinator(c, group)
        # A changelog topic with a partition count of its own.
        bad = (0, [subtopology("0", sources=["x"], changelogs=[("x-changelog", 4)])])
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", 0, topology=bad, tasks={}), version)
        assert err == STREAMS_INVALID_TOPOLOGY, (err, msg)
        assert "x-changelog" in msg
        # A repartition topic nothing writes into.
        bad = (0, [subtopology("0", repartition_sources=[("orphan-repartition", 0)])])
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", 0, topology=bad, tasks={}), version)
        assert err == STREAMS_INVALID_TOPOLOGY, (err, msg)
        # Joining without a topology is a malformed request.
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", 0, topology=None, tasks={}), version)
        assert err == INVALID_REQUEST, (err, msg)


def test_wrong_member_epoch_is_fenced(broker):
    with kp.Conn(broker.port) as c:
        group = "sg-raw-fenced"
        epoch, _ = joined_member(c, group)
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch + 7, tasks=None))
        assert err == FENCED_MEMBER_EPOCH, (err, msg)
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "nobody", epoch, tasks=None))
        assert err == UNKNOWN_MEMBER_ID, (err, msg)
        # A second member with a newer topology epoch: Kafka does not support topology updates yet.
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m2", 0, topology=word_count_topology(group, 1), tasks={}))
        assert err == STREAMS_INVALID_TOPOLOGY_EPOCH, (err, msg)
        # The real member is unharmed and leaves with epoch -1.
        err, msg, _, e, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch, tasks=None))
        assert err == 0 and e == epoch, msg
        err, msg, _, e, *_ = heartbeat(c, heartbeat_body(group, "m1", -1, tasks=None))
        assert err == 0 and e == -1, msg


def test_describe_and_topology_description_update(broker):
    with kp.Conn(broker.port) as c:
        group = "sg-raw-describe"
        joined_member(c, group)
        body = carray([group, "sg-raw-absent"], kp.compact_string) + kp.i8(0) + TAGS
        r = c.request(STREAMS_GROUP_DESCRIBE, 0, body, flexible=True)
        r.i32()
        n = r.uvarint() - 1
        assert n == 2
        err = r.i16()
        r.compact_string()  # error message
        gid, state = r.compact_string(), r.compact_string()
        assert (err, gid, state) == (0, group, "Stable")
        # Kafka without a topology-description plugin refuses the update.
        body = (kp.compact_string(group) + kp.compact_string("m1") + kp.i32(0)
                + carray([], None) + carray([], None) + TAGS + TAGS)
        r = c.request(STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, body, flexible=True)
        r.i32()
        assert r.i16() == UNSUPPORTED_VERSION


def test_group_survives_a_restart(broker):
    """The group is kept in __consumer_offsets: after a restart the member carries on at its
    epoch with its tasks (runs last in the file: it restarts the shared broker)."""
    group = "sg-raw-restart"
    with kp.Conn(broker.port) as c:
        epoch, tasks = joined_member(c, group)
    broker.stop()
    broker.start()
    with kp.Conn(broker.port) as c:
        find_coordinator(c, group)
        owned = {s: ps for s, ps in tasks.items()}
        deadline = time.monotonic() + 20
        while True:
            err, msg, _, e, statuses, active = heartbeat(c, heartbeat_body(group, "m1", epoch, tasks=owned))
            if err == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while loading
        assert err == 0, (err, msg)
        assert e == epoch and statuses == [], (e, statuses)
        # A full heartbeat gets the same tasks back.
        assert {s: ps for s, ps in active} == tasks


def describe_member_offsets(conn, group):
    """StreamsGroupDescribe v0 of one group: {member id: (task offsets, task end offsets)},
    each a sorted list of (subtopology, partition, offset)."""
    r = conn.request(STREAMS_GROUP_DESCRIBE, 0, carray([group], kp.compact_string) + kp.i8(0) + TAGS, flexible=True)
    r.i32()
    assert r.uvarint() == 2
    err = r.i16()
    r.compact_string()
    assert err == 0
    r.compact_string(), r.compact_string(), r.i32(), r.i32()  # id, state, epochs
    string_list = lambda rr: rr.compact_array(lambda x: x.compact_string())
    key_value = lambda rr: (rr.compact_string(), rr.compact_string(), rr.tagged_fields())
    topic = lambda rr: (rr.compact_string(), rr.i32(), rr.i16(), rr.compact_array(key_value), rr.tagged_fields())
    if r.i8() >= 0:  # topology
        r.i32()
        r.compact_array(lambda rr: (rr.compact_string(), string_list(rr), string_list(rr), rr.compact_array(topic),
                                    rr.compact_array(topic), rr.tagged_fields()))
        r.tagged_fields()
    offset = lambda rr: (rr.compact_string(), rr.i32(), rr.i64(), rr.tagged_fields())[:3]
    task_ids = lambda rr: (rr.compact_string(), rr.compact_array(lambda x: x.i32()), rr.tagged_fields())
    assignment = lambda rr: ([rr.compact_array(task_ids) for _ in range(3)], rr.tagged_fields())

    def member(rr):
        mid = rr.compact_string()
        rr.i32(), rr.compact_string(), rr.compact_string(), rr.compact_string(), rr.compact_string(), rr.i32()
        rr.compact_string()  # process
        if rr.i8() >= 0:  # user endpoint
            rr.compact_string(), rr._take(2), rr.tagged_fields()
        rr.compact_array(key_value)
        offsets, end_offsets = sorted(rr.compact_array(offset)), sorted(rr.compact_array(offset))
        assignment(rr), assignment(rr), rr.boolean(), rr.tagged_fields()
        return mid, (offsets, end_offsets)

    return dict(r.compact_array(member))


def test_reported_task_offsets_are_kept_and_described(broker):
    """A member's TaskOffsets and TaskEndOffsets as Kafka 4.4 keeps them: a null list keeps the
    last report, a list replaces it whole, a task listed twice is INVALID_REQUEST."""
    with kp.Conn(broker.port) as c:
        group = "sg-raw-offsets"
        epoch, _ = joined_member(c, group)
        assert describe_member_offsets(c, group) == {"m1": ([], [])}
        sent = [("1", 0, 42), ("1", 2, 7)]
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch, offsets=sent, end_offsets=[("1", 0, 50)]))
        assert err == 0, msg
        assert describe_member_offsets(c, group) == {"m1": (sent, [("1", 0, 50)])}
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch))
        assert err == 0, msg
        assert describe_member_offsets(c, group) == {"m1": (sent, [("1", 0, 50)])}
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch, offsets=[("1", 1, 1), ("1", 1, 2)]))
        assert err == INVALID_REQUEST and "Task offsets contain a duplicate entry for subtopology 1 and partition 1." in msg, msg
        err, msg, *_ = heartbeat(c, heartbeat_body(group, "m1", epoch, offsets=[("1", 1, 9)], end_offsets=[]))
        assert err == 0, msg
        assert describe_member_offsets(c, group) == {"m1": ([("1", 1, 9)], [])}
