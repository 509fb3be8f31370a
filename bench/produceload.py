#!/usr/bin/env python3
"""Produce-only client for bench/run: the broker's own produce ceiling.

  produceload.py --bootstrap B --topic T --partitions P --count N --size S --acks 1|all

Sends N records of S bytes to partitions 0..P-1 of T as Produce requests (v7) on one
connection, each request one batch per partition, up to 5 requests in flight (the Java
producer's max.in.flight.requests.per.connection). A batch holds librdkafka's defaults worth of
records (at most 10 000 and about 1 MB, batch.num.messages and batch.size). The batch is built
once, before the clock starts, and sent again and again: the broker assigns the offsets, which
lie outside the CRC, so every copy is a valid new batch. The client does no per-record work,
which at 100 B is what bounds the real producers on a 2-core machine; what it measures is the
broker's validation and append and the kernel's writes to the page cache. The clock runs from
the first send to the last answer. Prints one JSON object; exits non-zero on any error code.
"""
import argparse
import collections
import json
import sys
import time

from wire import connect, produce_errors, produce_request, read_response, record_batch

MIB = 1024 * 1024
IN_FLIGHT = 5
BATCH_RECORDS = 10_000
BATCH_BYTES = 1_000_000
RECORD_OVERHEAD = 10  # a keyless record's framing: length, attributes, deltas, sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--acks", choices=["1", "all"], default="1")
    a = ap.parse_args()
    acks = -1 if a.acks == "all" else 1
    per_batch = max(1, min(BATCH_RECORDS, BATCH_BYTES // (a.size + RECORD_OVERHEAD)))
    batch = record_batch(per_batch, a.size)
    per_request = per_batch * a.partitions
    requests = -(-a.count // per_request)
    sock = connect(a.bootstrap)
    buf = memoryview(bytearray(MIB))
    size_buf = memoryview(bytearray(4))
    pending = collections.deque()
    sent = answered = 0
    cpu0 = time.process_time()
    t0 = time.monotonic()
    while answered < requests:
        while sent < requests and len(pending) < IN_FLIGHT:
            sent += 1
            sock.sendall(produce_request(sent, a.topic, acks, [batch] * a.partitions))
            pending.append(sent)
        resp, corr = read_response(sock, size_buf, buf)
        if corr != pending.popleft():
            raise SystemExit("produceload: response out of order")
        errs = [e for e in produce_errors(resp) if e]
        if errs:
            raise SystemExit(f"produceload: Produce error code {errs[0]}")
        answered += 1
    secs = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    sock.close()
    records = requests * per_request
    nbytes = records * a.size
    json.dump({
        "records": records, "cpu_s": cpu, "value_bytes": nbytes, "seconds": secs, "requests": requests,
        "records_per_batch": per_batch, "batch_bytes": len(batch),
        "records_per_s": records / secs, "mib_per_s": nbytes / MIB / secs,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
