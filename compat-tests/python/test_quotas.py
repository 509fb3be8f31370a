"""Client quotas (KIP-13, KIP-219, KIP-546): AlterClientQuotas and DescribeClientQuotas on
the wire, Kafka's INVALID_REQUEST for bad input, and librdkafka's producer under a
producer_byte_rate quota: it is told to wait (throttle events) and its rate is the quota.

One broker for the file, with quota.window.num=2: a client that sends as fast as it can
gets, as in Kafka, a burst of up to (windows - 1) x quota.window.size.seconds x quota
each time the oldest window expires, and is throttled in between; with two windows of a
second those bursts are small against a 20-second measurement, which Kafka's eleven
would not be."""

import struct
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kproto
from conftest import Broker, normalize_settings

ALTER_CLIENT_QUOTAS = 49
DESCRIBE_CLIENT_QUOTAS = 48
INVALID_REQUEST = 42
WINDOWS = 2


@pytest.fixture(scope="module")
def qbroker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("quotas"), normalize_settings({"quota.window.num": str(WINDOWS), "quota.window.size.seconds": "1"}))
    b.start()
    yield b
    b.stop(kill=False, timeout=10.0)


def alter(port, entries, validate_only=False):
    """entries: [({type: name-or-None}, {key: value-or-None})] -> [(error, message)]."""
    def entry(e):
        entity, ops = e
        return (kproto.array(list(entity.items()), lambda p: kproto.string(p[0]) + kproto.nullable_string(p[1]))
                + kproto.array(list(ops.items()), lambda o: kproto.string(o[0]) + struct.pack(">d", o[1] or 0.0)
                               + kproto.i8(1 if o[1] is None else 0)))
    body = kproto.array(entries, entry) + kproto.i8(1 if validate_only else 0)
    with kproto.Conn(port) as c:
        r = c.request(ALTER_CLIENT_QUOTAS, 0, body, flexible=False)
        r.i32()
        return r.array(lambda rr: (rr.i16(), rr.string(),
                                   rr.array(lambda e: (e.string(), e.string())))[:2])


def describe(port, components=(), strict=False):
    """components: [(type, match_type, match)] -> (error, {entity tuple: {key: value}})."""
    body = (kproto.array(list(components), lambda c: kproto.string(c[0]) + kproto.i8(c[1]) + kproto.nullable_string(c[2]))
            + kproto.i8(1 if strict else 0))
    with kproto.Conn(port) as c:
        r = c.request(DESCRIBE_CLIENT_QUOTAS, 0, body, flexible=False)
        r.i32()
        err, _msg = r.i16(), r.string()
        entries = r.array(lambda rr: (tuple(rr.array(lambda e: (e.string(), e.string()))),
                                      dict(rr.array(lambda v: (v.string(), struct.unpack(">d", v._take(8))[0])))))
        return err, dict(entries or [])


def test_bad_quota_input_is_refused_with_kafkas_messages(qbroker):
    p = qbroker.port
    got = alter(p, [
        ({"client-id": "bad-key"}, {"producer_byte_rate": 1000.0, "bogus_rate": 5.0}),
        ({"group": "g"}, {"producer_byte_rate": 1000.0}),
        ({"ip": "10.1.2.3"}, {"producer_byte_rate": 1000.0}),
        ({"user": "u"}, {"consumer_byte_rate": 10.5}),
        ({"client-id": ""}, {"producer_byte_rate": 1.0}),
        ({"ip": "10.1.2.4"}, {"connection_creation_rate": 20.0}),
    ])
    # Kafka's message, after Sluice's "invalid request: " prefix.
    got = [(code, msg and msg.removeprefix("invalid request: ")) for code, msg in got]
    assert got == [
        (INVALID_REQUEST, "Invalid configuration key bogus_rate"),
        (INVALID_REQUEST, "Unhandled client quota entity type: group"),
        (INVALID_REQUEST, "Invalid configuration key producer_byte_rate"),
        (INVALID_REQUEST, "Configuration consumer_byte_rate must be a Long value"),
        (INVALID_REQUEST, "Empty client-id not supported"),
        (0, None),
    ]
    # Only the good entity was stored: a refused entity keeps none of its keys.
    assert describe(p, [("ip", 2, None)]) == (0, {(("ip", "10.1.2.4"),): {"connection_creation_rate": 20.0}})
    assert describe(p, [("client-id", 0, "bad-key")]) == (0, {})
    # A bad filter is refused as a whole.
    err, _ = describe(p, [("ip", 2, None), ("user", 2, None)])
    assert err == INVALID_REQUEST


