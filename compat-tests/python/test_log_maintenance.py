"""Compaction, DeleteRecords and retention, through real clients (confluent-kafka)."""

import os
import time

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from helpers import create_topic, read_all, unique_topic


def produce(bootstrap, topic, items, codec):
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5, "batch.num.messages": 20})
    errors = []
    for k, v in items:
        p.produce(topic, key=k, value=v, partition=0, on_delivery=lambda e, m: e and errors.append(e))
    assert p.flush(30) == 0
    assert not errors, errors


def test_compaction_keeps_newest_value_per_key_in_every_codec(start_broker):
    b = start_broker({"log.cleaner.backoff.ms": 300})
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        topic = unique_topic(f"compact-{codec}")
        create_topic(b.bootstrap, topic, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "2000",
            "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0",
        })
        keys = [f"k{i}".encode() for i in range(10)]
        items = [(keys[i % 10], f"v{i}".encode()) for i in range(300)]
        items.append((keys[3], None))  # a tombstone for k3
        produce(b.bootstrap, topic, items, codec)
        # Roll past the tombstone so every keyed record sits in a closed segment
        # (the active segment is never compacted). Random bytes don't compress.
        produce(b.bootstrap, topic, [(b"filler", os.urandom(500)) for _ in range(20)], "none")
        expected_latest = {}
        for off, (k, v) in enumerate(items):
            expected_latest[k] = (off, v)
        deadline = time.monotonic() + 30
        while True:
            msgs = read_all(b.bootstrap, topic, 1)[0]
            seen = [(m.offset(), m.key(), m.value()) for m in msgs if m.key() != b"filler"]
            if len(seen) <= 10 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # Offsets are preserved, only the newest record of each key is left, and
        # the tombstone went once delete.retention.ms (0) passed.
        assert len(seen) < 300, f"{codec}: nothing was compacted ({len(seen)} records left)"
        by_key = {}
        for off, k, v in seen:
            assert off == expected_latest[k][0] or k not in by_key, f"{codec}: {k} appears at a non-newest offset {off}"
            by_key[k] = (off, v)
        for k, (off, v) in expected_latest.items():
            if v is None:
                assert k not in by_key, f"{codec}: tombstoned key {k} survived"
            else:
                assert by_key.get(k) == (off, v), f"{codec}: key {k} expected {(off, v)}, got {by_key.get(k)}"
        offsets = [o for o, _, _ in seen]
        assert offsets == sorted(offsets)


def test_compacted_topic_refuses_records_without_keys(broker):
    topic = unique_topic("compact-nokey")
    create_topic(broker.bootstrap, topic, 1, config={"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0, "enable.idempotence": False})
    errs = []
    p.produce(topic, value=b"no key", on_delivery=lambda e, m: errs.append(e))
    p.flush(10)
    assert errs and errs[0] is not None and "INVALID_RECORD" in errs[0].name(), errs


def test_delete_records_moves_the_log_start_offset(broker):
    topic = unique_topic("delrec")
    a = create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(b"k", str(i).encode()) for i in range(100)], "none")
    fut = a.delete_records([TopicPartition(topic, 0, 40)])
    res = list(fut.values())[0].result(10)
    assert res.low_watermark == 40
    msgs = read_all(broker.bootstrap, topic, 1)[0]
    assert [m.offset() for m in msgs] == list(range(40, 100))
    # Beyond the high watermark is refused.
    fut = a.delete_records([TopicPartition(topic, 0, 1000)])
    try:
        list(fut.values())[0].result(10)
        raise AssertionError("delete_records past the high watermark must fail")
    except Exception as e:  # noqa: BLE001 - the client wraps the Kafka error
        assert "OFFSET_OUT_OF_RANGE" in str(e), e
    broker.restart()
    lo, hi = AdminClient({"bootstrap.servers": broker.bootstrap}), None
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert (low, high) == (40, 100), "the log start offset survives a restart"
    finally:
        c.close()
