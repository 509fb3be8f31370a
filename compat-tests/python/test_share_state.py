"""KIP-932's share-coordinator state APIs over raw sockets: InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
ReadShareGroupStateSummary (87), with Kafka's errors for bad input and stale epochs,
FindCoordinator's SHARE key type, and the state read back after a kill -9 (replayed from
__share_group_state). One broker for the file."""

import base64
import time
import uuid

import pytest

import kproto as kp
from conftest import Broker, fail_on_invariant_violations
from helpers import create_topic

INIT, READ, WRITE, DELETE, SUMMARY = 83, 84, 85, 86, 87
FIND_COORDINATOR = 10
METADATA = 3

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
FENCED_STATE_EPOCH = 124


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("share-state"))
    b.start()
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


@pytest.fixture(scope="module")
def topic_id(broker):
    create_topic(broker.bootstrap, "share-state", partitions=2)
    with kp.Conn(broker.port) as c:
        tid = metadata_topic_id(c, "share-state")
        # As a partition leader does: FindCoordinator creates __share_group_state; its
        # partitions answer once this node leads and has loaded them.
        assert find_share_coordinator(c, f"g-warm:{kafka_uuid(tid)}:0")[0] == 0
        for _ in range(100):
            if read(c, "g-warm", tid, 0, 0)[0] == 0:
                break
            time.sleep(0.1)
        return tid


def metadata_topic_id(conn, name):
    """Metadata v12 (flexible) for one topic: its id."""
    body = (kp.uvarint(2) + bytes(16) + kp.compact_nullable_string(name) + kp.EMPTY_TAGS
            + kp.i8(0) + kp.i8(0) + kp.EMPTY_TAGS)
    r = conn.request(METADATA, 12, body, flexible=True)
    r.i32()
    r.compact_array(lambda b: (b.i32(), b.compact_string(), b.i32(), b.compact_string(), b.tagged_fields()))
    r.compact_string()
    r.i32()

    def topic(t):
        err, tname, tid = t.i16(), t.compact_string(), t._take(16)
        t.boolean()
        t.compact_array(lambda p: (p.i16(), p.i32(), p.i32(), p.i32(), p.compact_array(lambda x: x.i32()),
                                   p.compact_array(lambda x: x.i32()), p.compact_array(lambda x: x.i32()),
                                   p.tagged_fields()))
        t.i32()
        t.tagged_fields()
        return err, tname, tid

    (err, tname, tid), = r.compact_array(topic)
    assert err == 0 and tname == name
    return uuid.UUID(bytes=tid)


def topics(group, tid, partitions):
    """GroupId, then one topic of already encoded partitions (each ends with its tags)."""
    return (kp.compact_string(group) + kp.uvarint(2) + tid.bytes + kp.uvarint(len(partitions) + 1)
            + b"".join(partitions) + kp.EMPTY_TAGS + kp.EMPTY_TAGS)


def results(r, partition):
    """Reads `results` (one topic expected) with `partition` decoding each partition."""
    out = r.compact_array(lambda t: (t._take(16), t.compact_array(partition), t.tagged_fields())[1])
    r.tagged_fields()
    assert len(out) == 1
    return out[0]


def initialize(conn, group, tid, partition, state_epoch, start):
    p = kp.i32(partition) + kp.i32(state_epoch) + kp.i64(start) + kp.EMPTY_TAGS
    r = conn.request(INIT, 0, topics(group, tid, [p]), flexible=True)
    (res,) = results(r, lambda x: (x.i32(), x.i16(), x.compact_string(), x.tagged_fields())[1])
    return res


def write(conn, group, tid, partition, state_epoch, leader_epoch, start, batches, version=1, complete=-1):
    enc = b"".join(kp.i64(f) + kp.i64(l) + kp.i8(s) + kp.i16(c) + kp.EMPTY_TAGS for f, l, s, c in batches)
    p = kp.i32(partition) + kp.i32(state_epoch) + kp.i32(leader_epoch) + kp.i64(start)
    if version >= 1:
        p += kp.i32(complete)
    p += kp.uvarint(len(batches) + 1) + enc + kp.EMPTY_TAGS
    r = conn.request(WRITE, version, topics(group, tid, [p]), flexible=True)
    (res,) = results(r, lambda x: (x.i32(), x.i16(), x.compact_string(), x.tagged_fields())[1])
    return res


