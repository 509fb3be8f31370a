"""Hand-encoded (and deliberately broken) requests over raw sockets."""

import random
import struct

import pytest

import kproto as kp
from helpers import create_topic


def assert_alive(broker):
    assert broker.is_alive(), f"broker process died (exit code {broker.proc.poll()})"
    with kp.Conn(broker.port) as c:
        err, versions = kp.api_versions(c, 0)
    assert err == 0
    assert kp.API_VERSIONS in versions


def assert_closed(conn, what):
    assert conn.wait_closed(timeout=5.0), f"broker did not close the connection after {what}"


def metadata_version(versions, candidates=(1, 4, 5, 6, 7, 8, 2, 3)):
    v = kp.pick_version(versions, kp.METADATA, candidates)
    assert v is not None, f"broker supports no non-flexible Metadata version: {versions.get(3)}"
    return v


def require_produce_v7(versions):
    lo, hi = versions.get(kp.PRODUCE, (None, None))
    assert lo is not None and lo <= 7 <= hi, f"broker does not advertise Produce v7: {lo}..{hi}"


def one_record_batch(value=b"hello", key=b"k", **kw):
    return kp.record_batch([(key, value, [("h", b"v")])], **kw)


# ---------------------------------------------------------------------------
# framing
# ---------------------------------------------------------------------------
def test_oversized_frame_closes_connection(start_broker):
    broker = start_broker(socket_request_max_bytes=1048576)
    with kp.Conn(broker.port) as c:
        # A length prefix above socket.request.max.bytes followed by the start of
        # an ordinary ApiVersions header.
        c.send_raw(struct.pack(">i", 2_000_000) + kp.i16(kp.API_VERSIONS) + kp.i16(0)
                   + kp.i32(1) + kp.nullable_string("x"))
        assert_closed(c, "a 2 000 000-byte length prefix")
    assert_alive(broker)


def test_large_frame_below_max_is_accepted(start_broker):
    """Control for the test above: a ~900 kB produce request under the 1 MiB limit
    is accepted, so the limit is not enforced too eagerly."""
    broker = start_broker(socket_request_max_bytes=1048576)
    require_produce_v7(kp.supported_versions(broker.port))
    create_topic(broker.bootstrap, "big-ok", partitions=1)
    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, "big-ok", 0, one_record_batch(value=bytes(900_000)))
        assert (r["error"], r["base_offset"]) == (kp.NONE, 0), r
    assert_alive(broker)


@pytest.mark.parametrize("raw", [
    pytest.param(kp.i32(3) + b"\x00\x12\x00", id="3-byte-frame"),
    pytest.param(kp.i32(0), id="empty-frame"),
    pytest.param(kp.i32(-1) + b"\x00\x12\x00\x00", id="negative-length"),
    pytest.param(kp.i32(6) + kp.i16(18) + kp.i16(0) + b"\x00\x00", id="header-without-corr-id-end"),
    # client_id length claims 0x7fff bytes but the frame ends right after it
    pytest.param(kp.i32(10) + kp.i16(18) + kp.i16(0) + kp.i32(7) + kp.i16(0x7FFF),
                 id="client-id-overrun"),
])
def test_truncated_header_closes_connection(broker, raw):
    with kp.Conn(broker.port) as c:
        c.send_raw(raw)
        assert_closed(c, f"malformed frame {raw!r}")
    assert_alive(broker)


# ---------------------------------------------------------------------------
# malformed bodies
# ---------------------------------------------------------------------------
def test_metadata_absurd_array_count_closes_connection(broker):
    versions = kp.supported_versions(broker.port)
    v = metadata_version(versions)
    with kp.Conn(broker.port) as c:
        c.send(kp.METADATA, v, b"\x7f\xff\xff\xff")
        assert_closed(c, f"Metadata v{v} with topic count 0x7fffffff")
    assert_alive(broker)


