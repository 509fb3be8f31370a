"""Connection limits and what an idle connection costs, measured on a real broker process.

- 8 000 connections that each completed one ApiVersions request and then sit idle may
  cost at most 8 KiB of broker RSS each, and the broker's RSS comes back to within 2x of
  where it started once they close (a connection storm must not leave memory behind).
- max.connections.per.ip (with max.connections.per.ip.overrides) closes a connection over
  the limit right after accept, as Kafka's acceptor does (TooManyConnectionsException).
- max.connections makes the acceptor wait: a connection over the limit is not served
  until another one closes, and then it is.
"""

import resource
import socket
import struct
import subprocess
import time

import pytest

import kproto as kp
from conftest import sluice_bin

IDLE_CONNECTIONS = 8000
MAX_IDLE_BYTES_EACH = 8 * 1024
# Descriptors this process needs besides the idle connections (pytest, the broker's pipes).
FD_HEADROOM = 200


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"RLIMIT_NOFILE hard limit is {hard}; this test needs {need} descriptors "
                    f"for {IDLE_CONNECTIONS} connections (raise it with ulimit -Hn as root)")
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    # The broker is started after this, so it inherits the raised soft limit (and raises
    # its own to the hard limit at startup anyway).
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def api_versions_request(corr=1):
    return kp.frame(kp.API_VERSIONS, 0, corr, b"")


