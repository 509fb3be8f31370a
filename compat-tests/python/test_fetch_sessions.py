"""KIP-227 incremental fetch sessions, on the wire: a full fetch at epoch 0 opens a
session, incremental fetches at the next epochs answer only partitions with news, wrong
epochs and unknown ids get their error codes, forgotten topics leave the session, and a
flood of sessions stays within max.incremental.fetch.session.cache.slots.

Raw Fetch v11 (topics by name) and v13 (topics by id, flexible) requests, since no client
library lets a test choose session ids and epochs."""

import struct

import pytest
from confluent_kafka import TopicCollection

import kproto as kp
import metrics_page as mp
from cluster import wait_until
from helpers import admin, create_topic, read_all

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
SLOTS = 3


@pytest.fixture
def node(start_broker):
    b = start_broker({"metrics.listener": "127.0.0.1:0",
                      "max.incremental.fetch.session.cache.slots": str(SLOTS)})
    b.metrics_url = wait_until(lambda: mp.ADDRESS.findall(b.stderr_tail()) and mp.address(b.stderr_tail()),
                               10, what="the metrics address in the broker's log")
    return b


def fetch_body(version, session_id, epoch, topics, forgotten=(), max_wait_ms=0, min_bytes=0):
    """topics: [(name or 16-byte id, [(partition, offset)])]; forgotten: [(topic, [partition])]."""
    flexible = version >= 12

    def arr(items, enc):
        if flexible:
            return kp.uvarint(len(items) + 1) + b"".join(enc(i) for i in items)
        return kp.array(items, enc)

    def topic(t):
        if version >= 13:
            return t
        return kp.compact_string(t) if flexible else kp.string(t)

    tags = kp.EMPTY_TAGS if flexible else b""

    def part(p):
        index, offset = p
        out = kp.i32(index) + kp.i32(-1) + kp.i64(offset)
        if version >= 12:
            out += kp.i32(-1)  # last fetched epoch
        return out + kp.i64(-1) + kp.i32(1 << 20) + tags

    body = kp.i32(-1) + kp.i32(max_wait_ms) + kp.i32(min_bytes) + kp.i32(50 << 20) + kp.i8(0)
    body += kp.i32(session_id) + kp.i32(epoch)
    body += arr(list(topics), lambda t: topic(t[0]) + arr(t[1], part) + tags)
    body += arr(list(forgotten), lambda f: topic(f[0]) + arr(f[1], kp.i32) + tags)
    body += kp.compact_string("") if flexible else kp.string("")
    return body + tags


def fetch(conn, version, session_id, epoch, topics, forgotten=(), **kw):
    """(error, session id, {(topic, partition): (error, high watermark, records bytes)})."""
    r = conn.request(kp.FETCH, version, fetch_body(version, session_id, epoch, topics, forgotten, **kw))
    flexible = version >= 12

    def arr(dec):
        return (r.compact_array(dec) if flexible else r.array(dec)) or []

    r.i32()  # throttle
    error, sid = r.i16(), r.i32()
    out = {}
    for _ in range(r.uvarint() - 1 if flexible else r.i32()):
        name = r._take(16) if version >= 13 else (r.compact_string() if flexible else r.string())
        for _ in range(r.uvarint() - 1 if flexible else r.i32()):
            index, perr, hw = r.i32(), r.i16(), r.i64()
            r.i64(), r.i64()  # last stable offset, log start offset
            arr(lambda rr: (rr.i64(), rr.i64(), flexible and rr.tagged_fields()))
            r.i32()  # preferred read replica
            n = r.uvarint() - 1 if flexible else r.i32()
            records = r._take(max(n, 0))
            if flexible:
                r.tagged_fields()
            out[(name, index)] = (perr, hw, len(records))
        if flexible:
            r.tagged_fields()
    return error, sid, out


def produce(conn, topic, partition, n=1):
    batch = kp.record_batch([(b"k", b"v%d" % i, []) for i in range(n)])
    kp.produce_v7(conn, topic, partition, batch, acks=-1)


def metric(node, name):
    return mp.value(mp.scrape(node.metrics_url), name)


