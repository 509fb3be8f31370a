"""Fixtures that run a real Sluice broker process per test.

Environment:
  SLUICE_BIN            path of the broker binary (default: <repo>/target/release/sluice)
  SLUICE_START_TIMEOUT  seconds to wait for the port to accept connections (default 10)
"""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BIN = REPO_ROOT / "target" / "release" / "sluice"
STDERR_TAIL_BYTES = 64 * 1024


def sluice_bin():
    return os.environ.get("SLUICE_BIN", str(DEFAULT_BIN))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _setting_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def normalize_settings(settings=None, **kw):
    """Accept {"a.b.c": v} and/or a_b_c=v (underscores become dots)."""
    out = {}
    for k, v in (settings or {}).items():
        out[k] = _setting_value(v)
    for k, v in kw.items():
        out[k.replace("_", ".")] = _setting_value(v)
    return out


class Broker:
    """One sluice process (restartable on the same port and data dir)."""

    def __init__(self, tmp_dir, settings=None, port=None):
        self.tmp_dir = Path(tmp_dir)
        self.data_dir = self.tmp_dir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = self.tmp_dir / "sluice.stderr.log"
        self.settings = dict(settings or {})
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.bootstrap = f"{self.host}:{self.port}"
        self.proc = None
        self.starts = 0
        self.last_exit_code = None
        self.last_stop_escalated = False

    # -- lifecycle ---------------------------------------------------------
    def command(self):
        cmd = [
            sluice_bin(), "serve",
            "--listen", self.bootstrap,
            "--advertise", self.bootstrap,
            "--data-dir", str(self.data_dir),
            "--node-id", "1",
        ]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        binary = sluice_bin()
        if not os.path.exists(binary):
            pytest.fail(f"sluice binary not found at {binary} (build it or set SLUICE_BIN)")
        self.starts += 1
        with open(self.stderr_path, "ab") as err:
            err.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
            err.flush()
            self.proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        timeout = float(os.environ.get("SLUICE_START_TIMEOUT", "10"))
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise AssertionError(
                    f"sluice exited with code {rc} during startup\n{self.stderr_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"sluice did not accept connections on {self.bootstrap} within "
                    f"{timeout}s\n{self.stderr_tail()}")
            time.sleep(0.05)

    def stop(self, kill=False, timeout=15.0):
        """SIGTERM (or SIGKILL) the process we started; returns its exit code."""
        p = self.proc
        if p is None or p.poll() is not None:
            return p.returncode if p is not None else None
        self.last_stop_escalated = False
        if kill:
            p.send_signal(signal.SIGKILL)
            p.wait()
        else:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.last_stop_escalated = True
                p.send_signal(signal.SIGKILL)
                p.wait()
        self.last_exit_code = p.returncode
        return p.returncode

    def restart(self, kill=False):
        self.stop(kill=kill)
        return self.start()

    def is_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self):
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - STDERR_TAIL_BYTES))
                data = f.read()
        except OSError as e:
            return f"<no stderr: {e}>"
        text = data.decode(errors="replace")
        if size > STDERR_TAIL_BYTES:
            text = f"<... {size - STDERR_TAIL_BYTES} bytes cut ...>\n" + text
        return text

    def __repr__(self):
        return f"Broker({self.bootstrap}, data_dir={self.data_dir})"


INVARIANT_MARK = "invariant violated"


def invariant_violations(paths):
    """Lines of the brokers' logs where a design invariant was found broken (the broker
    logs them and goes on serving; a test run must not)."""
    found = []
    for p in paths:
        try:
            text = Path(p).read_text(errors="replace")
        except OSError:
            continue
        found += [f"{p}: {line.strip()}" for line in text.splitlines() if INVARIANT_MARK in line]
    return found


def fail_on_invariant_violations(paths):
    found = invariant_violations(paths)
    if found:
        pytest.fail("a broker found an invariant broken:\n" + "\n".join(found[:20]), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for b in getattr(item, "_sluice_brokers", []):
            rep.sections.append(
                (f"sluice stderr ({b.bootstrap}, {b.stderr_path})", b.stderr_tail()))
        # Clusters (cluster.Cluster) and other process groups: anything with
        # report_sections() -> [(title, text)].
        for c in getattr(item, "_sluice_clusters", []):
            try:
                rep.sections.extend(c.report_sections())
            except Exception as e:  # diagnostics must not hide the real failure
                rep.sections.append(("sluice cluster logs", f"<could not collect: {e!r}>"))


@pytest.fixture
def start_broker(request, tmp_path):
    """Factory: start_broker(settings_dict=None, **kafka_props_with_underscores).

    e.g. start_broker(auto_create_topics_enable=False) or
         start_broker({"socket.request.max.bytes": 1048576})
    """
    brokers = []
    request.node._sluice_brokers = brokers

    def factory(settings=None, **kw):
        b = Broker(tmp_path / f"broker{len(brokers)}", normalize_settings(settings, **kw))
        brokers.append(b)
        b.start()
        return b

    yield factory
    for b in brokers:
        b.stop(kill=False, timeout=10.0)
    fail_on_invariant_violations([b.stderr_path for b in brokers])


@pytest.fixture
def broker(start_broker):
    return start_broker()


@pytest.fixture
def start_cluster(request, tmp_path):
    """Factory: start_cluster(n=3, settings=None, start=True, voters=None, **props).

    Returns a started `cluster.Cluster` of n combined nodes (ids 1..n, every node a
    controller voter unless `voters` lists a subset), each `sluice serve` with
    broker.heartbeat.interval.ms=500 and broker.session.timeout.ms=3000 unless
    overridden; `props` use underscores for dots like start_broker. With start=False
    the nodes are not launched. Teardown stops every node (SIGTERM, then SIGKILL);
    on failure each node's log tail and the cluster's event list are attached.
    """
    from cluster import Cluster

    clusters = []
    request.node._sluice_clusters = clusters

    def factory(n=3, settings=None, start=True, voters=None, **kw):
        c = Cluster(tmp_path / f"cluster{len(clusters)}", n=n,
                    settings=normalize_settings(settings, **kw), voters=voters)
        clusters.append(c)
        if start:
            c.start_all()
        return c

    yield factory
    for c in clusters:
        c.shutdown()
    fail_on_invariant_violations([n.log_path for c in clusters for n in c.nodes.values()])