def read_answer(sock, corr=1):
    """Reads one ApiVersions v0 answer; returns its error code."""
    head = recv_exact(sock, 4)
    (n,) = struct.unpack(">i", head)
    r = kp.Reader(recv_exact(sock, n))
    got = r.i32()
    assert got == corr, f"correlation id {got}, expected {corr}"
    return r.i16()


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise kp.ConnectionClosed(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def connect(port, source="127.0.0.1", timeout=5.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def served(port, source="127.0.0.1", timeout=5.0):
    """A connection that has had one ApiVersions answered (kept open), or None if the
    broker closed it instead."""
    s = connect(port, source, timeout)
    try:
        s.sendall(api_versions_request())
        assert read_answer(s) == 0
        return s
    except (kp.ConnectionClosed, ConnectionResetError, BrokenPipeError):
        s.close()
        return None


def close_all(socks):
    for s in socks:
        s.close()
    socks.clear()


def settle(pid, seconds=0.5):
    time.sleep(seconds)
    return rss_kib(pid)


def test_idle_connections_are_cheap_and_memory_comes_back(start_broker):
    raise_nofile(IDLE_CONNECTIONS + FD_HEADROOM)
    broker = start_broker()
    pid = broker.proc.pid
    warm = served(broker.port)
    assert warm is not None
    warm.close()
    start = settle(pid)

    socks = []
    t0 = time.monotonic()
    try:
        # Requests go out in batches and their answers are read after, so the broker works
        # on many connections at once, as in a real connection storm.
        batch = 250
        for first in range(0, IDLE_CONNECTIONS, batch):
            fresh = [connect(broker.port, timeout=10.0) for _ in range(min(batch, IDLE_CONNECTIONS - first))]
            socks.extend(fresh)
            for s in fresh:
                s.sendall(api_versions_request())
            for s in fresh:
                assert read_answer(s) == 0
        opened_s = time.monotonic() - t0
        idle = settle(pid, 1.0)
    finally:
        close_all(socks)
    # The broker's background trim runs about once a second; give it a few.
    deadline = time.monotonic() + 6.0
    after = rss_kib(pid)
    while after > 2 * start and time.monotonic() < deadline:
        time.sleep(0.25)
        after = rss_kib(pid)

    each = (idle - start) * 1024 / IDLE_CONNECTIONS
    print(f"\nbroker RSS: start {start / 1024:.1f} MiB, with {IDLE_CONNECTIONS} idle connections "
          f"{idle / 1024:.1f} MiB ({each / 1024:.2f} KiB each; opened in {opened_s:.1f} s), "
          f"after they closed {after / 1024:.1f} MiB")
    assert broker.is_alive()
    assert each <= MAX_IDLE_BYTES_EACH, (
        f"an idle connection costs {each / 1024:.1f} KiB of RSS (at most {MAX_IDLE_BYTES_EACH // 1024} KiB)")
    assert after <= 2 * start, (
        f"RSS after the connections closed is {after / 1024:.1f} MiB, over 2x the start ({start / 1024:.1f} MiB)")


def assert_closed_by_broker(s, what):
    """The broker closes `s` without answering (an ApiVersions sent on it gets EOF or RST)."""
    try:
        s.sendall(api_versions_request())
        got = s.recv(4)
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    except socket.timeout:
        raise AssertionError(f"{what}: the broker neither answered nor closed the connection")
    finally:
        s.close()
    assert got == b"", f"{what}: the broker answered a connection over the limit"


def wait_until_served(port, source, timeout=5.0):
    """Connections are counted until the broker has seen them close: retry for a while."""
    deadline = time.monotonic() + timeout
    while True:
        s = served(port, source)
        if s is not None or time.monotonic() > deadline:
            return s
        time.sleep(0.05)


def open_served(port, source, n, what):
    """n connections from `source`, each answered by the broker; fails naming `what`."""
    socks = []
    for i in range(n):
        s = wait_until_served(port, source)
        if s is None:
            close_all(socks)
            raise AssertionError(f"connection {i + 1} of {n} {what} was refused")
        socks.append(s)
    return socks


def test_max_connections_per_ip_and_overrides(start_broker):
    broker = start_broker({"max.connections.per.ip": 5, "max.connections.per.ip.overrides": "127.0.0.1:7"})
    socks = []
    try:
        # 127.0.0.2 reaches the loopback listener too, and has the default limit of 5.
        socks += open_served(broker.port, "127.0.0.2", 5, "from 127.0.0.2")
        assert_closed_by_broker(connect(broker.port, "127.0.0.2"), "the 6th connection from 127.0.0.2")
        # 127.0.0.1 has an override of 7 (the start probe of the fixture may still count
        # for a moment, hence the retry).
        socks += open_served(broker.port, "127.0.0.1", 7, "from 127.0.0.1 (override)")
        assert_closed_by_broker(connect(broker.port, "127.0.0.1"), "the 8th connection from 127.0.0.1")
        # A closed connection frees its address's slot.
        socks.pop(0).close()
        s = wait_until_served(broker.port, "127.0.0.2")
        assert s is not None, "a slot of 127.0.0.2 freed by a close was not given back"
        socks.append(s)
        assert_closed_by_broker(connect(broker.port, "127.0.0.2"), "a 6th connection from 127.0.0.2 again")
    finally:
        close_all(socks)
    assert broker.is_alive()


def test_max_connections_waits_for_a_free_slot(start_broker):
    broker = start_broker(max_connections=3)
    socks = []
    try:
        socks += open_served(broker.port, "127.0.0.1", 3, "within max.connections")
        # The kernel completes the handshake (the listen backlog), but the broker does not
        # take the connection while 3 are open: the request waits, unanswered and not closed.
        fourth = connect(broker.port, timeout=1.0)
        fourth.sendall(api_versions_request())
        with pytest.raises(socket.timeout):
            fourth.recv(4)
        socks.pop(0).close()
        fourth.settimeout(5.0)
        assert read_answer(fourth) == 0, "the waiting connection was not served once a slot was free"
        socks.append(fourth)
    finally:
        close_all(socks)
    assert broker.is_alive()


@pytest.mark.parametrize("setting, complaint", [
    ("max.connections=-1", "max.connections"),
    ("max.connections.per.ip=x", "max.connections.per.ip"),
    ("max.connections.per.ip=0", "max.connections.per.ip.overrides"),
    ("max.connections.per.ip.overrides=127.0.0.1", "max.connections.per.ip.overrides"),
    ("max.connections.per.ip.overrides=127.0.0.1:-3", "max.connections.per.ip.overrides"),
    ("max.connections.per.ip.overrides=no-such-host.invalid:3", "no-such-host.invalid"),
])
def test_bad_connection_limits_stop_startup(tmp_path, setting, complaint):
    cmd = [sluice_bin(), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
           "--set", setting]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    err = p.stderr.decode(errors="replace")
    assert p.returncode != 0, f"sluice started with {setting}:\n{err}"
    assert complaint in err, f"the error for {setting} does not name {complaint}:\n{err}"
