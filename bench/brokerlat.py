#!/usr/bin/env python3
"""The broker's own end-to-end latency for bench/run, without a client library's floor.

  brokerlat.py --bootstrap B --topic T --rate R --seconds D --warmup W [--size S]

One process, two connections to the partition 0 leader (the bootstrap broker). Every
millisecond it sends one Produce request (acks=1) carrying one batch of R/1000 records of S
bytes: the same record rate and about the batches the librdkafka generator's linger.ms=1
makes, but each batch leaves the moment it is due, so no linger is in the figures. The other
connection keeps one Fetch (max wait 500 ms, min bytes 1) waiting at the end of the log.
A record's latency is from the send of its Produce request to the arrival of the Fetch
response that carries it. Batches reach the log in the order they were sent on the one
connection, so the k-th batch fetched belongs to the k-th request sent. Percentiles are over
batches due after the first W seconds. Python's own share (a select() loop, one clock read
per event) is in the figures for both brokers alike. Prints one JSON object.
"""
import argparse
import json
import select
import struct
import sys
import time

from wire import (connect, fetch_request, parse_response, produce_errors, produce_request,
                  read_response, record_batch)


def percentile(sorted_vals, q):
    k = max(0, min(len(sorted_vals) - 1, int(-(-q * len(sorted_vals) // 100)) - 1))
    return sorted_vals[k]


def high_watermark(resp):
    """Partition 0's high watermark in a one-partition Fetch v11 response."""
    pos = 4 + 4 + 2 + 4 + 4  # correlation id, throttle, error, session id, topics count
    pos += 2 + struct.unpack_from(">h", resp, pos)[0] + 4 + 4 + 2
    return struct.unpack_from(">q", resp, pos)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rate", type=float, required=True, help="records per second")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--size", type=int, default=1024)
    a = ap.parse_args()
    per_batch = max(1, round(a.rate / 1000))
    batch = record_batch(per_batch, a.size)
    prod, fetch = connect(a.bootstrap), connect(a.bootstrap)
    buf = memoryview(bytearray((50 << 20) + (1 << 20)))
    size_buf = memoryview(bytearray(4))

    # The fetch position: the end of the log (the topic may hold an earlier run's records).
    fetch.sendall(fetch_request(0, a.topic, [0], max_wait_ms=0))
    resp, _ = read_response(fetch, size_buf, buf)
    offset = high_watermark(resp)

    sent_at = []        # send time of each produce request, in send order
    fetched = 0         # batches fetched so far
    acked = 0
    lat, ack_lat = [], []
    corr = 0
    fcorr = 1
    fetch.sendall(fetch_request(fcorr, a.topic, [offset]))
    t0 = time.monotonic()
    warm_end, end = t0 + a.warmup, t0 + a.seconds
    behind_max = 0.0
    done_sending = False
    drain_until = None
    while True:
        now = time.monotonic()
        if not done_sending:
            due = int((now - t0) * 1000) + 1
            if now >= end:
                done_sending = True
                drain_until = now + 10.0
            else:
                behind_max = max(behind_max, (due - len(sent_at)) / 1000)
                while len(sent_at) < due:
                    corr += 1
                    req = produce_request(corr, a.topic, 1, [batch])
                    sent_at.append(time.monotonic())
                    prod.sendall(req)
        if done_sending and fetched >= len(sent_at) and acked >= len(sent_at):
            break
        if drain_until is not None and now > drain_until:
            raise SystemExit(f"brokerlat: {fetched} of {len(sent_at)} batches fetched, "
                             f"{acked} acknowledged, 10 s after the last send")
        timeout = 0.05 if done_sending else max(0.0, t0 + len(sent_at) / 1000 - now)
        ready, _, _ = select.select([prod, fetch], [], [], timeout)
        for sock in ready:
            resp, _ = read_response(sock, size_buf, buf)
            t = time.monotonic()
            if sock is prod:
                err = produce_errors(resp)[0]
                if err:
                    raise SystemExit(f"brokerlat: Produce error code {err}")
                if sent_at[acked] >= warm_end:
                    ack_lat.append(t - sent_at[acked])
                acked += 1
                continue
            offsets = [offset]
            records, _ = parse_response(resp, offsets)
            if records % per_batch:
                raise SystemExit(f"brokerlat: {records} records fetched, not whole batches")
            for k in range(fetched, fetched + records // per_batch):
                if sent_at[k] >= warm_end:
                    lat.append(t - sent_at[k])
            fetched += records // per_batch
            offset = offsets[0]
            fcorr += 1
            fetch.sendall(fetch_request(fcorr, a.topic, [offset]))
    prod.close()
    fetch.close()
    lat.sort()
    ack_lat.sort()
    ms = lambda v: v * 1000.0  # noqa: E731
    json.dump({
        "batches": len(sent_at), "records_per_batch": per_batch, "measured": len(lat),
        "achieved_rate": len(sent_at) * per_batch / a.seconds, "max_behind_s": behind_max,
        "p50_ms": ms(percentile(lat, 50)), "p99_ms": ms(percentile(lat, 99)),
        "p999_ms": ms(percentile(lat, 99.9)), "max_ms": ms(lat[-1]),
        "ack_p50_ms": ms(percentile(ack_lat, 50)), "ack_p99_ms": ms(percentile(ack_lat, 99)),
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
