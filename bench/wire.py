"""Just enough of the Kafka wire protocol for the bench's raw clients (fetchload.py,
brokerlat.py, produceload.py): request framing, v2 record batches, the Fetch response walk."""
import os
import socket
import struct
import time

FETCH_VERSION = 11   # the last versions without tagged fields: fixed-layout parsing
PRODUCE_VERSION = 7
BATCH_HEADER = 61    # bytes of a v2 record batch header, up to and including its record count


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request(api_key, version, corr, body, client_id="bench"):
    """A framed request with a v1 header."""
    msg = struct.pack(">hhi", api_key, version, corr) + kstr(client_id) + body
    return struct.pack(">i", len(msg)) + msg


def fetch_request(corr, topic, offsets, partition_max=1 << 20, max_bytes=50 << 20,
                  max_wait_ms=500):
    """Fetch v11 of partitions 0..len(offsets)-1 of one topic, no session."""
    body = struct.pack(">iiiibii", -1, max_wait_ms, 1, max_bytes, 0, 0, -1)
    body += struct.pack(">i", 1) + kstr(topic) + struct.pack(">i", len(offsets))
    for p, off in enumerate(offsets):
        body += struct.pack(">iiqqi", p, -1, off, -1, partition_max)
    body += struct.pack(">i", 0) + kstr("")  # no forgotten topics; rack ""
    return request(1, FETCH_VERSION, corr, body)


def produce_request(corr, topic, acks, batches):
    """Produce v7 of one batch to each of partitions 0..len(batches)-1."""
    body = struct.pack(">hhi", -1, acks, 30000) + struct.pack(">i", 1) + kstr(topic)
    body += struct.pack(">i", len(batches))
    for p, b in enumerate(batches):
        body += struct.pack(">ii", p, len(b)) + b
    return request(0, PRODUCE_VERSION, corr, body)


def produce_errors(resp):
    """The partition error codes of a one-topic Produce v7 response."""
    pos = 4 + 4  # correlation id, topics count
    pos += 2 + struct.unpack_from(">h", resp, pos)[0]
    n = struct.unpack_from(">i", resp, pos)[0]
    pos += 4
    errs = []
    for _ in range(n):
        errs.append(struct.unpack_from(">h", resp, pos + 4)[0])
        pos += 4 + 2 + 24
    return errs


def recv_exact(sock, view, n):
    got = 0
    while got < n:
        k = sock.recv_into(view[got:n], n - got)
        if k == 0:
            raise SystemExit("the broker closed the connection")
        got += k
    return view[:n]


def parse_response(mv, offsets):
    """Advances offsets past every whole batch in the response. Returns (records, bytes)."""
    u = struct.unpack_from
    pos = 4  # correlation id
    _throttle, err, _session, ntopics = u(">ihii", mv, pos)
    pos += 14
    if err:
        raise SystemExit(f"Fetch error code {err}")
    records = nbytes = 0
    for _ in range(ntopics):
        pos += 2 + u(">h", mv, pos)[0]
        nparts = u(">i", mv, pos)[0]
        pos += 4
        for _ in range(nparts):
            p, perr = u(">ih", mv, pos)
            pos += 6 + 24  # high watermark, last stable offset, log start offset
            if perr:
                raise SystemExit(f"Fetch: partition {p}: error code {perr}")
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


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v):
    v = (v << 1) ^ (v >> 63)  # zigzag
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record_batch(count, size):
    """One v2 batch of `count` records with `size`-byte values and no keys. The base offset and
    leader epoch lie outside the CRC and the broker assigns them, so the same bytes can be sent
    again and again."""
    value = os.urandom(size)
    recs = bytearray()
    for i in range(count):
        body = (b"\x00" + varint(0) + varint(i) + varint(-1) + varint(size) + value +
                varint(0))
        recs += varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, count - 1, now, now, -1, -1, -1, count) + recs
    crc = crc32c(after_crc)
    head = struct.pack(">iBI", -1, 2, crc)
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def connect(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(sock, size_buf, buf):
    """The next response frame, in buf (a memoryview), and its correlation id."""
    n = struct.unpack(">i", recv_exact(sock, size_buf, 4))[0]
    if n > len(buf):
        raise SystemExit(f"a response of {n} bytes")
    resp = recv_exact(sock, buf, n)
    return resp, struct.unpack_from(">i", resp, 0)[0]
