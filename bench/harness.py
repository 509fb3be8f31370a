#!/usr/bin/env python3
"""Sluice vs Apache Kafka benchmark harness. Start it through bench/run, which prepares the
Python venv, the Kafka jars and the sluice binary, then runs this file with the venv's Python.

This process stays single-threaded and never loads librdkafka itself (topic admin and the
librdkafka load generator run as child processes, bench/rdkload.py), so every child can be
started with a parent-death signal: if the harness is killed, its brokers die with it.
"""
import argparse
import base64
import ctypes
import datetime
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KAFKA_VERSION = "4.4.0"
KAFKA_HEAP = "-Xmx1g -Xms1g"
TOOL_HEAP = "-Xmx512m"
# The GC flags kafka-run-class.sh uses (KAFKA_JVM_PERFORMANCE_OPTS), for the broker and tools.
JVM_PERF_OPTS = ("-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
                 " -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true")
MIB = 1024 * 1024

HELP_EPILOG = """\
what it does
  For each repetition it starts Kafka and Sluice one after the other (alternating which goes
  first), each fresh on loopback with an empty data dir in a temp dir, creates the same topics
  (same partitions, RF 1, same admin client) and runs, against each:
    * ProducerPerformance (Kafka's tool) and the librdkafka generator: 1 KiB and 100 B
      records, acks=1 and acks=all, unthrottled -> MiB/s and records/s
    * ConsumerPerformance and the librdkafka generator: read back the 1 KiB and 100 B
      acks=1 topics -> MiB/s and records/s
    * EndToEndLatency (Kafka's tool; one record in flight, 1 KiB, acks=1) -> avg/p50/p99/p99.9
    * librdkafka fixed-rate end-to-end latency, 1 KiB, acks=1, at about half of Kafka's
      measured max (the lower of the two clients' 1 KiB acks=1 results against Kafka)
    * start-up time: exec of the broker process to the first answered ApiVersions (probed
      with connect + ApiVersions v3 every 1 ms)
    * idle RSS (after topic creation), peak RSS under load and broker CPU seconds, from
      /proc/PID (for Kafka, the JVM's own process; heap %s)
  Medians over the repetitions and the Sluice/Kafka ratio go to bench/results/results.md,
  results.png and results.json; logs of every process to bench/results/logs/.

exit status
  0 when every measurement ran, 1 when any failed or the time budget ran out (the results
  files are still written, failures listed), 2 on a setup error.

TODO: later, not implemented
  3-broker clusters with replication.factor=3 and acks=all (Kafka: 3 KRaft nodes; Sluice:
  once it replicates). Nothing in this harness runs or pretends to run that yet.
""" % KAFKA_HEAP


class StepError(Exception):
    """A measurement that failed; the run goes on with the next one."""


class BudgetExceeded(Exception):
    """The overall time budget ran out."""


# ----------------------------------------------------------------------------- child processes
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _child_setup():
    # Runs in the child between fork and exec: die with the harness, whatever kills it.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Procs:
    """Every process the harness starts, so all of them are stopped on any exit."""

    def __init__(self):
        self.live = []

    def start(self, argv, log_path, cwd=None, env=None, stdin=subprocess.DEVNULL, capture=False):
        logf = open(log_path, "ab")
        try:
            p = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=stdin,
                stdout=subprocess.PIPE if capture else logf, stderr=logf,
                start_new_session=True, preexec_fn=_child_setup, close_fds=True,
            )
        except OSError as e:
            logf.close()
            raise StepError(f"cannot start {argv[0]}: {e}")
        p._bench_log = logf
        self.live.append(p)
        return p

    def stop(self, p, grace=30.0):
        """SIGTERM to the child's process group (it leads its own session), SIGKILL after
        `grace` s. Returns seconds it took to exit."""
        t0 = time.monotonic()
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                print(f"bench: pid {p.pid} ignored SIGTERM for {grace:.0f}s; SIGKILL", file=sys.stderr)
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        if p in self.live:
            self.live.remove(p)
        try:
            p._bench_log.close()
        except Exception:
            pass
        return time.monotonic() - t0

    def stop_all(self):
        for p in list(reversed(self.live)):
            self.stop(p, grace=20.0)


PROCS = Procs()


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def tail(path, n=25):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 16384))
            lines = f.read().decode("utf-8", "replace").splitlines()
        return "\n".join("    | " + l for l in lines[-n:])
    except OSError:
        return "    | (no log)"


# ---------------------------------------------------------------------------------- /proc
def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------------- ApiVersions probe
def _apiversions_v3_request(corr):
    client_id = b"bench-probe"
    hdr = struct.pack(">hhih", 18, 3, corr, len(client_id)) + client_id + b"\x00"
    sw_name, sw_ver = b"sluice-bench", b"1"
    body = bytes([len(sw_name) + 1]) + sw_name + bytes([len(sw_ver) + 1]) + sw_ver + b"\x00"
    msg = hdr + body
    return struct.pack(">i", len(msg)) + msg


def probe_apiversions(port, proc, deadline, log_path):
    """Connect + ApiVersions v3, retried every 1 ms, until the broker answers with error 0.
    Returns time.monotonic() of the answer."""
    corr = 0
    while True:
        if proc.poll() is not None:
            raise StepError(f"broker exited with status {proc.returncode} before answering "
                            f"ApiVersions\n{tail(log_path)}")
        if time.monotonic() > deadline:
            raise StepError(f"broker did not answer ApiVersions in time\n{tail(log_path)}")
        corr += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(_apiversions_v3_request(corr))
            buf = b""
            need = 4
            while len(buf) < need:
                # Wait in short slices so a broker that dies meanwhile is noticed.
                r, _, _ = select.select([s], [], [], 0.05)
                if not r:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise ConnectionAbortedError
                    continue
                chunk = s.recv(65536)
                if not chunk:
                    raise ConnectionResetError
                buf += chunk
                if len(buf) >= 4:
                    need = 4 + struct.unpack(">i", buf[:4])[0]
            t = time.monotonic()
            got_corr, err = struct.unpack(">ih", buf[4:10])
            if got_corr == corr and err == 0:
                return t
        except (ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError,
                BrokenPipeError, struct.error, OSError):
            pass
        finally:
            s.close()
        time.sleep(0.001)