GARBAGE_APIS = [kp.PRODUCE, kp.FETCH, kp.LIST_OFFSETS, kp.METADATA, kp.CREATE_TOPICS,
                kp.DELETE_TOPICS, kp.INIT_PRODUCER_ID, kp.DESCRIBE_CONFIGS, kp.ALTER_CONFIGS,
                kp.CREATE_PARTITIONS, kp.INCREMENTAL_ALTER_CONFIGS, kp.DESCRIBE_CLUSTER,
                kp.FIND_COORDINATOR]


def test_random_garbage_bodies_do_not_kill_broker(broker):
    """Garbage bodies for many api keys/versions: the broker must answer (with the
    right correlation id) or close the connection, never hang or die."""
    versions = kp.supported_versions(broker.port)
    rng = random.Random(0x5100CE)
    cases = []
    for key in GARBAGE_APIS:
        if key not in versions:
            continue
        lo, hi = versions[key]
        for v in sorted({lo, hi, (lo + hi) // 2}):
            for _ in range(3):
                n = rng.choice([1, 2, 3, 5, 8, 17, 64, 300])
                # Start with 0xff so counts/lengths are mostly negative or huge.
                body = bytes([0xFF]) + bytes(rng.getrandbits(8) for _ in range(n - 1))
                cases.append((key, v, body))
    assert len(cases) >= 30
    for key, v, body in cases:
        with kp.Conn(broker.port, timeout=5.0) as c:
            corr = c.send(key, v, body)
            try:
                resp = c.recv_frame()
            except kp.ConnectionClosed:
                resp = None
            except TimeoutError:
                pytest.fail(f"api {key} v{v} body {body.hex()}: no answer and no close in 5s")
            if resp is not None:
                assert struct.unpack(">i", resp[:4])[0] == corr, \
                    f"api {key} v{v}: response with wrong correlation id"
        assert broker.is_alive(), f"broker died on api {key} v{v} body {body.hex()}"
    assert_alive(broker)


# ---------------------------------------------------------------------------
# produce validation
# ---------------------------------------------------------------------------
def test_produce_corrupt_crc(broker):
    versions = kp.supported_versions(broker.port)
    require_produce_v7(versions)
    topic = "crc-topic"
    create_topic(broker.bootstrap, topic, partitions=1)
    with kp.Conn(broker.port) as c:
        good = kp.record_batch([(b"k1", b"first value", [("a", b"1")]),
                                (b"k2", b"second value", [])])
        assert kp.batch_crc_is_valid(good)
        r = kp.produce_v7(c, topic, 0, good)
        assert r["error"] == kp.NONE, r
        assert r["base_offset"] == 0, r

        bad = bytearray(kp.record_batch([(b"k3", b"third value", [])]))
        bad[-3] ^= 0x20  # flip a bit inside the record value
        bad = bytes(bad)
        assert not kp.batch_crc_is_valid(bad)
        r = kp.produce_v7(c, topic, 0, bad)
        assert r["error"] == kp.CORRUPT_MESSAGE, r

        err, end = kp.list_offsets_v1(c, topic, 0, -1)
        assert (err, end) == (0, 2), "corrupt batch must not be appended"

        r = kp.produce_v7(c, topic, 0, one_record_batch())
        assert (r["error"], r["base_offset"]) == (kp.NONE, 2), r


def test_produce_message_too_large(broker):
    versions = kp.supported_versions(broker.port)
    require_produce_v7(versions)
    topic = "small-msgs"
    create_topic(broker.bootstrap, topic, partitions=1, config={"max.message.bytes": "1000"})
    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, topic, 0, one_record_batch(value=b"x" * 100))
        assert r["error"] == kp.NONE, r
        r = kp.produce_v7(c, topic, 0, one_record_batch(value=b"y" * 5000))
        assert r["error"] == kp.MESSAGE_TOO_LARGE, r
        err, end = kp.list_offsets_v1(c, topic, 0, -1)
        assert (err, end) == (0, 1)


def test_unknown_topic_without_auto_create(start_broker):
    broker = start_broker(auto_create_topics_enable=False)
    versions = kp.supported_versions(broker.port)
    require_produce_v7(versions)
    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, "no-such-topic", 0, one_record_batch())
        assert r["error"] == kp.UNKNOWN_TOPIC_OR_PARTITION, r

        v = metadata_version(versions, candidates=(4, 5, 6, 7, 8, 1, 2, 3))
        for _ in range(2):  # asking (even with allow_auto_create) must not create it
            md = kp.metadata(c, v, ["no-such-topic"], allow_auto_create=True)
            assert md["topics"]["no-such-topic"]["error"] == kp.UNKNOWN_TOPIC_OR_PARTITION, md


