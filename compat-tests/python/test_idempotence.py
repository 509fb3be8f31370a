"""Idempotent-producer semantics over the raw protocol (InitProducerId + Produce v7)."""

import time

import kproto as kp
from helpers import create_topic

TOPIC = "idem"


def _init_pid(broker):
    versions = kp.supported_versions(broker.port)
    lo, hi = versions.get(kp.PRODUCE, (None, None))
    assert lo is not None and lo <= 7 <= hi, f"Produce v7 not advertised: {lo}..{hi}"
    v = kp.pick_version(versions, kp.INIT_PRODUCER_ID, (1, 2, 3, 4))
    assert v is not None, f"no usable InitProducerId version: {versions.get(22)}"
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    err, pid, epoch = _init_producer_id(broker, v)
    assert err == 0, f"InitProducerId error {err}"
    assert pid >= 0 and epoch >= 0, (pid, epoch)
    return pid, epoch


# Retriable errors a real client would retry on (coordinator still loading etc.).
RETRIABLE = {5, 7, 14, 15}


def _init_producer_id(broker, version):
    deadline = time.monotonic() + 15
    with kp.Conn(broker.port) as c:
        while True:
            err, pid, epoch = kp.init_producer_id(c, version)
            if err not in RETRIABLE or time.monotonic() > deadline:
                return err, pid, epoch
            time.sleep(0.2)


def _batch(pid, epoch, seq, n, tag):
    return kp.record_batch(
        [(b"k%d" % (seq + i), b"%s-%d" % (tag, seq + i), [("seq", b"%d" % (seq + i))])
         for i in range(n)],
        producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def _end(c):
    err, off = kp.list_offsets_v1(c, TOPIC, 0, -1)
    assert err == 0
    return off


def test_init_producer_id_returns_distinct_ids(broker):
    pid1, _ = _init_pid(broker)
    v = kp.pick_version(kp.supported_versions(broker.port), kp.INIT_PRODUCER_ID, (1, 2, 3, 4))
    err, pid2, _ = _init_producer_id(broker, v)
    assert err == 0
    assert pid2 != pid1


def test_duplicate_batch_returns_original_offset(broker):
    pid, epoch = _init_pid(broker)
    with kp.Conn(broker.port) as c:
        first = _batch(pid, epoch, 0, 3, b"a")
        r = kp.produce_v7(c, TOPIC, 0, first)
        assert r["error"] == 0, r
        x = r["base_offset"]
        assert _end(c) == x + 3

        r2 = kp.produce_v7(c, TOPIC, 0, first)
        assert r2["error"] == 0, f"duplicate must be acknowledged, got {r2}"
        assert r2["base_offset"] == x, f"duplicate must return the original offset {x}: {r2}"
        assert _end(c) == x + 3, "duplicate batch was appended again"

        # the next in-sequence batch is appended normally
        r3 = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 3, 2, b"a"))
        assert (r3["error"], r3["base_offset"]) == (0, x + 3), r3
        assert _end(c) == x + 5


def test_sequence_gap_is_out_of_order(broker):
    pid, epoch = _init_pid(broker)
    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 0, 1, b"b"))
        assert r["error"] == 0, r
        end = _end(c)
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 5, 1, b"b"))  # expected 1
        assert r["error"] == kp.OUT_OF_ORDER_SEQUENCE_NUMBER, r
        assert _end(c) == end
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 1, 1, b"b"))
        assert (r["error"], r["base_offset"]) == (0, end), r


def test_stale_epoch_is_rejected(broker):
    pid, epoch = _init_pid(broker)
    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 0, 2, b"c"))
        assert r["error"] == 0, r
        # client-side epoch bump (as idempotent producers do): new epoch restarts at seq 0
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch + 1, 0, 1, b"c"))
        assert r["error"] == 0, r
        end = _end(c)
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 2, 1, b"c"))
        assert r["error"] == kp.INVALID_PRODUCER_EPOCH, r
        assert _end(c) == end


def test_duplicate_detected_after_clean_restart(broker):
    pid, epoch = _init_pid(broker)
    with kp.Conn(broker.port) as c:
        b0 = _batch(pid, epoch, 0, 4, b"d")
        b1 = _batch(pid, epoch, 4, 4, b"d")
        r0 = kp.produce_v7(c, TOPIC, 0, b0)
        r1 = kp.produce_v7(c, TOPIC, 0, b1)
        assert r0["error"] == 0 and r1["error"] == 0, (r0, r1)
        end = _end(c)

    broker.restart(kill=False)

    with kp.Conn(broker.port) as c:
        r = kp.produce_v7(c, TOPIC, 0, b1)
        assert r["error"] == 0, r
        assert r["base_offset"] == r1["base_offset"], \
            f"duplicate after restart got offset {r['base_offset']}, original {r1['base_offset']}"
        assert _end(c) == end
        r = kp.produce_v7(c, TOPIC, 0, _batch(pid, epoch, 8, 1, b"d"))
        assert (r["error"], r["base_offset"]) == (0, end), r
