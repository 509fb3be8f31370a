"""ShareFetch v2 and ShareAcknowledge v2 (Kafka 4.4; KIP-1206, KIP-1222) over raw sockets:
ShareAcquireMode (record_limit takes MaxRecords strictly, batch_optimized to the end of the
batch that reaches it), RENEW acknowledgements (the lock runs on, the delivery count does
not move), and Kafka's errors for bad combinations: RENEW on v1 or without IsRenewAck,
IsRenewAck with fetch parameters, overlapping batches, RENEW where the group disabled it.
One broker for the file, with a short record lock.

SHARE_V2_BOOTSTRAP=host:port runs the file against another broker (e.g. Apache Kafka 4.4,
whose record lock must be set to the same LOCK_MS or the renew test takes longer)."""

import os
import time
import uuid

import pytest

import kproto as kp
from conftest import Broker, fail_on_invariant_violations
from helpers import create_topic
from test_share_state import metadata_topic_id

HEARTBEAT, SHARE_FETCH, SHARE_ACK, INCREMENTAL_ALTER_CONFIGS, FIND_COORDINATOR = 76, 78, 79, 44, 10
COORDINATOR_NOT_READY = (14, 15, 16)
UNKNOWN_SERVER_ERROR, INVALID_REQUEST, INVALID_RECORD_STATE = -1, 42, 121
ACCEPT, RELEASE, RENEW = 1, 2, 4
LOCK_MS = 2000


