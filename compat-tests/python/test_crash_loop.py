"""Crash-safety loop for the segment log (issue "The segment log: crash-safe").

The broker is kill -9'd at random moments while several producers (idempotent
acks=all, acks=1, plain acks=all; every compression codec in turn; keyed records with
headers) write to two 3-partition topics with small segments (many rolls). While the
broker is down, two rounds in three damage the indexes of a closed segment (in turn: a
deleted `.index`, a `.timeindex` cut to an odd length, an `.index` overwritten with
random bytes), and the third leaves a torn write (a partial batch) at the end of an
active segment, which recovery must cut. After every restart the whole log is checked:

  * every acknowledged record is readable at its acknowledged offset with its key, value
    and headers (confluent-kafka consumer, assign() from offset 0, check.crcs=true, and
    no consumer error of any kind);
  * offsets are dense and increasing per partition from the log start to the high
    watermark, and the high watermark covers every acknowledged offset;
  * a raw Fetch (v5/v4) from offset 0, and at random offsets, only ever returns whole
    batches whose CRC-32C checks out, chained densely;
  * ListOffsets by timestamp never skips past the first matching record;
  * on disk, every `.index` / `.timeindex` entry points at a real batch boundary, and a
    damaged index came back rebuilt (not just emptied).

The run ends with a clean SIGTERM stop (the `.clean-shutdown` marker must be written and
honoured: no recovery on the next start), one more index damage, a restart and the same
checks.

Environment:
  CRASH_LOOPS  number of kill -9 rounds (default 22)
  CRASH_SEED   RNG seed (default: random; always printed). It replays the choices (sleeps,
               damage, codecs), not the exact timing of the kills.
"""

import os
import random
import re
import struct
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

import kproto
from helpers import create_topic, new_consumer

LOOPS = int(os.environ.get("CRASH_LOOPS", "22"))
SEGMENT_BYTES = 262144
PARTITIONS = 3
TOPIC_CT = "crashloop-createtime"  # default topic config (max.message.bytes etc.)
TOPIC_LAT = "crashloop-appendtime"  # message.timestamp.type=LogAppendTime
TOPICS = (TOPIC_CT, TOPIC_LAT)
ALL_TPS = [(t, p) for t in TOPICS for p in range(PARTITIONS)]
COMPRESSIONS = ("none", "gzip", "lz4", "zstd", "snappy")
# (profile name, producer settings). Idempotence forces acks=all.
PROFILES = (
    ("idem", {"acks": "all", "enable.idempotence": True}),
    ("acks1", {"acks": "1", "enable.idempotence": False}),
    ("acksall", {"acks": "all", "enable.idempotence": False}),
)
DAMAGE_KINDS = ("delete-index", "truncate-timeindex", "garbage-index")
BURST = 25  # records per producer thread per 10 ms tick: bounded load (~2.5k/s per thread)
MAX_SHOWN = 10  # examples per problem in failure messages

# Magic-v2 batch header layout (offsets into the batch).
HEADER_LEN = 61
ATTR_LOG_APPEND_TIME = 0x08
VALUE_RE = re.compile(rb"^r(\d+)/i(\d+)/([a-z0-9]+)\.([a-z0-9]+)/(\d+)\|x*$")


