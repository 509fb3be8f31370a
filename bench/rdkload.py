#!/usr/bin/env python3
"""librdkafka-based load generator for bench/run (confluent-kafka from bench/.venv).

Every subcommand prints exactly one JSON object on stdout (diagnostics go to stderr) and exits
non-zero on any error, so the harness can tell a failed run from a slow one.

  create-topics --bootstrap B --topic NAME:PARTITIONS[:RF] [--topic ...] [--config K=V ...]
      Creates the topics (replication factor RF, default 1; every --config on every topic) with
      the admin API and waits until every partition has a leader and all RF replicas in its
      ISR. This is the one admin tool used for both brokers.
  create-acls --bootstrap B --principal P --topic-prefix X --count N
      Creates N ACLs: ALLOW of WRITE and READ for principal P on the topics prefixed X, and
      N - 2 others that match neither P nor X (other principals and topics, literal and
      prefixed, allow and deny), then waits until DescribeAcls lists them all.
  produce --bootstrap B --topic T --count N --size S --acks 1|all
      Produces N records of S bytes as fast as the client goes; the clock runs from the first
      produce() until flush() has every delivery report.
  consume --bootstrap B --topic T --count N
      assign()s every partition from the beginning and reads N records; the clock runs from
      assign() to the N-th record.
  e2e --bootstrap B --topic T --rate R --seconds D --warmup W --size S --acks 1|all
      End-to-end latency at a fixed rate: a producer (this process) sends R records/s for D
      seconds, each carrying CLOCK_MONOTONIC at the produce() call; a consumer in a separate
      process (no GIL sharing) takes the clock when a record reaches the application and
      reports percentiles over records sent after the first W seconds.

Client settings are librdkafka's defaults except where stated: acks; consumers set
queued.min.messages=1000000 and fetch.queue.backoff.ms=10 (see new_consumer); the e2e producer uses
linger.ms=1 by default (--linger-ms): short enough not to dominate the latency, long enough
that the producer does not send one tiny request per record (with linger.ms=0 at ~17k
records/s a single Kafka 4.4 node on 2 shared cores fell behind: p50 ~100 ms).
"""
import argparse
import json
import os
import select
import struct
import subprocess
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka import OFFSET_BEGINNING
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

MIB = 1024 * 1024
# e2e payload header: send time (ns, CLOCK_MONOTONIC), sequence number, warm-up flag, run id
# (records of another run in the same topic are not counted).
E2E_HDR = struct.Struct("<qQBI")


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def log(msg):
    print(f"rdkload: {msg}", file=sys.stderr, flush=True)


def emit(obj):
    print(json.dumps(obj), flush=True)


class ClientErrors:
    """Collects librdkafka's global error callbacks (connection failures etc.)."""

    def __init__(self):
        self.errors = []

    def __call__(self, err):
        # Transient transport errors are normal while a broker starts; keep them for the log.
        self.errors.append(str(err))
        log(f"client error: {err}")


# ------------------------------------------------------------------------------ create-topics
def cmd_create_topics(a):
    errs = ClientErrors()
    admin = AdminClient({"bootstrap.servers": a.bootstrap, "error_cb": errs})
    want = {}  # name -> (partitions, replication factor)
    for spec in a.topic:
        name, parts, rf = (spec.split(":") + ["1", "1"])[:3]
        want[name] = (int(parts), int(rf))
    config = dict(kv.split("=", 1) for kv in a.config)
    deadline = time.monotonic() + a.timeout
    pending = dict(want)
    while pending:
        if time.monotonic() > deadline:
            raise SystemExit(f"create-topics: timed out; still pending: {sorted(pending)}")
        futs = admin.create_topics(
            [NewTopic(n, num_partitions=p, replication_factor=rf, config=config)
             for n, (p, rf) in pending.items()],
            request_timeout=15,
        )
        for name, fut in futs.items():
            try:
                fut.result(timeout=max(1, deadline - time.monotonic()))
                pending.pop(name, None)
            except KafkaException as e:
                err = e.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    pending.pop(name, None)
                elif err.retriable() or err.code() in (
                    KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError.NOT_CONTROLLER,
                    KafkaError._ALL_BROKERS_DOWN,
                ):
                    log(f"create {name}: {err} (retrying)")
                else:
                    raise SystemExit(f"create-topics: {name}: {err}")
        if pending:
            time.sleep(0.5)
    # Wait until metadata shows every partition with a leader and a full ISR.
    while True:
        md = admin.list_topics(timeout=10)
        missing = []
        for name, (parts, rf) in want.items():
            t = md.topics.get(name)
            if t is None or t.error is not None or len(t.partitions) != parts or any(
                p.leader < 0 or len(p.isrs) < rf for p in t.partitions.values()
            ):
                missing.append(name)
        if not missing:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"create-topics: partitions without leader or full ISR: {missing}")
        time.sleep(0.2)
    emit({"created": {n: {"partitions": p, "replication_factor": rf} for n, (p, rf) in want.items()},
          "config": config})


