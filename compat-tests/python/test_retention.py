"""Retention (retention.bytes, retention.ms) and DeleteRecords, seen through real clients.

Retention deletes whole closed segments, oldest first, and moves the log start
offset; clients see it as the low watermark / ListOffsets(earliest) /
beginning_offsets, and a consumer with auto.offset.reset=earliest (or one sitting
on a deleted offset) starts at the new log start.
"""

import os
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, OffsetSpec,
                                   ResourceType)

from helpers import create_topic, unique_topic

VALUE_LEN = 1000
SEGMENT_BYTES = 16 * 1024
# At most this many VALUE_LEN-byte records fit in one segment.
PER_SEGMENT = SEGMENT_BYTES // VALUE_LEN
RETENTION_SETTINGS = {"log.retention.check.interval.ms": 500, "group.initial.rebalance.delay.ms": 0}


def produce(bootstrap, topic, count, timestamp=None):
    """Writes `count` incompressible records in small batches; returns {offset: (value, ts)}."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 4,
                  "compression.type": "none", "enable.idempotence": True})
    acked, errors = {}, []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked[msg.offset()] = (msg.value(), msg.timestamp()[1])

    for i in range(count):
        kw = {} if timestamp is None else {"timestamp": timestamp}
        p.produce(topic, key=f"k{i % 10}".encode(), value=os.urandom(VALUE_LEN), partition=0,
                  on_delivery=cb, **kw)
        p.poll(0)
    assert p.flush(30) == 0
    assert not errors, errors[:5]
    assert len(acked) == count
    return acked


def watermarks(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sluice-compat-wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        c.close()


def list_offsets(a, topic, spec):
    tp = TopicPartition(topic, 0)
    res = a.list_offsets({tp: spec}, request_timeout=10)[tp].result(15)
    return res.offset, res.timestamp


def wait_low(bootstrap, topic, pred, timeout, what):
    deadline = time.monotonic() + timeout
    low, high = watermarks(bootstrap, topic)
    while not pred(low, high) and time.monotonic() < deadline:
        time.sleep(0.25)
        low, high = watermarks(bootstrap, topic)
    assert pred(low, high), f"{what}: watermarks still ({low}, {high}) after {timeout}s"
    return low, high


def consume_from(bootstrap, topic, high, start=None, reset="earliest", timeout=20):
    """Reads until offset high-1. start=None: subscribe with a fresh group (no committed
    offset, so auto.offset.reset decides); otherwise assign at `start`."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
                  "auto.offset.reset": reset, "enable.auto.commit": False})
    out = []
    try:
        if start is None:
            c.subscribe([topic])
        else:
            c.assign([TopicPartition(topic, 0, start)])
        deadline = time.monotonic() + timeout
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                if m.error() is not None:
                    raise AssertionError(f"consumer error: {m.error()}")
                out.append((m.offset(), m.value(), m.timestamp()[1]))
    finally:
        c.close()
    assert out and out[-1][0] == high - 1, f"did not reach offset {high - 1}: {out[-1:] or 'nothing'}"
    return out


def assert_tail(records, acked, low, high, label):
    offsets = [o for o, _, _ in records]
    assert offsets[0] == low, f"{label}: consumer started at {offsets[0]}, log start is {low}"
    assert offsets == list(range(low, high)), f"{label}: offsets not contiguous from {low} to {high - 1}"
    bad = [o for o, v, ts in records if acked[o] != (v, ts)]
    assert not bad, f"{label}: records differ from what was acknowledged at {bad[:10]}"


