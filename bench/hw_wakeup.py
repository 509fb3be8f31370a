#!/usr/bin/env python3
"""Consumer latency on a replicated topic: what the per-partition fetch wake-ups change.

A 3-node `sluice dev-cluster`, one RF=3 topic, an acks=all producer sending one small
record every `--interval-ms`, and a consumer long-polling the leader (librdkafka's
defaults: fetch.wait.max.ms=500, fetch.min.bytes=1). A record becomes visible once the
followers' fetches move the high watermark; latency is from its send to its delivery.

    bench/hw_wakeup.py [--bin target/release/sluice] [--records 200] [--interval-ms 50]

Run it against two builds to compare them (prints one JSON line). Needs
confluent-kafka (compat-tests/.venv has it). It stops the cluster it started.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def start_cluster(binary, base_port, data_dir):
    log = open(os.path.join(data_dir, "dev-cluster.log"), "w+")
    proc = subprocess.Popen(
        [binary, "dev-cluster", "--brokers", "3", "--base-port", str(base_port), "--data-dir", os.path.join(data_dir, "d")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        log.seek(0)
        m = re.search(r"bootstrap servers:\s*(\S+)", log.read())
        if m:
            return proc, m.group(1)
        time.sleep(0.1)
    stop(proc)
    raise SystemExit("dev-cluster did not report its bootstrap servers")


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/sluice")
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--interval-ms", type=int, default=50)
    ap.add_argument("--base-port", type=int, default=23092)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = start_cluster(a.bin, a.base_port, tmp)
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            deadline = time.time() + 30
            while True:
                try:
                    admin.create_topics([NewTopic("wake", 1, 3)])["wake"].result(10)
                    break
                except Exception:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.5)
            prod = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
            cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "wake", "auto.offset.reset": "earliest"})
            cons.subscribe(["wake"])
            # Warm up: the consumer has joined and fetches at the log end.
            prod.produce("wake", b"warm")
            prod.flush(10)
            while (m := cons.poll(1.0)) is None or m.error():
                pass
            lat = []
            for i in range(a.records):
                sent = time.monotonic()
                prod.produce("wake", str(i).encode())
                prod.poll(0)
                got = None
                while got is None:
                    m = cons.poll(2.0)
                    if m is not None and not m.error() and m.value() == str(i).encode():
                        got = time.monotonic()
                lat.append((got - sent) * 1000)
                time.sleep(max(0.0, a.interval_ms / 1000 - (time.monotonic() - sent)))
            prod.flush(10)
            cons.close()
            print(json.dumps({"bin": a.bin, "records": a.records, "p50_ms": round(percentile(lat, 0.5), 2),
                              "p99_ms": round(percentile(lat, 0.99), 2), "max_ms": round(max(lat), 2)}))
        finally:
            stop(proc)


if __name__ == "__main__":
    sys.exit(main())
