"""The brokers under test: one Kafka (KRaft, combined mode) or Sluice broker, and a 3-node
cluster of either (three Kafka KRaft nodes, `sluice dev-cluster`). Each starts fresh on
loopback, is probed with ApiVersions until it answers, and is stopped (SIGTERM, then SIGKILL)."""
import base64
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import time
import uuid

from common import CLUSTER_HEAP, CLUSTER_NODES, KAFKA_HEAP, TOOL_HEAP, StepError
from procs import PROCS, pid_running, send_signal, settle, tail


# ---------------------------------------------------------------------------------- ports
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
# format_ms (Kafka's storage format, None for Sluice), settle_s (what settle() waited for free
# page reporting before the start).
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
        self.settle_s = None

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

    def spawn(self, argv, settled=False):
        if not settled:
            self.settle_s = settle()
        # Popen returns once the child has exec'd (it waits on the exec status pipe): that is
        # the start of the clock, so the harness's own fork (a big Python process) is not counted.
        self.proc = PROCS.start(argv, self.log, cwd=self.dir, env=self.h.child_env)
        self.t_exec = time.monotonic()

    def wait_ready(self, deadline):
        """time.monotonic() of the first answered ApiVersions."""
        return probe_apiversions(self.port, deadline, self.log, self.death)

    def stop(self):
        secs = PROCS.stop(self.proc, grace=60.0)
        return secs, [self.proc.returncode]

    def settings(self):
        """More broker settings (key, value) for a subclass to add."""
        return []


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

    def client_listeners(self):
        """(name, protocol, port) of the listeners clients use; a subclass may add some."""
        return [("PLAINTEXT", "PLAINTEXT", self.port)]

    def configure(self, extra):
        ls = self.client_listeners()
        with open(self.cfg, "w") as f:
            f.write("\n".join([
                "process.roles=broker,controller",
                f"node.id={self.node_id}",
                "listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, _, p in ls)
                + f",CONTROLLER://127.0.0.1:{self.cport}",
                "advertised.listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, _, p in ls),
                "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,"
                + ",".join(f"{n}:{proto}" for n, proto, _ in ls),
                "inter.broker.listener.name=PLAINTEXT",
                f"log.dirs={os.path.join(self.dir, 'data')}",
            ] + extra + [f"{k}={v}" for k, v in self.h.common_broker_settings + self.settings()])
                + "\n")

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

    def spawn_jvm(self, settled=False):
        self.spawn(self.h.java(self.heap, "kafka.Kafka", self.cfg, log_level="INFO"), settled)

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
        argv = [self.h.sluice_bin, "serve", *self.listen_args(),
                "--data-dir", os.path.join(self.dir, "data")]
        for k, v in self.h.common_broker_settings + self.settings():
            argv += ["--set", f"{k}={v}"]
        self.spawn(argv)
        return (self.wait_ready(self.t_exec + timeout) - self.t_exec) * 1000.0

    def listen_args(self):
        """The serve flags that name its listeners; a subclass may add some."""
        return ["--listen", self.bootstrap]


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
        self.settle_s = None

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
        # No wait for free page reporting: neither cluster comes near the page cache's write rate.
        self.settle_s = settle(reporting=False)
        for n in self.nodes:
            n.spawn_jvm(settled=True)
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
    (client ports P.., controller ports P+100.., HTTP listeners P+200..) and stops them all on SIGTERM. The nodes log
    into their data dirs; their logs are copied to the log dir when the cluster stops."""
    name = "sluice"
    # "node <id> pid <pid> listening <host:port>", then " http <host:port>" since the nodes
    # have an HTTP listener.
    NODE_LINE = re.compile(r"^node (\d+) pid (\d+) listening (\S+):(\d+)(?: http \S+)?\s*$", re.M)

    def __init__(self, h, session_dir):
        self.h = h
        self.dir = session_dir
        self.data = os.path.join(session_dir, "data")
        self.log = os.path.join(h.logdir, f"{h.tag}-sluice-dev-cluster.log")
        self.proc = None
        self.nodes = []  # (node id, pid, client port)
        self.bootstrap = None
        self.format_ms = None
        self.settle_s = None

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
                               [100 + i for i in range(CLUSTER_NODES)] +
                               [200 + i for i in range(CLUSTER_NODES)])
        argv = [self.h.sluice_bin, "dev-cluster", "--brokers", str(CLUSTER_NODES),
                "--base-port", str(base), "--data-dir", self.data]
        for k, v in self.h.common_broker_settings:
            argv += ["--set", f"{k}={v}"]
        self.settle_s = settle(reporting=False)  # as KafkaCluster.start
        self.proc = PROCS.start(argv, self.log, cwd=self.dir, env=self.h.child_env,
                                term_group=False)
        t0 = time.monotonic()
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
            send_signal(self.proc.pid, signal.SIGKILL, True)
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
    ("share", "kafka"): KafkaBroker, ("share", "sluice"): SluiceBroker,
}


def kafka_uuid():
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. Like Kafka's own
    generator, avoid a leading '-' (it would read as an option)."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if s[0] not in "-_":
            return s