# ---------------------------------------------------------------------------
# Load
# ---------------------------------------------------------------------------
class RoundLoad:
    """The producers of one round: one thread per profile, each with its own codec."""

    def __init__(self, bootstrap, run_id, it, rng):
        self.bootstrap = bootstrap
        self.run_id = run_id
        self.it = it
        self.acked = []  # (topic, partition, offset, key, value, producer name)
        self.failed = Counter()  # delivery error name -> count
        self.client_errors = Counter()
        self.fatal = []
        self.stop_event = threading.Event()
        self.producers = []
        self.threads = []
        self.names = []
        for j, (pname, pconf) in enumerate(PROFILES):
            codec = COMPRESSIONS[(it * len(PROFILES) + j) % len(COMPRESSIONS)]
            name = f"{pname}.{codec}"
            conf = {
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                "linger.ms": rng.choice([0, 2, 5, 20]),
                "batch.num.messages": rng.choice([10, 100, 1000]),
                "message.timeout.ms": 60000,
                "retry.backoff.ms": 100,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 500,
                "log_level": 2,
                "error_cb": self._on_error,
            }
            conf.update(pconf)
            self.names.append(name)
            self.producers.append((name, Producer(conf)))

    def _on_error(self, err):
        self.client_errors[err.name()] += 1

    def _delivery(self, name):
        def cb(err, msg):
            if err is None:
                self.acked.append(
                    (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), name))
            else:
                self.failed[err.name()] += 1
        return cb

    def _loop(self, name, p):
        cb = self._delivery(name)
        seq = 0
        while not self.stop_event.is_set():
            for _ in range(BURST):
                value = record_value(self.run_id, self.it, name, seq)
                try:
                    p.produce(TOPICS[seq % 2], key=b"key-%d" % (seq % 64), value=value,
                              headers=record_headers(name, seq), on_delivery=cb)
                except BufferError:
                    break
                except KafkaException as e:  # e.g. a fatal idempotence error
                    self.fatal.append(f"{name}: {e}")
                    return
                seq += 1
            p.poll(0)
            time.sleep(0.01)

    def start(self):
        for name, p in self.producers:
            t = threading.Thread(target=self._loop, args=(name, p), daemon=True,
                                 name=f"crashloop-{name}")
            t.start()
            self.threads.append(t)

    def wait_first_ack(self, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not self.acked and time.monotonic() < deadline:
            time.sleep(0.02)
        return bool(self.acked)

    def stop(self, broker_alive):
        """Stops the threads. With the broker dead, whatever is queued or in flight is
        purged (it fails; only successful delivery reports count)."""
        self.stop_event.set()
        for t in self.threads:
            t.join(30)
            assert not t.is_alive(), f"producer thread {t.name} did not stop"
        unflushed = 0
        for _, p in self.producers:
            if broker_alive:
                unflushed += p.flush(30)
            else:
                p.purge(in_queue=True, in_flight=True)
                unflushed += p.flush(10)
        self.producers = []
        return unflushed


def record_value(run_id, it, name, seq):
    return b"r%d/i%d/%s/%d|" % (run_id, it, name.encode(), seq) + b"x" * ((seq * 7919) % 400)


def record_headers(name, seq):
    return [("producer", name.encode()), ("seq", b"%d" % seq), ("nullable", None)]


def parse_value(v):
    m = VALUE_RE.match(v or b"")
    if not m:
        return None
    run, it, profile, codec, seq = m.groups()
    return int(run), int(it), f"{profile.decode()}.{codec.decode()}", int(seq)


# ---------------------------------------------------------------------------
# Raw protocol (Fetch v4/v5) and batch checks
# ---------------------------------------------------------------------------
def fetch_raw(conn, version, topic, partition, offset, max_bytes, partition_max_bytes):
    """One-partition Fetch v4 or v5 (non-flexible). Returns (error, hw, records bytes)."""
    part = kproto.i32(partition) + kproto.i64(offset)
    if version >= 5:
        part += kproto.i64(-1)  # log start offset (followers only)
    part += kproto.i32(partition_max_bytes)
    body = (kproto.i32(-1) + kproto.i32(0) + kproto.i32(0) + kproto.i32(max_bytes)
            + kproto.i8(0) + kproto.i32(1) + kproto.string(topic) + kproto.i32(1) + part)
    r = conn.request(kproto.FETCH, version, body)
    r.i32()  # throttle

    def partition_resp(rr):
        d = {"index": rr.i32(), "error": rr.i16(), "hw": rr.i64(), "lso": rr.i64()}
        if version >= 5:
            d["log_start"] = rr.i64()
        rr.array(lambda x: (x.i64(), x.i64()))  # aborted transactions
        d["records"] = rr.bytes() or b""
        return d

    topics = r.array(lambda rr: (rr.string(), rr.array(partition_resp)))
    assert len(topics) == 1 and topics[0][0] == topic and len(topics[0][1]) == 1, topics
    d = topics[0][1][0]
    assert d["index"] == partition, d
    return d["error"], d["hw"], d["records"]


def split_batches(records, where):
    """Splits a Fetch response's records into batches, asserting each one is whole and
    its CRC-32C checks out. Returns [(base, last, attributes, records_count)]."""
    out = []
    pos = 0
    while pos < len(records):
        left = len(records) - pos
        if left < HEADER_LEN:
            raise AssertionError(
                f"{where}: partial batch served: {left} trailing bytes at byte {pos} of "
                f"{len(records)}, less than a batch header")
        base, blen = struct.unpack_from(">qi", records, pos)
        total = 12 + blen
        if blen < HEADER_LEN - 12 or pos + total > len(records):
            raise AssertionError(
                f"{where}: partial batch served: batch at offset {base} claims {total} "
                f"bytes but only {left} were returned (byte {pos} of {len(records)})")
        batch = records[pos:pos + total]
        if batch[16] != 2:
            raise AssertionError(f"{where}: batch at offset {base} has magic {batch[16]}")
        if not kproto.batch_crc_is_valid(batch):
            raise AssertionError(f"{where}: batch at offset {base} ({total} bytes) fails its CRC-32C")
        attrs, last_delta = struct.unpack_from(">hi", batch, 21)
        (count,) = struct.unpack_from(">i", batch, 57)
        out.append((base, base + last_delta, attrs, count))
        pos += total
    return out


# ---------------------------------------------------------------------------
# On-disk checks and damage
# ---------------------------------------------------------------------------
def partition_dir(broker, tp):
    return broker.data_dir / f"{tp[0]}-{tp[1]}"


def segment_bases(pdir):
    return sorted(int(f.name[:-4]) for f in pdir.glob("*.log") if f.name[:-4].isdigit())


def stem(base):
    return f"{base:020d}"


def scan_segment(path):
    """Batch headers of a .log file: [(pos, base, last, max_ts)], and the bytes of whole
    batches (which must equal the file size)."""
    data = path.read_bytes()
    out = []
    pos = 0
    while pos + HEADER_LEN <= len(data):
        base, blen = struct.unpack_from(">qi", data, pos)
        total = 12 + blen
        if blen < HEADER_LEN - 12 or pos + total > len(data):
            break
        (last_delta,) = struct.unpack_from(">i", data, pos + 23)
        (max_ts,) = struct.unpack_from(">q", data, pos + 35)
        out.append((pos, base, base + last_delta, max_ts))
        pos += total
    return out, pos, len(data)


def check_disk(broker, must_be_rebuilt):
    """Every segment of every partition: whole batches only, and indexes whose entries
    point at real batches. `must_be_rebuilt` holds the index files damaged before this
    start: each must be back, valid and non-empty. Returns a list of problems."""
    problems = []
    for tp in ALL_TPS:
        pdir = partition_dir(broker, tp)
        prev_next = None
        for base in segment_bases(pdir):
            log = pdir / f"{stem(base)}.log"
            batches, whole, size = scan_segment(log)
            if whole != size:
                problems.append(f"{log.name} in {pdir.name}: {size - whole} bytes after the "
                                f"last whole batch (a torn tail left on disk)")
            if batches and batches[0][1] != base:
                problems.append(f"{pdir.name}/{log.name}: first batch has offset {batches[0][1]}")
            if batches and prev_next is not None and batches[0][1] != prev_next:
                problems.append(f"{pdir.name}/{log.name}: starts at {batches[0][1]}, previous "
                                f"segment ended before {prev_next}")
            if batches:
                prev_next = batches[-1][2] + 1
            by_pos = {pos: b for pos, b, _, _ in batches}
            by_last = {last: ts for _, _, last, ts in batches}
            for suffix, width in ((".index", 8), (".timeindex", 12)):
                f = pdir / f"{stem(base)}{suffix}"
                name = f"{pdir.name}/{f.name}"
                damaged = name in must_be_rebuilt
                if not f.exists():
                    if damaged or batches:
                        problems.append(f"{name}: missing{' (damaged before this start)' if damaged else ''}")
                    continue
                data = f.read_bytes()
                if len(data) % width:
                    problems.append(f"{name}: {len(data)} bytes, not a whole number of "
                                    f"{width}-byte entries{' (was damaged: not rebuilt)' if damaged else ''}")
                    continue
                if batches and not data:
                    problems.append(f"{name}: empty for a segment of {len(batches)} batches"
                                    f"{' (was damaged: emptied, not rebuilt)' if damaged else ''}")
                prev = None
                for i in range(0, len(data), width):
                    if width == 8:
                        rel, pos = struct.unpack_from(">II", data, i)
                        if by_pos.get(pos) != base + rel:
                            problems.append(f"{name}: entry {i // 8} (offset {base + rel} at byte {pos}) "
                                            f"does not point at that batch (batch there: {by_pos.get(pos)})")
                            break
                        if prev is not None and (rel <= prev[0] or pos <= prev[1]):
                            problems.append(f"{name}: entry {i // 8} out of order")
                            break
                        prev = (rel, pos)
                    else:
                        ts, rel = struct.unpack_from(">qI", data, i)
                        if by_last.get(base + rel) != ts:
                            problems.append(f"{name}: entry {i // 12} (ts {ts} -> offset {base + rel}) "
                                            f"does not match a batch (max ts of the batch ending "
                                            f"there: {by_last.get(base + rel)})")
                            break
                        if prev is not None and (ts <= prev[0] or rel < prev[1]):
                            problems.append(f"{name}: entry {i // 12} out of order")
                            break
                        prev = (ts, rel)
    return problems


def apply_damage(broker, kind, rng, active=False):
    """Damages one index file of a random segment while the broker is down: a closed
    segment (trusted on open) unless `active`. Returns a description dict, or None."""
    choices = []
    for tp in ALL_TPS:
        bases = segment_bases(partition_dir(broker, tp))
        picks = bases[-1:] if active else bases[:-1]
        choices += [(tp, b) for b in picks]
    if not choices:
        return None
    tp, base = rng.choice(sorted(choices))
    pdir = partition_dir(broker, tp)
    if kind == "delete-index":
        f = pdir / f"{stem(base)}.index"
        before = f.stat().st_size if f.exists() else -1
        f.unlink(missing_ok=True)
        after = "deleted"
    elif kind == "truncate-timeindex":
        f = pdir / f"{stem(base)}.timeindex"
        before = f.stat().st_size if f.exists() else -1
        if before > 1:
            new = rng.randrange(1, before, 2)  # odd: never a whole number of 12-byte entries
            os.truncate(f, new)
        else:
            new = 7
            f.write_bytes(bytes(rng.getrandbits(8) for _ in range(new)))
        after = f"{new} bytes"
    elif kind == "garbage-index":
        f = pdir / f"{stem(base)}.index"
        before = f.stat().st_size if f.exists() else -1
        n = before if before >= 16 else 64  # same length: a whole number of entries
        f.write_bytes(bytes(rng.getrandbits(8) for _ in range(n)))
        after = f"{n} random bytes"
    elif kind == "torn-tail":
        # What a write cut short by a crash leaves: the start of a batch at the end of
        # the active segment (kill -9 alone never tears a write: the page cache has it).
        f = pdir / f"{stem(base)}.log"
        batches, whole, before = scan_segment(f)
        if batches:
            pos, _, last, _ = batches[-1]
            data = f.read_bytes()
            part = bytearray(data[pos:pos + rng.randrange(1, whole - pos)])
            part[0:min(8, len(part))] = struct.pack(">q", last + 1)[:min(8, len(part))]
        else:
            part = bytearray(rng.getrandbits(8) for _ in range(30))
        with open(f, "ab") as fh:
            fh.write(part)
        after = f"{before + len(part)} bytes ({len(part)}-byte partial batch appended)"
    else:
        raise ValueError(kind)
    return {"kind": kind, "tp": tp, "file": f"{pdir.name}/{f.name}",
            "before": before, "after": after, "active": active}


# ---------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------
def read_everything(bootstrap, ends, timeout=90):
    """Reads every partition from offset 0 up to its high watermark. Returns
    ({tp: [(offset, key, value, headers, (ts_type, ts))]}, [problems])."""
    # auto.offset.reset=error: an out-of-range fetch must surface, not silently rewind.
    c = new_consumer(bootstrap, **{"fetch.wait.max.ms": 100, "auto.offset.reset": "error"})
    out = {tp: [] for tp in ends}
    problems = []
    try:
        c.assign([TopicPartition(t, p, 0) for (t, p) in ends])
        pending = {tp for tp, hw in ends.items() if hw > 0}
        pos = {tp: 0 for tp in ends}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline and len(problems) < MAX_SHOWN:
            for m in c.consume(num_messages=2000, timeout=0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        tp = (m.topic(), m.partition())
                        if tp in pending:
                            problems.append(f"{tp}: EOF at offset {m.offset()} but the high "
                                            f"watermark was {ends[tp]}")
                            pending.discard(tp)
                        continue
                    problems.append(f"consumer error on {m.topic()}/{m.partition()}: {err}")
                    # Enough to fail; give the reader a moment for more detail, not 90 s.
                    deadline = min(deadline, time.monotonic() + 5)
                    continue
                tp = (m.topic(), m.partition())
                out[tp].append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()))
                pos[tp] = m.offset() + 1
                if pos[tp] >= ends[tp]:
                    pending.discard(tp)
        for tp in sorted(pending):
            problems.append(f"{tp}: reading stalled at offset {pos[tp]} of high watermark "
                            f"{ends[tp]} after {timeout}s")
    finally:
        c.close()
    return out, problems


