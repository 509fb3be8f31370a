#!/usr/bin/env python3
"""Fetch-only consumer for bench/run: the broker's own consume ceiling.

  fetchload.py --bootstrap B --topic T --partitions P --count N [--passes K]

Reads partitions 0..P-1 of T from offset 0 until N records have come back, K times over, with
plain Fetch requests (v11) on one connection, one request in flight, at the Java consumer's
default sizes (fetch.max.bytes 50 MiB, max.partition.fetch.bytes 1 MiB, fetch.max.wait.ms 500,
fetch.min.bytes 1). Of each response it reads the bytes into one reused buffer and parses only
the record batch headers (base offset, length, last offset delta, record count): no CRC check,
no per-record decoding. A real consumer does that per-record work on its own core; on a 2-core
machine that work, not the broker, sets what Kafka's consumers reach, so this client shows what
each broker itself can serve. Prints one JSON object; exits non-zero on any Kafka error or a
short read.
"""
import argparse
import json
import sys
import time

from wire import connect, fetch_request, parse_response, read_response

MIB = 1024 * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--count", type=int, required=True, help="records in the topic, per pass")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--idle-timeout", type=float, default=10.0)
    a = ap.parse_args()
    sock = connect(a.bootstrap)
    buf = memoryview(bytearray(51 * MIB))
    size_buf = memoryview(bytearray(4))
    corr = fetches = records = nbytes = 0
    cpu0 = time.process_time()
    t0 = time.monotonic()
    for _ in range(a.passes):
        offsets = [0] * a.partitions
        got = 0
        last = time.monotonic()
        while got < a.count:
            corr += 1
            sock.sendall(fetch_request(corr, a.topic, offsets))
            resp, rcorr = read_response(sock, size_buf, buf)
            if rcorr != corr:
                raise SystemExit("fetchload: response out of order")
            fetches += 1
            r, b = parse_response(resp, offsets)
            got += r
            nbytes += b
            now = time.monotonic()
            if r:
                last = now
            elif now - last > a.idle_timeout:
                raise SystemExit(f"fetchload: {got} of {a.count} records, then nothing for "
                                 f"{a.idle_timeout} s")
        records += got
    secs = time.monotonic() - t0
    cpu = time.process_time() - cpu0
    sock.close()
    json.dump({
        "records": records, "cpu_s": cpu, "bytes": nbytes, "seconds": secs, "passes": a.passes,
        "fetches": fetches, "bytes_per_fetch": nbytes / max(fetches, 1),
        "records_per_s": records / secs, "mib_per_s": nbytes / MIB / secs,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
