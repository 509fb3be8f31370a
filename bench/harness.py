#!/usr/bin/env python3
"""Sluice vs Apache Kafka benchmark harness. Start it through bench/run, which prepares the
Python venv, the Kafka jars, the sluice binary and librdkafka's rdkafka_performance, then runs
this file with the venv's Python.

This process stays single-threaded and never loads librdkafka itself (topic admin and the
librdkafka load generator run as child processes, bench/rdkload.py), so every child can be
started with a parent-death signal: if the harness is killed, its brokers die with it.

Sections of a run (each can be left out, see --only): the disk baseline, the single-broker
comparison (Kafka's tools and bench/rdkload.py), rdkafka_performance against the same single
brokers, and the 3-broker cluster (RF=3, acks=all).
"""
import argparse
import base64
import collections
import ctypes
import datetime
import json
import os
import platform
import random
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
CLUSTER_HEAP = "-Xmx512m -Xms512m"  # each of the three Kafka nodes of the cluster section
TOOL_HEAP = "-Xmx512m"
# The GC flags kafka-run-class.sh uses (KAFKA_JVM_PERFORMANCE_OPTS), for the broker and tools.
JVM_PERF_OPTS = ("-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
                 " -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true")
MIB = 1024 * 1024
SECTIONS = ("disk", "single", "rdkperf", "cluster")
CLUSTER_NODES = 3
CLUSTER_PARTITIONS = 3
CLUSTER_TOPIC_CONFIG = ["min.insync.replicas=2"]
# A side whose process(es) used at least this many CPU seconds per wall second saturated a core.
SATURATED = 0.9
# rdkafka_performance sets linger.ms=1000 itself: the last partial batches of a count-limited run
# would wait that long. The harness gives it librdkafka's default instead (as rdkload.py uses).
RDKPERF_PRODUCER_CONF = ["-X", "linger.ms=5"]
DISK_TARGET_PCT = 70

HELP_EPILOG = """\
what it does
  disk      Before any broker runs: plain buffered sequential writes (1 MiB os.write() blocks,
            no fsync) to the filesystem of the brokers' data dirs, and the same ending with one
            fsync -> MiB/s; Sluice's best single-broker produce MiB/s as a %% of the buffered
            figure (target >= %d %%).
  single    For each repetition it starts Kafka and Sluice one after the other (alternating
            which goes first), each fresh on loopback with an empty data dir in a temp dir,
            creates the same topics (same partitions, RF 1, same admin client) and runs,
            against each:
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
  rdkperf   In the same single-broker sessions, after the above: librdkafka's own C tool
            rdkafka_performance (from the librdkafka build compat-tests/librdkafka/run caches;
            skipped with a note when absent) produces 1 KiB and 100 B records with acks=1 and
            acks=all and consumes the acks=1 topics. For it and for ProducerPerformance: the
            client's and the broker's CPU seconds per million records and CPU per wall second,
            so a client-bound figure is not mistaken for the broker's.
  cluster   Per repetition (alternating): 3 Kafka KRaft nodes in combined mode (heap %s
            each) and `sluice dev-cluster --brokers 3`; a 3-partition topic with RF=3 and
            min.insync.replicas=2: ProducerPerformance 1 KiB acks=all, ConsumerPerformance
            1 KiB, start-up until all three answer, summed RSS of the three broker processes.
  Medians over the repetitions and the Sluice/Kafka ratio go to bench/results/results.md,
  results.png and results.json; logs of every process to bench/results/logs/.

exit status
  0 when every measurement ran, 1 when any failed or the time budget ran out (the results
  files are still written, failures listed), 2 on a setup error.
""" % (DISK_TARGET_PCT, KAFKA_HEAP, CLUSTER_HEAP)


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


def _send(pid, sig, group):
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except ProcessLookupError:
        pass