# ---------------------------------------------------------------------------------- brokers
class Broker:
    name = "?"

    def __init__(self, h, session_dir):
        self.h = h
        self.dir = session_dir
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc = None
        self.log = None

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _launch(self, argv, timeout):
        """Start the broker and time exec -> first answered ApiVersions (ms)."""
        t0 = time.monotonic()
        self.proc = PROCS.start(argv, self.log, cwd=self.dir, env=self.h.child_env)
        t1 = probe_apiversions(self.port, self.proc, t0 + timeout, self.log)
        return (t1 - t0) * 1000.0

    def stop(self):
        if self.proc is None:
            return None
        secs = PROCS.stop(self.proc, grace=60.0)
        rc = self.proc.returncode
        return secs, rc


class KafkaBroker(Broker):
    name = "kafka"

    def start(self, timeout):
        cport = free_port()
        data = os.path.join(self.dir, "data")
        cfg = os.path.join(self.dir, "server.properties")
        with open(cfg, "w") as f:
            f.write("\n".join([
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.bootstrap.servers=127.0.0.1:{cport}",
                f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name=PLAINTEXT",
                f"log.dirs={data}",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
            ] + [f"{k}={v}" for k, v in self.h.common_broker_settings]) + "\n")
        # Storage must be formatted before the first start (not part of the start-up time).
        cluster_id = kafka_uuid()
        fmt_log = os.path.join(self.h.logdir, f"{self.h.tag}-kafka-format.log")
        t0 = time.monotonic()
        self.h.run_tool(
            "kafka storage format",
            self.h.java(TOOL_HEAP, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                        "-c", cfg, "--standalone"),
            fmt_log, timeout=120)
        self.format_ms = (time.monotonic() - t0) * 1000.0
        self.log = os.path.join(self.h.logdir, f"{self.h.tag}-kafka-broker.log")
        argv = self.h.java(KAFKA_HEAP, "kafka.Kafka", cfg, log_level="INFO")
        return self._launch(argv, timeout)


class SluiceBroker(Broker):
    name = "sluice"

    def start(self, timeout):
        self.format_ms = None
        self.log = os.path.join(self.h.logdir, f"{self.h.tag}-sluice-broker.log")
        argv = [self.h.sluice_bin, "serve", "--listen", self.bootstrap,
                "--data-dir", os.path.join(self.dir, "data")]
        for k, v in self.h.common_broker_settings:
            argv += ["--set", f"{k}={v}"]
        return self._launch(argv, timeout)


def kafka_uuid():
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. Like Kafka's own
    generator, avoid a leading '-' (it would read as an option)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if s[0] not in "-_":
            return s


# ------------------------------------------------------------------------------- metrics
# id -> (section, label, unit, higher_is_better)
METRICS = {}


def metric(mid, section, label, unit, higher):
    METRICS[mid] = (section, label, unit, higher)


