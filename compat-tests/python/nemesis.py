"""A Jepsen-style nemesis run (issue 23) against a 3-node Sluice cluster with fault injection.

Workloads, with librdkafka (confluent-kafka), all at once:
* an idempotent acks=all producer writing unique values to `nem-idem` (3 partitions, RF=3,
  min.insync.replicas=2), keeping every acknowledgement (partition, offset, value);
* a transactional producer writing small transactions to `nem-txn`, committing most and
  aborting some, keeping which values were committed, aborted, or of unknown fate (the
  commit call failed);
* a read_committed consumer polling `nem-txn` from the start, keeping every record it saw.
Nemeses, one at a time, drawn at random from a printed seed: kill (SIGKILL, then start),
pause (SIGSTOP/SIGCONT), isolate, cut and delay (a link to another node), disk (a failed
write: the node halts if a leader meets it), clock skew; each held a few seconds, then healed.
Checkers, over the history and a final read of both topics once healed:
* lost: acknowledged idempotent writes, or committed transactional ones, not read back;
* duplicates: a value read back twice (idempotence and transactions promise once);
* aborted reads: the read_committed consumer saw a value of an aborted transaction;
* inconsistent offsets: one (partition, offset) with two values across acks and reads;
* non-monotonic or skipping polls: the consumer's offsets going backwards within a
  partition, or passing over a committed record the final read has between two it polled.
`run()` returns the counts per checker and the numbers of operations and faults; a failed
run keeps its history as JSON. `python nemesis.py --minutes 30` is the soak mode.
"""

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from cluster import Cluster, wait_until
from faults_lib import FAULT_SETTINGS, call, http_of

IDEM, TXN, PARTITIONS = "nem-idem", "nem-txn", 3
CHECKERS = ["lost", "duplicates", "aborted_reads", "inconsistent_offsets", "non_monotonic_polls"]
NEMESES = ["kill", "pause", "isolate", "cut", "delay", "disk", "clock"]


