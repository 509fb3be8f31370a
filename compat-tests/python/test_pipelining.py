"""Requests pipelined on one connection (sent without waiting for answers), as producers do.

Sluice runs Produce requests to different partitions of one connection side by side; these
tests hold it to what Kafka's one-at-a-time handling guarantees: answers in request order,
each partition's batches appended in the order sent, and any other request seeing the
effects of every request before it."""

import struct

from confluent_kafka import Consumer, TopicPartition

import kproto as kp
from helpers import create_topic

PARTITIONS = 4


def read_produce_answer(c, corr):
    r = kp.Reader(c.recv_frame())
    got = r.i32()
    assert got == corr, f"answers out of order: expected correlation id {corr}, got {got}"
    topics = r.array(lambda rr: (rr.string(), rr.array(
        lambda p: {"index": p.i32(), "error": p.i16(), "base_offset": p.i64(),
                   "log_append_time": p.i64(), "log_start_offset": p.i64()})))
    r.i32()  # throttle
    return topics[0][1][0]


def test_pipelined_produce_keeps_order_per_partition_and_answers_in_order(broker):
    topic = "pipelined"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = []  # (correlation id, partition, sequence number within the partition)
    per_partition = [0] * PARTITIONS
    with kp.Conn(broker.port, timeout=30) as c:
        for i in range(240):
            p = (i * 7 + i // 5) % PARTITIONS  # no fixed rotation: runs of one partition too
            # Big and small batches, so some appends take long enough to overlap others.
            pad = b"x" * (200_000 if i % 3 == 0 else 10)
            value = struct.pack(">ii", p, per_partition[p]) + pad
            batch = kp.record_batch([(b"k", value, [])])
            corr = c.send(kp.PRODUCE, 7, kp.produce_v7_body(topic, p, batch, acks=1))
            sent.append((corr, p, per_partition[p]))
            per_partition[p] += 1
        for corr, p, seq in sent:
            ans = read_produce_answer(c, corr)
            assert ans["index"] == p and ans["error"] == kp.NONE, ans
            assert ans["base_offset"] == seq, (
                f"partition {p}: batch {seq} got offset {ans['base_offset']}: appended out of order")

    cons = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "pipelined-check",
                     "enable.auto.commit": False})
    try:
        cons.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        seen = [[] for _ in range(PARTITIONS)]
        want = sum(per_partition)
        got = 0
        for _ in range(600):
            if got == want:
                break
            for m in cons.consume(100, timeout=0.5):
                assert m.error() is None, m.error()
                p, seq = struct.unpack(">ii", m.value()[:8])
                assert p == m.partition()
                seen[p].append((m.offset(), seq))
                got += 1
        assert got == want, f"read {got} of {want} records"
        for p in range(PARTITIONS):
            assert seen[p] == [(n, n) for n in range(per_partition[p])], f"partition {p}: {seen[p][:10]}"
    finally:
        cons.close()


def test_a_request_after_pipelined_produce_sees_all_of_them(broker):
    topic = "pipelined-then-list"
    create_topic(broker.bootstrap, topic, partitions=2)
    with kp.Conn(broker.port, timeout=30) as c:
        corrs = []
        for i in range(20):
            batch = kp.record_batch([(b"k", bytes(300_000), [])])
            corrs.append((c.send(kp.PRODUCE, 7, kp.produce_v7_body(topic, i % 2, batch, acks=1)),
                          i % 2, i // 2))
        # ListOffsets v1 for partition 1, sent right behind them: it must see all ten.
        body = kp.i32(-1) + kp.i32(1) + kp.string(topic) + kp.i32(1) + kp.i32(1) + kp.i64(-1)
        lo_corr = c.send(kp.LIST_OFFSETS, 1, body)
        for corr, p, seq in corrs:
            ans = read_produce_answer(c, corr)
            assert (ans["error"], ans["base_offset"]) == (kp.NONE, seq), ans
        r = kp.Reader(c.recv_frame())
        assert r.i32() == lo_corr
        topics = r.array(lambda rr: (rr.string(), rr.array(
            lambda q: (q.i32(), q.i16(), q.i64(), q.i64()))))
        (_, err, _, end) = topics[0][1][0]
        assert (err, end) == (0, 10), "ListOffsets ran before the Produce requests sent before it"