class Remote:
    """A broker that something else runs."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.port = int(bootstrap.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    if os.environ.get("SHARE_V2_BOOTSTRAP"):
        yield Remote(os.environ["SHARE_V2_BOOTSTRAP"])
        return
    b = Broker(tmp_path_factory.mktemp("share-v2"), settings={
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.record.lock.duration.ms": str(LOCK_MS)})
    b.start()
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


def set_group_config(conn, group, name, value):
    """IncrementalAlterConfigs v1 SET on a GROUP resource (type 32)."""
    config = kp.compact_string(name) + kp.i8(0) + kp.compact_nullable_string(value) + kp.EMPTY_TAGS
    resource = kp.i8(32) + kp.compact_string(group) + kp.uvarint(2) + config + kp.EMPTY_TAGS
    r = conn.request(INCREMENTAL_ALTER_CONFIGS, 1, kp.uvarint(2) + resource + kp.i8(0) + kp.EMPTY_TAGS, flexible=True)
    r.i32()
    (err,) = r.compact_array(lambda x: (x.i16(), x.compact_string(), x.i8(), x.compact_string(), x.tagged_fields())[0])
    assert err == 0, f"setting {name} on {group}: error {err}"


class Member:
    """One share-group member on its own connection, with its share session's epoch."""

    def __init__(self, broker, group, topic):
        self.conn = kp.Conn(broker.port)
        self.group, self.id, self.epoch = group, str(uuid.uuid4()), 0
        self.tid = metadata_topic_id(self.conn, topic)
        set_group_config(self.conn, group, "share.auto.offset.reset", "earliest")
        deadline = time.monotonic() + 30
        member_epoch, subscribed = 0, [topic]
        while time.monotonic() < deadline:
            body = (kp.compact_string(group) + kp.compact_string(self.id) + kp.i32(member_epoch)
                    + kp.compact_nullable_string(None))
            body += (kp.uvarint(len(subscribed) + 1) + b"".join(kp.compact_string(t) for t in subscribed)
                     if subscribed else kp.uvarint(0))
            r = self.conn.request(HEARTBEAT, 1, body + kp.EMPTY_TAGS, flexible=True)
            r.i32()
            err = r.i16()
            r.compact_string()
            r.compact_string()
            member_epoch = r.i32()
            r.i32()
            assigned = r.uvarint() > 0
            if err in COORDINATOR_NOT_READY:
                # FindCoordinator has the broker create and load the group's partition.
                self.conn.request(FIND_COORDINATOR, 6, kp.i8(0) + kp.uvarint(2) + kp.compact_string(group)
                                  + kp.EMPTY_TAGS, flexible=True)
                time.sleep(0.2)
                continue
            assert err == 0, f"ShareGroupHeartbeat error {err}"
            if assigned:
                return
            subscribed = None
            time.sleep(0.2)
        pytest.fail("no assignment within 30 s")

    def next_epoch(self):
        e = self.epoch
        self.epoch += 1
        return e

    def fetch(self, version=2, acks=(), max_records=100, mode=0, renew=False, max_wait=2000,
              min_bytes=1, max_bytes=1 << 20, batch_size=None):
        """(top error, lock ms, {partition: (error, ack error, [acquired offsets], [counts])})."""
        batch_size = max_records if batch_size is None else batch_size
        body = (kp.compact_string(self.group) + kp.compact_string(self.id) + kp.i32(self.next_epoch())
                + kp.i32(max_wait) + kp.i32(min_bytes) + kp.i32(max_bytes) + kp.i32(max_records)
                + kp.i32(batch_size))
        if version >= 2:
            body += kp.i8(mode) + kp.i8(1 if renew else 0)
        body += (kp.uvarint(2) + self.tid.bytes + kp.uvarint(2) + kp.i32(0) + encode_acks(acks)
                 + kp.EMPTY_TAGS + kp.EMPTY_TAGS + kp.uvarint(1) + kp.EMPTY_TAGS)
        r = self.conn.request(SHARE_FETCH, version, body, flexible=True)
        r.i32()
        err = r.i16()
        r.compact_string()
        lock_ms = r.i32()

        def part(p):
            index, perr = p.i32(), p.i16()
            p.compact_string()
            ack_err = p.i16()
            p.compact_string()
            p.i32(), p.i32(), p.tagged_fields()
            n = p.uvarint()
            if n > 0:
                p._take(n - 1)
            acquired = p.compact_array(lambda a: (a.i64(), a.i64(), a.i16(), a.tagged_fields())[:3]) or []
            p.tagged_fields()
            offsets = [o for f, l, _ in acquired for o in range(f, l + 1)]
            counts = [c for f, l, c in acquired for _ in range(f, l + 1)]
            return index, (perr, ack_err, offsets, counts)

        topics = r.compact_array(lambda t: (t._take(16), t.compact_array(part), t.tagged_fields())[1]) or []
        return err, lock_ms, dict(p for ps in topics for p in (ps or []))

    def acknowledge(self, acks, version=2, renew=False):
        """(top error, lock ms or None, partition 0's error)."""
        body = kp.compact_string(self.group) + kp.compact_string(self.id) + kp.i32(self.next_epoch())
        if version >= 2:
            body += kp.i8(1 if renew else 0)
        body += (kp.uvarint(2) + self.tid.bytes + kp.uvarint(2) + kp.i32(0) + encode_acks(acks)
                 + kp.EMPTY_TAGS + kp.EMPTY_TAGS + kp.EMPTY_TAGS)
        r = self.conn.request(SHARE_ACK, version, body, flexible=True)
        r.i32()
        err = r.i16()
        r.compact_string()
        lock_ms = r.i32() if version >= 2 else None

        def part(p):
            index, perr = p.i32(), p.i16()
            p.compact_string()
            p.i32(), p.i32(), p.tagged_fields()
            p.tagged_fields()
            return index, perr

        topics = r.compact_array(lambda t: (t._take(16), t.compact_array(part), t.tagged_fields())[1]) or []
        parts = dict(p for ps in topics for p in (ps or []))
        return err, lock_ms, parts.get(0)

    def acquire(self, want, **kw):
        """Fetches (first opening the session) until some records are acquired."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            err, _, parts = self.fetch(**kw)
            assert err == 0, f"ShareFetch error {err}"
            if parts.get(0) and parts[0][2]:
                assert parts[0][0] == 0, f"partition error {parts[0]}"
                return parts[0][2], parts[0][3]
        pytest.fail(f"nothing acquired within 30 s (wanted {want})")

    def close(self):
        self.conn.close()


def encode_acks(acks):
    return kp.uvarint(len(acks) + 1) + b"".join(
        kp.i64(f) + kp.i64(l) + kp.uvarint(len(ts) + 1) + b"".join(kp.i8(t) for t in ts) + kp.EMPTY_TAGS
        for f, l, ts in acks)


def produce_one_batch(broker, topic, n):
    with kp.Conn(broker.port) as c:
        batch = kp.record_batch([(None, f"r{i}".encode(), []) for i in range(n)])
        assert kp.produce_v7(c, topic, 0, batch)["error"] == 0


@pytest.fixture
def member(broker, request):
    name = request.node.name.replace("test_", "v2-").replace("_", "-")[:50] + "-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, name)
    produce_one_batch(broker, name, 10)
    m = Member(broker, "g-" + name, name)
    yield m
    m.close()


def test_v2_is_advertised(broker):
    with kp.Conn(broker.port) as c:
        err, versions = kp.api_versions(c, 3)
    assert err == 0
    assert versions[SHARE_FETCH] == (1, 2) and versions[SHARE_ACK] == (1, 2)


def test_record_limit_is_strict_and_batch_optimized_ends_the_batch(member):
    # One batch of ten records: record_limit stops at MaxRecords inside it...
    offsets, counts = member.acquire("0..2", max_records=3, mode=1)
    assert offsets == [0, 1, 2] and counts == [1, 1, 1]
    # ...batch_optimized takes the batch that reaches MaxRecords to its end.
    err, _, parts = member.fetch(max_records=3, mode=0)
    assert err == 0 and parts[0][2] == list(range(3, 10)), parts


def test_renew_keeps_records_acquired_without_a_new_delivery(member):
    offsets, _ = member.acquire("0..4", max_records=5, mode=1)
    assert offsets == [0, 1, 2, 3, 4]
    # Renewed all along for longer than a lock: the records stay this member's.
    start, lock_ms = time.monotonic(), LOCK_MS
    while time.monotonic() - start < 1.5 * lock_ms / 1000:
        err, lock_ms, perr = member.acknowledge([(0, 4, [RENEW])], renew=True)
        assert (err, perr) == (0, 0)
        assert lock_ms > 0, "ShareAcknowledge v2 answers the acquisition lock timeout"
        time.sleep(min(0.4, lock_ms / 5000))
    # A renew-only ShareFetch (no fetch parameters) works the same and fetches nothing.
    err, _, parts = member.fetch(acks=[(0, 4, [RENEW])], renew=True, max_records=0, max_wait=0,
                                 min_bytes=0, max_bytes=0)
    assert err == 0 and parts[0][1] == 0 and parts[0][2] == [], parts
    # Had a lock run out, 0..4 would be available again and these acknowledgements refused.
    assert member.acknowledge([(0, 2, [ACCEPT]), (3, 4, [RELEASE])])[2] == 0
    # Renewing did not count as delivering: 3 and 4 come back for their second delivery.
    offsets, counts = member.acquire("3, 4", max_records=2, mode=1)
    assert (offsets, counts) == ([3, 4], [2, 2])


def test_renew_needs_v2_and_is_renew_ack(member):
    member.acquire("0..9", max_records=10, mode=1)
    # v1 knows no RENEW.
    assert member.acknowledge([(0, 0, [RENEW])], version=1)[2] == INVALID_REQUEST
    err, _, parts = member.fetch(version=1, acks=[(0, 0, [RENEW])], max_wait=0)
    assert err == 0 and parts[0][1] == INVALID_REQUEST, parts
    # v2 takes it only in a request that says IsRenewAck.
    assert member.acknowledge([(1, 1, [RENEW])])[2] == INVALID_REQUEST
    # Ranges out of order or overlapping are refused whole, as are unknown types.
    assert member.acknowledge([(2, 4, [ACCEPT]), (3, 5, [ACCEPT])])[2] == INVALID_REQUEST
    assert member.acknowledge([(2, 2, [5])], renew=True)[2] == INVALID_REQUEST
    # None of those took effect: 0..5 can still be accepted.
    assert member.acknowledge([(0, 5, [ACCEPT])])[2] == 0


def test_is_renew_ack_with_fetch_parameters_is_invalid_request(member):
    member.acquire("0..9", max_records=10, mode=1)
    for params in ({"max_records": 5}, {"max_wait": 100}, {"min_bytes": 1}, {"max_bytes": 1024}):
        zero = {"max_records": 0, "max_wait": 0, "min_bytes": 0, "max_bytes": 0}
        err, _, _ = member.fetch(acks=[(0, 0, [RENEW])], renew=True, **{**zero, **params})
        assert err == INVALID_REQUEST, params
        # Refused before the share session is looked at: its epoch did not move.
        member.epoch -= 1
    # The member still holds everything.
    assert member.acknowledge([(0, 9, [ACCEPT])])[2] == 0


def test_renew_where_the_group_disabled_it_is_invalid_record_state(member):
    set_group_config(member.conn, member.group, "share.renew.acknowledge.enable", "false")
    member.acquire("0..9", max_records=10, mode=1)
    assert member.acknowledge([(0, 0, [RENEW])], renew=True)[2] == INVALID_RECORD_STATE
    assert member.acknowledge([(0, 9, [ACCEPT])])[2] == 0


def test_unknown_acquire_mode_is_unknown_server_error_after_the_acknowledgements(member):
    member.acquire("0, 1", max_records=2, mode=1)
    # Kafka's ShareAcquireMode.forId throws once the acknowledgements have been applied.
    err, lock_ms, parts = member.fetch(acks=[(0, 1, [ACCEPT])], max_records=3, mode=7, max_wait=0)
    assert (err, lock_ms, parts) == (UNKNOWN_SERVER_ERROR, 0, {})
    assert member.acknowledge([(0, 1, [ACCEPT])])[2] == INVALID_RECORD_STATE, "0 and 1 were accepted"
    # The share session went on: the next epoch fetches as usual.
    err, _, parts = member.fetch(max_records=3, mode=1, max_wait=0)
    assert err == 0 and parts[0][2] == [2, 3, 4], parts


def test_max_records_zero_or_negative_acquires_nothing(member):
    # As Kafka's SharePartition.acquire: no records at all, not a default number of them.
    for max_records in (0, -1):
        for mode in (0, 1):
            err, _, parts = member.fetch(max_records=max_records, mode=mode, max_wait=200, batch_size=10)
            assert err == 0, (max_records, mode, err)
            assert parts.get(0, (0, 0, [], []))[::2] == (0, []), (max_records, mode, parts)
    # Nothing was acquired by those: the next fetch starts at offset 0, first deliveries.
    offsets, counts = member.acquire("0..2", max_records=3, mode=1)
    assert (offsets, counts) == ([0, 1, 2], [1, 1, 1])