def first_gap(offsets, start):
    for i, o in enumerate(offsets):
        if o != start + i:
            return i, start + i, o
    return None


class Verifier:
    def __init__(self, broker, run_id, seed, rng):
        self.broker = broker
        self.seed = seed
        self.run_id = run_id
        self.rng = rng
        self.acked = {tp: {} for tp in ALL_TPS}  # offset -> (key, value, producer, iteration)
        self.ack_conflicts = []
        self.raw_rotation = 0
        self.stats = Counter()

    def add_acks(self, load):
        for topic, part, off, key, value, name in load.acked:
            prev = self.acked[(topic, part)].get(off)
            if prev is not None and prev[1] != value:
                self.ack_conflicts.append(
                    f"{topic}/{part} offset {off} acknowledged twice: {prev[1][:40]!r} "
                    f"(iteration {prev[3]}) and {value[:40]!r} (iteration {load.it})")
            self.acked[(topic, part)][off] = (key, value, name, load.it)

    def total_acked(self):
        return sum(len(v) for v in self.acked.values())

    def verify(self, label, damaged):
        """All checks on a freshly (re)started broker. Data problems fail at once;
        index problems are returned."""
        problems = list(self.ack_conflicts)
        port = self.broker.port
        with kproto.Conn(port) as conn:
            versions = dict(kproto.api_versions(conn, 0)[1])
            fetch_v = kproto.pick_version(versions, kproto.FETCH, [5, 4])
            assert fetch_v is not None, f"broker offers no Fetch v4/v5: {versions.get(kproto.FETCH)}"
            starts, ends = {}, {}
            for tp in ALL_TPS:
                e1, starts[tp] = kproto.list_offsets_v1(conn, tp[0], tp[1], -2)
                e2, ends[tp] = kproto.list_offsets_v1(conn, tp[0], tp[1], -1)
                assert e1 == 0 and e2 == 0, f"{label}: ListOffsets {tp}: errors {e1}, {e2}"

        # Nothing lost at the tail: the high watermark covers every acknowledged offset.
        for tp in ALL_TPS:
            if starts[tp] != 0:
                problems.append(f"{tp}: log start offset is {starts[tp]}, expected 0 (no "
                                f"retention applies here: the head of the log was lost)")
            if self.acked[tp]:
                top = max(self.acked[tp])
                if ends[tp] < top + 1:
                    lost = sum(1 for o in self.acked[tp] if o >= ends[tp])
                    problems.append(f"{tp}: high watermark {ends[tp]} < highest acknowledged "
                                    f"offset {top} + 1 ({lost} acknowledged records beyond it)")

        got, read_problems = read_everything(self.broker.bootstrap, ends)
        problems += read_problems
        verified = 0
        unacked_survivors = 0
        for tp in ALL_TPS:
            recs = got[tp]
            offsets = [r[0] for r in recs]
            gap = first_gap(offsets, starts[tp])
            if gap is not None:
                i, want, have = gap
                problems.append(f"{tp}: offsets not dense/increasing: record #{i} has offset "
                                f"{have}, expected {want} (previous: {offsets[max(0, i - 3):i]})")
            elif starts[tp] + len(offsets) != ends[tp]:
                problems.append(f"{tp}: read offsets {starts[tp]}..{starts[tp] + len(offsets)} "
                                f"but the high watermark is {ends[tp]}")
            by_off = {r[0]: r for r in recs}
            missing, different = [], []
            for off, (key, value, name, it) in sorted(self.acked[tp].items()):
                r = by_off.get(off)
                if r is None:
                    missing.append(f"offset {off} ({value.split(b'|')[0].decode()}, acked in "
                                   f"iteration {it})")
                elif r[1] != key or r[2] != value:
                    different.append(f"offset {off}: acked {key!r}/{value[:40]!r}, read "
                                     f"{r[1]!r}/{(r[2] or b'')[:40]!r}")
                else:
                    verified += 1
            if missing:
                problems.append(f"{tp}: {len(missing)} acknowledged records MISSING, e.g. "
                                f"{missing[:MAX_SHOWN]}")
            if different:
                problems.append(f"{tp}: {len(different)} acknowledged offsets hold a DIFFERENT "
                                f"record, e.g. {different[:MAX_SHOWN]}")
            bad_format, bad_headers, bad_ts = [], [], []
            want_ts = TIMESTAMP_LOG_APPEND_TIME if tp[0] == TOPIC_LAT else TIMESTAMP_CREATE_TIME
            for off, key, value, headers, (ts_type, _) in recs:
                parsed = parse_value(value)
                if parsed is None or parsed[0] != self.run_id:
                    bad_format.append(f"offset {off}: {(value or b'')[:40]!r}")
                    continue
                _, _, name, seq = parsed
                if headers != record_headers(name, seq):
                    bad_headers.append(f"offset {off}: {headers}")
                if ts_type != want_ts:
                    bad_ts.append(f"offset {off}: timestamp type {ts_type}")
                if off not in self.acked[tp]:
                    unacked_survivors += 1
            for what, lst in (("records that were never produced", bad_format),
                              ("records with wrong headers", bad_headers),
                              ("records with the wrong timestamp type", bad_ts)):
                if lst:
                    problems.append(f"{tp}: {len(lst)} {what}, e.g. {lst[:MAX_SHOWN]}")
        # The idempotent producers must not have written anything twice.
        seen = {}
        dups = Counter()
        idem_dups = []
        for tp in ALL_TPS:
            for off, _, value, _, _ in got[tp]:
                k = value.split(b"|")[0]
                if k in seen:
                    dups[k.split(b"/")[2].split(b".")[0].decode()] += 1
                    if b"/idem." in k:
                        (t0, p0), o0 = seen[k]
                        idem_dups.append(f"{k.decode()} at {t0}/{p0}@{o0} and {tp[0]}/{tp[1]}@{off}")
                else:
                    seen[k] = (tp, off)
        if idem_dups:
            problems.append(f"{len(idem_dups)} records of an idempotent producer written "
                            f"twice, e.g. {idem_dups[:MAX_SHOWN]}")

        # Raw fetches: a rotating partition plus the damaged ones.
        raw_tps = {ALL_TPS[self.raw_rotation % len(ALL_TPS)]} | {d["tp"] for d in damaged}
        self.raw_rotation += 1
        if label.startswith("final"):
            raw_tps = set(ALL_TPS)
        problems += self.raw_checks(fetch_v, sorted(raw_tps), starts, ends, got)

        if problems:
            raise AssertionError(
                f"{label}: {len(problems)} problem(s) after restart #{self.broker.starts} "
                f"(seed {self.seed}):\n  - " + "\n  - ".join(problems)
                + f"\n{log_excerpt(self.broker)}")

        self.stats["unacked_survivors"] = unacked_survivors
        self.stats["dups"] = sum(dups.values())
        index_problems = check_disk(self.broker, {d["file"] for d in damaged})
        return verified, sum(len(v) for v in got.values()), index_problems

    def raw_checks(self, fetch_v, tps, starts, ends, got):
        problems = []
        with kproto.Conn(self.broker.port) as conn:
            for tp in tps:
                topic, part = tp
                # Whole log from offset 0, in odd-sized slices.
                off = starts[tp]
                batches = 0
                broken = False
                while off < ends[tp] and not broken:
                    pmax = self.rng.choice([1, 3000, 50_000, 150_001, 1_048_576])
                    where = f"raw Fetch v{fetch_v} {topic}/{part} @{off} (partition max {pmax})"
                    err, hw, records = fetch_raw(conn, fetch_v, topic, part, off, 4 * 1048576, pmax)
                    if err != 0 or hw != ends[tp]:
                        problems.append(f"{where}: error {err}, high watermark {hw} (ListOffsets: {ends[tp]})")
                        break
                    if not records:
                        problems.append(f"{where}: no data below the high watermark {hw}")
                        break
                    try:
                        split = split_batches(records, where)
                    except AssertionError as e:
                        problems.append(str(e))
                        break
                    for base, last, attrs, count in split:
                        if batches == 0 and base > off or batches and base != off:
                            problems.append(f"{where}: batch starts at {base}, expected {off}")
                            broken = True
                            break
                        if count != last - base + 1:
                            problems.append(f"{where}: batch {base} holds {count} records for "
                                            f"offsets {base}..{last}")
                        if topic == TOPIC_LAT and not attrs & ATTR_LOG_APPEND_TIME:
                            problems.append(f"{where}: batch {base} is not LogAppendTime")
                        off = last + 1
                        batches += 1
                self.stats["raw_batches"] += batches
                # Random offsets: the batch that holds each must come first, whole.
                for _ in range(20 if ends[tp] > starts[tp] else 0):
                    want = self.rng.randrange(starts[tp], ends[tp])
                    where = f"raw Fetch v{fetch_v} {topic}/{part} @{want}"
                    err, _, records = fetch_raw(conn, fetch_v, topic, part, want, 65536, 65536)
                    try:
                        split = split_batches(records, where) if err == 0 else []
                    except AssertionError as e:
                        problems.append(str(e))
                        continue
                    if err != 0 or not split or not split[0][0] <= want <= split[0][1]:
                        problems.append(f"{where}: error {err}, first batch "
                                        f"{split[0][:2] if split else None} does not hold it")
                # ListOffsets by timestamp (through the time index): never past the first
                # record at or after ts. CreateTime topic only: on the LogAppendTime topic
                # Sluice matches against the records' create times inside uncompressed
                # batches, a lookup bug that has nothing to do with crashes.
                recs = got[tp] if topic == TOPIC_CT else []
                for _ in range(5 if recs else 0):
                    ts = self.rng.choice(recs)[4][1]
                    first = next(r[0] for r in recs if r[4][1] >= ts)
                    err, found = kproto.list_offsets_v1(conn, topic, part, ts)
                    if err != 0 or not starts[tp] <= found <= first:
                        problems.append(f"ListOffsets {topic}/{part} timestamp {ts}: error {err}, "
                                        f"offset {found}; the first record at or after it is {first}")
        return problems


