"""A tiny hand-written Kafka wire-protocol encoder/decoder for the raw-socket tests.

Only what the tests need is implemented: request framing (header v1 / v2),
primitive readers, ApiVersions, Metadata (v1-v8), Produce v7, ListOffsets v1,
InitProducerId (v1 or flexible v2-v4) and magic-v2 record batches with CRC-32C.
"""

import socket
import struct
import time

# ---------------------------------------------------------------------------
# API keys, error codes
# ---------------------------------------------------------------------------
PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
FIND_COORDINATOR = 10
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
INIT_PRODUCER_ID = 22
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
INCREMENTAL_ALTER_CONFIGS = 44
DESCRIBE_CLUSTER = 60
DESCRIBE_QUORUM = 55

# First request version that uses the flexible (v2) request header.
FIRST_FLEXIBLE = {
    PRODUCE: 9,
    FETCH: 12,
    LIST_OFFSETS: 6,
    METADATA: 9,
    FIND_COORDINATOR: 3,
    API_VERSIONS: 3,
    CREATE_TOPICS: 5,
    DELETE_TOPICS: 4,
    INIT_PRODUCER_ID: 2,
    DESCRIBE_CONFIGS: 4,
    ALTER_CONFIGS: 2,
    CREATE_PARTITIONS: 2,
    INCREMENTAL_ALTER_CONFIGS: 1,
    DESCRIBE_CLUSTER: 0,
    DESCRIBE_QUORUM: 0,
}

NONE = 0
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_VERSION = 35
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


def is_flexible(api_key, version):
    first = FIRST_FLEXIBLE.get(api_key)
    return first is not None and version >= first


