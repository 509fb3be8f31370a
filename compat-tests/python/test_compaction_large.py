"""Log compaction at scale, checked end to end with confluent-kafka (librdkafka).

The expected outcome is computed from the producers' delivery reports alone (the
offset and timestamp the broker acknowledged for every record), i.e. what Apache
Kafka's cleaner would leave: for every key whose newest record sits in a closed
segment, exactly that record, at its original offset; tombstones gone once
delete.retention.ms passed; the log start offset and high watermark untouched.
"""

import os
import random
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from helpers import create_topic, new_consumer, read_all, unique_topic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
FILLER_KEY = b"~filler"


class Writer:
    """One idempotent producer per codec; records every acknowledged record by offset."""

    def __init__(self, bootstrap, topic):
        self.topic = topic
        self.acked = {}  # offset -> (key, value, timestamp)
        self.errors = []
        self.producers = {
            codec: Producer({
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                # Idempotence keeps each producer's records in produce() order, so a
                # key's versions get increasing offsets within (and, with a flush
                # between blocks, across) producers.
                "enable.idempotence": True,
                "linger.ms": 5,
                # Batches well below segment.bytes, so segments hold many batches.
                "batch.size": 16384,
                "message.timeout.ms": 60000,
            })
            for codec in CODECS
        }

    def close(self):
        self.producers.clear()  # librdkafka producers are destroyed with their last reference

    def _on_delivery(self, err, msg):
        if err is not None:
            self.errors.append(err)
            return
        self.acked[msg.offset()] = (msg.key(), msg.value(), msg.timestamp()[1])

    def send(self, codec, items, timestamp=None):
        p = self.producers[codec]
        for k, v in items:
            while True:
                try:
                    if timestamp is None:
                        p.produce(self.topic, key=k, value=v, partition=0, on_delivery=self._on_delivery)
                    else:
                        p.produce(self.topic, key=k, value=v, partition=0, timestamp=timestamp,
                                  on_delivery=self._on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
        assert p.flush(60) == 0, f"{codec}: records still unacknowledged"
        assert not self.errors, f"delivery errors: {self.errors[:5]}"


def latest_by_key(acked):
    """key -> (offset, value, timestamp) of the newest acknowledged record."""
    out = {}
    for off in sorted(acked):
        k, v, ts = acked[off]
        out[k] = (off, v, ts)
    return out


def expected_survivors(acked, exclude_key):
    """What Kafka leaves once compaction converged: newest record per key, tombstones gone."""
    return {k: e for k, e in latest_by_key(acked).items() if k != exclude_key and e[1] is not None}


def snapshot(bootstrap, topic, timeout=60):
    msgs = read_all(bootstrap, topic, 1, timeout=timeout)[0]
    return [(m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in msgs]


def wait_converged(bootstrap, topic, want, deadline_s, what):
    """Polls full reads until the non-filler records are exactly `want` (or the deadline)."""
    deadline = time.monotonic() + deadline_s
    while True:
        recs = snapshot(bootstrap, topic)
        got = {k: (o, v, ts) for o, k, v, ts in recs if k != FILLER_KEY}
        n_nonfiller = sum(1 for r in recs if r[1] != FILLER_KEY)
        if (got == want and n_nonfiller == len(want)) or time.monotonic() > deadline:
            return recs
        time.sleep(1.0)


def watermarks(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sluice-compat-wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        c.close()


def assert_compacted(recs, acked, want, label):
    """The full set of compaction assertions over one complete read of the partition."""
    offsets = [r[0] for r in recs]
    assert offsets == sorted(set(offsets)), f"{label}: offsets not strictly increasing"
    tombstones = [(o, k) for o, k, v, _ in recs if v is None]
    assert not tombstones, f"{label}: tombstones survived delete.retention.ms=0: {tombstones[:10]}"
    for o, k, v, ts in recs:
        # Every record read back is one the broker acknowledged, unchanged, at the same offset.
        assert o in acked, f"{label}: offset {o} was never acknowledged"
        assert acked[o] == (k, v, ts), f"{label}: offset {o} holds {(k, v, ts)}, acked {acked[o]}"
    nonfiller = [(o, k, v, ts) for o, k, v, ts in recs if k != FILLER_KEY]
    counts = {}
    for _, k, _, _ in nonfiller:
        counts[k] = counts.get(k, 0) + 1
    dups = {k: n for k, n in counts.items() if n > 1}
    assert not dups, f"{label}: keys left more than once: {dict(list(dups.items())[:10])}"
    got = {k: (o, v, ts) for o, k, v, ts in nonfiller}
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert not missing, f"{label}: {len(missing)} live keys lost, e.g. {missing[:10]}"
    assert not extra, f"{label}: {len(extra)} dead (tombstoned) keys came back, e.g. {extra[:10]}"
    wrong = [(k, got[k], want[k]) for k in want if got[k] != want[k]]
    assert not wrong, f"{label}: {len(wrong)} keys not at their newest value/offset, e.g. {wrong[:3]}"
    # The filler key: its newest record is kept (it may also still have older
    # records in the active segment, which is never compacted).
    filler_latest = latest_by_key(acked)[FILLER_KEY]
    filler_seen = [(o, v) for o, k, v, _ in recs if k == FILLER_KEY]
    assert filler_seen and filler_seen[-1] == filler_latest[:2], f"{label}: newest filler record missing"


def segment_files(broker, topic):
    return sorted(Path(broker.data_dir).rglob(f"*{topic}*/*.log"))


def test_compaction_100k_updates_1000_keys_mixed_codecs(start_broker):
    b = start_broker({"log.cleaner.backoff.ms": 300})
    topic = unique_topic("compact-large")
    segment_bytes = 64 * 1024
    create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(segment_bytes),
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0",
    })
    rng = random.Random(20240611)
    keys = [f"key-{i:04d}".encode() for i in range(1000)]
    version = {k: 0 for k in keys}

    def update(k, codec):
        version[k] += 1
        pad = rng.getrandbits(160).to_bytes(20, "big").hex()
        return k, f"{k.decode()}|v{version[k]:05d}|{codec}|{pad}".encode()

    w = Writer(b.bootstrap, topic)
    t0 = time.monotonic()
    # 100 000 updates in 20 blocks; the codec (producer) changes with every block.
    for block in range(20):
        codec = CODECS[block % len(CODECS)]
        w.send(codec, [update(keys[rng.randrange(len(keys))], codec) for _ in range(5000)])
    # Tombstones for 100 keys, spread over the codecs; then 10 of them are written again.
    dead = rng.sample(keys, 100)
    for i, codec in enumerate(CODECS):
        w.send(codec, [(k, None) for k in dead[i * 20:(i + 1) * 20]])
    revived = dead[:10]
    w.send("zstd", [update(k, "zstd") for k in revived])
    # Filler on its own key, written last: more than a segment of incompressible
    # bytes, so the segment holding the last update is rolled (closed) behind it.
    w.send("none", [(FILLER_KEY, os.urandom(1000)) for _ in range(100)])
    produced = time.monotonic() - t0
    w.close()

    n = len(w.acked)
    assert n == 100_000 + 100 + 10 + 100
    assert sorted(w.acked) == list(range(n)), "acknowledged offsets are not dense from 0"
    # The versions of each key were acknowledged in order (one producer at a time, idempotent).
    last_version = {}
    for off in range(n):
        k, v, _ = w.acked[off]
        if k == FILLER_KEY or v is None:
            continue
        ver = int(v.split(b"|")[1][1:])
        assert ver > last_version.get(k, 0), f"{k}: version {ver} acknowledged after {last_version[k]}"
        last_version[k] = ver

    want = expected_survivors(w.acked, FILLER_KEY)
    assert len(want) == 1000 - 100 + 10
    assert all(k not in want for k in dead[10:])
    assert all(want[k][1].split(b"|")[1] == f"v{version[k]:05d}".encode() for k in want)
    segs = segment_files(b, topic)
    assert len(segs) >= 20, f"expected many segments, found {len(segs)}: {segs[:3]}"

    t1 = time.monotonic()
    recs = wait_converged(b.bootstrap, topic, want, 45, "compact")
    converged = time.monotonic() - t1
    assert_compacted(recs, w.acked, want, "after compaction")
    assert len(recs) < n / 10, f"only {n - len(recs)} of {n} records compacted away"
    # Compaction neither moves the log start offset nor the high watermark.
    assert watermarks(b.bootstrap, topic) == (0, n)

    # A consumer positioned on an offset that compaction removed gets the next survivor.
    kept = [r[0] for r in recs]
    kept_set = set(kept)
    gap = next(o for o in range(kept[0], kept[-1]) if o not in kept_set and o + 1 not in kept_set)
    nxt = next(o for o in kept if o > gap)
    c = new_consumer(b.bootstrap)
    try:
        c.assign([TopicPartition(topic, 0, gap)])
        first = None
        deadline = time.monotonic() + 15
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() != KafkaError._PARTITION_EOF, f"EOF instead of offset {nxt}"
                raise AssertionError(f"consumer error: {m.error()}")
            first = m.offset()
        assert first == nxt, f"fetch from compacted-away offset {gap}: got {first}, expected {nxt}"
    finally:
        c.close()

    # The compacted segments survive a restart (indexes are rebuilt from them).
    b.restart()
    after = snapshot(b.bootstrap, topic)
    assert after == recs, "a restart changed what the compacted log holds"
    assert watermarks(b.bootstrap, topic) == (0, n)
    print(f"\nproduced {n} in {produced:.1f}s over {len(segs)} segments, converged in "
          f"{converged:.1f}s, {len(recs)} records left")


def test_compact_delete_compacts_then_time_retention_removes_closed_segments(start_broker):
    b = start_broker({"log.cleaner.backoff.ms": 300, "log.retention.check.interval.ms": 500,
                      "group.initial.rebalance.delay.ms": 0})
    topic = unique_topic("compact-delete")
    a = create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "compact,delete", "segment.bytes": str(16 * 1024),
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0",
        "retention.ms": "3600000", "retention.bytes": "-1",
    })
    rng = random.Random(7)
    keys = [f"cd-{i:03d}".encode() for i in range(200)]
    w = Writer(b.bootstrap, topic)
    # Phase 1: 10 000 updates; phase 2 supersedes every key once more, so the
    # segments of phase 1 end up empty after compaction; 20 keys are deleted.
    for block in range(5):
        codec = CODECS[block]
        w.send(codec, [(k, f"{k.decode()}|p1|{i}|{codec}|{'x' * 40}".encode())
                       for i, k in enumerate(rng.choices(keys, k=2000))])
    w.send("lz4", [(k, f"{k.decode()}|p2|final|{'y' * 40}".encode()) for k in keys])
    dead = rng.sample(keys, 20)
    w.send("gzip", [(k, None) for k in dead])
    last_data = max(w.acked)
    w.send("none", [(FILLER_KEY, os.urandom(1000)) for _ in range(40)])
    w.close()
    n = len(w.acked)
    assert sorted(w.acked) == list(range(n))

    want = expected_survivors(w.acked, FILLER_KEY)
    assert len(want) == 180 and all(v[1].split(b"|")[1] == b"p2" for v in want.values())
    recs = wait_converged(b.bootstrap, topic, want, 30, "compact,delete")
    assert_compacted(recs, w.acked, want, "compact,delete after compaction")
    # retention.ms (1 h) has not expired anything: the log still starts at 0.
    assert watermarks(b.bootstrap, topic) == (0, n)

    # Now let time-based retention catch up with everything: every closed segment
    # (including ones compaction emptied) is older than 2 s; only the active segment,
    # which holds filler only, may remain.
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "2000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(15)
    deadline = time.monotonic() + 20
    low, high = watermarks(b.bootstrap, topic)
    while low <= last_data and time.monotonic() < deadline:
        time.sleep(0.5)
        low, high = watermarks(b.bootstrap, topic)
    assert high == n
    assert low > last_data, (
        f"time retention did not remove the closed segments of a compact,delete topic: "
        f"log start {low}, last keyed record at {last_data}, high watermark {high}; "
        f"segment files: {[p.name for p in segment_files(b, topic)]}")
    # A consumer with auto.offset.reset=earliest (new group) starts at the new log start.
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"g-{topic}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + 20
        while (not got or got[-1][0] < n - 1) and time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.key()))
        assert got, "nothing consumed after retention"
        assert got[0][0] == low, f"consumer started at {got[0][0]}, log start is {low}"
        assert got[-1][0] == n - 1
        assert all(k == FILLER_KEY for _, k in got)
    finally:
        c.close()