def test_incremental_fetch_answers_only_partitions_with_news(node):
    create_topic(node.bootstrap, "inc", partitions=3)
    with kp.Conn(node.port) as c:
        for p in range(3):
            produce(c, "inc", p, 2)
        parts = [(p, 0) for p in range(3)]
        err, sid, got = fetch(c, 11, 0, 0, [("inc", parts)])
        assert err == 0 and sid != 0, "a full fetch at epoch 0 opens a session"
        assert {k: v[2] > 0 for k, v in got.items()} == {("inc", p): True for p in range(3)}
        assert metric(node, "sluice_incremental_fetch_sessions") == 1
        assert metric(node, "sluice_incremental_fetch_session_partitions") == 3
        # Positions move to the end of what was read: the client names them, nothing is new.
        err, sid2, got = fetch(c, 11, sid, 1, [("inc", [(p, 2) for p in range(3)])])
        assert (err, sid2, got) == (0, sid, {}), "no partition has news"
        # Partition 1 gets a record: only it is answered, though the request names none.
        produce(c, "inc", 1)
        err, _, got = fetch(c, 11, sid, 2, [])
        assert err == 0 and list(got) == [("inc", 1)] and got[("inc", 1)][1] == 3 and got[("inc", 1)][2] > 0
        err, _, got = fetch(c, 11, sid, 3, [("inc", [(1, 3)])])
        assert (err, got) == (0, {})
        assert metric(node, "sluice_incremental_fetch_requests_total") >= 3


def test_session_errors(node):
    create_topic(node.bootstrap, "errs", partitions=1)
    with kp.Conn(node.port) as c:
        _, sid, _ = fetch(c, 11, 0, 0, [("errs", [(0, 0)])])
        assert sid != 0
        err, esid, got = fetch(c, 11, sid, 5, [])
        assert (err, esid, got) == (INVALID_FETCH_SESSION_EPOCH, 0, {})
        err, _, _ = fetch(c, 11, sid ^ 0x5A5A5A, 1, [])
        assert err == FETCH_SESSION_ID_NOT_FOUND
        assert fetch(c, 11, sid, 1, [])[0] == 0, "the wrong epoch did not move the session on"
        # Epoch -1 with the id closes the session; it is gone afterwards.
        err, closed, got = fetch(c, 11, sid, -1, [("errs", [(0, 0)])])
        assert (err, closed) == (0, 0) and ("errs", 0) in got
        assert fetch(c, 11, sid, 2, [])[0] == FETCH_SESSION_ID_NOT_FOUND
        assert metric(node, "sluice_incremental_fetch_sessions") == 0


def topic_id(bootstrap, name):
    a = admin(bootstrap)  # kept referenced until the answer is in
    d = a.describe_topics(TopicCollection([name]))[name].result(10)
    u = d.topic_id
    return struct.pack(">qq", u.get_most_significant_bits(), u.get_least_significant_bits())


@pytest.mark.parametrize("version", [11, 13])
def test_forgotten_topic_leaves_the_session(node, version):
    create_topic(node.bootstrap, "keep", partitions=1)
    create_topic(node.bootstrap, "drop", partitions=1)
    keep, drop = ("keep", "drop") if version < 13 else (topic_id(node.bootstrap, "keep"), topic_id(node.bootstrap, "drop"))
    with kp.Conn(node.port) as c:
        _, sid, got = fetch(c, version, 0, 0, [(keep, [(0, 0)]), (drop, [(0, 0)])])
        assert sid != 0 and set(got) == {(keep, 0), (drop, 0)}
        err, _, got = fetch(c, version, sid, 1, [], forgotten=[(drop, [0])])
        assert (err, got) == (0, {})
        assert metric(node, "sluice_incremental_fetch_session_partitions") == 1
        produce(c, "drop", 0)
        produce(c, "keep", 0)
        err, _, got = fetch(c, version, sid, 2, [])
        assert err == 0 and list(got) == [(keep, 0)], "the forgotten topic is no longer fetched"


def test_a_flood_of_sessions_stays_within_the_slots(node):
    create_topic(node.bootstrap, "flood", partitions=1)
    with kp.Conn(node.port) as c:
        ids = [fetch(c, 11, 0, 0, [("flood", [(0, 0)])])[1] for _ in range(SLOTS * 10)]
    assert all(i != 0 for i in ids[:SLOTS]), "the first sessions each got a slot"
    assert ids[SLOTS:] == [0] * (len(ids) - SLOTS), "fresh sessions of the same size are not evicted"
    f = mp.scrape(node.metrics_url)
    assert mp.value(f, "sluice_incremental_fetch_sessions") == SLOTS
    assert mp.value(f, "sluice_incremental_fetch_session_partitions") == SLOTS


def test_librdkafka_stays_sessionless_and_reads_everything(node):
    """librdkafka never asks for a session (id 0, epoch -1 on every fetch): it must get
    full answers, and no session may be opened for it."""
    create_topic(node.bootstrap, "rdk", partitions=3)
    with kp.Conn(node.port) as c:
        for p in range(3):
            produce(c, "rdk", p, 5)
    out = read_all(node.bootstrap, "rdk", 3, expected=15)
    assert {p: [m.offset() for m in ms] for p, ms in out.items()} == {p: list(range(5)) for p in range(3)}
    f = mp.scrape(node.metrics_url)
    assert mp.value(f, "sluice_incremental_fetch_sessions") == 0
    assert mp.value(f, "sluice_incremental_fetch_requests_total") == 0