def test_retention_bytes_moves_log_start_and_consumers_follow(start_broker):
    b = start_broker(RETENTION_SETTINGS)
    topic = unique_topic("ret-bytes")
    retention = 3 * SEGMENT_BYTES
    a = create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES),
        "retention.bytes": str(retention), "retention.ms": "-1"})

    def within_bounds(low, high):
        # Kafka deletes the oldest segment while (size - its size) >= retention.bytes, so
        # retention.bytes <= size kept < retention.bytes + segment.bytes. A record takes
        # VALUE_LEN bytes plus well under 100 bytes of record/batch overhead.
        kept = high - low
        return kept * VALUE_LEN < retention + SEGMENT_BYTES and kept * (VALUE_LEN + 100) >= retention

    acked = produce(b.bootstrap, topic, 300)
    assert sorted(acked) == list(range(300))
    low1, high = wait_low(b.bootstrap, topic, lambda lo, hi: hi == 300 and within_bounds(lo, hi), 15,
                          "retention.bytes")
    assert low1 > 0
    time.sleep(1.5)  # three more retention passes: nothing more may go
    assert watermarks(b.bootstrap, topic) == (low1, 300), "retention deleted below retention.bytes"
    assert list_offsets(a, topic, OffsetSpec.earliest())[0] == low1
    assert list_offsets(a, topic, OffsetSpec.latest())[0] == 300

    # A new consumer group with auto.offset.reset=earliest starts at the new log start...
    assert_tail(consume_from(b.bootstrap, topic, 300), acked, low1, 300, "subscribe/earliest")
    # ...and so does a consumer assigned to a deleted offset (OFFSET_OUT_OF_RANGE -> reset).
    assert_tail(consume_from(b.bootstrap, topic, 300, start=0), acked, low1, 300, "assign(0)/earliest")
    assert_tail(consume_from(b.bootstrap, topic, 300, start=OFFSET_BEGINNING), acked, low1, 300,
                "assign(BEGINNING)")

    # With auto.offset.reset=error, fetching a deleted offset is reported to the application.
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique_topic("g"),
                  "auto.offset.reset": "error", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, low1 - 1)])
        deadline = time.monotonic() + 15
        err = None
        while err is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is not None, f"read offset {m.offset()} below the log start {low1}"
            err = m.error()
        assert err is not None and err.code() == KafkaError._AUTO_OFFSET_RESET, err
        assert "out of range" in err.str().lower() or "OFFSET_OUT_OF_RANGE" in err.str(), err.str()
    finally:
        c.close()

    # More data: retention keeps going and the log start keeps moving forward.
    acked.update(produce(b.bootstrap, topic, 100))
    low2, high = wait_low(b.bootstrap, topic,
                          lambda lo, hi: hi == 400 and lo > low1 and within_bounds(lo, hi), 15,
                          "retention.bytes after more writes")
    assert_tail(consume_from(b.bootstrap, topic, 400), acked, low2, 400, "subscribe/earliest #2")
    print(f"\nretention.bytes: log start 0 -> {low1} -> {low2}")


def test_retention_ms_deletes_expired_segments_only(start_broker):
    b = start_broker(RETENTION_SETTINGS)
    topic = unique_topic("ret-ms")
    a = create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES),
        "retention.ms": "3600000", "retention.bytes": "-1"})
    now = int(time.time() * 1000)
    old_ts = now - 2 * 3600 * 1000  # older than retention.ms
    acked = produce(b.bootstrap, topic, 200, timestamp=old_ts)
    first_new = 200
    acked.update(produce(b.bootstrap, topic, 200))
    assert sorted(acked) == list(range(400))
    assert all(ts == old_ts for o, (_, ts) in acked.items() if o < first_new)
    assert all(ts >= now for o, (_, ts) in acked.items() if o >= first_new)

    low, high = wait_low(b.bootstrap, topic, lambda lo, hi: lo > 0, 15, "retention.ms")
    time.sleep(1.5)
    assert watermarks(b.bootstrap, topic) == (low, 400), "the log start kept moving"
    # Every segment holding only expired records went; the one holding the first fresh
    # record (and maybe some expired ones before it) stays, so no fresh record was lost.
    assert low <= first_new, f"retention deleted unexpired records: log start {low} > {first_new}"
    assert first_new - low <= PER_SEGMENT, (
        f"expired segments kept: log start {low}, first fresh record at {first_new}")
    assert list_offsets(a, topic, OffsetSpec.earliest())[0] == low
    # Timestamp lookups only see what is left.
    assert list_offsets(a, topic, OffsetSpec.for_timestamp(now - 3600 * 1000)) == (first_new, acked[first_new][1])
    off, ts = list_offsets(a, topic, OffsetSpec.for_timestamp(old_ts - 1))
    assert off == low and ts == (old_ts if low < first_new else acked[first_new][1])
    assert_tail(consume_from(b.bootstrap, topic, 400), acked, low, 400, "subscribe/earliest")

    # Shrink retention.ms at run time: every closed segment expires, only the active one stays.
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "2000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(15)
    low2, _ = wait_low(b.bootstrap, topic, lambda lo, hi: 400 - lo <= PER_SEGMENT, 20,
                       "retention.ms=2000")
    assert low2 > low
    time.sleep(1.5)
    assert watermarks(b.bootstrap, topic) == (low2, 400), "retention deleted the active segment"
    assert_tail(consume_from(b.bootstrap, topic, 400), acked, low2, 400, "subscribe/earliest #2")
    print(f"\nretention.ms: log start 0 -> {low} (first fresh {first_new}) -> {low2}")