def start_sections(broker):
    try:
        text = broker.stderr_path.read_text(errors="replace")
    except OSError:
        return {}
    out = {}
    for chunk in text.split("\n===== start #")[1:]:
        n, _, rest = chunk.partition(":")
        if n.isdigit():
            out[int(n)] = rest
    return out


def note_index_problems(seen, label, problems):
    """Records index problems, each once (they persist from start to start).
    Returns the ones new at this start."""
    new = []
    for p in problems:
        key = re.sub(r" \(was damaged[^)]*\)", "", p)
        key = re.sub(r"segment of \d+ batches", "segment", key)
        if key not in seen:
            seen[key] = f"{label}: {p}"
            new.append(p)
    return new


def wait_ready(broker, timeout=20.0):
    """The port accepts connections before recovery is done (the listener is bound
    first); the `ready` line comes after. Returns this start's stderr section."""
    deadline = time.monotonic() + timeout
    while True:
        sec = start_sections(broker).get(broker.starts, "")
        if "sluice ready" in sec:
            return sec
        assert broker.is_alive(), f"broker died during startup:\n{sec[-3000:]}"
        assert time.monotonic() < deadline, f"no `ready` line within {timeout}s:\n{sec[-3000:]}"
        time.sleep(0.02)


def log_excerpt(broker, lines=40):
    sec = start_sections(broker).get(broker.starts, "")
    keep = [ln for ln in sec.splitlines() if re.search(r"WARN|ERROR|panic|recover|cut", ln)]
    return (f"broker stderr of start #{broker.starts} (warnings; full log {broker.stderr_path}):\n"
            + "\n".join(keep[-lines:]))