SIZES = [(1024, "1 KiB"), (100, "100 B")]
ACKS = ["1", "all"]
for _client, _cname in [("java", "ProducerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        for _acks in ACKS:
            _k = f"produce.{_client}.{_size}.{_acks}"
            metric(f"{_k}.mib", f"Produce ({_cname})", f"{_sname} acks={_acks}", "MiB/s", True)
            metric(f"{_k}.rps", f"Produce ({_cname})", f"{_sname} acks={_acks}", "records/s", True)
for _client, _cname in [("java", "ConsumerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        _k = f"consume.{_client}.{_size}"
        metric(f"{_k}.mib", f"Consume ({_cname})", f"{_sname}", "MiB/s", True)
        metric(f"{_k}.rps", f"Consume ({_cname})", f"{_sname}", "records/s", True)
_sec = "End-to-end latency, one in flight (EndToEndLatency, 1 KiB, acks=1)"
metric("e2e.java.avg", _sec, "avg", "ms", False)
# The tool prints these percentiles as whole milliseconds, truncated.
metric("e2e.java.p50", _sec, "p50", "whole ms", False)
metric("e2e.java.p99", _sec, "p99", "whole ms", False)
metric("e2e.java.p999", _sec, "p99.9", "whole ms", False)
_sec = "End-to-end latency at a fixed rate (librdkafka, 1 KiB, acks=1)"
metric("e2e.rdk.p50", _sec, "p50", "ms", False)
metric("e2e.rdk.p99", _sec, "p99", "ms", False)
metric("e2e.rdk.p999", _sec, "p99.9", "ms", False)
metric("e2e.rdk.max", _sec, "max", "ms", False)
_sec = "Process"
metric("startup.ms", _sec, "start-up: exec to first ApiVersions answer", "ms", False)
metric("rss.idle", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("rss.peak", _sec, "peak RSS under load", "MiB", False)
metric("cpu.total", _sec, "broker CPU time for the whole workload", "s", False)


# ------------------------------------------------------------------------------- harness
class Harness:
    def __init__(self, a):
        self.a = a
        self.quick = a.quick
        self.lib = a.kafka_lib
        self.sluice_bin = a.sluice_bin
        self.py = a.python or sys.executable
        self.rdkload = os.path.join(HERE, "rdkload.py")
        self.results_dir = a.results_dir
        self.logdir = os.path.join(self.results_dir, "logs")
        self.t_start = time.monotonic()
        self.deadline = self.t_start + a.max_minutes * 60
        self.samples = {"kafka": {}, "sluice": {}}
        self.failures = []
        self.notes = []
        self.runs = []
        self.e2e_rate = a.e2e_rate
        self.e2e_rate_basis = "given with --e2e-rate" if a.e2e_rate else None
        self.tag = "setup"
        self.common_broker_settings = [
            # Same on both: no 3 s wait for more members before the first rebalance
            # (ConsumerPerformance joins a group).
            ("group.initial.rebalance.delay.ms", "0"),
        ]
        env = dict(os.environ)
        env.pop("SLUICE_LOG", None)
        env.pop("KAFKA_OPTS", None)
        env.pop("JAVA_TOOL_OPTIONS", None)
        self.child_env = env
        q = self.quick
        sc = a.scale
        # Records per produce run, by client and record size (the librdkafka client is faster
        # at 1 KiB, so it gets more records for a long enough measuring window).
        self.n = {
            "java": {1024: int(sc * (100_000 if q else 500_000)),
                     100: int(sc * (500_000 if q else 3_000_000))},
            "rdk": {1024: int(sc * (200_000 if q else 1_000_000)),
                    100: int(sc * (500_000 if q else 3_000_000))},
        }
        self.warmup_n = {1024: 100_000 if q else 200_000, 100: 300_000 if q else 1_000_000}
        self.e2e_java_n = 2_000 if q else 5_000
        self.e2e_rdk_secs = 8 if q else 20
        self.e2e_rdk_warmup = 1 if q else 2
        self.partitions = a.partitions

    # -- helpers
    def java(self, heap, cls, *args, log_level="WARN"):
        return (["java"] + heap.split() + JVM_PERF_OPTS.split() +
                [f"-Dlog4j2.configurationFile={os.path.join(HERE, 'log4j2.properties')}",
                 f"-Dbench.log.level={log_level}", "-cp", os.path.join(self.lib, "*"), cls] +
                list(args))

    def remaining(self):
        return self.deadline - time.monotonic()

    def run_tool(self, name, argv, log_path, timeout, capture=True, tick=None):
        """Run a tool to completion. Returns its stdout. Raises StepError on timeout, non-zero
        exit or a failed start; the tool's stderr goes to log_path."""
        left = self.remaining()
        if left < 5:
            raise BudgetExceeded()
        timeout = min(timeout, left)
        with open(log_path, "ab") as f:
            f.write(f"$ {' '.join(argv)}\n".encode())
        p = PROCS.start(argv, log_path, cwd=tempfile.gettempdir(), env=self.child_env,
                        capture=capture)
        out = b""
        t_end = time.monotonic() + timeout
        try:
            # Read stdout in the same loop that samples the broker: no threads.
            eof = not capture
            while True:
                if not eof:
                    r, _, _ = select.select([p.stdout], [], [], 0.1)
                    if r:
                        chunk = os.read(p.stdout.fileno(), 65536)
                        if chunk:
                            out += chunk
                        else:
                            eof = True
                elif p.poll() is not None:
                    break
                else:
                    time.sleep(0.1)
                if tick:
                    tick()
                if time.monotonic() > t_end:
                    PROCS.stop(p, grace=5)
                    raise StepError(f"{name}: timed out after {timeout:.0f}s\n{tail(log_path)}")
        finally:
            if p.poll() is None or p in PROCS.live:
                PROCS.stop(p, grace=5)
        text = out.decode("utf-8", "replace")
        with open(log_path, "a") as f:
            f.write("--- stdout ---\n" + text + f"--- exit {p.returncode} ---\n")
        if p.returncode != 0:
            raise StepError(f"{name}: exited with status {p.returncode}\n{tail(log_path)}")
        return text

    def rdk(self, name, log_path, timeout, *args, tick=None):
        out = self.run_tool(name, [self.py, self.rdkload] + list(args), log_path, timeout,
                            tick=tick)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        if not lines:
            raise StepError(f"{name}: printed no result\n{tail(log_path)}")
        return json.loads(lines[-1])

    def record(self, broker, mid, value):
        if value is not None:
            self.samples[broker].setdefault(mid, []).append(value)

    def fail(self, broker, what, err):
        msg = f"[{self.tag}] {broker} {what}: {err}"
        self.failures.append(msg)
        print(f"bench: FAILED {msg}", file=sys.stderr, flush=True)

    # -- one broker session
    def session(self, rep, kind):
        self.tag = f"rep{rep + 1}-{kind}"
        sdir = tempfile.mkdtemp(prefix=f"{kind}-", dir=self.tmp)
        b = (KafkaBroker if kind == "kafka" else SluiceBroker)(self, sdir)
        info = {"rep": rep + 1, "broker": kind}
        self.runs.append(info)
        log = lambda s: print(f"bench: [{self.tag}] {s}", file=sys.stderr, flush=True)  # noqa
        try:
            log("starting")
            try:
                ms = b.start(timeout=min(60, max(5, self.remaining())))
            except StepError as e:
                self.fail(kind, "start", e)
                if b.proc is not None:
                    info["died"] = b.proc.poll()  # already reported
                return
            info["startup_ms"] = ms
            info["format_ms"] = b.format_ms
            self.record(kind, "startup.ms", ms)
            log(f"answered ApiVersions {ms:.1f} ms after exec" +
                (f" (storage format took {b.format_ms:.0f} ms before that)" if b.format_ms else ""))
            self.steps(b, info, log)
        except BudgetExceeded:
            raise
        finally:
            if b.proc is not None:
                died = b.proc.poll()
                if died is not None and "died" not in info:
                    info["died"] = died
                    self.fail(kind, "broker process", f"exited on its own with status {died}"
                              f"\n{tail(b.log)}")
                res = b.stop()
                if res:
                    info["stop_s"], info["exit_status"] = res
                    if died is None and res[1] not in (0, -signal.SIGTERM, 143):
                        self.notes.append(f"[{self.tag}] {kind} exited with status {res[1]} "
                                          f"on SIGTERM (log: {os.path.relpath(b.log, REPO)})")
            shutil.rmtree(sdir, ignore_errors=True)

    def steps(self, b, info, log):
        kind = b.name
        L = lambda step: os.path.join(self.logdir, f"{self.tag}-{step}.log")  # noqa: E731
        peak = [0]

        def sample():
            r = rss_kib(b.pid)
            if r and r > peak[0]:
                peak[0] = r

        def step(what, fn):
            if not b.alive():
                self.fail(kind, what, f"skipped: broker is not running (exit {b.proc.poll()})")
                return None
            if self.remaining() < 5:
                raise BudgetExceeded()
            try:
                return fn()
            except StepError as e:
                self.fail(kind, what, e)
                return None

        sizes = [s for s, _ in SIZES]
        topics = [f"jp-{s}-{a}:{self.partitions}" for s in sizes for a in ACKS]
        topics += [f"rp-{s}-{a}:{self.partitions}" for s in sizes for a in ACKS]
        topics += ["lat-java:1", "lat-rdk:1", f"warmup-1024:{self.partitions}",
                   f"warmup-100:{self.partitions}"]
        args = ["create-topics", "--bootstrap", b.bootstrap, "--timeout", "60"]
        for t in topics:
            args += ["--topic", t]
        if step("create topics", lambda: self.rdk("create topics", L("create-topics"), 90, *args)) is None:
            return
        time.sleep(2)
        idle = rss_kib(b.pid)
        if idle:
            self.record(kind, "rss.idle", idle / 1024)
            info["rss_idle_mib"] = idle / 1024
        sample()

        # Warm-up, not measured: the same short produce + consume load against either broker,
        # so a fresh JVM's JIT has compiled the produce and fetch paths before the clock runs.
        for size in sizes:
            n = self.warmup_n[size]
            what = f"warm-up produce {size} B"
            if step(what, lambda size=size, n=n, what=what: self.rdk(
                    what, L(f"warmup-produce-{size}"), 180, "produce", "--bootstrap",
                    b.bootstrap, "--topic", f"warmup-{size}", "--count", str(n), "--size",
                    str(size), "--acks", "1", tick=sample)) is None:
                continue
            what = f"warm-up consume {size} B"
            step(what, lambda size=size, n=n, what=what: self.rdk(
                what, L(f"warmup-consume-{size}"), 180, "consume", "--bootstrap", b.bootstrap,
                "--topic", f"warmup-{size}", "--count", str(n), tick=sample))
        log("warm-up done")
        cpu0 = cpu_seconds(b.pid)

        # Produce, Kafka's tool.
        for size in sizes:
            for acks in ACKS:
                n = self.n["java"][size]
                what = f"ProducerPerformance {size} B acks={acks}"

                def run_pp(size=size, acks=acks, n=n, what=what):
                    out = self.run_tool(what, self.java(
                        TOOL_HEAP, "org.apache.kafka.tools.ProducerPerformance",
                        "--bootstrap-server", b.bootstrap, "--topic", f"jp-{size}-{acks}",
                        "--num-records", str(n), "--record-size", str(size),
                        "--throughput", "-1", "--command-property", f"acks={acks}",
                        "--warmup-records", str(n // 5)),
                        L(f"pp-{size}-{acks}"), timeout=240, tick=sample)
                    return parse_pp(out, n, n - n // 5, what)

                r = step(what, run_pp)
                if r:
                    self.record(kind, f"produce.java.{size}.{acks}.mib", r["mib"])
                    self.record(kind, f"produce.java.{size}.{acks}.rps", r["rps"])
                    log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
                    if kind == "kafka" and size == 1024 and acks == "1":
                        info["kafka_java_1k_rps"] = r["rps"]

        # Produce, librdkafka.
        for size in sizes:
            for acks in ACKS:
                n = self.n["rdk"][size]
                what = f"librdkafka produce {size} B acks={acks}"
                r = step(what, lambda size=size, acks=acks, n=n, what=what: self.rdk(
                    what, L(f"rdk-produce-{size}-{acks}"), 240, "produce", "--bootstrap",
                    b.bootstrap, "--topic", f"rp-{size}-{acks}", "--count", str(n), "--size",
                    str(size), "--acks", acks, tick=sample))
                if r:
                    self.record(kind, f"produce.rdk.{size}.{acks}.mib", r["mib_per_s"])
                    self.record(kind, f"produce.rdk.{size}.{acks}.rps", r["records_per_s"])
                    log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")
                    if kind == "kafka" and size == 1024 and acks == "1":
                        info["kafka_rdk_1k_rps"] = r["records_per_s"]

        # Both consumers read what the librdkafka producer wrote with acks=1 (the longer topic).
        for size in sizes:
            n = self.n["rdk"][size]
            what = f"ConsumerPerformance {size} B"

            def run_cp(size=size, n=n, what=what):
                out = self.run_tool(what, self.java(
                    TOOL_HEAP, "org.apache.kafka.tools.ConsumerPerformance",
                    "--bootstrap-server", b.bootstrap, "--topic", f"rp-{size}-1",
                    "--num-records", str(n), "--timeout", "30000",
                    "--group", f"bench-cp-{size}-{os.getpid()}"),
                    L(f"cp-{size}"), timeout=240, tick=sample)
                return parse_cp(out, n, size, what)

            r = step(what, run_cp)
            if r:
                self.record(kind, f"consume.java.{size}.mib", r["mib"])
                self.record(kind, f"consume.java.{size}.rps", r["rps"])
                log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s "
                    f"(group join {r['rebalance_ms']:.0f} ms, not counted)")
            what = f"librdkafka consume {size} B"
            r = step(what, lambda size=size, n=n, what=what: self.rdk(
                what, L(f"rdk-consume-{size}"), 240, "consume", "--bootstrap", b.bootstrap,
                "--topic", f"rp-{size}-1", "--count", str(n), tick=sample))
            if r:
                self.record(kind, f"consume.rdk.{size}.mib", r["mib_per_s"])
                self.record(kind, f"consume.rdk.{size}.rps", r["records_per_s"])
                log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")

        # End-to-end, one record in flight (Kafka's tool).
        what = "EndToEndLatency"

        def run_e2e_java():
            out = self.run_tool(what, self.java(
                TOOL_HEAP, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server",
                b.bootstrap, "--topic", "lat-java", "--num-records", str(self.e2e_java_n),
                "--producer-acks", "1", "--record-size", "1024"),
                L("e2e-java"), timeout=240, tick=sample)
            return parse_e2e(out, what)

        r = step(what, run_e2e_java)
        if r:
            for k in ("avg", "p50", "p99", "p999"):
                self.record(kind, f"e2e.java.{k}", r[k])
            log(f"{what}: avg {r['avg']:.3f} ms, p50 {r['p50']} p99 {r['p99']} "
                f"p99.9 {r['p999']} ms")

        # End-to-end at a fixed rate (librdkafka).
        if self.e2e_rate is None and kind == "kafka":
            cands = [v for v in (info.get("kafka_java_1k_rps"), info.get("kafka_rdk_1k_rps")) if v]
            if cands:
                self.e2e_rate = int(0.5 * min(cands) / 100) * 100 or 100
                self.e2e_rate_basis = (
                    f"half of the lower of Kafka's 1 KiB acks=1 max ({self.tag}): "
                    f"ProducerPerformance {info.get('kafka_java_1k_rps', 0):.0f} rec/s, "
                    f"librdkafka {info.get('kafka_rdk_1k_rps', 0):.0f} rec/s")
                log(f"fixed e2e rate set to {self.e2e_rate} rec/s ({self.e2e_rate_basis})")
        if self.e2e_rate is None:
            self.e2e_rate = 1000
            self.e2e_rate_basis = "fallback (Kafka's max was not measured before the first e2e run)"
            self.notes.append(f"e2e rate: {self.e2e_rate_basis}")
        what = f"librdkafka e2e at {self.e2e_rate} rec/s"
        r = step(what, lambda: self.rdk(
            what, L("e2e-rdk"), self.e2e_rdk_secs + 90, "e2e", "--bootstrap", b.bootstrap,
            "--topic", "lat-rdk", "--rate", str(self.e2e_rate), "--seconds",
            str(self.e2e_rdk_secs), "--warmup", str(self.e2e_rdk_warmup), "--size", "1024",
            "--acks", "1", tick=sample))
        if r:
            for k in ("p50", "p99", "p999", "max"):
                self.record(kind, f"e2e.rdk.{k}", r[f"{k}_us"] / 1000.0)
            info["e2e_rdk"] = r
            # Both brokers keep Kafka's layout (<log dir>/<topic>-<partition>/<offset>.log), so
            # the segment files show whether a segment roll fell into the window: the tail
            # latencies depend on it.
            rolls = segment_count(os.path.join(b.dir, "data", "lat-rdk-0")) - 1
            r["segment_rolls"] = rolls
            log(f"{what}: p50 {r['p50_us'] / 1000:.2f} p99 {r['p99_us'] / 1000:.2f} p99.9 "
                f"{r['p999_us'] / 1000:.2f} max {r['max_us'] / 1000:.2f} ms; achieved "
                f"{r['achieved_rate']:.0f} rec/s; segment rolls during the run: {rolls}")
            if r["achieved_rate"] < 0.95 * r["target_rate"]:
                self.notes.append(f"[{self.tag}] {kind}: the e2e generator fell behind "
                                  f"({r['achieved_rate']:.0f} of {r['target_rate']:.0f} rec/s)")

        cpu1 = cpu_seconds(b.pid)
        if cpu0 is not None and cpu1 is not None:
            self.record(kind, "cpu.total", cpu1 - cpu0)
        if peak[0]:
            self.record(kind, "rss.peak", peak[0] / 1024)
            info["rss_peak_mib"] = peak[0] / 1024

    # -- the whole run
    def run(self):
        os.makedirs(self.logdir, exist_ok=True)
        for f in os.listdir(self.logdir):
            if f.endswith(".log"):
                os.unlink(os.path.join(self.logdir, f))
        remove_stale_tmp(self.a.tmp_dir or tempfile.gettempdir())
        self.tmp = tempfile.mkdtemp(prefix="sluice-bench.", dir=self.a.tmp_dir)
        with open(os.path.join(self.tmp, "owner.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        # Run a private copy, so a rebuild of target/release during the run cannot give the
        # later sessions a different binary.
        st = os.stat(self.sluice_bin)
        self.sluice_desc = (f"`{os.path.relpath(self.sluice_bin, REPO)}` built "
                            f"{datetime.datetime.fromtimestamp(st.st_mtime):%Y-%m-%d %H:%M:%S}, "
                            f"{st.st_size / MIB:.0f} MiB; repo at commit {git_rev()}")
        copy = os.path.join(self.tmp, "sluice")
        try:
            shutil.copy2(self.sluice_bin, copy)
            subprocess.run([copy, "--help"], capture_output=True, timeout=30, check=True)
            self.sluice_bin = copy
        except (OSError, subprocess.SubprocessError) as e:  # e.g. a noexec temp dir
            self.notes.append(f"ran {self.sluice_bin} in place (a private copy failed: {e})")
        complete = True
        try:
            for rep in range(self.a.reps):
                order = ["kafka", "sluice"] if rep % 2 == 0 else ["sluice", "kafka"]
                for kind in order:
                    self.session(rep, kind)
        except BudgetExceeded:
            complete = False
            msg = f"time budget of {self.a.max_minutes} min ran out during {self.tag}; results are partial"
            self.failures.append(msg)
            print(f"bench: {msg}", file=sys.stderr)
        finally:
            PROCS.stop_all()
            if not self.a.keep_tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
        return complete


def segment_count(partition_dir):
    try:
        return sum(1 for f in os.listdir(partition_dir) if f.endswith(".log"))
    except OSError:
        return 0


def remove_stale_tmp(parent):
    """Data dirs of an earlier run that was SIGKILLed (its brokers died with it, through the
    parent-death signal, but nothing could delete the data). Only dirs whose owner is gone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        d = os.path.join(parent, name)
        if not name.startswith("sluice-bench.") or not os.path.isdir(d):
            continue
        try:
            with open(os.path.join(d, "owner.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if not os.path.exists(f"/proc/{pid}"):
            print(f"bench: removing {d} left by an earlier run (pid {pid} is gone)", file=sys.stderr)
            shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------------------- parsers
PP_FINAL = re.compile(
    r"^(\d+) steady state records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th",
    re.M)


def parse_pp(out, n, steady, what):
    """The steady-state summary (the records after --warmup-records)."""
    total = re.search(r"^(\d+) records sent, .* ms 99\.9th\.", out, re.M)
    if not total:
        raise StepError(f"{what}: no final summary line in its output:\n{out[-800:]}")
    if int(total.group(1)) != n:
        raise StepError(f"{what}: {total.group(1)} of {n} records sent")
    m = None
    for m in PP_FINAL.finditer(out):
        pass
    if not m:
        raise StepError(f"{what}: no steady-state summary line in its output:\n{out[-800:]}")
    sent = int(m.group(1))
    if sent != steady:
        raise StepError(f"{what}: steady state covers {sent} records, expected {steady}")
    return {"rps": float(m.group(2)), "mib": float(m.group(3)), "p99_ms": int(m.group(8))}


def parse_cp(out, n, size, what):
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    rows = [l.split(",") for l in out.splitlines() if l.count(",") == 9 and "start.time" not in l]
    if not rows:
        raise StepError(f"{what}: no result line in its output:\n{out[-800:]}")
    f = [x.strip() for x in rows[-1]]
    got = int(f[4])
    if got < n:
        raise StepError(f"{what}: consumed {got} of {n} records")
    fetch_ms = float(f[7])
    if fetch_ms <= 0:
        raise StepError(f"{what}: fetch time {fetch_ms} ms")
    # fetch.MB.sec and fetch.nMsg.sec leave out the group join (rebalance.time.ms).
    return {"mib": float(f[8]), "rps": float(f[9]), "rebalance_ms": float(f[6])}


def parse_e2e(out, what):
    a = re.search(r"Avg latency: ([\d.]+) ms", out)
    p = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    if not (a and p):
        raise StepError(f"{what}: no latency lines in its output:\n{out[-800:]}")
    return {"avg": float(a.group(1)), "p50": int(p.group(1)), "p99": int(p.group(2)),
            "p999": int(p.group(3))}


# ------------------------------------------------------------------------------- reporting
def fmt(v, unit):
    if v is None:
        return "—"
    if unit == "records/s":
        return f"{v:,.0f}"
    if unit == "whole ms":
        return "<1" if v < 1 else f"{v:g}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_ratio(r):
    if r is None:
        return "—"
    if r >= 1:
        return f"{r:.2f}×"
    return f"{r:#.2g}×"  # two significant digits: 0.0031×, 0.20×, not 0.00×


def summarize(h):
    rows = []
    for mid, (section, label, unit, higher) in METRICS.items():
        ks, ss = h.samples["kafka"].get(mid, []), h.samples["sluice"].get(mid, [])
        km = statistics.median(ks) if ks else None
        sm = statistics.median(ss) if ss else None
        ratio = sm / km if (km and sm is not None) else None
        rows.append({"id": mid, "section": section, "label": label, "unit": unit,
                     "higher_is_better": higher, "kafka": km, "sluice": sm, "ratio": ratio,
                     "kafka_samples": ks, "sluice_samples": ss})
    return rows


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except Exception:
        return "?"


def tool_version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception:
        return "?"


def write_markdown(h, rows, path, wall_s, complete):
    a = h.a
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    out = []
    out.append("# Sluice vs Apache Kafka — benchmark results\n")
    out.append(f"Generated by `bench/run{' --quick' if h.quick else ''}` on "
               f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {wall_s / 60:.1f} min"
               f"{'' if complete else ' — **INCOMPLETE: time budget ran out**'}.\n")
    out.append("| | |\n|---|---|")
    out.append(f"| Sluice | {getattr(h, 'sluice_desc', h.sluice_bin)} |")
    out.append(f"| Kafka | {KAFKA_VERSION} (kafka_2.13 from Maven Central), KRaft combined mode, "
               f"one node, JVM `{KAFKA_HEAP}` G1 |")
    out.append(f"| Java | {tool_version(['java', '-version'])} |")
    out.append(f"| librdkafka | {h.rdk_version} (confluent-kafka) |")
    out.append(f"| machine | {os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.system()} "
               f"{platform.release()}; load average at the end {load[0]:.2f} |")
    out.append(f"| repetitions | {a.reps} per broker, alternating which starts first; "
               f"the table shows medians |")
    out.append(f"| topics | {h.partitions} partition(s) for throughput, 1 for latency; RF 1; "
               f"created with the same admin client |")
    out.append(f"| records per run | ProducerPerformance {h.n['java'][1024]:,} × 1 KiB and "
               f"{h.n['java'][100]:,} × 100 B (first 20% not counted: --warmup-records); "
               f"librdkafka produce and both consumers {h.n['rdk'][1024]:,} × 1 KiB and "
               f"{h.n['rdk'][100]:,} × 100 B; before that an unmeasured warm-up of "
               f"{h.warmup_n[1024]:,} × 1 KiB + {h.warmup_n[100]:,} × 100 B produced and "
               f"consumed |")
    out.append(f"| e2e | EndToEndLatency {h.e2e_java_n:,} records; librdkafka "
               f"(producer linger.ms=1) {h.e2e_rate or '—'} rec/s for {h.e2e_rdk_secs} s "
               f"(first {h.e2e_rdk_warmup} s not counted): {h.e2e_rate_basis or '—'} |")
    rolls = {k: [r["e2e_rdk"].get("segment_rolls") for r in h.runs
                 if r["broker"] == k and "e2e_rdk" in r] for k in ("kafka", "sluice")}
    out.append(f"| e2e segment rolls | segment rolls of the latency topic during each "
               f"fixed-rate run (default segment size 1 GiB; a roll inside the window moves the "
               f"tail latencies): Kafka {rolls['kafka']}, Sluice {rolls['sluice']} |")
    out.append("")
    out.append("Ratio is Sluice / Kafka; ↑ means higher is better, ↓ lower is better. "
               "MiB = 2^20 bytes (what Kafka's tools call MB).\n")
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            out.append(f"\n### {section}\n")
            out.append("| metric | unit | Kafka | Sluice | Sluice/Kafka | samples Kafka ; Sluice |")
            out.append("|---|---|---:|---:|---:|---|")
        arrow = "↑" if r["higher_is_better"] else "↓"
        ratio = fmt_ratio(r["ratio"])
        smp = (", ".join(fmt(v, r["unit"]) for v in r["kafka_samples"]) + " ; " +
               ", ".join(fmt(v, r["unit"]) for v in r["sluice_samples"]))
        out.append(f"| {r['label']} {arrow} | {r['unit']} | {fmt(r['kafka'], r['unit'])} | "
                   f"{fmt(r['sluice'], r['unit'])} | {ratio} | {smp} |")
    fmts = [r.get("format_ms") for r in h.runs if r.get("format_ms")]
    out.append("")
    if fmts:
        out.append(f"Kafka's `StorageTool format` (run before each Kafka start, not counted in "
                   f"its start-up time) took {statistics.median(fmts):,.0f} ms (median).\n")
    out.append("## Failures\n")
    out.extend([f"- {f.splitlines()[0]}" for f in h.failures] or ["None."])
    out.append("\n## Notes\n")
    out.extend([f"- {n}" for n in h.notes] or ["None."])
    out.append("\n## Caveats\n")
    out.append("- Brokers, clients and the harness share the same cores; throughput numbers "
               "are client+broker numbers on this machine, not broker limits.")
    out.append("- The librdkafka generator is Python (confluent-kafka): at 100 B it is limited "
               "by the Python loop rather than by the broker.")
    out.append("- EndToEndLatency reports whole milliseconds (truncated); its avg is exact.")
    out.append("- Per-process logs of this run: `bench/results/logs/`.")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_chart(h, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {r["id"]: r for r in rows}
    fig, axes = plt.subplots(2, 2, figsize=(16, 10))
    colors = {"kafka": "#4c72b0", "sluice": "#dd8452"}

    def bars(ax, ids, labels, title, ylabel, log=False):
        import numpy as np
        x = np.arange(len(ids))
        w = 0.38
        for i, kind in enumerate(["kafka", "sluice"]):
            vals = [by[m][kind] if by[m][kind] is not None else 0 for m in ids]
            bs = ax.bar(x + (i - 0.5) * w, vals, w, label="Kafka 4.4.0" if kind == "kafka"
                        else "Sluice", color=colors[kind])
            for rect, v, m in zip(bs, vals, ids):
                if v or by[m][kind] is not None:
                    ax.annotate(fmt(v, by[m]["unit"]), (rect.get_x() + rect.get_width() / 2, v),
                                ha="center", va="bottom", fontsize=7)
        # Ratio Sluice/Kafka as the last line of each tick label.
        ax.set_xticks(x)
        ax.set_xticklabels([f"{lab}\n{fmt_ratio(by[m]['ratio'])}" for lab, m in zip(labels, ids)],
                           fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=8)

    tp_ids, tp_labels = [], []
    for client, cl in [("java", "Java"), ("rdk", "rdk")]:
        for size, sn in [(1024, "1K"), (100, "100B")]:
            for acks in ACKS:
                tp_ids.append(f"produce.{client}.{size}.{acks}.mib")
                tp_labels.append(f"P {cl}\n{sn}/{acks}")
    for client, cl in [("java", "Java"), ("rdk", "rdk")]:
        for size, sn in [(1024, "1K"), (100, "100B")]:
            tp_ids.append(f"consume.{client}.{size}.mib")
            tp_labels.append(f"C {cl}\n{sn}")
    bars(axes[0][0], tp_ids, tp_labels, "Throughput, MiB/s (higher is better). P = produce, "
         "C = consume; last label line: Sluice/Kafka", "MiB/s")
    lat_ids = ["e2e.java.avg", "e2e.java.p50", "e2e.java.p99", "e2e.java.p999",
               "e2e.rdk.p50", "e2e.rdk.p99", "e2e.rdk.p999"]
    lat_labels = ["1-in-flight\navg", "1-in-flight\np50", "1-in-flight\np99",
                  "1-in-flight\np99.9", f"{h.e2e_rate}/s\np50", f"{h.e2e_rate}/s\np99",
                  f"{h.e2e_rate}/s\np99.9"]
    bars(axes[0][1], lat_ids, lat_labels, "End-to-end latency (ms, lower is better)", "ms")
    bars(axes[1][0], ["startup.ms"], ["exec → first ApiVersions"],
         "Start-up time (ms, log scale, lower is better)", "ms", log=True)
    bars(axes[1][1], ["rss.idle", "rss.peak", "cpu.total"],
         ["idle RSS (MiB)", "peak RSS under load (MiB)", "CPU time for workload (s)"],
         "Resources (log scale, lower is better)", "MiB / s", log=True)
    fig.suptitle(f"Sluice vs Kafka {KAFKA_VERSION} — medians of {h.a.reps} run(s)"
                 f"{' (quick)' if h.quick else ''}; {os.cpu_count()} cores", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def one_line(h, rows, wall_s, complete):
    by = {r["id"]: r for r in rows}

    def r(mid, label):
        v = by[mid]["ratio"]
        return f"{label} {fmt_ratio(v).replace('×', 'x')}" if v is not None else f"{label} n/a"

    parts = [r("produce.java.1024.1.mib", "produce 1KiB acks=1"),
             r("produce.java.100.all.rps", "produce 100B acks=all rec/s"),
             r("consume.java.1024.mib", "consume"),
             r("e2e.rdk.p99", "e2e p99"),
             r("startup.ms", "startup"),
             r("rss.idle", "idle RSS"),
             r("rss.peak", "peak RSS")]
    status = "ok" if (complete and not h.failures) else f"{len(h.failures)} failure(s)"
    return (f"bench{' --quick' if h.quick else ''}: Sluice/Kafka " + ", ".join(parts) +
            f" [{h.a.reps} rep(s), {wall_s / 60:.1f} min, {status}] -> "
            f"{os.path.relpath(os.path.join(h.results_dir, 'results.md'), os.getcwd())}")


# ------------------------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(
        prog="bench/run", description="Benchmark Sluice against Apache Kafka "
        f"{KAFKA_VERSION} on this machine, with Kafka's own perf tools and a librdkafka "
        "generator.", epilog=HELP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition and smaller runs (a few minutes)")
    ap.add_argument("--reps", type=int, help="repetitions per broker (default 3; 1 with --quick)")
    ap.add_argument("--partitions", type=int, default=3,
                    help="partitions of the throughput topics (default 3)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every record count by this (default 1)")
    ap.add_argument("--e2e-rate", type=int,
                    help="fixed rate for the librdkafka e2e test (default: half of Kafka's max)")
    ap.add_argument("--max-minutes", type=float,
                    help="time budget for the measurements (default 18; 8 with --quick)")
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp-dir", default=None, help="where broker data dirs go (default $TMPDIR)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep broker data dirs")
    # Set by bench/run:
    ap.add_argument("--kafka-lib", default=os.environ.get("BENCH_KAFKA_LIB"), help=argparse.SUPPRESS)
    ap.add_argument("--sluice-bin", default=os.environ.get("SLUICE_BIN"), help=argparse.SUPPRESS)
    ap.add_argument("--python", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.reps is None:
        a.reps = 1 if a.quick else 3
    if a.max_minutes is None:
        a.max_minutes = 8 if a.quick else 18
    if not a.kafka_lib or not os.path.isdir(a.kafka_lib):
        print("bench: the Kafka jars are missing; run this through bench/run", file=sys.stderr)
        return 2
    if not a.sluice_bin or not os.access(a.sluice_bin, os.X_OK):
        print(f"bench: no sluice binary at {a.sluice_bin!r}; run this through bench/run",
              file=sys.stderr)
        return 2
    a.results_dir = os.path.abspath(a.results_dir)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)

    h = Harness(a)
    try:
        h.rdk_version = subprocess.run(
            [h.py, "-c", "import confluent_kafka as c; print(c.libversion()[0])"],
            capture_output=True, text=True, timeout=30).stdout.strip() or "?"
    except Exception:
        h.rdk_version = "?"
    print(f"bench: {'quick' if a.quick else 'full'} run, {a.reps} repetition(s), budget "
          f"{a.max_minutes:g} min; logs in {os.path.relpath(h.logdir, os.getcwd())}",
          file=sys.stderr, flush=True)
    try:
        complete = h.run()
    except SystemExit as e:
        PROCS.stop_all()
        print(f"bench: interrupted (exit {e.code}); every process it started is stopped; "
              "no results written", file=sys.stderr)
        raise
    finally:
        PROCS.stop_all()
    wall = time.monotonic() - h.t_start
    rows = summarize(h)
    os.makedirs(a.results_dir, exist_ok=True)
    md = os.path.join(a.results_dir, "results.md")
    write_markdown(h, rows, md, wall, complete)
    with open(os.path.join(a.results_dir, "results.json"), "w") as f:
        json.dump({"quick": a.quick, "reps": a.reps, "wall_s": wall, "complete": complete,
                   "e2e_rate": h.e2e_rate, "e2e_rate_basis": h.e2e_rate_basis,
                   "records": h.n, "partitions": h.partitions, "metrics": rows,
                   "runs": h.runs, "failures": h.failures, "notes": h.notes}, f, indent=1)
    try:
        write_chart(h, rows, os.path.join(a.results_dir, "results.png"))
    except Exception as e:  # a chart problem must not lose the table
        h.failures.append(f"chart: {e}")
        print(f"bench: FAILED chart: {e}", file=sys.stderr)
    print(one_line(h, rows, wall, complete), flush=True)
    return 0 if (complete and not h.failures) else 1


if __name__ == "__main__":
    sys.exit(main())
