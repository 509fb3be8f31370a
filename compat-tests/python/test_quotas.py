"""Client quotas (KIP-13, KIP-219, KIP-546): AlterClientQuotas and DescribeClientQuotas on
the wire, Kafka's INVALID_REQUEST for bad input, connection_creation_rate (KIP-612), and
librdkafka's producer and consumer under producer_byte_rate and consumer_byte_rate quotas:
each is told to wait (throttle events) and its rate is the quota, to within 10 %."""

import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kproto
from conftest import Broker, normalize_settings

ALTER_CLIENT_QUOTAS = 49
DESCRIBE_CLIENT_QUOTAS = 48
INVALID_REQUEST = 42
WINDOWS = 2


# The byte-rate tests' broker: four windows of a second. As in Kafka, a client that goes as
# fast as it can gets a burst of (windows - 1) x window x quota at first, and smaller ones
# as old windows expire; from SKIP_S on, MEASURE_S (a multiple of that cycle) shows the
# quota to within 10 %.
RATE_WINDOWS = 4
QUOTA = 500_000
SKIP_S = 4.0
MEASURE_S = 5.0


def started_broker(tmp_path_factory, name, windows):
    b = Broker(tmp_path_factory.mktemp(name), normalize_settings({"quota.window.num": str(windows), "quota.window.size.seconds": "1"}))
    b.start()
    return b


@pytest.fixture(scope="module")
def rbroker(tmp_path_factory):
    b = started_broker(tmp_path_factory, "rates", RATE_WINDOWS)
    yield b
    b.stop(kill=False, timeout=10.0)


@pytest.fixture(scope="module")
def qbroker(tmp_path_factory):
    b = started_broker(tmp_path_factory, "quotas", WINDOWS)
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


def measured_rate(timed, start):
    """Bytes a second in [start + SKIP_S, start + SKIP_S + MEASURE_S) of (time, bytes)."""
    t0 = start + SKIP_S
    return sum(b for t, b in timed if t0 <= t < t0 + MEASURE_S) / MEASURE_S


def test_librdkafka_producer_is_throttled_to_its_quota(rbroker):
    client = "rdk-throttled"
    assert alter(rbroker.port, [({"client-id": client}, {"producer_byte_rate": float(QUOTA)})]) == [(0, None)]
    admin = AdminClient({"bootstrap.servers": rbroker.bootstrap})
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
        "bootstrap.servers": rbroker.bootstrap,
        "client.id": client,
        "linger.ms": 5,
        "batch.size": 16384,
        "queue.buffering.max.messages": 1000,
        "throttle_cb": lambda ev: throttles.append(ev.throttle_time),
    })
    value = b"x" * 1000
    sent = 0
    # Timed from the first acknowledgement: a client slow to start leaves its quota windows
    # empty, and their credit would show as a burst above the quota in the measured span.
    deadline = time.monotonic() + 60
    while (not delivered or time.monotonic() - delivered[0][0] < SKIP_S + MEASURE_S) and time.monotonic() < deadline:
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
    rate = measured_rate(delivered, delivered[0][0])
    print(f"librdkafka producer under a quota of {QUOTA} B/s: {rate:.0f} B/s, {len(throttles)} throttle events")
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, f"{rate:.0f} B/s against a quota of {QUOTA}"


def test_librdkafka_consumer_is_throttled_to_its_quota(rbroker):
    topic, client = "quota-rdk-fetch", "rdk-fetch-throttled"
    admin = AdminClient({"bootstrap.servers": rbroker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    # More than the consumer can read under its quota in the test's time, written without one.
    records = int(QUOTA * (SKIP_S + MEASURE_S + RATE_WINDOWS) * 1.5 / 1000)
    p = Producer({"bootstrap.servers": rbroker.bootstrap, "linger.ms": 5, "batch.size": 16384})
    for _ in range(records):
        while True:
            try:
                p.produce(topic, b"c" * 1000)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert alter(rbroker.port, [({"client-id": client}, {"consumer_byte_rate": float(QUOTA)})]) == [(0, None)]

    throttles = []
    c = Consumer({
        "bootstrap.servers": rbroker.bootstrap,
        "client.id": client,
        "group.id": "rdk-quota",
        "enable.auto.commit": False,
        # Each fetch a small part of a window: the quota is then met closely (a fetch
        # that would go over is answered empty, and its client waits as if it were not).
        "fetch.max.bytes": 16384,
        "message.max.bytes": 16384,
        "max.partition.fetch.bytes": 16384,
        "throttle_cb": lambda ev: throttles.append(ev.throttle_time),
    })
    got = []  # (time, bytes)
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        # Timed from the first record, as the producer from its first acknowledgement.
        deadline = time.monotonic() + 60
        while (not got or time.monotonic() - got[0][0] < SKIP_S + MEASURE_S) and time.monotonic() < deadline:
            for m in c.consume(500, 0.2):
                assert m.error() is None, m.error()
                assert m.offset() == len(got), "records arrive in order with none missing"
                got.append((time.monotonic(), len(m.value())))
    finally:
        c.close()
    assert len(got) < records, "the quota, not the end of the topic, limited the consumer"
    assert throttles and max(throttles) > 0, "librdkafka was told to wait"
    rate = measured_rate(got, got[0][0])
    print(f"librdkafka consumer under a quota of {QUOTA} B/s: {rate:.0f} B/s, {len(throttles)} throttle events")
    assert 0.9 * QUOTA <= rate <= 1.1 * QUOTA, f"{rate:.0f} B/s against a quota of {QUOTA}"


CREATE_TOPICS = 19


def create_topics_v4(conn, client_id, topics):
    """CreateTopics v4, which predates THROTTLING_QUOTA_EXCEEDED: [(name, partitions)] ->
    (throttle_time_ms, [(name, error)])."""
    body = (kproto.array(topics, lambda t: kproto.string(t[0]) + kproto.i32(t[1]) + kproto.i16(1)
                         + kproto.array([], None) + kproto.array([], None))
            + kproto.i32(15000) + kproto.i8(0))
    corr = conn.send(CREATE_TOPICS, 4, body, flexible=False, client_id=client_id)
    r = kproto.Reader(conn.recv_frame())
    assert r.i32() == corr
    throttle = r.i32()
    return throttle, r.array(lambda t: (t.string(), t.i16(), t.string())[:2])


def test_controller_mutation_rate_is_permissive_for_old_versions(qbroker):
    """KIP-599: a CreateTopics version that knows no THROTTLING_QUOTA_EXCEEDED creates every
    topic, and the client is throttled for the partitions it took beyond its burst."""
    client = "old-admin"
    # One partition a second, a burst of (controller.quota.window.num - 1) = 10.
    assert alter(qbroker.port, [({"client-id": client}, {"controller_mutation_rate": 1.0})]) == [(0, None)]
    with kproto.Conn(qbroker.port) as c:
        throttle, results = create_topics_v4(c, client, [("mut-old-a", 6), ("mut-old-b", 6)])
        assert results == [("mut-old-a", 0), ("mut-old-b", 0)]
        # 2 partitions beyond the burst, at one a second.
        assert 1500 <= throttle <= 2000, throttle
        # Over quota still, yet created: the connection is muted for the throttle meanwhile.
        throttle, results = create_topics_v4(c, client, [("mut-old-c", 1)])
        assert results == [("mut-old-c", 0)]
        assert throttle > 0
    # Another client is not held to it.
    with kproto.Conn(qbroker.port) as c:
        assert create_topics_v4(c, "other-admin", [("mut-old-d", 20)]) == (0, [("mut-old-d", 0)])


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
