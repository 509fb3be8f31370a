"""Multi-node Sluice clusters for process-level tests.

A `Cluster` runs N combined (broker + controller voter) `sluice serve` processes on
free ports, each with its own data dir and log file (stdout and stderr), and can kill
(SIGKILL), stop (SIGTERM), pause (SIGSTOP), resume (SIGCONT) and restart single nodes
with the same command and data dir. It only ever signals the processes it started, by
pid; `shutdown()` (called by the `start_cluster` fixture's teardown) stops every node,
escalating to SIGKILL.

Cluster state is read with confluent-kafka's AdminClient (describe_cluster,
list_topics, describe_topics), through a fresh client bootstrapped from the nodes that
are running and not paused, plus a raw Metadata v7 request (`raw_metadata`) for what
the client does not expose (leader epochs, one node's own view).

Every query helper also exists as a module-level function of a bootstrap string, so it
can be used against any broker.
"""

import os
import re
import signal
import socket
import subprocess
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

import kproto

READY_MARK = "sluice ready:"
DEFAULT_CLUSTER_SETTINGS = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
}
READY_TIMEOUT = float(os.environ.get("SLUICE_CLUSTER_READY_TIMEOUT", "20"))
LOG_TAIL_LINES = 80


REPO_ROOT = Path(__file__).resolve().parents[2]


def sluice_bin():
    return os.environ.get("SLUICE_BIN", str(REPO_ROOT / "target" / "release" / "sluice"))