# ---------------------------------------------------------------------------
# Primitive encoders
# ---------------------------------------------------------------------------
def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def u32(v):
    return struct.pack(">I", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return i16(len(b)) + b


def nullable_string(s):
    if s is None:
        return i16(-1)
    return string(s)


def kbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def array(items, enc):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(v):
    """Zig-zag signed varint (also used for varlong)."""
    return uvarint((v << 1) ^ (v >> 63))


def compact_string(s):
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


def compact_nullable_string(s):
    if s is None:
        return uvarint(0)
    return compact_string(s)


EMPTY_TAGS = b"\x00"


# ---------------------------------------------------------------------------
# Decoder
# ---------------------------------------------------------------------------
class Reader:
    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def remaining(self):
        return len(self.data) - self.pos

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(
                f"short read: want {n} bytes at {self.pos}, have {len(self.data) - self.pos}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self):
        return struct.unpack(">b", self._take(1))[0]

    def i16(self):
        return struct.unpack(">h", self._take(2))[0]

    def i32(self):
        return struct.unpack(">i", self._take(4))[0]

    def i64(self):
        return struct.unpack(">q", self._take(8))[0]

    def boolean(self):
        return self._take(1) != b"\x00"

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        return self._take(n).decode()

    def bytes(self):
        n = self.i32()
        if n < 0:
            return None
        return self._take(n)

    def array(self, dec):
        n = self.i32()
        if n < 0:
            return None
        return [dec(self) for _ in range(n)]

    def uvarint(self):
        shift = 0
        out = 0
        while True:
            b = self._take(1)[0]
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise ValueError("varint too long")

    def compact_string(self):
        n = self.uvarint()
        if n == 0:
            return None
        return self._take(n - 1).decode()

    def compact_array(self, dec):
        n = self.uvarint()
        if n == 0:
            return None
        return [dec(self) for _ in range(n - 1)]

    def tagged_fields(self):
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli), table driven, pure Python
# ---------------------------------------------------------------------------
def _make_crc32c_table():
    poly = 0x82F63B78  # reflected Castagnoli polynomial
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, "crc32c self-check failed"


# ---------------------------------------------------------------------------
# Record batch (magic v2)
# ---------------------------------------------------------------------------
def encode_record(offset_delta, key, value, headers=(), timestamp_delta=0):
    body = bytearray()
    body += i8(0)  # record attributes
    body += varint(timestamp_delta)
    body += varint(offset_delta)
    if key is None:
        body += varint(-1)
    else:
        body += varint(len(key)) + key
    if value is None:
        body += varint(-1)
    else:
        body += varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        body += varint(len(hkb)) + hkb
        if hv is None:
            body += varint(-1)
        else:
            body += varint(len(hv)) + hv
    return varint(len(body)) + bytes(body)


def record_batch(records, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 base_offset=0, timestamp_ms=None, attributes=0):
    """records: list of (key: bytes|None, value: bytes|None, headers: list[(str, bytes|None)])."""
    if timestamp_ms is None:
        timestamp_ms = int(time.time() * 1000)
    recs = b"".join(
        encode_record(i, k, v, h) for i, (k, v, h) in enumerate(records))
    after_crc = (
        i16(attributes)
        + i32(len(records) - 1)  # last offset delta
        + i64(timestamp_ms)  # base timestamp
        + i64(timestamp_ms)  # max timestamp
        + i64(producer_id)
        + i16(producer_epoch)
        + i32(base_sequence)
        + i32(len(records))
        + recs
    )
    crc = crc32c(after_crc)
    # batchLength counts everything after the batchLength field itself:
    # partitionLeaderEpoch(4) + magic(1) + crc(4) + rest
    batch_length = 4 + 1 + 4 + len(after_crc)
    return i64(base_offset) + i32(batch_length) + i32(-1) + i8(2) + u32(crc) + after_crc


def batch_crc_is_valid(batch):
    crc = struct.unpack(">I", batch[17:21])[0]
    return crc == crc32c(batch[21:])


# ---------------------------------------------------------------------------
# Connection
# ---------------------------------------------------------------------------
class ConnectionClosed(Exception):
    pass


def frame(api_key, version, correlation_id, body, client_id="sluice-compat",
          flexible=None):
    if flexible is None:
        flexible = is_flexible(api_key, version)
    header = i16(api_key) + i16(version) + i32(correlation_id) + nullable_string(client_id)
    if flexible:
        header += EMPTY_TAGS
    payload = header + body
    return i32(len(payload)) + payload


class Conn:
    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.next_corr = 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError as e:
                raise ConnectionClosed(f"connection reset: {e}") from e
            if not chunk:
                raise ConnectionClosed(f"EOF after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_frame(self):
        (n,) = struct.unpack(">i", self.recv_exact(4))
        if n < 0 or n > 256 * 1024 * 1024:
            raise ValueError(f"absurd response size {n}")
        return self.recv_exact(n)

    def send(self, api_key, version, body, flexible=None, client_id="sluice-compat"):
        corr = self.next_corr
        self.next_corr += 1
        self.send_raw(frame(api_key, version, corr, body, client_id=client_id,
                            flexible=flexible))
        return corr

    def request(self, api_key, version, body, flexible=None):
        """Send a request and return a Reader positioned at the response body."""
        if flexible is None:
            flexible = is_flexible(api_key, version)
        corr = self.send(api_key, version, body, flexible=flexible)
        resp = self.recv_frame()
        r = Reader(resp)
        got = r.i32()
        if got != corr:
            raise AssertionError(f"correlation id mismatch: sent {corr}, got {got}")
        # ApiVersions responses always use response header v0 (no tagged fields).
        if flexible and api_key != API_VERSIONS:
            r.tagged_fields()
        return r

    def wait_closed(self, timeout=5.0):
        """Read and discard until EOF/reset. True if the peer closed, False on timeout."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
            return True
        except socket.timeout:
            return False
        return False


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------
def api_versions(conn, version=0):
    """Returns (error_code, {api_key: (min, max)})."""
    if version >= 3:
        body = compact_string("sluice-compat") + compact_string("1.0") + EMPTY_TAGS
    else:
        body = b""
    r = conn.request(API_VERSIONS, version, body)
    err = r.i16()
    if version >= 3:
        entries = r.compact_array(lambda rr: (rr.i16(), rr.i16(), rr.i16(), rr.tagged_fields())[:3])
    else:
        entries = r.array(lambda rr: (rr.i16(), rr.i16(), rr.i16()))
    return err, {k: (lo, hi) for k, lo, hi in (entries or [])}


def supported_versions(port):
    with Conn(port) as c:
        err, versions = api_versions(c, 0)
    assert err == 0, f"ApiVersions v0 failed with error {err}"
    return versions


def pick_version(versions, api_key, candidates):
    """First version from candidates that the broker advertises for api_key."""
    lo, hi = versions.get(api_key, (None, None))
    if lo is None:
        return None
    for v in candidates:
        if lo <= v <= hi:
            return v
    return None


def metadata_body(version, topics, allow_auto_create=True):
    body = array(topics, string) if topics is not None else i32(-1)
    if version >= 4:
        body += i8(1 if allow_auto_create else 0)
    if version >= 8:
        body += i8(0) + i8(0)  # include cluster / topic authorized operations
    return body


def metadata(conn, version, topics, allow_auto_create=True):
    """Metadata v1..v8 (non-flexible). Returns dict with 'brokers' and 'topics'."""
    assert 1 <= version <= 8
    r = conn.request(METADATA, version, metadata_body(version, topics, allow_auto_create))
    if version >= 3:
        r.i32()  # throttle

    def broker(rr):
        return {"node_id": rr.i32(), "host": rr.string(), "port": rr.i32(),
                "rack": rr.string()}

    brokers = r.array(broker)
    if version >= 2:
        r.string()  # cluster id
    r.i32()  # controller id

    def partition(rr):
        p = {"error": rr.i16(), "index": rr.i32(), "leader": rr.i32()}
        if version >= 7:
            rr.i32()  # leader epoch
        p["replicas"] = rr.array(lambda x: x.i32())
        p["isr"] = rr.array(lambda x: x.i32())
        if version >= 5:
            rr.array(lambda x: x.i32())  # offline replicas
        return p

    def topic(rr):
        t = {"error": rr.i16(), "name": rr.string(), "internal": rr.boolean(),
             "partitions": rr.array(partition)}
        if version >= 8:
            rr.i32()  # authorized ops
        return t

    topics_out = r.array(topic)
    return {"brokers": brokers, "topics": {t["name"]: t for t in topics_out}}


def produce_v7_body(topic, partition, batch, acks=-1, timeout_ms=10000,
                    transactional_id=None):
    return (
        nullable_string(transactional_id)
        + i16(acks)
        + i32(timeout_ms)
        + i32(1)
        + string(topic)
        + i32(1)
        + i32(partition)
        + kbytes(batch)
    )


def produce_v7(conn, topic, partition, batch, acks=-1, timeout_ms=10000):
    """Returns dict(error, base_offset, log_append_time, log_start_offset)."""
    r = conn.request(PRODUCE, 7, produce_v7_body(topic, partition, batch, acks, timeout_ms))

    def part(rr):
        return {"index": rr.i32(), "error": rr.i16(), "base_offset": rr.i64(),
                "log_append_time": rr.i64(), "log_start_offset": rr.i64()}

    topics = r.array(lambda rr: (rr.string(), rr.array(part)))
    r.i32()  # throttle
    assert len(topics) == 1 and topics[0][0] == topic, f"unexpected produce response {topics}"
    parts = topics[0][1]
    assert len(parts) == 1 and parts[0]["index"] == partition, f"unexpected partitions {parts}"
    return parts[0]


def list_offsets_v1(conn, topic, partition, timestamp=-1):
    """timestamp -1 = latest (log end offset), -2 = earliest. Returns (error, offset)."""
    body = i32(-1) + i32(1) + string(topic) + i32(1) + i32(partition) + i64(timestamp)
    r = conn.request(LIST_OFFSETS, 1, body)

    def part(rr):
        return (rr.i32(), rr.i16(), rr.i64(), rr.i64())

    topics = r.array(lambda rr: (rr.string(), rr.array(part)))
    (_, err, _, offset) = topics[0][1][0]
    return err, offset


def init_producer_id(conn, version=1, transactional_id=None, timeout_ms=60000):
    """Returns (error, producer_id, producer_epoch)."""
    if version < 2:
        body = nullable_string(transactional_id) + i32(timeout_ms)
    else:
        body = compact_nullable_string(transactional_id) + i32(timeout_ms)
        if version >= 3:
            body += i64(-1) + i16(-1)
        body += EMPTY_TAGS
    r = conn.request(INIT_PRODUCER_ID, version, body)
    r.i32()  # throttle
    err = r.i16()
    pid = r.i64()
    epoch = r.i16()
    return err, pid, epoch