def test_metadata_known_topic_raw(broker):
    """Control for the unknown-topic case: the same raw Metadata parser sees a real topic."""
    versions = kp.supported_versions(broker.port)
    create_topic(broker.bootstrap, "raw-meta", partitions=2)
    v = metadata_version(versions)
    with kp.Conn(broker.port) as c:
        md = kp.metadata(c, v, ["raw-meta"])
    t = md["topics"]["raw-meta"]
    assert t["error"] == 0
    assert sorted(p["index"] for p in t["partitions"]) == [0, 1]
    assert all(p["leader"] == 1 and p["error"] == 0 for p in t["partitions"])
    assert [(b["node_id"], b["host"], b["port"]) for b in md["brokers"]] == \
        [(1, "127.0.0.1", broker.port)]


# ---------------------------------------------------------------------------
# unsupported versions
# ---------------------------------------------------------------------------
def test_api_versions_unsupported_version_answers_v0(broker):
    with kp.Conn(broker.port) as c:
        corr = c.send(kp.API_VERSIONS, 99, b"", flexible=True)
        resp = c.recv_frame()
    r = kp.Reader(resp)
    assert r.i32() == corr  # response header v0: correlation id only
    assert r.i16() == kp.UNSUPPORTED_VERSION
    count = r.i32()
    assert count > 0
    entries = [(r.i16(), r.i16(), r.i16()) for _ in range(count)]
    assert r.remaining() == 0, f"{r.remaining()} trailing bytes after the v0 body"
    assert len(resp) == 4 + 2 + 4 + 6 * count
    keys = {k: (lo, hi) for k, lo, hi in entries}
    assert len(keys) == count, "duplicate api keys"
    assert kp.API_VERSIONS in keys and keys[kp.API_VERSIONS][0] == 0
    for k, (lo, hi) in keys.items():
        assert 0 <= lo <= hi, f"api {k}: bad range {lo}..{hi}"
    assert_alive(broker)


def _assert_rejected(broker, api_key, version, body):
    """Closed connection, or a response that carries error 35 near the top."""
    with kp.Conn(broker.port) as c:
        corr = c.send(api_key, version, body)
        try:
            resp = c.recv_frame()
        except kp.ConnectionClosed:
            resp = None
        except TimeoutError:
            pytest.fail(f"api {api_key} v{version}: neither answered nor closed")
        if resp is not None:
            assert struct.unpack(">i", resp[:4])[0] == corr
            head = resp[4:20]
            assert kp.i16(kp.UNSUPPORTED_VERSION) in head, \
                f"api {api_key} v{version} answered without UNSUPPORTED_VERSION: {resp[:64].hex()}"
    assert_alive(broker)


def test_metadata_v99_rejected(broker):
    _assert_rejected(broker, kp.METADATA, 99, kp.compact_string("x") + b"\x00")


def test_produce_outside_advertised_range_rejected(broker):
    versions = kp.supported_versions(broker.port)
    lo, hi = versions[kp.PRODUCE]
    body = kp.produce_v7_body("t", 0, one_record_batch())
    if lo > 2:
        _assert_rejected(broker, kp.PRODUCE, 2, body)
    _assert_rejected(broker, kp.PRODUCE, hi + 1, body)