# ---------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_crash_loop(start_broker):
    seed = int(os.environ.get("CRASH_SEED", random.randrange(1 << 31)))
    rng = random.Random(seed)
    run_id = seed % 1_000_000
    print(f"\ncrash loop: seed {seed} (CRASH_SEED={seed} replays it), {LOOPS} rounds", flush=True)
    t0 = time.monotonic()

    broker = start_broker({"log.segment.bytes": SEGMENT_BYTES})
    create_topic(broker.bootstrap, TOPIC_CT, partitions=PARTITIONS)
    create_topic(broker.bootstrap, TOPIC_LAT, partitions=PARTITIONS,
                 config={"message.timestamp.type": "LogAppendTime"})
    marker = broker.data_dir / ".clean-shutdown"

    v = Verifier(broker, run_id, seed, rng)
    damage_log = []
    index_damage = []
    index_problems = {}  # problem without its "(was damaged ...)" note -> first sighting
    client_fail = Counter()

    def round_of_load(it):
        load = RoundLoad(broker.bootstrap, run_id, it, rng)
        load.start()
        assert load.wait_first_ack(), (
            f"round {it}: no delivery within 15 s of starting the producers "
            f"(failures {dict(load.failed)}, client errors {dict(load.client_errors)})\n"
            f"{log_excerpt(broker)}")
        return load

    for it in range(LOOPS):
        load = round_of_load(it)
        time.sleep(rng.uniform(0.3, 2.0))
        broker.stop(kill=True)
        unflushed = load.stop(broker_alive=False)
        v.add_acks(load)
        client_fail.update(load.failed)
        assert not marker.exists(), "a .clean-shutdown marker survived a kill -9"

        damaged = []
        if it % 3 != 2:  # two rounds in three: an index of a closed segment
            kind = DAMAGE_KINDS[len(index_damage) % len(DAMAGE_KINDS)]
            d = apply_damage(broker, kind, rng)
            if d is not None:
                index_damage.append(d)
        else:  # the third: a torn write at the end of an active segment
            d = apply_damage(broker, "torn-tail", rng, active=True)
        if d is not None:
            d["iteration"] = it
            damaged.append(d)
            damage_log.append(d)
        broker.start()
        sec = wait_ready(broker)
        assert "recovered the active segment" in sec, (
            f"round {it}: after kill -9 the broker did not say it recovered:\n{sec[-3000:]}")
        for d in damaged:
            if d["kind"] == "torn-tail":
                cut = [ln for ln in sec.splitlines()
                       if "cut a torn" in ln and f"/{d['file'].split('/')[0]}" in ln]
                assert cut, (f"round {it}: the partial batch appended to {d['file']} was not "
                             f"reported cut on recovery:\n{sec[-3000:]}")

        verified, read, idx = v.verify(f"round {it}", damaged)
        idx = note_index_problems(index_problems, f"round {it}", idx)
        print(f"round {it:2d}: acked {len(load.acked):6d} "
              f"({' '.join(load.names)}) "
              f"fatal {len(load.fatal)} unflushed {unflushed} | total acked {v.total_acked()}, "
              f"verified {verified}, read {read} | damage "
              f"{[(d['kind'], d['file']) for d in damaged] or '-'}"
              f"{' | new index problems: ' + '; '.join(idx) if idx else ''}", flush=True)

    # A last round of load, delivered in full, then a clean SIGTERM stop.
    load = round_of_load(LOOPS)
    time.sleep(1.0)
    unflushed = load.stop(broker_alive=True)
    v.add_acks(load)
    client_fail.update(load.failed)
    assert unflushed == 0, f"{unflushed} records still undelivered with the broker up"
    rc = broker.stop(kill=False, timeout=20)
    assert not broker.last_stop_escalated, "broker ignored SIGTERM (needed SIGKILL)"
    assert rc == 0, f"broker exited with {rc} on SIGTERM\n{log_excerpt(broker)}"
    assert marker.exists(), "a clean SIGTERM stop did not write .clean-shutdown"
    # Trusted segments after a clean stop: damage an active segment's index too.
    kind = DAMAGE_KINDS[len(index_damage) % len(DAMAGE_KINDS)]
    d = apply_damage(broker, kind, rng, active=True)
    damaged = [d] if d else []
    for d in damaged:
        d["iteration"] = "clean"
        damage_log.append(d)
    broker.start()
    sec = wait_ready(broker)
    assert not marker.exists(), "the broker did not consume the .clean-shutdown marker"
    assert "recovered the active segment" not in sec and "torn" not in sec, (
        f"after a clean shutdown the broker still ran recovery:\n{sec[-3000:]}")
    verified, read, idx = v.verify("final (after SIGTERM + restart)", damaged)
    note_index_problems(index_problems, "final", idx)

    all_sections = "\n".join(start_sections(broker).values())
    cuts = len(re.findall(r"cut a torn or corrupt tail", all_sections))
    assert "panicked" not in all_sections, f"the broker panicked:\n{log_excerpt(broker)}"
    total = v.total_acked()
    assert verified == total, f"verified {verified} of {total} acknowledged records"
    damage_summary = Counter(d["kind"] for d in damage_log)
    print(f"crash loop summary: seed {seed}, loops {LOOPS} (+1 clean), records acknowledged "
          f"{total}, records verified {verified} (read {read}, unacked survivors "
          f"{v.stats['unacked_survivors']}, non-idempotent duplicates {v.stats['dups']}), "
          f"raw batches checked {v.stats['raw_batches']}, torn tails cut {cuts}, damage applied "
          f"{len(damage_log)} {dict(damage_summary)}, delivery failures {dict(client_fail)}, "
          f"{time.monotonic() - t0:.0f}s", flush=True)
    for d in damage_log:
        print(f"  damage @{d['iteration']}: {d['kind']} {d['file']} ({d['before']} bytes -> "
              f"{d['after']}){' [active segment]' if d['active'] else ''}", flush=True)
    assert not index_problems, (
        f"{len(index_problems)} index problem(s) (seed {seed}; each listed once, from the "
        f"start where it was first seen; damage applied is listed above):\n  - "
        + "\n  - ".join(list(index_problems.values())[:40]))
