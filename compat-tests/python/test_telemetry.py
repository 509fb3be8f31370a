"""Issue 19, client telemetry (KIP-714) on the wire: `client-metrics` resources set with
IncrementalAlterConfigs and Kafka's checks on them, GetTelemetrySubscriptions and
PushTelemetry with Kafka's errors (early pushes, stale subscription ids, unknown
compression, payloads too large before or after decompression, payloads that do not
decode), and pushed values on the broker's /metrics page. The Java clients' own pushes are
TelemetryTest in compat-tests/java.
"""

import gzip
import struct
import time
import uuid

import pytest

import kproto
import metrics_page
from conftest import Broker

GET_SUBSCRIPTIONS, PUSH = 71, 72
CLIENT_METRICS = 16
INVALID_CONFIG, INVALID_REQUEST, INVALID_RECORD = 40, 42, 87
UNSUPPORTED_COMPRESSION_TYPE, THROTTLING_QUOTA_EXCEEDED = 76, 89
UNKNOWN_SUBSCRIPTION_ID, TELEMETRY_TOO_LARGE = 117, 118
MAX_BYTES = 1024 * 1024  # telemetry.max.bytes' default
for key in (GET_SUBSCRIPTIONS, PUSH):
    kproto.FIRST_FLEXIBLE[key] = 0


def pb_varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def pb_bytes(field, b):
    return pb_varint(field << 3 | 2) + pb_varint(len(b)) + b


def metrics_data(name, value):
    """An OTLP MetricsData with one gauge data point (attribute node.id=1)."""
    attr = pb_bytes(7, pb_bytes(1, b"node.id") + pb_bytes(2, pb_bytes(1, b"1")))
    point = bytes([4 << 3 | 1]) + struct.pack("<d", value) + attr
    metric = pb_bytes(1, name.encode()) + pb_bytes(5, pb_bytes(1, point))
    return pb_bytes(1, pb_bytes(2, pb_bytes(2, metric)))


def alter_client_metrics(port, name, configs, validate_only=False):
    """IncrementalAlterConfigs v1 SETs configs on a client-metrics resource: (code, message)."""
    entries = b"".join(kproto.compact_string(k) + kproto.i8(0) + kproto.compact_nullable_string(v) + kproto.EMPTY_TAGS
                       for k, v in configs.items())
    resource = (kproto.i8(CLIENT_METRICS) + kproto.compact_string(name) + kproto.uvarint(len(configs) + 1) + entries
                + kproto.EMPTY_TAGS)
    body = kproto.uvarint(2) + resource + kproto.i8(1 if validate_only else 0) + kproto.EMPTY_TAGS
    with kproto.Conn(port) as c:
        r = c.request(kproto.INCREMENTAL_ALTER_CONFIGS, 1, body)
        r.i32()
        [(code, message)] = r.compact_array(lambda rr: (rr.i16(), rr.compact_string(), rr.i8(), rr.compact_string(), rr.tagged_fields())[:2])
    return code, message


def get_subscriptions(conn, instance_id=uuid.UUID(int=0)):
    r = conn.request(GET_SUBSCRIPTIONS, 0, instance_id.bytes + kproto.EMPTY_TAGS)
    out = dict(throttle=r.i32(), error=r.i16(), instance_id=uuid.UUID(bytes=r._take(16)), subscription_id=r.i32(),
               compression=r.compact_array(lambda rr: rr.i8()), interval=r.i32(), max_bytes=r.i32(),
               delta=r.boolean(), metrics=r.compact_array(lambda rr: rr.compact_string()))
    return out


def push(conn, sub, payload=b"", compression=0, subscription_id=None, instance_id=None, terminating=False):
    body = ((instance_id or sub["instance_id"]).bytes + kproto.i32(sub["subscription_id"] if subscription_id is None else subscription_id)
            + kproto.i8(1 if terminating else 0) + kproto.i8(compression) + kproto.uvarint(len(payload) + 1) + payload
            + kproto.EMPTY_TAGS)
    r = conn.request(PUSH, 0, body)
    r.i32()
    return r.i16()


class Client(kproto.Conn):
    """A connection whose requests carry `client_id` (subscriptions match on it)."""

    def __init__(self, port, client_id):
        super().__init__(port)
        self.client_id = client_id

    def send(self, api_key, version, body, flexible=None, client_id=None):
        return super().send(api_key, version, body, flexible=flexible, client_id=self.client_id)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("telemetry"), {"metrics.listener": "127.0.0.1:0"})
    b.start()
    deadline = time.monotonic() + 10
    while not metrics_page.ADDRESS.findall(b.stderr_tail()):
        assert time.monotonic() < deadline, "the broker logged no metrics address"
        time.sleep(0.1)
    b.metrics_url = metrics_page.address(b.stderr_tail())
    yield b
    b.stop()