def read(conn, group, tid, partition, leader_epoch):
    """(error, state epoch, start offset, [(first, last, state, count)])."""
    p = kp.i32(partition) + kp.i32(leader_epoch) + kp.EMPTY_TAGS
    r = conn.request(READ, 0, topics(group, tid, [p]), flexible=True)

    def part(x):
        x.i32()
        err = x.i16()
        x.compact_string()
        state_epoch, start = x.i32(), x.i64()
        batches = x.compact_array(lambda b: (b.i64(), b.i64(), b.i8(), b.i16(), b.tagged_fields())[:4])
        x.tagged_fields()
        return err, state_epoch, start, batches

    (res,) = results(r, part)
    return res


def summary(conn, group, tid, partition, leader_epoch, version=1):
    """(error, state epoch, leader epoch, start offset, delivery complete count or None)."""
    p = kp.i32(partition) + kp.i32(leader_epoch) + kp.EMPTY_TAGS
    r = conn.request(SUMMARY, version, topics(group, tid, [p]), flexible=True)

    def part(x):
        x.i32()
        err = x.i16()
        x.compact_string()
        out = (err, x.i32(), x.i32(), x.i64(), x.i32() if version >= 1 else None)
        x.tagged_fields()
        return out

    (res,) = results(r, part)
    return res


def delete(conn, group, tid, partition):
    p = kp.i32(partition) + kp.EMPTY_TAGS
    r = conn.request(DELETE, 0, topics(group, tid, [p]), flexible=True)
    (res,) = results(r, lambda x: (x.i32(), x.i16(), x.compact_string(), x.tagged_fields())[1])
    return res


def find_share_coordinator(conn, key, version=6):
    """FindCoordinator v4+ with key type SHARE: (error, node id, port)."""
    body = kp.i8(2) + kp.uvarint(2) + kp.compact_string(key) + kp.EMPTY_TAGS
    r = conn.request(FIND_COORDINATOR, version, body, flexible=True)
    r.i32()

    def coord(x):
        x.compact_string()
        out = (x.i32(), x.compact_string(), x.i32(), x.i16())
        x.compact_string()
        x.tagged_fields()
        return out

    (node, _host, port, err), = r.compact_array(coord)
    return err, node, port


def kafka_uuid(u):
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def test_initialize_write_read_summary_delete(broker, topic_id):
    with kp.Conn(broker.port) as c:
        g = "g-round-trip"
        # Never initialized: Kafka's uninitialized start offset (-1) and state epoch 0.
        assert read(c, g, topic_id, 0, 0) == (0, 0, -1, [])
        assert summary(c, g, topic_id, 0, 0)[:4] == (0, 0, -1, -1)
        assert initialize(c, g, topic_id, 0, 0, 5) == 0
        assert initialize(c, g, topic_id, 0, 0, 5) == FENCED_STATE_EPOCH
        assert write(c, g, topic_id, 0, 0, 3, 5, [(5, 9, 0, 1)], version=0) == 0
        assert write(c, g, topic_id, 0, 0, 3, -1, [(6, 7, 2, 1)], complete=2) == 0
        assert read(c, g, topic_id, 0, 3) == (0, 0, 5, [(5, 5, 0, 1), (6, 7, 2, 1), (8, 9, 0, 1)])
        assert summary(c, g, topic_id, 0, 3) == (0, 0, 3, 5, 2)
        assert summary(c, g, topic_id, 0, 3, version=0) == (0, 0, 3, 5, None)
        # A start offset past a batch cuts it.
        assert write(c, g, topic_id, 0, 0, 3, 7, [(9, 9, 4, 2)]) == 0
        assert read(c, g, topic_id, 0, 3)[2:] == (7, [(7, 7, 2, 1), (8, 8, 0, 1), (9, 9, 4, 2)])
        # An older leader is fenced, for writes and reads; a summary (the group
        # coordinator's, to describe offsets) fences nobody, as in Kafka 4.4.
        assert write(c, g, topic_id, 0, 0, 2, 7, []) == FENCED_LEADER_EPOCH
        assert read(c, g, topic_id, 0, 2)[0] == FENCED_LEADER_EPOCH
        assert summary(c, g, topic_id, 0, 2)[0] == 0
        # A new state epoch starts over; writes of the old one are fenced.
        assert initialize(c, g, topic_id, 0, 1, 20) == 0
        assert read(c, g, topic_id, 0, 3) == (0, 1, 20, [])
        assert write(c, g, topic_id, 0, 0, 3, 20, []) == FENCED_STATE_EPOCH
        assert delete(c, g, topic_id, 0) == 0
        assert read(c, g, topic_id, 0, 3) == (0, 0, -1, [])
        # Deleting what is not there is no error either.
        assert delete(c, g, topic_id, 0) == 0