def test_kafka_python_delete_records_and_beginning_offsets(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    from kafka.errors import OffsetOutOfRangeError

    topic = unique_topic("kp-delrec")
    create_topic(broker.bootstrap, topic, 1, config={"segment.bytes": "8192"})
    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                         batch_size=2048, request_timeout_ms=15000)
    futs = [prod.send(topic, key=b"k", value=f"v{i:04d}".encode() * 20, partition=0) for i in range(500)]
    prod.flush(timeout=30)
    assert [f.get(timeout=30).offset for f in futs] == list(range(500))

    tp = KTP(topic, 0)
    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    cons = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                         auto_offset_reset="earliest", request_timeout_ms=15000)
    try:
        assert cons.beginning_offsets([tp]) == {tp: 0}
        res = kadmin.delete_records({tp: 130})
        assert res[tp]["error_code"] == 0 and res[tp]["low_watermark"] == 130, res
        assert cons.beginning_offsets([tp]) == {tp: 130}
        assert cons.end_offsets([tp]) == {tp: 500}
        assert watermarks(broker.bootstrap, topic) == (130, 500)  # what librdkafka sees

        def read_from(seek_to):
            cons.assign([tp])
            if seek_to is None:
                cons.seek_to_beginning(tp)
            else:
                cons.seek(tp, seek_to)
            got = []
            deadline = time.monotonic() + 20
            while (not got or got[-1][0] < 499) and time.monotonic() < deadline:
                for recs in cons.poll(timeout_ms=500).values():
                    got.extend((r.offset, r.value) for r in recs)
            return got

        expected = [(o, f"v{o:04d}".encode() * 20) for o in range(130, 500)]
        assert read_from(None) == expected, "seek_to_beginning does not start at the log start"
        # Positioned on a deleted offset: OFFSET_OUT_OF_RANGE, reset to earliest = 130.
        assert read_from(10) == expected, "a deleted position is not reset to the log start"

        # Deleting below the current start changes nothing and reports the current start.
        res = kadmin.delete_records({tp: 50})
        assert res[tp]["low_watermark"] == 130, res
        assert cons.beginning_offsets([tp]) == {tp: 130}
        # Past the high watermark: OFFSET_OUT_OF_RANGE, nothing moves.
        with pytest.raises(OffsetOutOfRangeError):
            kadmin.delete_records({tp: 501})
        assert cons.beginning_offsets([tp]) == {tp: 130}
        # -1 means "up to the high watermark".
        res = kadmin.delete_records({tp: -1})
        assert res[tp]["low_watermark"] == 500, res
        assert cons.beginning_offsets([tp]) == {tp: 500}
        assert cons.end_offsets([tp]) == {tp: 500}
        # The partition keeps working: new records continue at 500.
        f = prod.send(topic, key=b"k", value=b"after", partition=0)
        assert f.get(timeout=30).offset == 500
        cons.assign([tp])
        cons.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            for recs in cons.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value) for r in recs)
        assert got == [(500, b"after")]
    finally:
        cons.close()
        kadmin.close()
        prod.close(timeout=10)