@pytest.fixture(scope="module")
def subscribed(broker):
    assert alter_client_metrics(broker.port, "fast", {"metrics": "*", "interval.ms": "100", "match": "client_id=raw-fast-.*"})[0] == 0
    assert alter_client_metrics(broker.port, "slow", {"metrics": "org.apache.kafka.producer.", "interval.ms": "3600000",
                                                      "match": "client_id=raw-slow-.*"})[0] == 0
    return broker


def test_client_metrics_configs_are_checked_as_kafka_does(broker):
    cases = [
        ({"interval.ms": "50"}, INVALID_REQUEST, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        ({"match": "colour=red"}, INVALID_CONFIG, "Illegal client matching pattern: colour=red"),
        ({"match": "client_id=("}, INVALID_CONFIG, "Illegal client matching pattern: client_id=("),
        ({"nope": "1"}, INVALID_REQUEST, "Unknown client metrics configuration: nope"),
    ]
    for configs, code, message in cases:
        got_code, got_message = alter_client_metrics(broker.port, "bad", configs)
        assert got_code == code and got_message.endswith(message), (configs, got_code, got_message)
    assert alter_client_metrics(broker.port, "checked", {"interval.ms": "1000"}, validate_only=True)[0] == 0


def test_a_matching_client_gets_its_subscription_and_others_none(subscribed):
    with Client(subscribed.port, "raw-fast-1") as c:
        sub = get_subscriptions(c)
    assert sub["error"] == 0 and sub["instance_id"].int != 0
    assert (sub["metrics"], sub["interval"], sub["max_bytes"]) == (["*"], 100, MAX_BYTES)
    assert sub["compression"] == [4, 3, 1, 2], "zstd, lz4, gzip, snappy, as Kafka prefers them"
    with Client(subscribed.port, "someone-else") as c:
        other = get_subscriptions(c)
    assert (other["error"], other["metrics"], other["interval"]) == (0, [], 300000)


def test_pushed_values_reach_the_metrics_page(subscribed):
    with Client(subscribed.port, "raw-fast-2") as c:
        sub = get_subscriptions(c)
        assert push(c, sub, metrics_data("org.apache.kafka.producer.record.queue.time.avg", 4.5)) == 0
    page = metrics_page.scrape(subscribed.metrics_url)
    fam = page["kafka_client_producer_record_queue_time_avg"]
    [s] = [s for s in fam.samples if s.labels["client_instance_id"] == str(sub["instance_id"])]
    assert (s.value, s.labels["client_id"], s.labels["node_id"]) == (4.5, "raw-fast-2", "1")


def test_pushes_get_kafkas_errors(subscribed):
    with Client(subscribed.port, "raw-slow-1") as slow:
        sub = get_subscriptions(slow)
        assert push(slow, sub) == 0, "the first push after a get is on time"
        assert push(slow, sub) == THROTTLING_QUOTA_EXCEEDED, "the next one is an hour early"
        again = get_subscriptions(slow, sub["instance_id"])
        assert again["error"] == THROTTLING_QUOTA_EXCEEDED, "so is asking again"
    with Client(subscribed.port, "raw-fast-3") as c:
        sub = get_subscriptions(c)
        assert push(c, sub, subscription_id=sub["subscription_id"] ^ 1) == UNKNOWN_SUBSCRIPTION_ID
        # Kafka counts a push as after a get only if its millisecond is later: keep them apart.
        time.sleep(0.01)
        sub = get_subscriptions(c, sub["instance_id"])  # allowed at once after that error
        time.sleep(0.01)
        assert push(c, sub, b"\x00", compression=9) == UNSUPPORTED_COMPRESSION_TYPE
        time.sleep(0.01)
        sub = get_subscriptions(c, sub["instance_id"])
        time.sleep(0.01)
        assert push(c, sub, b"this is not gzip", compression=1) == INVALID_RECORD
        time.sleep(0.2)
        assert push(c, sub, b"\xff\xff\xff") == INVALID_RECORD, "not protobuf"
        time.sleep(0.2)
        assert push(c, sub, b"\x00" * (MAX_BYTES + 1)) == TELEMETRY_TOO_LARGE
        time.sleep(0.2)
        bomb = gzip.compress(b"\x00" * (MAX_BYTES + 1))
        assert len(bomb) < MAX_BYTES
        assert push(c, sub, bomb, compression=1) == TELEMETRY_TOO_LARGE, "too large once decompressed"
        time.sleep(0.2)
        assert push(c, sub, gzip.compress(metrics_data("org.apache.kafka.consumer.poll.idle.ratio.avg", 0.5)), compression=1) == 0
        assert push(c, sub, instance_id=uuid.UUID(int=0)) == INVALID_REQUEST
        assert push(c, sub, terminating=True) == 0, "a terminating push may come early"
        time.sleep(0.2)
        assert push(c, sub) == INVALID_REQUEST, "nothing after a terminating push"
    assert subscribed.is_alive()