def cmd_create_acls(a):
    admin = AdminClient({"bootstrap.servers": a.bootstrap, "error_cb": ClientErrors()})
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    lit, pre = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    acls = [AclBinding(ResourceType.TOPIC, a.topic_prefix, pre, a.principal, "*", op, allow)
            for op in (AclOperation.WRITE, AclOperation.READ)]
    for i in range(a.count - len(acls)):
        # Other principals on other topics: what an authorizer must look past on each request.
        acls.append(AclBinding(
            ResourceType.TOPIC, f"other-{i}", pre if i % 4 == 0 else lit, f"User:other-{i % 97}",
            "*", (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)[i % 3],
            deny if i % 10 == 0 else allow))
    for i in range(0, len(acls), 200):
        for binding, fut in admin.create_acls(acls[i:i + 200], request_timeout=30).items():
            fut.result()
    any_acl = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)
    deadline = time.monotonic() + a.timeout
    while True:
        n = len(admin.describe_acls(any_acl, request_timeout=30).result())
        if n >= a.count:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"create-acls: {n} of {a.count} ACLs listed")
        time.sleep(0.2)
    emit({"acls": n})


# ------------------------------------------------------------------------------------ produce
def cmd_produce(a):
    errs = ClientErrors()
    failed = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(str(err))

    p = Producer({
        "bootstrap.servers": a.bootstrap,
        "acks": a.acks,
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
        "error_cb": errs,
    })
    # Connect and fetch metadata before the clock starts (the Java tool does the same
    # implicitly: its clock starts at the first send after the metadata wait).
    p.list_topics(a.topic, timeout=30)
    payload = os.urandom(a.size)
    produce = p.produce
    topic = a.topic
    t0 = time.monotonic()
    for i in range(a.count):
        while True:
            try:
                produce(topic, payload)
                break
            except BufferError:
                p.poll(0.005)
        if i & 0x3FFF == 0:
            p.poll(0)
    left = p.flush(a.timeout)
    t1 = time.monotonic()
    if left:
        raise SystemExit(f"produce: {left} records still undelivered after {a.timeout}s")
    if failed:
        raise SystemExit(f"produce: {len(failed)} delivery failures, first: {failed[0]}")
    secs = t1 - t0
    emit({
        "records": a.count, "bytes": a.count * a.size, "seconds": secs,
        "records_per_s": a.count / secs, "mib_per_s": a.count * a.size / MIB / secs,
    })


# ------------------------------------------------------------------------------------ consume
def partitions_of(client, topic, timeout=30):
    md = client.list_topics(topic, timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise SystemExit(f"topic {topic}: {t.error if t else 'missing'}")
    return sorted(t.partitions)


def next_batch(c, timeout):
    """Whatever the consumer has, without waiting for more once one record is there.
    (consume(num_messages=N, timeout=T) waits until it has N records or T has passed, which
    would add up to T to every latency and to the end of every throughput run.)"""
    m = c.poll(timeout)
    if m is None:
        return []
    return [m] + c.consume(num_messages=10000, timeout=0)


def new_consumer(bootstrap, errs, group):
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        # librdkafka pauses fetching for fetch.queue.backoff.ms (default 1000) whenever its local
        # queue holds queued.min.messages (default 100000) records; a reader that drains in
        # batches trips that all the time and then measures the pauses, not the broker.
        "queued.min.messages": 1000000,
        "fetch.queue.backoff.ms": 10,
        "error_cb": errs,
    })