class History:
    """Everything the workloads saw, appended from their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = []        # (partition, offset, value) of the idempotent producer
        self.idem_failed = []  # values whose delivery failed
        self.committed = []    # values of committed transactions
        self.aborted = []      # values of aborted transactions
        self.unknown = []      # values of transactions whose commit failed
        self.polled = []       # (partition, offset, value) the read_committed consumer saw
        self.faults = []       # (seconds since start, nemesis, node, detail)
        self.errors = []       # workload errors, for the report

    def add(self, name, item):
        with self.lock:
            getattr(self, name).append(item)

    def to_json(self):
        with self.lock:
            return {k: v for k, v in self.__dict__.items() if k != "lock"}


def idempotent_producer(c, h, stop):
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": 120000, "request.timeout.ms": 5000,
                  "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000})

    def delivered(err, msg):
        if err is not None:
            h.add("idem_failed", msg.value().decode())
        else:
            h.add("acked", (msg.partition(), msg.offset(), msg.value().decode()))

    i = 0
    while not stop.is_set():
        try:
            p.produce(IDEM, value=f"i{i}".encode(), partition=i % PARTITIONS, on_delivery=delivered)
            i += 1
        except BufferError:
            pass
        p.poll(0.005)
    p.flush(150)


def transactional_producer(c, h, stop, rng):
    conf = {"bootstrap.servers": c.bootstrap, "transactional.id": "nemesis-txn", "acks": "all",
            "transaction.timeout.ms": 60000, "message.timeout.ms": 60000, "request.timeout.ms": 5000,
            "topic.metadata.refresh.interval.ms": 1000}
    p, n = None, 0
    while not stop.is_set():
        try:
            if p is None:
                p = Producer(conf)
                p.init_transactions(60)
            values = [f"t{n}-{j}" for j in range(rng.randint(1, 5))]
            n += 1
            p.begin_transaction()
            for j, v in enumerate(values):
                p.produce(TXN, value=v.encode(), partition=(n + j) % PARTITIONS)
            if rng.random() < 0.25:
                p.abort_transaction(60)
                h.add("aborted", values)
                continue
            try:
                p.commit_transaction(60)
                h.add("committed", values)
            except KafkaException as e:
                h.add("unknown", values)
                h.add("errors", f"commit: {e}")
                if e.args[0].txn_requires_abort():
                    p.abort_transaction(60)
                else:
                    p = None
        except KafkaException as e:
            # A fatal error (fenced, timed out init): a new producer with the same id fences it.
            h.add("errors", f"transaction: {e}")
            p = None
            time.sleep(0.5)
    if p is not None:
        p.flush(30)


def read_committed_consumer(c, h, stop):
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "nemesis-unused", "enable.auto.commit": False,
                     "isolation.level": "read_committed", "topic.metadata.refresh.interval.ms": 1000})
    cons.assign([TopicPartition(TXN, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    try:
        while not stop.is_set():
            for m in cons.consume(num_messages=500, timeout=0.5):
                if m.error() is None:
                    h.add("polled", (m.partition(), m.offset(), m.value().decode()))
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    h.add("errors", f"consume: {m.error()}")
    finally:
        cons.close()


class Nemesis:
    """Injects one fault at a time on a random node, holds it, heals it."""

    def __init__(self, c, h, rng, t0):
        self.c, self.h, self.rng, self.t0 = c, h, rng, t0

    def fault(self, node, **spec):
        status, body = call(http_of(self.c, node), "POST", "/v1/faults", spec)
        assert status == 201, f"fault {spec} on node {node}: HTTP {status} {body}"

    def once(self):
        kind, node = self.rng.choice(NEMESES), self.rng.choice(self.c.ids)
        peer = self.rng.choice([i for i in self.c.ids if i != node])
        detail = {"kill": "", "pause": "", "isolate": "", "cut": f"peer {peer}",
                  "delay": f"peer {peer} 300 ms", "disk": "write", "clock": ""}[kind]
        if kind == "clock":
            skew = self.rng.choice([-1, 1]) * self.rng.randint(500, 2000)
            detail = f"{skew} ms"
        self.h.add("faults", (round(time.monotonic() - self.t0, 1), kind, node, detail))
        print(f"nemesis: {kind} node {node} {detail}", flush=True)
        if kind == "kill":
            self.c.kill(node)
        elif kind == "pause":
            self.c.pause(node)
        elif kind == "isolate":
            self.fault(node, kind="isolate")
        elif kind in ("cut", "delay"):
            self.fault(node, kind=kind, peer=peer, **({"ms": 300} if kind == "delay" else {}))
        elif kind == "disk":
            self.fault(node, kind="disk", fail="write")
        else:
            self.fault(node, kind="clock", skew_ms=skew)
        time.sleep(self.rng.uniform(2, 5))
        self.heal()
        time.sleep(self.rng.uniform(2, 4))

    def heal(self):
        for i in self.c.ids:
            n = self.c.node(i)
            if n.paused:
                self.c.resume(i)
            if not n.is_running():
                self.c.start(i)
            else:
                call(http_of(self.c, i), "DELETE", "/v1/faults")


def check(h, final_idem, final_txn):
    """Counts per checker over the history and the final reads [(partition, offset, value)]."""
    out = {k: 0 for k in CHECKERS}
    examples = defaultdict(list)
    read_idem = defaultdict(int)
    for _, _, v in final_idem:
        read_idem[v] += 1
    read_txn = defaultdict(int)
    for _, _, v in final_txn:
        read_txn[v] += 1
    committed = {v for vs in h.committed for v in vs}
    aborted = {v for vs in h.aborted for v in vs}
    for _, _, v in h.acked:
        if v not in read_idem:
            out["lost"] += 1
            examples["lost"].append(v)
    for v in committed:
        if v not in read_txn:
            out["lost"] += 1
            examples["lost"].append(v)
    for counts in (read_idem, read_txn):
        for v, k in counts.items():
            if k > 1:
                out["duplicates"] += k - 1
                examples["duplicates"].append(v)
    for _, _, v in list(h.polled) + list(final_txn):
        if v in aborted:
            out["aborted_reads"] += 1
            examples["aborted_reads"].append(v)
    at = {}
    for topic, items in ((IDEM, list(h.acked) + list(final_idem)), (TXN, list(h.polled) + list(final_txn))):
        for p, o, v in items:
            if o is None:
                # librdkafka may acknowledge a write without its offset (a retried batch the
                # broker had already written); the lost and duplicate checks still cover it.
                continue
            seen = at.setdefault((topic, p, o), v)
            if seen != v:
                out["inconsistent_offsets"] += 1
                examples["inconsistent_offsets"].append((topic, p, o, seen, v))
    final_at = defaultdict(dict)
    for p, o, v in final_txn:
        final_at[p][o] = v
    last = {}
    for p, o, v in h.polled:
        prev = last.get(p)
        if prev is not None:
            if o <= prev:
                out["non_monotonic_polls"] += 1
                examples["non_monotonic_polls"].append((p, prev, o))
            else:
                skipped = [x for x in range(prev + 1, o) if x in final_at[p]]
                if skipped:
                    out["non_monotonic_polls"] += len(skipped)
                    examples["non_monotonic_polls"].append((p, prev, o, skipped[:3]))
        last[p] = o
    return out, {k: v[:5] for k, v in examples.items()}


def run(c, seconds, seed, history_dir):
    """Runs the workloads and the nemesis for `seconds` on started cluster `c`; a report dict."""
    print(f"nemesis seed {seed}, {seconds} s", flush=True)
    rng = random.Random(seed)
    for t in (IDEM, TXN):
        c.create_topic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"})
        c.wait_partitions(t, PARTITIONS, full_isr=True, timeout=30)
    h, stop, t0 = History(), threading.Event(), time.monotonic()
    threads = [threading.Thread(target=idempotent_producer, args=(c, h, stop), daemon=True),
               threading.Thread(target=transactional_producer, args=(c, h, stop, random.Random(seed + 1)), daemon=True),
               threading.Thread(target=read_committed_consumer, args=(c, h, stop), daemon=True)]
    for t in threads:
        t.start()
    nemesis = Nemesis(c, h, rng, t0)
    try:
        while time.monotonic() - t0 < seconds:
            nemesis.once()
    finally:
        nemesis.heal()
    for t in (IDEM, TXN):
        wait_until(lambda: all(len(s.isr) == 3 for s in c.partitions(t).values()), 90, what=f"{t} fully in sync")
    time.sleep(3)  # the consumer catches up with the last commits
    stop.set()
    for t in threads:
        t.join(180)
    final_idem = read_all(c, IDEM, "read_uncommitted")
    final_txn = read_all(c, TXN, "read_committed")
    counts, examples = check(h, final_idem, final_txn)
    report = {"seed": seed, "seconds": seconds, "checkers": counts, "examples": examples,
              "operations": {"idempotent_acked": len(h.acked), "idempotent_failed": len(h.idem_failed),
                             "transactions_committed": len(h.committed), "transactions_aborted": len(h.aborted),
                             "transactions_unknown": len(h.unknown), "polled": len(h.polled)},
              "faults": len(h.faults), "faults_by_kind": {k: sum(1 for f in h.faults if f[1] == k) for k in NEMESES}}
    print(json.dumps(report, indent=1), flush=True)
    if any(counts.values()):
        path = Path(history_dir) / f"nemesis-history-{seed}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"report": report, "history": h.to_json(),
                                    "final_idem": final_idem, "final_txn": final_txn}))
        report["history"] = str(path)
        print(f"history kept in {path}", flush=True)
    return report


def read_all(c, topic, isolation):
    """Every record of every partition of `topic`, from the start to its end."""
    out = []
    for p in range(PARTITIONS):
        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "nemesis-unused", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": isolation})
        try:
            cons.assign([TopicPartition(topic, p, OFFSET_BEGINNING)])
            deadline, eof = time.monotonic() + 120, False
            while not eof and time.monotonic() < deadline:
                for m in cons.consume(num_messages=1000, timeout=0.5):
                    if m.error() is None:
                        out.append((p, m.offset(), m.value().decode()))
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        eof = True
            assert eof, f"{topic}-{p} not read to its end in 120 s"
        finally:
            cons.close()
    return out


def nemesis_cluster(base_dir):
    """A started 3-node cluster with fault injection and fast failure detection."""
    c = Cluster(base_dir, n=3, settings=dict(FAULT_SETTINGS))
    c.start_all()
    return c


def main():
    ap = argparse.ArgumentParser(description="Soak: the nemesis run for --minutes, reporting counts per checker.")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--history-dir", default="target/test-logs")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 31)
    with tempfile.TemporaryDirectory(prefix="sluice-nemesis-") as d:
        c = nemesis_cluster(d)
        try:
            report = run(c, a.minutes * 60, seed, a.history_dir)
        finally:
            c.shutdown()
    sys.exit(1 if any(report["checkers"].values()) else 0)


if __name__ == "__main__":
    main()