# ---------------------------------------------------------------------------
# Small utilities
# ---------------------------------------------------------------------------
def free_ports(n, avoid=()):
    """n distinct free TCP ports on 127.0.0.1 (held open together while picking)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
            socks.append(s)
            if p not in avoid and p not in ports:
                ports.append(p)
    finally:
        for s in socks:
            s.close()
    return ports


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def wait_until(predicate, timeout, interval=0.2, what=None):
    """Calls predicate() until it returns something truthy; returns that value.

    Exceptions from predicate (e.g. a KafkaException while a node is down) count as
    "not yet". On timeout raises AssertionError naming `what`, the last value and the
    last exception.
    """
    deadline = time.monotonic() + timeout
    last, last_exc = None, None
    while True:
        try:
            last = predicate()
            last_exc = None
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - any failure is "not yet"
            last_exc = e
        if time.monotonic() >= deadline:
            desc = what or getattr(predicate, "__name__", "condition")
            raise AssertionError(
                f"timed out after {timeout:.1f}s waiting for {desc}; last value {last!r}"
                + (f"; last error {last_exc!r}" if last_exc is not None else ""))
        time.sleep(interval)


def tail_lines(path, lines=LOG_TAIL_LINES, max_bytes=256 * 1024):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError as e:
        return f"<no log: {e}>"
    text = data.decode(errors="replace").splitlines()
    return "\n".join(text[-lines:])


_FRAME = re.compile(r"^\s+(\d+: |at )")


def without_backtrace(text, lines=40):
    """The last `lines` lines of text, without Rust backtrace frame lines."""
    keep = [ln for ln in text.splitlines() if not _FRAME.match(ln)]
    return "\n".join(keep[-lines:])


def pid_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    # "pid (comm) S ..." - comm may contain spaces/parens: state follows the last ')'.
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X", "")


def pid_ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rfind(")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def pid_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ---------------------------------------------------------------------------
# Queries (module level: any bootstrap string)
# ---------------------------------------------------------------------------
def admin_client(bootstrap, **extra):
    conf = {"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 3000,
            "reconnect.backoff.max.ms": 500}
    conf.update(extra)
    return AdminClient(conf)


def describe_cluster(bootstrap, timeout=5.0):
    """(controller id or -1, sorted node ids) from DescribeCluster."""
    a = admin_client(bootstrap)
    r = a.describe_cluster(request_timeout=timeout).result(timeout=timeout + 2)
    ctl = r.controller.id if r.controller is not None else -1
    return ctl, sorted(n.id for n in r.nodes)


def metadata_brokers(bootstrap, timeout=5.0):
    """(controller id, sorted broker ids) from a Metadata request (list_topics)."""
    md = admin_client(bootstrap).list_topics(timeout=timeout)
    return md.controller_id, sorted(md.brokers)


def live_broker_ids(bootstrap, source="cluster", timeout=5.0):
    if source == "cluster":
        return describe_cluster(bootstrap, timeout)[1]
    return metadata_brokers(bootstrap, timeout)[1]


def controller_id(bootstrap, timeout=5.0):
    """The controller DescribeCluster names: a live broker to send controller-bound
    admin requests to (KIP-590), not necessarily the active controller."""
    return describe_cluster(bootstrap, timeout)[0]


def quorum_leader(port, timeout=5.0):
    """The active controller (the metadata quorum's leader, or -1) from a raw
    DescribeQuorum v0 to one node."""
    body = (kproto.uvarint(2) + kproto.compact_string("__cluster_metadata")
            + kproto.uvarint(2) + kproto.i32(0) + kproto.EMPTY_TAGS + kproto.EMPTY_TAGS
            + kproto.EMPTY_TAGS)
    with kproto.Conn(port, timeout=timeout) as c:
        r = c.request(kproto.DESCRIBE_QUORUM, 0, body)
    err = r.i16()
    if err != 0:
        raise AssertionError(f"DescribeQuorum error {err}")
    r.uvarint()  # topics
    r.compact_string()
    r.uvarint()  # partitions
    _index, err, leader = r.i32(), r.i16(), r.i32()
    if err != 0:
        raise AssertionError(f"DescribeQuorum partition error {err}")
    return leader


def _node_id(node):
    if node is None:
        return -1
    return node.id


@dataclass
class PartitionState:
    partition: int
    leader: int
    replicas: list
    isr: list
    error: object = None
    leader_epoch: int = None  # only from raw_metadata

    def as_tuple(self):
        return (self.leader, tuple(self.replicas), tuple(self.isr))


def partition_states(bootstrap, topic, timeout=5.0):
    """{partition: PartitionState} from AdminClient.describe_topics."""
    a = admin_client(bootstrap)
    d = a.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic].result(
        timeout=timeout + 2)
    out = {}
    for p in d.partitions:
        out[p.id] = PartitionState(p.id, _node_id(p.leader), [n.id for n in p.replicas],
                                   [n.id for n in p.isr])
    return out


def partition_states_md(bootstrap, topic, timeout=5.0):
    """{partition: PartitionState} from list_topics (Metadata), with partition errors."""
    md = admin_client(bootstrap).list_topics(topic=topic, timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise AssertionError(f"metadata for {topic}: {t.error if t else 'missing'}")
    return {p.id: PartitionState(p.id, p.leader, list(p.replicas), list(p.isrs), p.error)
            for p in t.partitions.values()}


def raw_metadata(port, topics, timeout=5.0):
    """Metadata v7 straight to one node (its own view). Returns dict with
    'controller', 'brokers' (sorted ids) and 'topics' {name: {'error', 'partitions':
    {p: PartitionState with leader_epoch}}}."""
    body = kproto.array(topics, kproto.string) + kproto.i8(0)
    with kproto.Conn(port, timeout=timeout) as c:
        r = c.request(kproto.METADATA, 7, body)
    r.i32()  # throttle
    brokers = r.array(lambda rr: (rr.i32(), rr.string(), rr.i32(), rr.string())[0])
    r.string()  # cluster id
    ctl = r.i32()

    def partition(rr):
        err, idx, leader, epoch = rr.i16(), rr.i32(), rr.i32(), rr.i32()
        replicas = rr.array(lambda x: x.i32())
        isr = rr.array(lambda x: x.i32())
        rr.array(lambda x: x.i32())  # offline replicas
        return PartitionState(idx, leader, list(replicas or []), list(isr or []), err, epoch)

    def topic(rr):
        err, name, _internal = rr.i16(), rr.string(), rr.boolean()
        parts = rr.array(partition) or []
        return name, {"error": err, "partitions": {p.partition: p for p in parts}}

    return {"controller": ctl, "brokers": sorted(brokers or []),
            "topics": dict(r.array(topic) or [])}


def raw_produce(port, topic, partition, values, acks=-1, timeout_ms=5000):
    """Produce v7 of one batch to one node. Returns the partition response dict."""
    batch = kproto.record_batch([(None, v, []) for v in values])
    with kproto.Conn(port, timeout=timeout_ms / 1000 + 5) as c:
        return kproto.produce_v7(c, topic, partition, batch, acks=acks, timeout_ms=timeout_ms)


def raw_fetch(port, topic, partition, offset, max_bytes=1 << 20, timeout=5.0):
    """Fetch v4 of one partition from one node as a consumer. Returns (error, hw,
    records bytes)."""
    body = (kproto.i32(-1) + kproto.i32(0) + kproto.i32(0) + kproto.i32(max_bytes)
            + kproto.i8(0) + kproto.i32(1) + kproto.string(topic) + kproto.i32(1)
            + kproto.i32(partition) + kproto.i64(offset) + kproto.i32(max_bytes))
    with kproto.Conn(port, timeout=timeout) as c:
        r = c.request(kproto.FETCH, 4, body)
    r.i32()  # throttle

    def part(rr):
        idx, err, hw, _lso = rr.i32(), rr.i16(), rr.i64(), rr.i64()
        rr.array(lambda x: (x.i64(), x.i64()))
        return idx, err, hw, rr.bytes() or b""

    topics = r.array(lambda rr: (rr.string(), rr.array(part)))
    _, err, hw, records = topics[0][1][0]
    return err, hw, records


def create_topic(bootstrap, name, partitions, replication_factor, config=None,
                 timeout=15.0):
    """CreateTopics through a client bootstrapped from `bootstrap`; raises on error."""
    a = admin_client(bootstrap)
    fut = a.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                  config=config or {})],
        operation_timeout=timeout, request_timeout=timeout)[name]
    return fut.result(timeout=timeout + 5)


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------
@dataclass
class Node:
    node_id: int
    port: int
    controller_port: int
    data_dir: Path
    log_path: Path
    proc: subprocess.Popen = None
    starts: int = 0
    paused: bool = False
    exit_codes: list = field(default_factory=list)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def is_running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start_section(self, start=None):
        """The log written by start #start (default: the current one)."""
        start = self.starts if start is None else start
        text = self.log_text()
        marker = f"===== start #{start}:"
        i = text.rfind(marker)
        return text[i:] if i >= 0 else ""


class Cluster:
    """N combined nodes (ids first_id..first_id+N-1, 1..N by default), all voters unless
    `voters` names a subset."""

    def __init__(self, base_dir, n=3, settings=None, voters=None, first_id=1):
        self.base_dir = Path(base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.settings = dict(DEFAULT_CLUSTER_SETTINGS)
        self.settings.update({k: _value(v) for k, v in (settings or {}).items()})
        ports = free_ports(2 * n)
        self.nodes = {}
        for k, i in enumerate(range(first_id, first_id + n)):
            self.nodes[i] = Node(
                node_id=i, port=ports[2 * k], controller_port=ports[2 * k + 1],
                data_dir=self.base_dir / f"node-{i}",
                log_path=self.base_dir / f"node-{i}.log")
        voter_ids = sorted(voters) if voters else sorted(self.nodes)
        self.voters = ",".join(
            f"{i}@127.0.0.1:{self.nodes[i].controller_port}" for i in voter_ids)
        self.events = []  # (monotonic seconds, text): what the test did, for reports

    # -- naming --------------------------------------------------------------------
    def node(self, node_id):
        return self.nodes[node_id]

    @property
    def ids(self):
        return sorted(self.nodes)

    @property
    def bootstrap(self):
        """Every node's client address."""
        return ",".join(n.address for n in self.nodes.values())

    def bootstrap_of(self, *node_ids):
        return ",".join(self.nodes[i].address for i in node_ids)

    def running_ids(self):
        return [i for i, n in sorted(self.nodes.items()) if n.is_running()]

    def up_ids(self):
        """Running and not paused."""
        return [i for i, n in sorted(self.nodes.items()) if n.is_running() and not n.paused]

    @property
    def live_bootstrap(self):
        ids = self.up_ids()
        assert ids, "no node of the cluster is up"
        return self.bootstrap_of(*ids)

    def _note(self, text):
        self.events.append((time.monotonic(), text))

    # -- lifecycle -----------------------------------------------------------------
    def command(self, node_id):
        n = self.nodes[node_id]
        cmd = [sluice_bin(), "serve", "--node-id", str(node_id),
               "--listen", n.address, "--advertise", n.address,
               # log.dirs may name several dirs, "{data}" standing for the node's data dir.
               "--data-dir", self.settings.get("log.dirs", "{data}").replace("{data}", str(n.data_dir)),
               "--set", f"controller.quorum.voters={self.voters}"]
        for k, v in self.settings.items():
            if k != "log.dirs":
                cmd += ["--set", f"{k}={v}"]
        return cmd

    def launch(self, node_id):
        """Starts the node's process without waiting for it to be ready."""
        n = self.nodes[node_id]
        assert not n.is_running(), f"node {node_id} is already running (pid {n.pid})"
        binary = sluice_bin()
        if not os.path.exists(binary):
            raise AssertionError(f"sluice binary not found at {binary} (set SLUICE_BIN)")
        n.starts += 1
        n.paused = False
        cmd = self.command(node_id)
        with open(n.log_path, "ab") as log:
            log.write(f"\n===== start #{n.starts}: {' '.join(cmd)}\n".encode())
            log.flush()
            n.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT)
        self._note(f"start node {node_id} (#{n.starts}, pid {n.pid})")
        return n

    def wait_ready(self, node_ids=None, timeout=READY_TIMEOUT):
        """Waits for `sluice ready:` in this start's log of each node."""
        pending = set(self.ids if node_ids is None else node_ids)
        deadline = time.monotonic() + timeout
        while pending:
            for i in sorted(pending):
                n = self.nodes[i]
                if READY_MARK in n.start_section():
                    pending.discard(i)
                elif n.proc is None or n.proc.poll() is not None:
                    rc = None if n.proc is None else n.proc.returncode
                    raise AssertionError(
                        f"node {i} exited with code {rc} before it was ready; this start's "
                        f"log (backtrace frames left out, full log {n.log_path}):\n"
                        f"{without_backtrace(n.start_section())}")
            if not pending:
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"node(s) {sorted(pending)} not ready (no '{READY_MARK}' line) within "
                    f"{timeout}s\n" + self.logs_report(sorted(pending)))
            time.sleep(0.05)
        return self

    def start_all(self, timeout=READY_TIMEOUT):
        for i in self.ids:
            if not self.nodes[i].is_running():
                self.launch(i)
        return self.wait_ready(timeout=timeout)

    def start(self, node_id, wait=True, timeout=READY_TIMEOUT):
        self.launch(node_id)
        if wait:
            self.wait_ready([node_id], timeout)
        return self.nodes[node_id]

    def kill(self, node_id):
        """SIGKILL (kill -9) and reap."""
        n = self.nodes[node_id]
        assert n.is_running(), f"node {node_id} is not running"
        n.proc.send_signal(signal.SIGKILL)
        n.proc.wait()
        n.paused = False
        n.exit_codes.append(n.proc.returncode)
        self._note(f"kill -9 node {node_id} (pid {n.pid})")
        return n.proc.returncode

    def stop(self, node_id, timeout=15.0):
        """SIGTERM; SIGKILL after `timeout`. Returns (exit code, escalated)."""
        n = self.nodes[node_id]
        if not n.is_running():
            return (n.proc.returncode if n.proc else None), False
        if n.paused:
            self.resume(node_id)
        n.proc.send_signal(signal.SIGTERM)
        escalated = False
        try:
            n.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            escalated = True
            n.proc.send_signal(signal.SIGKILL)
            n.proc.wait()
        n.exit_codes.append(n.proc.returncode)
        self._note(f"stop node {node_id} (pid {n.pid}): exit {n.proc.returncode}"
                   f"{' after SIGKILL' if escalated else ''}")
        return n.proc.returncode, escalated

    def pause(self, node_id):
        n = self.nodes[node_id]
        assert n.is_running() and not n.paused, f"node {node_id} not running or paused"
        n.proc.send_signal(signal.SIGSTOP)
        n.paused = True
        self._note(f"SIGSTOP node {node_id}")

    def resume(self, node_id):
        n = self.nodes[node_id]
        if n.is_running() and n.paused:
            n.proc.send_signal(signal.SIGCONT)
        n.paused = False
        self._note(f"SIGCONT node {node_id}")

    def restart(self, node_id, kill=False, wait=True, timeout=READY_TIMEOUT):
        """Stops the node if running (SIGTERM, or SIGKILL with kill=True), then starts
        it with the same command and data dir."""
        if self.nodes[node_id].is_running():
            if kill:
                self.kill(node_id)
            else:
                self.stop(node_id)
        return self.start(node_id, wait=wait, timeout=timeout)

    def shutdown(self, timeout=10.0):
        """Stops every node this cluster started: SIGCONT if paused, SIGTERM to all,
        then SIGKILL whatever is left after `timeout`."""
        running = [n for n in self.nodes.values() if n.is_running()]
        for n in running:
            if n.paused:
                n.proc.send_signal(signal.SIGCONT)
                n.paused = False
            try:
                n.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        for n in running:
            try:
                n.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                n.proc.send_signal(signal.SIGKILL)
                n.proc.wait()

    # -- diagnostics ---------------------------------------------------------------
    def node_log_tail(self, node_id, lines=LOG_TAIL_LINES):
        """Last lines of the node's log (all starts), Rust backtrace frames left out."""
        return without_backtrace(tail_lines(self.nodes[node_id].log_path, lines * 4), lines)

    def logs_report(self, node_ids=None, lines=LOG_TAIL_LINES):
        parts = []
        for i in (self.ids if node_ids is None else node_ids):
            n = self.nodes[i]
            state = ("paused" if n.paused else "running") if n.is_running() else (
                f"exited {n.proc.returncode}" if n.proc else "never started")
            parts.append(f"----- node {i} ({n.address}, pid {n.pid}, {state}, "
                         f"starts {n.starts}, log {n.log_path}) -----\n"
                         + self.node_log_tail(i, lines))
        return "\n".join(parts)

    def events_report(self):
        if not self.events:
            return "(none)"
        t0 = self.events[0][0]
        return "\n".join(f"+{t - t0:7.2f}s {e}" for t, e in self.events)

    def report_sections(self):
        sections = [("cluster events", self.events_report())]
        for i in self.ids:
            n = self.nodes[i]
            sections.append((f"sluice node {i} log tail ({n.log_path})", self.node_log_tail(i)))
        return sections

    def grep_logs(self, needle):
        """[(node id, line)] of every log line (all starts) containing needle."""
        hits = []
        for i, n in sorted(self.nodes.items()):
            for line in n.log_text().splitlines():
                if needle in line:
                    hits.append((i, line))
        return hits

    # -- queries (through the nodes that are up) ----------------------------------
    def admin(self, *node_ids):
        return admin_client(self.bootstrap_of(*node_ids) if node_ids else self.live_bootstrap)

    def _bs(self, via):
        if via is None:
            return self.live_bootstrap
        if isinstance(via, int):
            return self.bootstrap_of(via)
        return self.bootstrap_of(*via)

    def live_broker_ids(self, via=None, source="cluster", timeout=5.0):
        return live_broker_ids(self._bs(via), source, timeout)

    def controller_id(self, via=None, timeout=5.0):
        """What DescribeCluster names as controller (see `controller_id`)."""
        return controller_id(self._bs(via), timeout)

    def active_controller(self, via=None, timeout=5.0):
        """The metadata quorum's leader as DescribeQuorum reports it, asked of `via` (a
        node id) or the first node that is up; -1 if there is none."""
        ids = self.up_ids() if via is None else ([via] if isinstance(via, int) else list(via))
        last = None
        for i in ids:
            try:
                return quorum_leader(self.nodes[i].port, timeout)
            except Exception as e:  # noqa: BLE001 - try the next node
                last = e
        raise AssertionError(f"no node of {ids} answered DescribeQuorum: {last!r}")

    def partitions(self, topic, via=None, timeout=5.0, source="describe"):
        """{partition: PartitionState} from describe_topics, or with source="metadata"
        from list_topics (which also carries per-partition errors, e.g. for a
        leaderless partition)."""
        if source == "metadata":
            return partition_states_md(self._bs(via), topic, timeout)
        return partition_states(self._bs(via), topic, timeout)

    def partition(self, topic, partition=0, via=None, timeout=5.0, source="describe"):
        return self.partitions(topic, via, timeout, source)[partition]

    def raw_partitions(self, topic, node_id, timeout=5.0):
        """{partition: PartitionState with leader_epoch}: node_id's own Metadata."""
        md = raw_metadata(self.nodes[node_id].port, [topic], timeout)
        t = md["topics"].get(topic)
        assert t is not None, f"node {node_id} returned no metadata for {topic}: {md}"
        return t["partitions"]

    def create_topic(self, name, partitions, replication_factor, config=None, via=None,
                     timeout=15.0):
        self._note(f"create topic {name} ({partitions} partitions, RF "
                   f"{replication_factor}, {config or {}})")
        return create_topic(self._bs(via), name, partitions, replication_factor, config,
                            timeout)

    # -- waits ----------------------------------------------------------------------
    def wait_live_brokers(self, expected, timeout=20.0, via=None):
        expected = sorted(expected)
        return wait_until(lambda: self.live_broker_ids(via, timeout=3) == expected and expected,
                          timeout, what=f"live brokers == {expected}")

    def wait_controller(self, timeout=10.0, exclude=(), via=None):
        """The active controller (DescribeQuorum's leader), once there is one that is
        not excluded."""
        def check():
            c = self.active_controller(via, timeout=2)
            return c if c not in (-1, None) and c not in exclude else None
        return wait_until(check, timeout, interval=0.1, what=f"a controller not in {list(exclude)}")

    def wait_partitions(self, topic, partitions, timeout=20.0, full_isr=False, via=None,
                        replication_factor=None):
        """Every partition has a leader (and, with full_isr, ISR == replicas)."""
        def check():
            st = self.partitions(topic, via, timeout=3)
            if sorted(st) != list(range(partitions)):
                return None
            for p in st.values():
                if p.leader < 0 or p.leader not in p.replicas:
                    return None
                if replication_factor is not None and len(p.replicas) != replication_factor:
                    return None
                if full_isr and sorted(p.isr) != sorted(p.replicas):
                    return None
            return st
        return wait_until(check, timeout, what=f"{topic}: {partitions} partitions with "
                          f"leaders{' and full ISR' if full_isr else ''}")

    def __repr__(self):
        return f"Cluster({self.bootstrap}, voters {self.voters})"


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def describe_error(e):
    """A short text for a KafkaException / future failure."""
    if isinstance(e, KafkaException) and e.args:
        ke = e.args[0]
        try:
            return f"{ke.name()} ({ke.code()}): {ke.str()}"
        except AttributeError:
            return str(ke)
    if isinstance(e, FutureTimeout):
        return "future timed out"
    return repr(e)


# ---------------------------------------------------------------------------
# Clients
# ---------------------------------------------------------------------------
def produce_values(bootstrap, topic, values, partition=None, flush_timeout=30.0, **conf):
    """Produces each value (key b"k-<i>") and flushes. Returns (acked {value:
    (partition, offset)}, errors [(value, KafkaError)], undelivered count).
    `conf` overrides the producer config (use the real librdkafka names, e.g.
    conf={"acks": "1"} via **{"acks": "1"})."""
    from confluent_kafka import Producer

    pconf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
             "enable.idempotence": False, "max.in.flight.requests.per.connection": 1,
             "message.timeout.ms": 30000, "reconnect.backoff.max.ms": 500}
    pconf.update(conf)
    p = Producer(pconf)
    acked, errors = {}, []

    def cb(err, msg):
        if err is None:
            acked[msg.value()] = (msg.partition(), msg.offset())
        else:
            errors.append((msg.value(), err))

    for i, v in enumerate(values):
        kw = {} if partition is None else {"partition": partition}
        while True:
            try:
                p.produce(topic, key=b"k-%d" % i, value=v, on_delivery=cb, **kw)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(flush_timeout)
    return acked, errors, left