def test_bad_input_gets_kafka_errors(broker, topic_id):
    with kp.Conn(broker.port) as c:
        g = "g-bad"
        unknown = uuid.uuid4()
        assert read(c, g, unknown, 0, 0)[0] == UNKNOWN_TOPIC_OR_PARTITION
        assert initialize(c, g, unknown, 0, 0, 0) == UNKNOWN_TOPIC_OR_PARTITION
        assert write(c, g, topic_id, 7, 0, 0, 0, []) == UNKNOWN_TOPIC_OR_PARTITION
        assert read(c, g, topic_id, -1, 0)[0] == INVALID_REQUEST
        assert summary(c, g, topic_id, -1, 0)[0] == INVALID_REQUEST
        assert delete(c, g, topic_id, -1) == INVALID_REQUEST
        assert initialize(c, "", topic_id, 0, 0, 0) == INVALID_REQUEST
        assert write(c, g, topic_id, 0, 0, 0, 0, [(9, 3, 0, 1)]) == INVALID_REQUEST
        assert write(c, g, topic_id, 0, 0, 0, 0, [(0, 3, 3, 1)]) == INVALID_REQUEST
        assert write(c, g, topic_id, 0, 0, 0, 0, [(0, 3, 0, -1)]) == INVALID_REQUEST
        assert read(c, g, topic_id, 0, 0) == (0, 0, -1, [])
    # A truncated body closes the connection; the broker lives on.
    with kp.Conn(broker.port) as c:
        c.send_raw(kp.frame(WRITE, 1, 1, kp.compact_string("g") + kp.uvarint(5), flexible=True))
        assert c.wait_closed(timeout=5.0), "the broker kept a connection that sent a truncated request"
    assert broker.is_alive()


def test_find_coordinator_share_key(broker, topic_id):
    with kp.Conn(broker.port) as c:
        err, node, port = find_share_coordinator(c, f"g-find:{kafka_uuid(topic_id)}:1")
        assert (err, node, port) == (0, 1, broker.port)
        assert find_share_coordinator(c, "not-a-share-key")[0] == INVALID_REQUEST
        assert find_share_coordinator(c, f"g:{kafka_uuid(topic_id)}:-1")[0] == INVALID_REQUEST
        # Key type SHARE needs v6.
        assert find_share_coordinator(c, f"g:{kafka_uuid(topic_id)}:0", version=5)[0] == INVALID_REQUEST


def test_state_survives_kill_9(broker, topic_id):
    with kp.Conn(broker.port) as c:
        g = "g-restart"
        assert initialize(c, g, topic_id, 1, 0, 100) == 0
        # A snapshot, then ShareUpdates merged into it on replay.
        for i in range(10):
            assert write(c, g, topic_id, 1, 0, 4, 100 + i, [(100 + i, 100 + i, 2, 1), (110, 119, 0, i + 1)]) == 0
        before = read(c, g, topic_id, 1, 4)
    assert before == (0, 0, 109, [(109, 109, 2, 1), (110, 119, 0, 10)])
    broker.restart(kill=True)
    with kp.Conn(broker.port) as c:
        for _ in range(100):
            got = read(c, g, topic_id, 1, 4)
            if got[0] == 0:
                break
            # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS while the node takes its roles back.
            assert got[0] in (14, 15, 16), got
            time.sleep(0.1)
        assert got == before
        assert write(c, g, topic_id, 1, 0, 3, 109, []) == FENCED_LEADER_EPOCH