class Procs:
    """Every process the harness starts, so all of them are stopped on any exit."""

    def __init__(self):
        self.live = []

    def start(self, argv, log_path, cwd=None, env=None, stdin=subprocess.DEVNULL, capture=False,
              term_group=True):
        """term_group=False: SIGTERM goes to the process alone (a supervisor that stops its own
        children); SIGKILL always goes to its whole process group."""
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
        p._bench_term_group = term_group
        self.live.append(p)
        return p

    def stop(self, *procs, grace=30.0):
        """SIGTERM to each child (to its process group: it leads its own session), SIGKILL to the
        group of any still running `grace` s later. Returns the seconds it took."""
        t0 = time.monotonic()
        for p in procs:
            if p.poll() is None:
                _send(p.pid, signal.SIGTERM, p._bench_term_group)
        for p in procs:
            try:
                p.wait(max(0.0, t0 + grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"bench: pid {p.pid} ignored SIGTERM for {grace:.0f}s; SIGKILL", file=sys.stderr)
                _send(p.pid, signal.SIGKILL, True)
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


def reap(p):
    """Non-blocking wait4(): once the child has exited, records its exit status (so Popen knows)
    and its CPU time, utime + stime of all its threads: the counters /proc/PID/stat shows while
    it runs, which are gone once it is reaped. Returns the exit status or None."""
    if p.returncode is None:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere
            return p.poll()
        if pid == 0:
            return None
        p.returncode = os.waitstatus_to_exitcode(status)
        p._bench_cpu_s = ru.ru_utime + ru.ru_stime
        p._bench_exit_t = time.monotonic()
    return p.returncode


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


def _proc_stat(pid):
    """Fields of /proc/PID/stat after the command name (field 3, the state, first)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid):
    fields = _proc_stat(pid)
    try:
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime
    except (TypeError, IndexError, ValueError):
        return None


def pid_running(pid):
    fields = _proc_stat(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def _sum_or_none(values):
    values = list(values)
    return None if (not values or None in values) else sum(values)


def rss_sum(pids):
    return _sum_or_none(rss_kib(p) for p in pids)


def cpu_sum(pids):
    return _sum_or_none(cpu_seconds(p) for p in pids)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_port_block(offsets, lo=20000, hi=32000, tries=200):
    """A base port P such that P+o is free on 127.0.0.1 for every offset o (below the usual
    ephemeral range, so client sockets are unlikely to take them meanwhile)."""
    for _ in range(tries):
        base = random.randrange(lo, hi)
        socks = []
        try:
            for off in offsets:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + off))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise StepError(f"no free block of ports {offsets} found")


# ------------------------------------------------------------------------- ApiVersions probe
def _apiversions_v3_request(corr):
    client_id = b"bench-probe"
    hdr = struct.pack(">hhih", 18, 3, corr, len(client_id)) + client_id + b"\x00"
    sw_name, sw_ver = b"sluice-bench", b"1"
    body = bytes([len(sw_name) + 1]) + sw_name + bytes([len(sw_ver) + 1]) + sw_ver + b"\x00"
    msg = hdr + body
    return struct.pack(">i", len(msg)) + msg


def probe_apiversions(port, deadline, log_path, death):
    """Connect + ApiVersions v3, retried every 1 ms, until the broker answers with error 0.
    `death()` says why the broker is gone, or None while it runs. Returns time.monotonic() of
    the answer."""
    corr = 0
    while True:
        gone = death()
        if gone:
            raise StepError(f"{gone} before answering ApiVersions\n{tail(log_path)}")
        if time.monotonic() > deadline:
            raise StepError(f"broker on port {port} did not answer ApiVersions in time\n"
                            f"{tail(log_path)}")
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
                    if death() or time.monotonic() > deadline:
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
# What the harness needs from a broker or a cluster: start(timeout) -> start-up ms, bootstrap,
# pids (the broker processes, for RSS and CPU), death() (None while every process runs, else
# what happened), tail() (the relevant log lines), stop() -> (seconds, exit statuses),
# format_ms (Kafka's storage format, None for Sluice).
class Broker:
    """One broker process."""
    name = "?"

    def __init__(self, h, session_dir):
        self.h = h
        self.dir = session_dir
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc = None
        self.log = None
        self.format_ms = None

    @property
    def pid(self):
        return self.proc.pid

    @property
    def pids(self):
        return [self.proc.pid] if self.proc else []

    def started(self):
        return self.proc is not None

    def death(self):
        if self.proc is None or self.proc.poll() is None:
            return None
        return f"broker exited with status {self.proc.returncode}"

    def tail(self):
        return tail(self.log)

    def spawn(self, argv):
        self.t_exec = time.monotonic()
        self.proc = PROCS.start(argv, self.log, cwd=self.dir, env=self.h.child_env)

    def wait_ready(self, deadline):
        """time.monotonic() of the first answered ApiVersions."""
        return probe_apiversions(self.port, deadline, self.log, self.death)

    def stop(self):
        secs = PROCS.stop(self.proc, grace=60.0)
        return secs, [self.proc.returncode]


class KafkaBroker(Broker):
    """A KRaft node in combined mode (broker + controller). Alone it is the single-node Kafka
    (internal topics at RF 1, a dynamic quorum of one); KafkaCluster runs three of them."""
    name = "kafka"

    def __init__(self, h, session_dir, node_id=1, heap=KAFKA_HEAP, log_stem="kafka"):
        super().__init__(h, session_dir)
        os.makedirs(session_dir, exist_ok=True)
        self.node_id = node_id
        self.heap = heap
        self.cport = free_port()
        self.cfg = os.path.join(session_dir, "server.properties")
        self.log = os.path.join(h.logdir, f"{h.tag}-{log_stem}-broker.log")
        self.format_log = os.path.join(h.logdir, f"{h.tag}-{log_stem}-format.log")

    def configure(self, extra):
        with open(self.cfg, "w") as f:
            f.write("\n".join([
                "process.roles=broker,controller",
                f"node.id={self.node_id}",
                f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.cport}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name=PLAINTEXT",
                f"log.dirs={os.path.join(self.dir, 'data')}",
            ] + extra + [f"{k}={v}" for k, v in self.h.common_broker_settings]) + "\n")

    def format(self, cluster_id, *flags):
        """Storage must be formatted before the first start (not part of the start-up time).
        Returns the ms it took."""
        t0 = time.monotonic()
        self.h.run_tool(
            "kafka storage format",
            self.h.java(TOOL_HEAP, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                        "-c", self.cfg, *flags),
            self.format_log, timeout=120)
        return (time.monotonic() - t0) * 1000.0

    def spawn_jvm(self):
        self.spawn(self.h.java(self.heap, "kafka.Kafka", self.cfg, log_level="INFO"))

    def start(self, timeout):
        self.configure([
            f"controller.quorum.bootstrap.servers=127.0.0.1:{self.cport}",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
        ])
        self.format_ms = self.format(kafka_uuid(), "--standalone")
        self.spawn_jvm()
        return (self.wait_ready(self.t_exec + timeout) - self.t_exec) * 1000.0


class SluiceBroker(Broker):
    name = "sluice"

    def start(self, timeout):
        self.log = os.path.join(self.h.logdir, f"{self.h.tag}-sluice-broker.log")
        argv = [self.h.sluice_bin, "serve", "--listen", self.bootstrap,
                "--data-dir", os.path.join(self.dir, "data")]
        for k, v in self.h.common_broker_settings:
            argv += ["--set", f"{k}={v}"]
        self.spawn(argv)
        return (self.wait_ready(self.t_exec + timeout) - self.t_exec) * 1000.0


class KafkaCluster:
    """CLUSTER_NODES KRaft nodes in combined mode with a static quorum (controller.quorum.voters
    lists all of them), each formatted with the same cluster id; internal topics at Kafka's
    defaults (RF 3)."""
    name = "kafka"

    def __init__(self, h, session_dir):
        self.nodes = [KafkaBroker(h, os.path.join(session_dir, f"node-{i}"), node_id=i,
                                  heap=CLUSTER_HEAP, log_stem=f"kafka-node{i}")
                      for i in range(1, CLUSTER_NODES + 1)]
        self.bootstrap = ",".join(n.bootstrap for n in self.nodes)
        self.format_ms = None

    @property
    def pids(self):
        return [n.pid for n in self.nodes if n.started()]

    def started(self):
        return any(n.started() for n in self.nodes)

    def death(self):
        for n in self.nodes:
            gone = n.death()
            if gone:
                return f"node {n.node_id}: {gone}"
        return None

    def tail(self):
        dead = [n for n in self.nodes if n.death()] or self.nodes[:1]
        return "\n".join(f"    node {n.node_id}:\n{n.tail()}" for n in dead)

    def start(self, timeout):
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.cport}" for n in self.nodes)
        cluster_id = kafka_uuid()
        self.format_ms = 0.0
        for n in self.nodes:
            n.configure([f"controller.quorum.voters={voters}"])
            self.format_ms += n.format(cluster_id)
        for n in self.nodes:
            n.spawn_jvm()
        t0 = self.nodes[0].t_exec
        # No node answers before a quorum is up, so all are started before any is probed.
        ready = max(n.wait_ready(t0 + timeout) for n in self.nodes)
        return (ready - t0) * 1000.0

    def stop(self):
        procs = [n.proc for n in self.nodes if n.started()]
        secs = PROCS.stop(*procs, grace=60.0)
        return secs, [p.returncode for p in procs]


class SluiceCluster:
    """`sluice dev-cluster --brokers CLUSTER_NODES`: a supervisor process that starts the nodes
    (client ports P.., controller ports P+100..) and stops them all on SIGTERM. The nodes log
    into their data dirs; their logs are copied to the log dir when the cluster stops."""
    name = "sluice"
    NODE_LINE = re.compile(r"^node (\d+) pid (\d+) listening (\S+):(\d+)\s*$", re.M)

    def __init__(self, h, session_dir):
        self.h = h
        self.dir = session_dir
        self.data = os.path.join(session_dir, "data")
        self.log = os.path.join(h.logdir, f"{h.tag}-sluice-dev-cluster.log")
        self.proc = None
        self.nodes = []  # (node id, pid, client port)
        self.bootstrap = None
        self.format_ms = None

    @property
    def pids(self):
        return [pid for _, pid, _ in self.nodes]

    def started(self):
        return self.proc is not None

    def node_log(self, node_id):
        return os.path.join(self.data, f"node-{node_id}", "sluice.log")

    def death(self):
        if self.proc is not None and self.proc.poll() is not None:
            return f"dev-cluster exited with status {self.proc.returncode}"
        for node_id, pid, _ in self.nodes:
            if not pid_running(pid):
                return f"node {node_id} (pid {pid}) is gone"
        return None

    def tail(self):
        dead = [nid for nid, pid, _ in self.nodes if not pid_running(pid)]
        return "\n".join([tail(self.log)] + [f"    node {nid}:\n{tail(self.node_log(nid))}"
                                             for nid in dead])

    def start(self, timeout):
        base = free_port_block([i for i in range(CLUSTER_NODES)] +
                               [100 + i for i in range(CLUSTER_NODES)])
        argv = [self.h.sluice_bin, "dev-cluster", "--brokers", str(CLUSTER_NODES),
                "--base-port", str(base), "--data-dir", self.data]
        for k, v in self.h.common_broker_settings:
            argv += ["--set", f"{k}={v}"]
        t0 = time.monotonic()
        self.proc = PROCS.start(argv, self.log, cwd=self.dir, env=self.h.child_env,
                                term_group=False)
        self.nodes = self._wait_for_nodes(t0 + timeout)
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for _, _, port in self.nodes)
        ready = max(probe_apiversions(port, t0 + timeout, self.node_log(nid), self.death)
                    for nid, _, port in self.nodes)
        return (ready - t0) * 1000.0

    def _wait_for_nodes(self, deadline):
        """The supervisor's "node <id> pid <pid> listening <host:port>" lines."""
        while True:
            with open(self.log, errors="replace") as f:
                nodes = [(int(i), int(pid), int(port))
                         for i, pid, _host, port in self.NODE_LINE.findall(f.read())]
            if len(nodes) >= CLUSTER_NODES:
                return nodes[:CLUSTER_NODES]
            if self.proc.poll() is not None:
                raise StepError(f"dev-cluster exited with status {self.proc.returncode}\n"
                                f"{tail(self.log)}")
            if time.monotonic() > deadline:
                raise StepError(f"dev-cluster did not report its nodes in time\n{tail(self.log)}")
            time.sleep(0.005)

    def stop(self):
        secs = PROCS.stop(self.proc, grace=60.0)
        left = [pid for pid in self.pids if pid_running(pid)]
        if left:
            # The nodes are in the supervisor's process group (it leads its own session).
            self.h.notes.append(f"[{self.h.tag}] sluice dev-cluster exited but left node "
                                f"pid(s) {left} running; SIGKILLed")
            _send(self.proc.pid, signal.SIGKILL, True)
        for node_id, _, _ in self.nodes:
            try:
                shutil.copy(self.node_log(node_id),
                            os.path.join(self.h.logdir, f"{self.h.tag}-sluice-node{node_id}.log"))
            except OSError:
                pass
        return secs, [self.proc.returncode]


BROKERS = {
    ("single", "kafka"): KafkaBroker, ("single", "sluice"): SluiceBroker,
    ("cluster", "kafka"): KafkaCluster, ("cluster", "sluice"): SluiceCluster,
}


def kafka_uuid():
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. Like Kafka's own
    generator, avoid a leading '-' (it would read as an option)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if s[0] not in "-_":
            return s


# ------------------------------------------------------------------------------- metrics
# Groups are the H2 sections of results.md (and the "group" of each metric in results.json),
# in this order; sections are its tables.
GROUPS = collections.OrderedDict([
    ("single", "Single broker (RF 1): Kafka's tools and the librdkafka generator"),
    ("rdkperf", "Single broker, driven by rdkafka_performance (librdkafka's C tool); "
                "each client's CPU ceiling"),
    ("cluster", f"Cluster: {CLUSTER_NODES} brokers, RF=3, acks=all, min.insync.replicas=2"),
])
Metric = collections.namedtuple("Metric", "group section label unit higher")
METRICS = {}  # id -> Metric; higher: True/False (which is better), None (neither)


def metric(mid, group, section, label, unit, higher):
    METRICS[mid] = Metric(group, section, label, unit, higher)


def cpu_metrics(key, group, label):
    """cpu.<key>.client|broker (CPU s per million records) and cores.<key>.client|broker (CPU s
    per wall s: how much of a core each side used)."""
    for side in ("client", "broker"):
        metric(f"cpu.{key}.{side}", group, "CPU per million records (client: the load tool's "
               "process; broker: the broker process(es), same interval)", f"{label} — {side}",
               "CPU s/M rec", False)
    for side in ("client", "broker"):
        metric(f"cores.{key}.{side}", group, "Cores used (CPU s per second of the measuring "
               "window)", label, "cores", None)


SIZES = [(1024, "1 KiB"), (100, "100 B")]
ACKS = ["1", "all"]
for _client, _cname in [("java", "ProducerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        for _acks in ACKS:
            _k = f"produce.{_client}.{_size}.{_acks}"
            metric(f"{_k}.mib", "single", f"Produce ({_cname})", f"{_sname} acks={_acks}", "MiB/s", True)
            metric(f"{_k}.rps", "single", f"Produce ({_cname})", f"{_sname} acks={_acks}", "records/s", True)
for _client, _cname in [("java", "ConsumerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        _k = f"consume.{_client}.{_size}"
        metric(f"{_k}.mib", "single", f"Consume ({_cname})", f"{_sname}", "MiB/s", True)
        metric(f"{_k}.rps", "single", f"Consume ({_cname})", f"{_sname}", "records/s", True)
_sec = "End-to-end latency, one in flight (EndToEndLatency, 1 KiB, acks=1)"
metric("e2e.java.avg", "single", _sec, "avg", "ms", False)
# The tool prints these percentiles as whole milliseconds, truncated.
metric("e2e.java.p50", "single", _sec, "p50", "whole ms", False)
metric("e2e.java.p99", "single", _sec, "p99", "whole ms", False)
metric("e2e.java.p999", "single", _sec, "p99.9", "whole ms", False)
_sec = "End-to-end latency at a fixed rate (librdkafka, 1 KiB, acks=1)"
metric("e2e.rdk.p50", "single", _sec, "p50", "ms", False)
metric("e2e.rdk.p99", "single", _sec, "p99", "ms", False)
metric("e2e.rdk.p999", "single", _sec, "p99.9", "ms", False)
metric("e2e.rdk.max", "single", _sec, "max", "ms", False)
_sec = "Process"
metric("startup.ms", "single", _sec, "start-up: exec to first ApiVersions answer", "ms", False)
metric("rss.idle", "single", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("rss.peak", "single", _sec, "peak RSS under load", "MiB", False)
metric("cpu.total", "single", _sec, "broker CPU time for the whole workload", "s", False)

for _size, _sname in SIZES:
    for _acks in ACKS:
        _k = f"produce.rdkperf.{_size}.{_acks}"
        metric(f"{_k}.mib", "rdkperf", "Produce (rdkafka_performance)", f"{_sname} acks={_acks}", "MiB/s", True)
        metric(f"{_k}.rps", "rdkperf", "Produce (rdkafka_performance)", f"{_sname} acks={_acks}", "records/s", True)
for _size, _sname in SIZES:
    metric(f"consume.rdkperf.{_size}.mib", "rdkperf", "Consume (rdkafka_performance)", _sname, "MiB/s", True)
    metric(f"consume.rdkperf.{_size}.rps", "rdkperf", "Consume (rdkafka_performance)", _sname, "records/s", True)
for _size, _sname in SIZES:
    for _acks in ACKS:
        cpu_metrics(f"rdkperf.produce.{_size}.{_acks}", "rdkperf",
                    f"rdkafka_performance produce {_sname} acks={_acks}")
for _size, _sname in SIZES:
    cpu_metrics(f"rdkperf.consume.{_size}", "rdkperf", f"rdkafka_performance consume {_sname}")
for _size, _sname in SIZES:
    for _acks in ACKS:
        cpu_metrics(f"java.produce.{_size}.{_acks}", "rdkperf",
                    f"ProducerPerformance {_sname} acks={_acks}")

_sec = "Cluster throughput (1 KiB, 3 partitions, RF=3)"
metric("cluster.produce.mib", "cluster", _sec, "ProducerPerformance acks=all", "MiB/s", True)
metric("cluster.produce.rps", "cluster", _sec, "ProducerPerformance acks=all", "records/s", True)
metric("cluster.consume.mib", "cluster", _sec, "ConsumerPerformance", "MiB/s", True)
metric("cluster.consume.rps", "cluster", _sec, "ConsumerPerformance", "records/s", True)
_sec = "Cluster processes (RSS and CPU: sums over the three broker processes)"
metric("cluster.startup.ms", "cluster", _sec, "start-up: first exec to all three answering "
       "ApiVersions", "ms", False)
metric("cluster.rss.idle", "cluster", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("cluster.rss.peak", "cluster", _sec, "peak RSS under load", "MiB", False)
cpu_metrics("cluster.produce", "cluster", "ProducerPerformance 1 KiB acks=all")


# ------------------------------------------------------------------------------- harness
class Session:
    """A broker or cluster under test for one session: runs steps against it, samples the summed
    RSS of its processes while tools run, keeps CPU accounting and reports failed steps."""

    def __init__(self, h, b, info):
        self.h = h
        self.b = b
        self.kind = b.name
        self.info = info
        self.peak_kib = 0

    def L(self, step):
        return os.path.join(self.h.logdir, f"{self.h.tag}-{step}.log")

    def log(self, msg):
        print(f"bench: [{self.h.tag}] {msg}", file=sys.stderr, flush=True)

    def record(self, mid, value):
        self.h.record(self.kind, mid, value)

    def sample(self):
        r = rss_sum(self.b.pids)
        if r and r > self.peak_kib:
            self.peak_kib = r

    def step(self, what, fn):
        gone = self.b.death()
        if gone:
            self.h.fail(self.kind, what, f"skipped: broker is not running ({gone})")
            return None
        if self.h.remaining() < 5:
            raise BudgetExceeded()
        try:
            return fn()
        except StepError as e:
            self.h.fail(self.kind, what, e)
            return None

    def measured(self, name, argv, log_path, timeout=240):
        """Runs a load tool with CPU accounting. Returns its stdout and a dict: the tool's own CPU
        seconds (cpu_s) and lifetime (wall_s), and the CPU seconds the broker process(es) used
        meanwhile (broker_cpu_s, from /proc/PID/stat)."""
        usage = {}
        before = cpu_sum(self.b.pids)
        out = self.h.run_tool(name, argv, log_path, timeout, tick=self.sample, usage=usage)
        after = cpu_sum(self.b.pids)
        usage["broker_cpu_s"] = None if None in (before, after) else after - before
        return out, usage

    def record_cpu(self, key, records, usage, window_s=None):
        """cpu.<key>.client|broker: CPU s per million records; cores.<key>.client|broker: CPU s
        per second of the measuring window (the tool's own clock when given, e.g. a consumer's
        first to last record, which leaves out its idle start-up; else the tool's lifetime)."""
        window = window_s or usage.get("wall_s")
        self.info.setdefault("cpu", {})[key] = dict(usage, records=records, window_s=window)
        for side, cpu in (("client", usage.get("cpu_s")), ("broker", usage.get("broker_cpu_s"))):
            if cpu is not None and window:
                self.record(f"cpu.{key}.{side}", cpu / (records / 1e6))
                self.record(f"cores.{key}.{side}", cpu / window)

    def record_idle_rss(self, mid):
        idle = rss_sum(self.b.pids)
        if idle:
            self.record(mid, idle / 1024)
            self.info["rss_idle_mib"] = idle / 1024
        self.sample()

    def record_peak_rss(self, mid):
        if self.peak_kib:
            self.record(mid, self.peak_kib / 1024)
            self.info["rss_peak_mib"] = self.peak_kib / 1024


class Harness:
    def __init__(self, a):
        self.a = a
        self.quick = a.quick
        self.sections = a.sections
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
        self.disk = None
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
        # Records per produce run, by client and record size (the librdkafka clients are faster
        # at 1 KiB, so they get more records for a long enough measuring window).
        self.n = {
            "java": {1024: int(sc * (100_000 if q else 500_000)),
                     100: int(sc * (500_000 if q else 3_000_000))},
            "rdk": {1024: int(sc * (200_000 if q else 1_000_000)),
                    100: int(sc * (500_000 if q else 3_000_000))},
            "rdkperf": {1024: int(sc * (500_000 if q else 1_000_000)),
                        100: int(sc * (1_500_000 if q else 3_000_000))},
        }
        self.warmup_n = {1024: 100_000 if q else 200_000, 100: 300_000 if q else 1_000_000}
        self.e2e_java_n = 2_000 if q else 5_000
        self.e2e_rdk_secs = 8 if q else 20
        self.e2e_rdk_warmup = 1 if q else 2
        self.partitions = a.partitions
        self.cluster_n = int(sc * (100_000 if q else 150_000))
        self.cluster_warmup_n = 50_000 if q else 100_000
        self.cluster_reps = a.cluster_reps
        self.disk_mib = a.disk_mib
        self.disk_reps = 1 if q else 3
        # Why a section did not run: group -> reason.
        self.skipped = {s: "not selected (--only / --no-...)" for s in SECTIONS
                        if s not in self.sections}
        self.rdkperf_bin = self.rdkperf_version = None
        if "rdkperf" in self.sections:
            self.rdkperf_bin, self.rdkperf_version, why = find_rdkperf(a.rdkperf_bin)
            if why:
                self.skipped["rdkperf"] = why

    # -- helpers
    def java(self, heap, cls, *args, log_level="WARN"):
        return (["java"] + heap.split() + JVM_PERF_OPTS.split() +
                [f"-Dlog4j2.configurationFile={os.path.join(HERE, 'log4j2.properties')}",
                 f"-Dbench.log.level={log_level}", "-cp", os.path.join(self.lib, "*"), cls] +
                list(args))

    def remaining(self):
        return self.deadline - time.monotonic()

    def run_tool(self, name, argv, log_path, timeout, capture=True, tick=None, usage=None):
        """Run a tool to completion. Returns its stdout. Raises StepError on timeout, non-zero
        exit or a failed start; the tool's stderr goes to log_path. With a dict as `usage`, fills
        in the tool's CPU seconds (cpu_s: utime + stime of all its threads, from wait4) and its
        lifetime (wall_s)."""
        left = self.remaining()
        if left < 5:
            raise BudgetExceeded()
        timeout = min(timeout, left)
        with open(log_path, "ab") as f:
            f.write(f"$ {' '.join(argv)}\n".encode())
        t0 = time.monotonic()
        p = PROCS.start(argv, log_path, cwd=tempfile.gettempdir(), env=self.child_env,
                        capture=capture)
        out = b""
        t_end = t0 + timeout
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
                elif reap(p) is not None:
                    break
                else:
                    time.sleep(0.02)
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
        if usage is not None:
            usage.update(cpu_s=getattr(p, "_bench_cpu_s", None),
                         wall_s=getattr(p, "_bench_exit_t", time.monotonic()) - t0)
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

    # -- one broker (or cluster) session
    def session(self, section, rep, kind):
        self.tag = f"{'' if section == 'single' else section + '-'}rep{rep + 1}-{kind}"
        sdir = tempfile.mkdtemp(prefix=f"{section}-{kind}-", dir=self.tmp)
        b = BROKERS[(section, kind)](self, sdir)
        info = {"section": section, "rep": rep + 1, "broker": kind}
        self.runs.append(info)
        s = Session(self, b, info)
        single = section == "single"
        try:
            s.log("starting")
            try:
                ms = b.start(timeout=min(60 if single else 120, max(5, self.remaining())))
            except StepError as e:
                self.fail(kind, "start", e)
                info["died"] = b.death()  # already reported
                return
            info["startup_ms"] = ms
            info["format_ms"] = b.format_ms
            s.record("startup.ms" if single else "cluster.startup.ms", ms)
            s.log(f"{'answered' if single else 'all nodes answered'} ApiVersions {ms:.1f} ms "
                  f"after exec" + (f" (storage format took {b.format_ms:.0f} ms before that)"
                                   if b.format_ms else ""))
            (self.single_steps if single else self.cluster_steps)(s)
        finally:
            if b.started():
                self.stop_session(s)
            shutil.rmtree(sdir, ignore_errors=True)

    def stop_session(self, s):
        b, info, kind = s.b, s.info, s.kind
        gone = b.death()
        if gone and "died" not in info:
            info["died"] = gone
            self.fail(kind, "broker process", f"exited on its own: {gone}\n{b.tail()}")
        secs, statuses = b.stop()
        info["stop_s"] = secs
        info["exit_status"] = statuses[0] if len(statuses) == 1 else statuses
        bad = [st for st in statuses if st not in (0, -signal.SIGTERM, 143)]
        if not gone and bad:
            self.notes.append(f"[{self.tag}] {kind} exited with status {bad} on SIGTERM "
                              f"(logs: bench/results/logs/{self.tag}-*)")

    # -- steps shared by the sections
    def create_topics(self, s, specs, configs=()):
        """specs: NAME:PARTITIONS[:RF]. Returns whether it worked."""
        args = ["create-topics", "--bootstrap", s.b.bootstrap, "--timeout", "60"]
        for t in specs:
            args += ["--topic", t]
        for c in configs:
            args += ["--config", c]
        return s.step("create topics", lambda: self.rdk(
            "create topics", s.L("create-topics"), 90, *args)) is not None

    def warm_up(self, s, counts, topic_of, acks="1"):
        """Not measured: the same short produce + consume load against either broker, so a fresh
        JVM's JIT has compiled the produce and fetch paths before the clock runs."""
        for size, n in counts.items():
            common = ["--bootstrap", s.b.bootstrap, "--topic", topic_of(size), "--count", str(n)]
            what = f"warm-up produce {size} B"
            if s.step(what, lambda: self.rdk(
                    what, s.L(f"warmup-produce-{size}"), 180, "produce", *common, "--size",
                    str(size), "--acks", acks, tick=s.sample)) is None:
                continue
            what = f"warm-up consume {size} B"
            s.step(what, lambda: self.rdk(what, s.L(f"warmup-consume-{size}"), 180, "consume",
                                          *common, tick=s.sample))
        s.log("warm-up done")

    def producer_perf(self, s, what, topic, size, acks, n, log_name, cpu_key=None):
        """ProducerPerformance, unthrottled, the first 20% not counted (--warmup-records)."""
        out, usage = s.measured(what, self.java(
            TOOL_HEAP, "org.apache.kafka.tools.ProducerPerformance",
            "--bootstrap-server", s.b.bootstrap, "--topic", topic,
            "--num-records", str(n), "--record-size", str(size),
            "--throughput", "-1", "--command-property", f"acks={acks}",
            "--warmup-records", str(n // 5)), s.L(log_name))
        r = parse_pp(out, n, n - n // 5, what)
        if cpu_key:
            s.record_cpu(cpu_key, n, usage)
        return r

    def consumer_perf(self, s, what, topic, size, n, log_name):
        out = self.run_tool(what, self.java(
            TOOL_HEAP, "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server", s.b.bootstrap, "--topic", topic,
            "--num-records", str(n), "--timeout", "30000",
            "--group", f"bench-cp-{size}-{os.getpid()}"),
            s.L(log_name), timeout=240, tick=s.sample)
        return parse_cp(out, n, size, what)

    # -- the single-broker section (and rdkafka_performance against the same brokers)
    def single_steps(self, s):
        sizes = [sz for sz, _ in SIZES]
        topics = [f"warmup-{sz}:{self.partitions}" for sz in sizes]
        if "single" in self.sections:
            topics += [f"{pre}-{sz}-{a}:{self.partitions}" for pre in ("jp", "rp")
                       for sz in sizes for a in ACKS]
            topics += ["lat-java:1", "lat-rdk:1"]
        if self.rdkperf_bin:
            topics += [f"kp-{sz}-{a}:{self.partitions}" for sz in sizes for a in ACKS]
        if not self.create_topics(s, topics):
            return
        time.sleep(2)
        s.record_idle_rss("rss.idle")
        self.warm_up(s, self.warmup_n, lambda size: f"warmup-{size}")
        if "single" in self.sections:
            cpu0 = cpu_sum(s.b.pids)
            self.produce_java(s)
            self.produce_rdk(s)
            self.consume_single(s)
            self.e2e_java(s)
            self.e2e_rdk(s)
            cpu1 = cpu_sum(s.b.pids)
            if cpu0 is not None and cpu1 is not None:
                s.record("cpu.total", cpu1 - cpu0)
            s.record_peak_rss("rss.peak")
        if self.rdkperf_bin:
            self.rdkperf_steps(s)

    def produce_java(self, s):
        for size, _ in SIZES:
            for acks in ACKS:
                n = self.n["java"][size]
                what = f"ProducerPerformance {size} B acks={acks}"
                r = s.step(what, lambda: self.producer_perf(
                    s, what, f"jp-{size}-{acks}", size, acks, n, f"pp-{size}-{acks}",
                    f"java.produce.{size}.{acks}"))
                if r:
                    s.record(f"produce.java.{size}.{acks}.mib", r["mib"])
                    s.record(f"produce.java.{size}.{acks}.rps", r["rps"])
                    s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
                    if s.kind == "kafka" and size == 1024 and acks == "1":
                        s.info["kafka_java_1k_rps"] = r["rps"]

    def produce_rdk(self, s):
        for size, _ in SIZES:
            for acks in ACKS:
                n = self.n["rdk"][size]
                what = f"librdkafka produce {size} B acks={acks}"
                r = s.step(what, lambda: self.rdk(
                    what, s.L(f"rdk-produce-{size}-{acks}"), 240, "produce", "--bootstrap",
                    s.b.bootstrap, "--topic", f"rp-{size}-{acks}", "--count", str(n), "--size",
                    str(size), "--acks", acks, tick=s.sample))
                if r:
                    s.record(f"produce.rdk.{size}.{acks}.mib", r["mib_per_s"])
                    s.record(f"produce.rdk.{size}.{acks}.rps", r["records_per_s"])
                    s.log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")
                    if s.kind == "kafka" and size == 1024 and acks == "1":
                        s.info["kafka_rdk_1k_rps"] = r["records_per_s"]

    def consume_single(self, s):
        # Both consumers read what the librdkafka producer wrote with acks=1 (the longer topic).
        for size, _ in SIZES:
            n = self.n["rdk"][size]
            what = f"ConsumerPerformance {size} B"
            r = s.step(what, lambda: self.consumer_perf(s, what, f"rp-{size}-1", size, n,
                                                        f"cp-{size}"))
            if r:
                s.record(f"consume.java.{size}.mib", r["mib"])
                s.record(f"consume.java.{size}.rps", r["rps"])
                s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s "
                      f"(group join {r['rebalance_ms']:.0f} ms, not counted)")
            what = f"librdkafka consume {size} B"
            r = s.step(what, lambda: self.rdk(
                what, s.L(f"rdk-consume-{size}"), 240, "consume", "--bootstrap", s.b.bootstrap,
                "--topic", f"rp-{size}-1", "--count", str(n), tick=s.sample))
            if r:
                s.record(f"consume.rdk.{size}.mib", r["mib_per_s"])
                s.record(f"consume.rdk.{size}.rps", r["records_per_s"])
                s.log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")

    def e2e_java(self, s):
        """End-to-end, one record in flight (Kafka's tool)."""
        what = "EndToEndLatency"

        def run():
            out = self.run_tool(what, self.java(
                TOOL_HEAP, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server",
                s.b.bootstrap, "--topic", "lat-java", "--num-records", str(self.e2e_java_n),
                "--producer-acks", "1", "--record-size", "1024"),
                s.L("e2e-java"), timeout=240, tick=s.sample)
            return parse_e2e(out, what)

        r = s.step(what, run)
        if r:
            for k in ("avg", "p50", "p99", "p999"):
                s.record(f"e2e.java.{k}", r[k])
            s.log(f"{what}: avg {r['avg']:.3f} ms, p50 {r['p50']} p99 {r['p99']} "
                  f"p99.9 {r['p999']} ms")

    def set_e2e_rate(self, s):
        info = s.info
        if self.e2e_rate is None and s.kind == "kafka":
            cands = [v for v in (info.get("kafka_java_1k_rps"), info.get("kafka_rdk_1k_rps")) if v]
            if cands:
                self.e2e_rate = int(0.5 * min(cands) / 100) * 100 or 100
                self.e2e_rate_basis = (
                    f"half of the lower of Kafka's 1 KiB acks=1 max ({self.tag}): "
                    f"ProducerPerformance {info.get('kafka_java_1k_rps', 0):.0f} rec/s, "
                    f"librdkafka {info.get('kafka_rdk_1k_rps', 0):.0f} rec/s")
                s.log(f"fixed e2e rate set to {self.e2e_rate} rec/s ({self.e2e_rate_basis})")
        if self.e2e_rate is None:
            self.e2e_rate = 1000
            self.e2e_rate_basis = "fallback (Kafka's max was not measured before the first e2e run)"
            self.notes.append(f"e2e rate: {self.e2e_rate_basis}")

    def e2e_rdk(self, s):
        """End-to-end at a fixed rate (librdkafka)."""
        self.set_e2e_rate(s)
        what = f"librdkafka e2e at {self.e2e_rate} rec/s"
        r = s.step(what, lambda: self.rdk(
            what, s.L("e2e-rdk"), self.e2e_rdk_secs + 90, "e2e", "--bootstrap", s.b.bootstrap,
            "--topic", "lat-rdk", "--rate", str(self.e2e_rate), "--seconds",
            str(self.e2e_rdk_secs), "--warmup", str(self.e2e_rdk_warmup), "--size", "1024",
            "--acks", "1", tick=s.sample))
        if not r:
            return
        for k in ("p50", "p99", "p999", "max"):
            s.record(f"e2e.rdk.{k}", r[f"{k}_us"] / 1000.0)
        s.info["e2e_rdk"] = r
        # Both brokers keep Kafka's layout (<log dir>/<topic>-<partition>/<offset>.log), so the
        # segment files show whether a segment roll fell into the window: the tail latencies
        # depend on it.
        rolls = segment_count(os.path.join(s.b.dir, "data", "lat-rdk-0")) - 1
        r["segment_rolls"] = rolls
        s.log(f"{what}: p50 {r['p50_us'] / 1000:.2f} p99 {r['p99_us'] / 1000:.2f} p99.9 "
              f"{r['p999_us'] / 1000:.2f} max {r['max_us'] / 1000:.2f} ms; achieved "
              f"{r['achieved_rate']:.0f} rec/s; segment rolls during the run: {rolls}")
        if r["achieved_rate"] < 0.95 * r["target_rate"]:
            self.notes.append(f"[{self.tag}] {s.kind}: the e2e generator fell behind "
                              f"({r['achieved_rate']:.0f} of {r['target_rate']:.0f} rec/s)")

    # -- rdkafka_performance
    def rdkperf_steps(self, s):
        for size, _ in SIZES:
            for acks in ACKS:
                n = self.n["rdkperf"][size]
                self.rdkperf_run(s, f"rdkafka_performance produce {size} B acks={acks}",
                                 "produce", f"{size}.{acks}", n, parse_rdkperf_produce,
                                 ["-P", "-t", f"kp-{size}-{acks}", "-s", str(size), "-c", str(n),
                                  "-X", f"acks={acks}"] + RDKPERF_PRODUCER_CONF)
        for size, _ in SIZES:
            # Reads what it wrote with acks=1, every partition from the beginning; -e: stop at
            # the end of all partitions should there be fewer records than expected.
            n = self.n["rdkperf"][size]
            parts = [a for p in range(self.partitions) for a in ("-p", str(p))]
            self.rdkperf_run(s, f"rdkafka_performance consume {size} B", "consume", str(size),
                             n, parse_rdkperf_consume,
                             ["-C", "-t", f"kp-{size}-1", *parts, "-o", "beginning", "-e",
                              "-c", str(n)])

    def rdkperf_run(self, s, what, op, case, n, parse, args):
        """One rdkafka_performance run; op: produce|consume, case: <size>[.<acks>]."""

        def run():
            out, usage = s.measured(what, [self.rdkperf_bin, "-b", s.b.bootstrap] + args,
                                    s.L(f"rdkperf-{op}-{case.replace('.', '-')}"))
            r = parse(out, n, what)
            s.record_cpu(f"rdkperf.{op}.{case}", n, usage, window_s=r["ms"] / 1000.0 or None)
            return r, usage

        res = s.step(what, run)
        if not res:
            return
        r, usage = res
        s.record(f"{op}.rdkperf.{case}.mib", r["mib"])
        s.record(f"{op}.rdkperf.{case}.rps", r["rps"])
        s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s; CPU s: client "
              f"{fmt_opt(usage.get('cpu_s'))}, broker {fmt_opt(usage.get('broker_cpu_s'))} "
              f"in {usage['wall_s']:.2f} s")

    # -- the cluster section
    def cluster_steps(self, s):
        p = CLUSTER_PARTITIONS
        if not self.create_topics(s, [f"cl-1024:{p}:{CLUSTER_NODES}",
                                      f"cl-warmup:{p}:{CLUSTER_NODES}"], CLUSTER_TOPIC_CONFIG):
            return
        time.sleep(2)
        s.record_idle_rss("cluster.rss.idle")
        # Warm-up, not measured, with the tool measured next: three fresh JVMs spend most of
        # their first ~100k ProducerPerformance records (16 KiB batches, many small requests)
        # in the JIT compilers.
        what = "warm-up ProducerPerformance 1 KiB acks=all"
        s.step(what, lambda: self.producer_perf(s, what, "cl-warmup", 1024, "all",
                                                self.cluster_warmup_n, "warmup-pp-1024-all"))
        s.log("warm-up done")
        n = self.cluster_n
        what = "ProducerPerformance 1 KiB acks=all"
        r = s.step(what, lambda: self.producer_perf(s, what, "cl-1024", 1024, "all", n,
                                                    "pp-1024-all", "cluster.produce"))
        if r:
            s.record("cluster.produce.mib", r["mib"])
            s.record("cluster.produce.rps", r["rps"])
            s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
        what = "ConsumerPerformance 1 KiB"
        r = s.step(what, lambda: self.consumer_perf(s, what, "cl-1024", 1024, n, "cp-1024"))
        if r:
            s.record("cluster.consume.mib", r["mib"])
            s.record("cluster.consume.rps", r["rps"])
            s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s "
                  f"(group join {r['rebalance_ms']:.0f} ms, not counted)")
        s.record_peak_rss("cluster.rss.peak")

    # -- the disk baseline
    def disk_baseline(self):
        """Plain buffered sequential writes to the filesystem of the data dirs, before any broker
        runs: 1 MiB os.write() blocks, no fsync; then the same ending with one fsync."""
        self.tag = "disk"
        fs = filesystem_of(self.tmp)
        d = self.disk = {"dir": self.tmp, "filesystem": fs, "mib": self.disk_mib,
                         "buffered_mib_s": [], "fsync_mib_s": [], "fsync_only_s": []}
        path = os.path.join(self.tmp, "disk-baseline.bin")
        block = os.urandom(MIB)
        # A first pass, not counted: on a VM, page-cache memory that is touched for the first
        # time (or again after the host took it back) is much slower to write than memory the
        # kernel has just freed, and this pass says how much.
        secs, _ = timed_write(path, self.disk_mib, block, fsync=False)
        d["first_pass_mib_s"] = self.disk_mib / secs
        for _ in range(self.disk_reps):
            if self.remaining() < 60:
                raise BudgetExceeded()
            secs, _ = timed_write(path, self.disk_mib, block, fsync=False)
            d["buffered_mib_s"].append(self.disk_mib / secs)
            secs, fsync_s = timed_write(path, self.disk_mib, block, fsync=True)
            d["fsync_mib_s"].append(self.disk_mib / secs)
            d["fsync_only_s"].append(fsync_s)
        print(f"bench: [disk] {self.disk_mib} MiB to {fs}: first pass (not counted) "
              f"{d['first_pass_mib_s']:.0f} MiB/s; buffered "
              f"{', '.join(f'{v:.0f}' for v in d['buffered_mib_s'])} MiB/s; with a final fsync "
              f"{', '.join(f'{v:.0f}' for v in d['fsync_mib_s'])} MiB/s", file=sys.stderr,
              flush=True)

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
        if "rdkperf" in self.sections and not self.rdkperf_bin:
            self.notes.append(f"rdkafka_performance section skipped: {self.skipped['rdkperf']}")
        complete = True
        try:
            if "disk" in self.sections:
                self.disk_baseline()
            if "single" in self.sections or self.rdkperf_bin:
                for rep in range(self.a.reps):
                    for kind in broker_order(rep):
                        self.session("single", rep, kind)
            if "cluster" in self.sections:
                for rep in range(self.cluster_reps):
                    for kind in broker_order(rep):
                        self.session("cluster", rep, kind)
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


def broker_order(rep):
    """Alternating which broker goes first: rep 1 Kafka, rep 2 Sluice, ..."""
    return ["kafka", "sluice"] if rep % 2 == 0 else ["sluice", "kafka"]


def find_rdkperf(path):
    """(path, librdkafka version, None) when bench/run found rdkafka_performance, else
    (None, None, why not)."""
    if not path or not os.access(path, os.X_OK):
        return None, None, (f"no rdkafka_performance at {path or '(none given)'}: it is built by "
                            "bench/run from the librdkafka build that `compat-tests/librdkafka/run "
                            "--build-only` caches")
    try:
        # Without arguments it prints its usage, with the librdkafka version, and exits 1.
        r = subprocess.run([path], capture_output=True, text=True, timeout=30)
        m = re.search(r"librdkafka version (\S+)", r.stdout + r.stderr)
        return path, (m.group(1) if m else "?"), None
    except (OSError, subprocess.SubprocessError) as e:
        return None, None, f"{path} does not run: {e}"


def timed_write(path, mib, block, fsync):
    """Writes `mib` MiB to a new file in 1 MiB os.write() calls (into the page cache); with fsync,
    ends with one fsync. Deletes the file. Returns (seconds in all, seconds of the fsync)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        t0 = time.monotonic()
        for _ in range(mib):
            if os.write(fd, block) != len(block):
                raise OSError(f"short write to {path}")
        t1 = time.monotonic()
        if fsync:
            os.fsync(fd)
        t2 = time.monotonic()
    finally:
        os.close(fd)
        os.unlink(path)
    return t2 - t0, t2 - t1


def filesystem_of(path):
    """'<device> (<fs type>, mounted at <mount point>)' from /proc/mounts."""
    path = os.path.realpath(path)
    best = None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, fstype = line.split()[:3]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and (
                        best is None or len(mnt) > len(best[1])):
                    best = (dev, mnt, fstype)
    except OSError:
        pass
    return f"{best[0]} ({best[2]}, mounted at {best[1]})" if best else "?"


def segment_count(partition_dir):
    try:
        return sum(1 for f in os.listdir(partition_dir) if f.endswith(".log"))
    except OSError:
        return 0


def remove_stale_tmp(parent):
    """Data dirs of an earlier run that was SIGKILLed (its brokers died with it, through the
    parent-death signal, but nothing could delete the data). Only dirs whose owner is gone.
    The nodes of a `sluice dev-cluster` are its children, not the harness's, so they have no
    parent-death signal: any process still running from such a dir is killed first."""
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
            for orphan in pids_running_from(d):
                print(f"bench: killing pid {orphan}, left running from {d}", file=sys.stderr)
                _send(orphan, signal.SIGKILL, False)
            shutil.rmtree(d, ignore_errors=True)


def pids_running_from(d):
    """Processes whose executable or command line lies in directory d."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(a == d or a.startswith(d + "/") for a in argv):
            found.append(int(entry))
    return found


# ------------------------------------------------------------------------------- parsers
PP_FINAL = re.compile(
    r"^(\d+) steady state records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th",
    re.M)


def last_match(rx, out, what):
    m = None
    for m in rx.finditer(out):
        pass
    if not m:
        raise StepError(f"{what}: no summary line in its output:\n{out[-800:]}")
    return m


def parse_pp(out, n, steady, what):
    """The steady-state summary (the records after --warmup-records)."""
    total = re.search(r"^(\d+) records sent, .* ms 99\.9th\.", out, re.M)
    if not total:
        raise StepError(f"{what}: no final summary line in its output:\n{out[-800:]}")
    if int(total.group(1)) != n:
        raise StepError(f"{what}: {total.group(1)} of {n} records sent")
    m = last_match(PP_FINAL, out, what)
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


# rdkafka_performance prints a summary line every second and a last one at the end. Its "MB/s"
# is bytes per microsecond, i.e. 10^6 bytes/s; msgs/s and MB/s are computed from microseconds.
RDKPERF_PRODUCED = re.compile(
    r"^% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s, (\d+) produce failures, (\d+) in queue", re.M)
RDKPERF_CONSUMED = re.compile(
    r"^% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([\d.]+) MB/s\)", re.M)


def parse_rdkperf_produce(out, n, what):
    """Producer clock: from just before the first produce() (after the client is created, so
    it includes connecting and the first metadata request) to the last delivery report."""
    m = last_match(RDKPERF_PRODUCED, out, what)
    delivered, failed, queued = int(m.group(3)), int(m.group(4)), int(m.group(9))
    if delivered != n or failed or queued:
        raise StepError(f"{what}: {delivered} of {n} records delivered, {failed} failed, "
                        f"{queued} still queued\n{out[-800:]}")
    # "produce failures" are produce() calls refused with a full local queue, then retried.
    return {"rps": float(m.group(6)), "mib": float(m.group(7)) * 1e6 / MIB, "ms": int(m.group(5)),
            "backpressure": int(m.group(8))}


def parse_rdkperf_consume(out, n, what):
    """Consumer clock: from the first record received to the last."""
    m = last_match(RDKPERF_CONSUMED, out, what)
    got = int(m.group(1))
    if got < n:
        raise StepError(f"{what}: consumed {got} of {n} records\n{out[-800:]}")
    return {"rps": float(m.group(4)), "mib": float(m.group(5)) * 1e6 / MIB, "ms": int(m.group(3))}


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


def fmt_opt(v):
    return "?" if v is None else f"{v:.2f}"


def fmt_ratio(r):
    if r is None:
        return "—"
    if r >= 1:
        return f"{r:.2f}×"
    return f"{r:#.2g}×"  # two significant digits: 0.0031×, 0.20×, not 0.00×


def summarize(h):
    rows = []
    for mid, m in METRICS.items():
        ks, ss = h.samples["kafka"].get(mid, []), h.samples["sluice"].get(mid, [])
        km = statistics.median(ks) if ks else None
        sm = statistics.median(ss) if ss else None
        ratio = sm / km if (km and sm is not None) else None
        rows.append({"id": mid, "group": m.group, "section": m.section, "label": m.label,
                     "unit": m.unit, "higher_is_better": m.higher, "kafka": km, "sluice": sm,
                     "ratio": ratio, "kafka_samples": ks, "sluice_samples": ss})
    return rows


def best_produce(rows, kind):
    """The highest single-broker produce MiB/s median of `kind` (any client, size, acks)."""
    cands = [r for r in rows if r["group"] in ("single", "rdkperf") and r[kind] is not None
             and r["id"].startswith("produce.") and r["id"].endswith(".mib")]
    return max(cands, key=lambda r: r[kind], default=None)


def disk_summary(h, rows):
    """Adds the medians and each broker's best produce MiB/s as a % of the buffered figure to
    h.disk (what results.md and results.json show)."""
    d = h.disk
    if not d or not d["buffered_mib_s"]:
        return
    d["buffered_median_mib_s"] = statistics.median(d["buffered_mib_s"])
    d["fsync_median_mib_s"] = statistics.median(d["fsync_mib_s"])
    d["target_pct"] = DISK_TARGET_PCT
    for kind in ("sluice", "kafka"):
        r = best_produce(rows, kind)
        if r:
            d[f"{kind}_best_produce"] = {
                "metric": r["id"], "what": f"{r['section']}, {r['label']}", "mib_s": r[kind],
                "pct_of_buffered": 100.0 * r[kind] / d["buffered_median_mib_s"],
                "pct_of_first_pass": 100.0 * r[kind] / d["first_pass_mib_s"]}


def saturation(client, broker):
    """Which side used at least SATURATED cores (None without both figures)."""
    if client is None or broker is None:
        return None
    sides = [name for name, v in (("client", client), ("broker", broker)) if v >= SATURATED]
    busy = client + broker >= SATURATED * os.cpu_count()
    return (" and ".join(sides) or "neither") + (
        f" (all {os.cpu_count()} cores busy)" if busy else "")


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


def metric_table(rows):
    out = ["| metric | unit | Kafka | Sluice | Sluice/Kafka | samples Kafka ; Sluice |",
           "|---|---|---:|---:|---:|---|"]
    for r in rows:
        arrow = {True: " ↑", False: " ↓", None: ""}[r["higher_is_better"]]
        smp = (", ".join(fmt(v, r["unit"]) for v in r["kafka_samples"]) + " ; " +
               ", ".join(fmt(v, r["unit"]) for v in r["sluice_samples"]))
        out.append(f"| {r['label']}{arrow} | {r['unit']} | {fmt(r['kafka'], r['unit'])} | "
                   f"{fmt(r['sluice'], r['unit'])} | {fmt_ratio(r['ratio'])} | {smp} |")
    return out


def cores_table(rows):
    """cores.<key>.client and .broker side by side, with which side saturated a core."""
    by = {r["id"]: r for r in rows}
    keys = list(dict.fromkeys(r["id"].rsplit(".", 1)[0] for r in rows))
    out = [f"| run | Kafka: client / broker | Sluice: client / broker | saturated a core "
           f"(≥ {SATURATED} CPU s per s) |", "|---|---:|---:|---|"]
    for k in keys:
        c, b = by[f"{k}.client"], by[f"{k}.broker"]
        cells, verdicts = [], []
        for kind, name in (("kafka", "Kafka"), ("sluice", "Sluice")):
            cells.append(f"{fmt(c[kind], 'cores')} / {fmt(b[kind], 'cores')}")
            v = saturation(c[kind], b[kind])
            if v:
                verdicts.append(f"{name}: {v}")
        out.append(f"| {c['label']} | {cells[0]} | {cells[1]} | {'; '.join(verdicts) or '—'} |")
    return out


def rdkperf_intro(h):
    n = h.n["rdkperf"]
    tool = [
        f"`{h.rdkperf_bin}` (librdkafka {h.rdkperf_version}), against the same single brokers "
        f"after the runs above. Produce: `-P -s SIZE -c N -X acks=1|all "
        f"{' '.join(RDKPERF_PRODUCER_CONF)}` (the tool itself sets linger.ms=1000, which would "
        f"hold the last batches that long), {n[1024]:,} × 1 KiB and {n[100]:,} × 100 B, "
        f"partitioner default, clock from just before the first produce() to the last delivery "
        f"report. Consume: `-C -p 0..{h.partitions - 1} -o beginning -e -c N` on the acks=1 "
        f"topics (the tool sets queued.min.messages=1000000 itself), clock from the first record "
        f"to the last. Its MB/s (10^6 B/s) is converted to MiB/s."]
    if not h.rdkperf_bin:
        tool = [f"rdkafka_performance not run: {h.skipped.get('rdkperf', 'no results')}."]
    return tool + [
        "",
        "CPU: the load tool's utime + stime (all threads, from wait4 when it exits; for "
        "ProducerPerformance that includes the JVM's start-up and JIT), the broker process(es)' "
        "utime + stime from /proc/PID/stat over the tool's lifetime. Shown per million records "
        "sent or read, and as \"cores\": CPU seconds per second of the measuring window "
        "(rdkafka_performance: its own clock, which leaves out e.g. the consumer's ~0.5 s of "
        "idle start-up; ProducerPerformance: its lifetime). A side at ≥ "
        f"{SATURATED} cores saturated a core; on {os.cpu_count()} cores client + broker cannot "
        f"exceed {os.cpu_count()}.",
    ]


def cluster_intro(h):
    return [
        f"Kafka: {CLUSTER_NODES} KRaft nodes in combined mode (process.roles=broker,controller), "
        f"static quorum (controller.quorum.voters lists all three), each formatted with the same "
        f"cluster id, JVM `{CLUSTER_HEAP}` G1 each, internal topics at Kafka's defaults (RF 3). "
        f"Sluice: `sluice dev-cluster --brokers {CLUSTER_NODES}` (a supervisor starting "
        f"{CLUSTER_NODES} `sluice serve` nodes; RSS and CPU are the nodes', without the "
        f"supervisor). Both: group.initial.rebalance.delay.ms=0.",
        "",
        f"Topic: {CLUSTER_PARTITIONS} partitions, RF={CLUSTER_NODES}, "
        f"{', '.join(CLUSTER_TOPIC_CONFIG)}; created once every partition has its full ISR. "
        f"Kafka's three storage formats took {fmt_ms_median(h, 'cluster')} before each start "
        f"(not counted). "
        f"Unmeasured warm-up: ProducerPerformance {h.cluster_warmup_n:,} × 1 KiB acks=all to "
        f"another topic (three fresh JVMs spend their first ~100k of these records mostly in the "
        f"JIT compilers). Then ProducerPerformance {h.cluster_n:,} × 1 KiB acks=all (first 20% "
        f"not counted) and ConsumerPerformance reading them back. "
        f"{h.cluster_reps} repetition(s), alternating which broker goes first.",
    ]


def fmt_ms_median(h, section):
    fmts = [r["format_ms"] for r in h.runs if r.get("format_ms") and r["section"] == section]
    return f"{statistics.median(fmts):,.0f} ms (median)" if fmts else "—"


def single_intro(h):
    return [f"Kafka's `StorageTool format` (run before each Kafka start, not counted in its "
            f"start-up time) took {fmt_ms_median(h, 'single')}."]


GROUP_INTRO = {"single": single_intro, "rdkperf": rdkperf_intro, "cluster": cluster_intro}


def heading(text):
    return ["", text, ""]


def group_markdown(h, group, rows):
    out = heading(f"## {GROUPS[group]}")
    if not any(r["kafka_samples"] or r["sluice_samples"] for r in rows):
        return out + [f"Not run: {h.skipped.get(group, 'no results')}."]
    out += GROUP_INTRO[group](h)
    for section in dict.fromkeys(r["section"] for r in rows):
        srows = [r for r in rows if r["section"] == section]
        if not any(r["kafka_samples"] or r["sluice_samples"] for r in srows):
            continue
        out += heading(f"### {section}")[0 if out[-1] else 1:]
        out += cores_table(srows) if srows[0]["unit"] == "cores" else metric_table(srows)
    return out


def disk_markdown(h):
    out = heading("## Disk baseline (before any broker ran)")
    d = h.disk
    if not d or not d["buffered_mib_s"]:
        return out + [f"Not run: {h.skipped.get('disk', 'no results')}."]
    smp = lambda vs: ", ".join(f"{v:,.0f}" for v in vs)  # noqa: E731
    out += ["| | |", "|---|---|",
            f"| filesystem of the data dirs | {d['filesystem']} |",
            f"| plain buffered sequential writes: {d['mib']:,} MiB in 1 MiB `os.write()` calls, "
            f"no fsync | **{d['buffered_median_mib_s']:,.0f} MiB/s** (median of "
            f"{smp(d['buffered_mib_s'])}) |",
            f"| the same, ending with one fsync | {d['fsync_median_mib_s']:,.0f} MiB/s (median of "
            f"{smp(d['fsync_mib_s'])}; the fsync alone took "
            f"{', '.join(f'{v:.2f}' for v in d['fsync_only_s'])} s) |",
            f"| first pass, buffered, not counted (fresh page-cache memory, slow to touch on a "
            f"VM) | {d['first_pass_mib_s']:,.0f} MiB/s |"]
    for kind, name in (("sluice", "Sluice"), ("kafka", "Kafka")):
        b = d.get(f"{kind}_best_produce")
        if not b:
            continue
        verdict = ""
        if kind == "sluice":
            verdict = (f" — target ≥ {DISK_TARGET_PCT} %: "
                       f"{'met' if b['pct_of_buffered'] >= DISK_TARGET_PCT else 'NOT met'}")
        out.append(f"| {name}'s best single-broker produce (median) | {b['mib_s']:,.0f} MiB/s "
                   f"({b['what']}) = **{b['pct_of_buffered']:.0f} %** of the buffered figure"
                   f"{verdict}; {b['pct_of_first_pass']:.0f} % of the first pass |")
    return out


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
               f"one node, JVM `{KAFKA_HEAP}` G1 (cluster: see its section) |")
    out.append(f"| Java | {tool_version(['java', '-version'])} |")
    out.append(f"| librdkafka | {h.rdk_version} (confluent-kafka); rdkafka_performance: "
               f"{h.rdkperf_version or 'not run'} |")
    out.append(f"| machine | {os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.system()} "
               f"{platform.release()}; load average at the end {load[0]:.2f} |")
    out.append(f"| sections | {', '.join(s for s in SECTIONS if s in h.sections)} |")
    out.append(f"| repetitions | single broker: {a.reps} per broker, cluster: {h.cluster_reps}; "
               f"alternating which starts first; the tables show medians |")
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
               "MiB = 2^20 bytes (what Kafka's tools call MB).")
    for group in GROUPS:
        out += group_markdown(h, group, [r for r in rows if r["group"] == group])
    out += disk_markdown(h)
    out += heading("## Failures")
    out.extend([f"- {f.splitlines()[0]}" for f in h.failures] or ["None."])
    out += heading("## Notes")
    out.extend([f"- {n}" for n in h.notes] or ["None."])
    out += heading("## Caveats")
    out.append("- Brokers, clients and the harness share the same cores; throughput numbers "
               "are client+broker numbers on this machine, not broker limits: see the cores "
               "table for which side saturated a core.")
    out.append("- The librdkafka generator is Python (confluent-kafka): at 100 B it is limited "
               "by the Python loop rather than by the broker; rdkafka_performance is not.")
    out.append("- EndToEndLatency reports whole milliseconds (truncated); its avg is exact.")
    out.append("- The cluster runs three brokers and the client on the same cores: it shows the "
               "cost of replication on one machine, not a distributed deployment.")
    out.append("- Per-process logs of this run: `bench/results/logs/`.")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_chart(h, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {r["id"]: r for r in rows}
    fig, axes = plt.subplots(3, 2, figsize=(16, 15))
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
        if log and any(by[m][k] for m in ids for k in ("kafka", "sluice")):
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
    bars(axes[1][0], ["startup.ms", "cluster.startup.ms"],
         ["exec → first ApiVersions", "cluster: all 3 answer"],
         "Start-up time (ms, log scale, lower is better)", "ms", log=True)
    bars(axes[1][1], ["rss.idle", "rss.peak", "cpu.total", "cluster.rss.idle", "cluster.rss.peak"],
         ["idle RSS (MiB)", "peak RSS\nunder load (MiB)", "CPU time for\nworkload (s)",
          "cluster idle RSS\n(MiB, 3 nodes)", "cluster peak RSS\n(MiB, 3 nodes)"],
         "Resources (log scale, lower is better)", "MiB / s", log=True)
    ids, labels = [], []
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"produce.rdkperf.{size}.{acks}.mib")
            labels.append(f"P rdkperf\n{sn}/{acks}")
    for size, sn in [(1024, "1K"), (100, "100B")]:
        ids.append(f"consume.rdkperf.{size}.mib")
        labels.append(f"C rdkperf\n{sn}")
    ids += ["cluster.produce.mib", "cluster.consume.mib"]
    labels += ["P cluster\n1K/all", "C cluster\n1K"]
    ax = axes[2][0]
    bars(ax, ids, labels, "rdkafka_performance (single broker) and 3-broker cluster, MiB/s",
         "MiB/s")
    if h.disk and h.disk.get("buffered_median_mib_s"):
        buf = h.disk["buffered_median_mib_s"]
        ax.axhline(buf, color="grey", ls="--", lw=1, label="disk, buffered writes")
        ax.axhline(buf * DISK_TARGET_PCT / 100, color="grey", ls=":", lw=1,
                   label=f"{DISK_TARGET_PCT} % of that")
        ax.legend(fontsize=8)
    ids, labels = [], []
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"cpu.rdkperf.produce.{size}.{acks}.broker")
            labels.append(f"P rdkperf\n{sn}/{acks}")
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"cpu.java.produce.{size}.{acks}.broker")
            labels.append(f"P Java\n{sn}/{acks}")
    ids.append("cpu.cluster.produce.broker")
    labels.append("P cluster\n1K/all")
    bars(axes[2][1], ids, labels, "Broker CPU seconds per million records (log scale, lower is "
         "better)", "CPU s / M records", log=True)
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

    parts = []
    if "single" in h.sections:
        parts += [r("produce.java.1024.1.mib", "produce 1KiB acks=1"),
                  r("produce.java.100.all.rps", "produce 100B acks=all rec/s"),
                  r("consume.java.1024.mib", "consume"),
                  r("e2e.rdk.p99", "e2e p99"),
                  r("startup.ms", "startup"),
                  r("rss.idle", "idle RSS"),
                  r("rss.peak", "peak RSS")]
    if h.rdkperf_bin:
        parts += [r("produce.rdkperf.1024.1.mib", "rdkafka_performance produce 1KiB acks=1"),
                  r("consume.rdkperf.1024.mib", "rdkafka_performance consume 1KiB")]
    if "cluster" in h.sections:
        parts += [r("cluster.produce.mib", "cluster produce acks=all"),
                  r("cluster.consume.mib", "cluster consume")]
    parts = ["Sluice/Kafka " + ", ".join(parts)] if parts else []
    d = h.disk or {}
    if d.get("buffered_median_mib_s"):
        best = d.get("sluice_best_produce")
        parts.append(f"disk buffered writes {d['buffered_median_mib_s']:.0f} MiB/s" + (
            f", Sluice's best produce {best['pct_of_buffered']:.0f}% of that" if best else ""))
    status = "ok" if (complete and not h.failures) else f"{len(h.failures)} failure(s)"
    return (f"bench{' --quick' if h.quick else ''}: " + "; ".join(parts) +
            f" [{h.a.reps} rep(s), {wall_s / 60:.1f} min, {status}] -> "
            f"{os.path.relpath(os.path.join(h.results_dir, 'results.md'), os.getcwd())}")


def results_json(h, rows, wall_s, complete):
    return {
        "quick": h.quick, "reps": h.a.reps, "wall_s": wall_s, "complete": complete,
        "sections": [s for s in SECTIONS if s in h.sections],
        "e2e_rate": h.e2e_rate, "e2e_rate_basis": h.e2e_rate_basis,
        "records": h.n, "partitions": h.partitions,
        "skipped": h.skipped,
        "rdkperf": {"bin": h.rdkperf_bin, "librdkafka": h.rdkperf_version,
                    "producer_conf": RDKPERF_PRODUCER_CONF, "records": h.n["rdkperf"]},
        "cluster": {"nodes": CLUSTER_NODES, "partitions": CLUSTER_PARTITIONS,
                    "topic_config": CLUSTER_TOPIC_CONFIG, "kafka_heap": CLUSTER_HEAP,
                    "records": h.cluster_n, "warmup_records": h.cluster_warmup_n,
                    "reps": h.cluster_reps},
        "disk": h.disk,
        "metrics": rows, "runs": h.runs, "failures": h.failures, "notes": h.notes,
    }


# ------------------------------------------------------------------------------------ main
def parse_args():
    ap = argparse.ArgumentParser(
        prog="bench/run", description="Benchmark Sluice against Apache Kafka "
        f"{KAFKA_VERSION} on this machine, with Kafka's own perf tools, a librdkafka "
        "generator and librdkafka's rdkafka_performance.", epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition and smaller runs (a few minutes)")
    ap.add_argument("--reps", type=int,
                    help="single-broker repetitions per broker (default 3; 1 with --quick)")
    ap.add_argument("--cluster-reps", type=int,
                    help="cluster repetitions per broker (default: as --reps)")
    ap.add_argument("--only", metavar="SECTION[,SECTION]",
                    help=f"run only these sections: {', '.join(SECTIONS)} (default: all)")
    for s in ("disk", "rdkperf", "cluster"):
        ap.add_argument(f"--no-{s}", action="append_const", dest="skip", const=s,
                        help=f"leave out the {s} section")
    ap.add_argument("--partitions", type=int, default=3,
                    help="partitions of the single-broker throughput topics (default 3)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every measured record count by this (default 1)")
    ap.add_argument("--e2e-rate", type=int,
                    help="fixed rate for the librdkafka e2e test (default: half of Kafka's max)")
    ap.add_argument("--disk-mib", type=int,
                    help="MiB written per disk baseline pass (default 2048; 1024 with --quick)")
    ap.add_argument("--max-minutes", type=float,
                    help="time budget for the measurements (default 18; 8 with --quick)")
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tmp-dir", default=None, help="where broker data dirs go (default $TMPDIR)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep broker data dirs")
    # Set by bench/run:
    ap.add_argument("--kafka-lib", default=os.environ.get("BENCH_KAFKA_LIB"), help=argparse.SUPPRESS)
    ap.add_argument("--sluice-bin", default=os.environ.get("SLUICE_BIN"), help=argparse.SUPPRESS)
    ap.add_argument("--rdkperf-bin", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--python", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.reps is None:
        a.reps = 1 if a.quick else 3
    if a.cluster_reps is None:
        a.cluster_reps = a.reps
    if a.max_minutes is None:
        a.max_minutes = 8 if a.quick else 18
    if a.disk_mib is None:
        a.disk_mib = 1024 if a.quick else 2048
    sections = set(SECTIONS)
    if a.only:
        sections = {s.strip() for s in a.only.split(",") if s.strip()}
        unknown = sections - set(SECTIONS)
        if unknown:
            ap.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}; "
                     f"choose from {', '.join(SECTIONS)}")
    a.sections = sections - set(a.skip or [])
    return a


def main():
    a = parse_args()
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
    print(f"bench: {'quick' if a.quick else 'full'} run of "
          f"{', '.join(s for s in SECTIONS if s in a.sections) or 'nothing'}; {a.reps} "
          f"repetition(s), cluster {a.cluster_reps}; budget {a.max_minutes:g} min; logs in "
          f"{os.path.relpath(h.logdir, os.getcwd())}", file=sys.stderr, flush=True)
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
    disk_summary(h, rows)
    os.makedirs(a.results_dir, exist_ok=True)
    write_markdown(h, rows, os.path.join(a.results_dir, "results.md"), wall, complete)
    with open(os.path.join(a.results_dir, "results.json"), "w") as f:
        json.dump(results_json(h, rows, wall, complete), f, indent=1)
    try:
        write_chart(h, rows, os.path.join(a.results_dir, "results.png"))
    except Exception as e:  # a chart problem must not lose the table
        h.failures.append(f"chart: {e}")
        print(f"bench: FAILED chart: {e}", file=sys.stderr)
    print(one_line(h, rows, wall, complete), flush=True)
    return 0 if (complete and not h.failures) else 1


if __name__ == "__main__":
    sys.exit(main())