def cmd_consume(a):
    errs = ClientErrors()
    c = new_consumer(a.bootstrap, errs, f"bench-rdk-consume-{os.getpid()}")
    parts = partitions_of(c, a.topic)
    n = 0
    nbytes = 0
    t0 = time.monotonic()
    c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in parts])
    last = t0
    while n < a.count:
        msgs = next_batch(c, 1.0)
        t = time.monotonic()
        if not msgs:
            if t - last > a.idle_timeout:
                raise SystemExit(f"consume: only {n} of {a.count} records, nothing for "
                                 f"{a.idle_timeout}s")
            continue
        last = t
        # map() over the C methods keeps the Python loop out of the per-record path.
        if any(map(Message.error, msgs)):
            raise SystemExit(f"consume: {next(filter(None, map(Message.error, msgs)))}")
        n += len(msgs)
        nbytes += sum(map(len, msgs))
    t1 = time.monotonic()
    c.close()
    secs = t1 - t0
    emit({
        "records": n, "bytes": nbytes, "seconds": secs,
        "records_per_s": n / secs, "mib_per_s": nbytes / MIB / secs,
    })


# ---------------------------------------------------------------------------------------- e2e
def percentile(sorted_vals, q):
    """Nearest-rank percentile (q in 0..100) of a sorted list."""
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, int(-(-q * len(sorted_vals) // 100)) - 1))
    return sorted_vals[k]


def cmd_e2e_consume(a):
    """Child of `e2e`: reads the topic, says READY, then reads the total from stdin."""
    errs = ClientErrors()
    c = new_consumer(a.bootstrap, errs, f"bench-rdk-e2e-{os.getpid()}")
    parts = partitions_of(c, a.topic)
    c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in parts])
    c.poll(0.5)  # start the fetchers (the topic is new and empty)
    print("READY", flush=True)
    lat = []          # ns, records sent after warm-up only
    seen = 0
    foreign = 0
    run_id = a.run_id
    total = None
    total_at = None
    stdin_fd = sys.stdin.fileno()
    unpack = E2E_HDR.unpack_from
    while True:
        m = c.poll(0.05)
        if m is not None:
            t = now_ns()  # one clock read for this record ...
            msgs = [m]
            while msgs:
                for m in msgs:
                    if m.error() is not None:
                        raise SystemExit(f"e2e consumer: {m.error()}")
                    ts, _seq, warm, rid = unpack(m.value())
                    if rid != run_id:
                        foreign += 1
                        continue
                    seen += 1
                    if not warm:
                        lat.append(t - ts)
                msgs = c.consume(num_messages=10000, timeout=0)
                t = now_ns()  # ... and one for each batch already waiting behind it
        if total is None and select.select([stdin_fd], [], [], 0)[0]:
            line = sys.stdin.readline()
            total = int(line) if line.strip() else -1
            total_at = time.monotonic()
        if total is not None and (seen >= total or time.monotonic() - total_at > a.drain_timeout):
            break
    c.close()
    lat.sort()
    us = lambda v: None if v is None else v / 1000.0  # noqa: E731
    emit({
        "received": seen, "measured": len(lat), "foreign": foreign,
        "p50_us": us(percentile(lat, 50)), "p99_us": us(percentile(lat, 99)),
        "p999_us": us(percentile(lat, 99.9)), "max_us": us(lat[-1] if lat else None),
        "mean_us": us(sum(lat) / len(lat) if lat else None),
    })