def test_compaction_ignores_aborted_transactional_records(start_broker):
    """An aborted write must neither survive compaction nor shadow the committed value
    of its key: Kafka's cleaner leaves aborted batches out of its offset map and drops
    their records."""
    b = start_broker({"log.cleaner.backoff.ms": 300})
    topic = unique_topic("compact-txn")
    create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(16 * 1024),
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0",
    })
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)

    tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"{topic}-tx", "linger.ms": 5})
    tx.init_transactions(30)
    for rnd in range(3):
        tx.begin_transaction()
        for i in range(50):
            tx.produce(topic, key=f"c{i:02d}".encode(), value=f"c{i:02d}|r{rnd}".encode(), partition=0, on_delivery=cb)
        if rnd == 0:
            for i in range(20):
                tx.produce(topic, key=f"k{i:02d}".encode(), value=f"k{i:02d}|committed".encode(), partition=0,
                           on_delivery=cb)
        tx.commit_transaction(30)
    tx.begin_transaction()
    for i in range(20):
        tx.produce(topic, key=f"k{i:02d}".encode(), value=f"k{i:02d}|aborted".encode(), partition=0, on_delivery=cb)
    for i in range(10):
        tx.produce(topic, key=f"a{i:02d}".encode(), value=f"a{i:02d}|aborted".encode(), partition=0, on_delivery=cb)
    assert tx.flush(30) == 0
    tx.abort_transaction(30)
    del tx
    filler = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, "batch.num.messages": 4})
    for _ in range(40):
        filler.produce(topic, key=FILLER_KEY, value=os.urandom(1000), partition=0, on_delivery=cb)
    assert filler.flush(30) == 0
    del filler
    assert not errors, errors[:5]

    want = {f"c{i:02d}".encode(): f"c{i:02d}|r2".encode() for i in range(50)}
    want.update({f"k{i:02d}".encode(): f"k{i:02d}|committed".encode() for i in range(20)})

    def keyed(isolation):
        msgs = read_all(b.bootstrap, topic, 1, **{"isolation.level": isolation})[0]
        return [(m.key(), m.value()) for m in msgs if m.key() != FILLER_KEY]

    # Wait until compaction visibly ran: every c-key (3 committed versions) left once.
    deadline = time.monotonic() + 30
    while True:
        committed = keyed("read_committed")
        cs = [k for k, _ in committed if k.startswith(b"c")]
        if (len(cs) == 50 and len(set(cs)) == 50) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(cs) == 50 and len(set(cs)) == 50, f"compaction did not run: {len(cs)} c-records left"
    got = dict(committed)
    lost = sorted(k.decode() for k in want if k not in got)
    assert not lost, (f"read_committed lost the committed value of {len(lost)} keys after compaction "
                      f"(an aborted write shadowed it): {lost[:10]}")
    assert got == want, f"read_committed after compaction: {sorted(set(got.items()) ^ set(want.items()))[:10]}"
    # The aborted records themselves are gone too, so read_uncommitted sees the same.
    uncommitted = keyed("read_uncommitted")
    aborted = [(k, v) for k, v in uncommitted if v.endswith(b"|aborted")]
    assert not aborted, f"aborted records survived compaction: {aborted[:5]}"
    assert dict(uncommitted) == want