def test_alter_describe_defaults_removal_and_validate_only(qbroker):
    p = qbroker.port
    assert alter(p, [({"user": "alice", "client-id": None}, {"request_percentage": 50.0})], validate_only=True) == [(0, None)]
    assert describe(p, [("user", 0, "alice")]) == (0, {})
    assert alter(p, [({"user": "alice", "client-id": None}, {"request_percentage": 50.0}),
                     ({"user": None}, {"consumer_byte_rate": 4096.0})]) == [(0, None), (0, None)]
    assert describe(p, [("user", 0, "alice")]) == (0, {(("user", "alice"), ("client-id", None)): {"request_percentage": 50.0}})
    assert describe(p, [("user", 0, "alice")], strict=True) == (0, {})
    assert describe(p, [("user", 1, None)]) == (0, {(("user", None),): {"consumer_byte_rate": 4096.0}})
    # Removal (a null value) of the last key takes the entity away.
    assert alter(p, [({"user": None}, {"consumer_byte_rate": None})]) == [(0, None)]
    assert describe(p, [("user", 1, None)]) == (0, {})


def test_librdkafka_producer_is_throttled_to_its_quota(qbroker):
    quota = 200_000
    client = "rdk-throttled"
    assert alter(qbroker.port, [({"client-id": client}, {"producer_byte_rate": float(quota)})]) == [(0, None)]
    admin = AdminClient({"bootstrap.servers": qbroker.bootstrap})
    admin.create_topics([NewTopic("quota-rdk", 1, 1)])["quota-rdk"].result(20)

    throttles = []
    delivered = []  # (time, bytes)
    failed = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(err)
        else:
            delivered.append((time.monotonic(), len(msg.value())))

    p = Producer({
        "bootstrap.servers": qbroker.bootstrap,
        "client.id": client,
        "linger.ms": 5,
        "batch.size": 16384,
        "queue.buffering.max.messages": 1000,
        "throttle_cb": lambda ev: throttles.append(ev.throttle_time),
    })
    value = b"x" * 1000
    sent = 0
    start = time.monotonic()
    run_for = WINDOWS + 20
    while time.monotonic() - start < run_for:
        try:
            p.produce("quota-rdk", value, on_delivery=on_delivery)
            sent += 1
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    assert not failed
    assert len(delivered) == sent, "every record sent was acknowledged"
    assert throttles and max(throttles) > 0, "librdkafka was told to wait"

    # After the first windows (which let a burst through), the rate is the quota.
    t0, t1 = start + WINDOWS + 1, start + run_for
    window = [b for t, b in delivered if t0 <= t < t1]
    rate = sum(window) / (t1 - t0)
    print(f"librdkafka under a quota of {quota} B/s: {rate:.0f} B/s, {len(throttles)} throttle events")
    assert 0.9 * quota <= rate <= 1.1 * quota, f"{rate:.0f} B/s against a quota of {quota}"


def answered_api_versions(port):
    """True if a new connection's ApiVersions is answered; False if the broker closes it."""
    try:
        with kproto.Conn(port, timeout=15) as c:
            err, _ = kproto.api_versions(c, 0)
            return err == 0
    except (kproto.ConnectionClosed, ConnectionResetError):
        return False


def test_connection_creation_rate_per_ip(qbroker):
    """KIP-612: connections from an address over its connection_creation_rate are closed
    unserved (after the throttle time); removing the quota lets every one in again."""
    p = qbroker.port
    assert alter(p, [({"ip": "127.0.0.1"}, {"connection_creation_rate": 5.0})]) == [(0, None)]
    try:
        start = time.monotonic()
        served = [answered_api_versions(p) for _ in range(20)]
        took = time.monotonic() - start
        # Two windows of a second: about five in the first second, five more a second later.
        assert served[:3] == [True, True, True], served
        assert not all(served), served
        assert sum(served) <= 5 * (WINDOWS + took) + 1, (served, took)
    finally:
        # This connection comes from 127.0.0.1 too: it is let in once the rate is back down.
        for _ in range(10):
            try:
                assert alter(p, [({"ip": "127.0.0.1"}, {"connection_creation_rate": None})]) == [(0, None)]
                break
            except (kproto.ConnectionClosed, ConnectionResetError):
                time.sleep(1)
    assert all(answered_api_versions(p) for _ in range(20))