def cmd_e2e(a):
    run_id = int.from_bytes(os.urandom(4), "little")
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "e2e-consume", "--bootstrap", a.bootstrap,
         "--topic", a.topic, "--drain-timeout", str(a.drain_timeout), "--run-id", str(run_id)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        ready = child.stdout.readline()
        if ready.strip() != "READY":
            raise SystemExit(f"e2e: consumer did not start (exit {child.wait()})")
        errs = ClientErrors()
        failed = []

        def on_delivery(err, msg):
            if err is not None:
                failed.append(str(err))

        p = Producer({
            "bootstrap.servers": a.bootstrap, "acks": a.acks, "linger.ms": a.linger_ms,
            "delivery.report.only.error": True, "on_delivery": on_delivery, "error_cb": errs,
        })
        p.list_topics(a.topic, timeout=30)
        pad = os.urandom(max(0, a.size - E2E_HDR.size))
        pack = E2E_HDR.pack
        produce = p.produce
        topic = a.topic
        rate = float(a.rate)
        sent = 0
        behind_max = 0.0
        t0 = time.monotonic()
        warm_end = t0 + a.warmup
        end = t0 + a.seconds
        while True:
            t = time.monotonic()
            if t >= end:
                break
            due = int((t - t0) * rate) + 1
            behind_max = max(behind_max, (due - sent) / rate)
            warm = 1 if t < warm_end else 0
            while sent < due:
                try:
                    produce(topic, pack(now_ns(), sent, warm, run_id) + pad)
                    sent += 1
                except BufferError:
                    p.poll(0.001)
            p.poll(0)
            nxt = t0 + due / rate
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(min(delay, 0.001))
        elapsed = time.monotonic() - t0
        left = p.flush(30)
        if left:
            raise SystemExit(f"e2e: {left} records undelivered")
        if failed:
            raise SystemExit(f"e2e: {len(failed)} delivery failures, first: {failed[0]}")
        child.stdin.write(f"{sent}\n")
        child.stdin.flush()
        out, _ = child.communicate(timeout=a.drain_timeout + 30)
        if child.returncode != 0:
            raise SystemExit(f"e2e: consumer exited {child.returncode}")
        res = json.loads(out.strip().splitlines()[-1])
        res.update({
            "sent": sent, "target_rate": rate, "achieved_rate": sent / elapsed,
            "max_behind_s": behind_max,
        })
        if res["received"] < sent:
            res["lost"] = sent - res["received"]
        emit(res)
        if res["received"] < sent:
            raise SystemExit(f"e2e: consumer got {res['received']} of {sent} records")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("create-topics")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", action="append", required=True, help="NAME:PARTITIONS[:RF]")
    s.add_argument("--config", action="append", default=[], help="K=V, topic config for all")
    s.add_argument("--timeout", type=float, default=60)
    s = sub.add_parser("create-acls")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--principal", required=True)
    s.add_argument("--topic-prefix", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--timeout", type=float, default=60)
    s = sub.add_parser("produce")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--size", type=int, required=True)
    s.add_argument("--acks", choices=["1", "all"], required=True)
    s.add_argument("--timeout", type=float, default=120)
    s = sub.add_parser("consume")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--idle-timeout", type=float, default=20)
    s = sub.add_parser("e2e")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--rate", type=float, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--warmup", type=float, default=2)
    s.add_argument("--size", type=int, default=1024)
    s.add_argument("--acks", choices=["1", "all"], default="1")
    s.add_argument("--linger-ms", type=float, default=1)
    s.add_argument("--drain-timeout", type=float, default=20)
    s = sub.add_parser("e2e-consume")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--topic", required=True)
    s.add_argument("--drain-timeout", type=float, default=20)
    s.add_argument("--run-id", type=int, required=True)
    a = ap.parse_args()
    {
        "create-topics": cmd_create_topics, "create-acls": cmd_create_acls, "produce": cmd_produce, "consume": cmd_consume,
        "e2e": cmd_e2e, "e2e-consume": cmd_e2e_consume,
    }[a.cmd](a)


if __name__ == "__main__":
    main()