def test_min_compaction_lag_holds_records_back_until_lowered(start_broker):
    b = start_broker({"log.cleaner.backoff.ms": 300})
    topic = unique_topic("compact-lag")
    a = create_topic(b.bootstrap, topic, 1, config={
        "cleanup.policy": "compact", "segment.bytes": str(16 * 1024),
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0",
        "min.compaction.lag.ms": "3600000",
    })
    w = Writer(b.bootstrap, topic)
    keys = [f"lag-{i:02d}".encode() for i in range(50)]
    w.send("lz4", [(k, f"{k.decode()}|{r}".encode()) for r in range(20) for k in keys])
    w.send("none", [(FILLER_KEY, os.urandom(1000)) for _ in range(40)])
    w.close()
    n = len(w.acked)
    time.sleep(2.5)  # ~8 cleaner passes, all closed segments are far younger than the lag
    before = snapshot(b.bootstrap, topic)
    assert [r[0] for r in before] == list(range(n)), (
        f"records younger than min.compaction.lag.ms were compacted: {n - len(before)} of {n} gone")

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(15)
    want = expected_survivors(w.acked, FILLER_KEY)
    recs = wait_converged(b.bootstrap, topic, want, 30, "lag lowered")
    assert_compacted(recs, w.acked, want, "after lowering min.compaction.lag.ms")
