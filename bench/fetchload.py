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
import socket
import struct
import sys
import time

MIB = 1024 * 1024
FETCH_MAX_BYTES = 50 * MIB
PARTITION_MAX_BYTES = 1 * MIB
MAX_WAIT_MS = 500
FETCH_VERSION = 11  # the last version without tagged fields: fixed-layout parsing
BATCH_HEADER = 61   # bytes of a v2 record batch header, up to and including its record count


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def fetch_request(corr, topic, offsets):
    body = struct.pack(">iiiibii", -1, MAX_WAIT_MS, 1, FETCH_MAX_BYTES, 0, 0, -1)
    body += struct.pack(">i", 1) + kstr(topic) + struct.pack(">i", len(offsets))
    for p, off in enumerate(offsets):
        body += struct.pack(">iiqqi", p, -1, off, -1, PARTITION_MAX_BYTES)
    body += struct.pack(">i", 0) + kstr("")  # no forgotten topics; rack ""
    msg = struct.pack(">hhi", 1, FETCH_VERSION, corr) + kstr("bench-fetchload") + body
    return struct.pack(">i", len(msg)) + msg


def recv_exact(sock, view, n):
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n], n - got)
        if k == 0:
            raise SystemExit("fetchload: the broker closed the connection")
        got += k
    return view[:n]


def parse_response(mv, offsets):
    """Advances offsets past every whole batch in the response. Returns (records, bytes)."""
    u = struct.unpack_from
    pos = 4  # correlation id
    _throttle, err, _session, ntopics = u(">ihii", mv, pos)
    pos += 14
    if err:
        raise SystemExit(f"fetchload: Fetch error code {err}")
    records = nbytes = 0
    for _ in range(ntopics):
        pos += 2 + u(">h", mv, pos)[0]
        nparts = u(">i", mv, pos)[0]
        pos += 4
        for _ in range(nparts):
            p, perr = u(">ih", mv, pos)
            pos += 6 + 24  # high watermark, last stable offset, log start offset
            if perr:
                raise SystemExit(f"fetchload: partition {p}: error code {perr}")
            naborted = u(">i", mv, pos)[0]
            pos += 4 + max(naborted, 0) * 16 + 4  # aborted transactions, preferred replica
            size = u(">i", mv, pos)[0]
            pos += 4
            end = pos + max(size, 0)
            q = pos
            # A trailing partial batch (Kafka cuts responses at the byte limit) is skipped:
            # the next fetch starts at its offset.
            while q + BATCH_HEADER <= end:
                base, length = u(">qi", mv, q)
                if q + 12 + length > end:
                    break
                last_delta = u(">i", mv, q + 23)[0]
                records += u(">i", mv, q + 57)[0]
                offsets[p] = base + last_delta + 1
                q += 12 + length
            nbytes += q - pos
            pos = end
    return records, nbytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--count", type=int, required=True, help="records in the topic, per pass")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--idle-timeout", type=float, default=10.0)
    a = ap.parse_args()
    host, port = a.bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = memoryview(bytearray(FETCH_MAX_BYTES + MIB))
    size_buf = memoryview(bytearray(4))
    corr = fetches = records = nbytes = 0
    t0 = time.monotonic()
    for _ in range(a.passes):
        offsets = [0] * a.partitions
        got = 0
        last = time.monotonic()
        while got < a.count:
            corr += 1
            sock.sendall(fetch_request(corr, a.topic, offsets))
            n = struct.unpack(">i", recv_exact(sock, size_buf, 4))[0]
            if n > len(buf):
                raise SystemExit(f"fetchload: response of {n} bytes")
            resp = recv_exact(sock, buf, n)
            if struct.unpack_from(">i", resp, 0)[0] != corr:
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
    sock.close()
    json.dump({
        "records": records, "bytes": nbytes, "seconds": secs, "passes": a.passes,
        "fetches": fetches, "bytes_per_fetch": nbytes / max(fetches, 1),
        "records_per_s": records / secs, "mib_per_s": nbytes / MIB / secs,
    }, sys.stdout)
    print()


if __name__ == "__main__":
    main()
