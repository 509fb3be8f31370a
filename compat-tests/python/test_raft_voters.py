"""KIP-853 dynamic controller quorum, driven by Kafka 4.4's own `kafka-metadata-quorum`
(MetadataQuorumCommand: the Java admin's addRaftVoter, removeRaftVoter and
describeMetadataQuorum) against a 3-node Sluice cluster, one cluster for the file.

A fourth node starts as a controller outside the voter set (an observer), and a fifth as a
broker that only fetches the metadata (an observer too); add-controller
reads its directory id from the meta.properties Sluice wrote and grows the quorum to four
voters; voter 4 restarted on another controller port tells the leader (UpdateRaftVoter);
remove-controller --unregister shrinks the quorum back and drops its registration, all
while a producer writes with acks=all; every acknowledged record is then read back
exactly once. Bad changes get Kafka's errors.
"""

import re
import subprocess
import threading
import time
import uuid as uuidlib
import base64

import pytest
from confluent_kafka import Producer

from cluster import READY_MARK, Cluster, create_topic, free_ports, sluice_bin, tail_lines, wait_until
from helpers import kafka_tools_lib, read_all

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"


def quorum_tool(lib, bootstrap, *args, command_config=None, timeout=120):
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{lib}/*", TOOL, "--bootstrap-server", bootstrap]
    if command_config:
        cmd += ["--command-config", str(command_config)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout)


def voter_change(lib, bootstrap, *args, command_config=None, deadline_s=60):
    """Runs add-controller or remove-controller until it succeeds. REQUEST_TIMED_OUT is
    retried: Kafka's leader answers it while an earlier voter change is uncommitted or, new
    in its epoch, before it has committed anything (AddVoterHandler, RemoveVoterHandler),
    and the admin client does not retry it. Any other failure fails the test."""
    deadline = time.monotonic() + deadline_s
    while True:
        r = quorum_tool(lib, bootstrap, *args, command_config=command_config)
        out = r.stdout + r.stderr
        if r.returncode == 0 or "RequestTimedOutException" not in out or time.monotonic() > deadline:
            assert r.returncode == 0, out
            return r
        time.sleep(0.5)


def directory_id(data_dir):
    text = (data_dir / "meta.properties").read_text()
    return re.search(r"^directory\.id=(\S+)$", text, re.M).group(1)


def controller_properties(path, node_id, data_dir, controller_port, voters, roles="controller", client_port=None):
    listeners = f"CONTROLLER://127.0.0.1:{controller_port}"
    if client_port:
        listeners = f"PLAINTEXT://127.0.0.1:{client_port}," + listeners
    path.write_text(
        f"process.roles={roles}\nnode.id={node_id}\nlisteners={listeners}\n"
        f"controller.listener.names=CONTROLLER\n"
        f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"controller.quorum.voters={voters}\nlog.dirs={data_dir}\n")
    return path


def status(lib, bootstrap):
    # Right after a leader removes itself it is still leader, but no longer among the voters,
    # until its handover (as in Kafka, which resigns once the removal is committed); the tool
    # then fails looking the leader up in the voters (NoSuchElementException). Only that is
    # waited out, for a bounded time.
    deadline = time.monotonic() + 30
    while True:
        r = quorum_tool(lib, bootstrap, "describe", "--status")
        if r.returncode == 0 or "NoSuchElementException" not in r.stdout + r.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.returncode == 0, r.stdout + r.stderr
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", r.stdout, re.M))
    ids = lambda s: sorted(int(i) for i in re.findall(r'"id": (\d+)', s))
    return ids(fields["CurrentVoters"]), ids(fields["CurrentObservers"]), r.stdout


def replication(lib, bootstrap):
    """{node id: status} from describe --replication (Leader, Follower, Observer)."""
    r = quorum_tool(lib, bootstrap, "describe", "--replication")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [l.split() for l in r.stdout.splitlines()[1:] if l.strip()]
    return {int(row[0]): (row[1], row[-1]) for row in rows}, r.stdout


def start_node(base, name, props):
    """Starts `sluice serve --config props`, waits until it is ready; returns the process."""
    log_path = base / f"{name}.log"
    # Where this start's lines begin, taken before the process can write its ready line.
    start = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sluice_bin(), "serve", "--config", str(props)], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT)
    mark = READY_MARK.encode()
    wait_until(lambda: mark in log_path.read_bytes()[start:] or proc.poll() is not None, 30, what=f"{name} ready")
    assert proc.poll() is None, tail_lines(log_path)
    return proc


def stop_node(proc):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Extra:
    """The nodes outside the 3-node cluster: controller 4 (an observer until added) and
    broker 5, which fetches the metadata without voting."""

    def __init__(self, base, cluster):
        self.base, self.cluster, self.procs = base, cluster, {}
        taken = [n.port for n in cluster.nodes.values()] + [n.controller_port for n in cluster.nodes.values()]
        self.port4, self.new_port4, self.port5 = free_ports(3, avoid=taken)
        self.data4, self.data5 = base / "node-4", base / "node-5"
        self.data4.mkdir()
        self.data5.mkdir()
        self.props4 = controller_properties(base / "node-4.properties", 4, self.data4, self.port4, cluster.voters)

    def start4(self):
        self.procs[4] = start_node(self.base, "node-4", self.props4)

    def restart4_on_new_port(self):
        """Node 4 again, its controller listener moved to another port."""
        stop_node(self.procs.pop(4))
        self.port4 = self.new_port4
        self.props4 = controller_properties(self.base / "node-4.properties", 4, self.data4, self.port4, self.cluster.voters)
        self.start4()

    def start5(self):
        props = self.base / "node-5.properties"
        props.write_text(
            f"process.roles=broker\nnode.id=5\nlisteners=PLAINTEXT://127.0.0.1:{self.port5}\n"
            f"controller.listener.names=CONTROLLER\n"
            f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"controller.quorum.voters={self.cluster.voters}\nlog.dirs={self.data5}\n")
        self.procs[5] = start_node(self.base, "node-5", props)

    def stop(self):
        for p in self.procs.values():
            stop_node(p)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    lib = kafka_tools_lib()
    base = tmp_path_factory.mktemp("voters")
    c = Cluster(base / "cluster", n=3)
    extra = None
    try:
        c.start_all()
        extra = Extra(base, c)
        extra.start4()
        extra.start5()
        yield c, lib, extra
    finally:
        if extra is not None:
            extra.stop()
        c.shutdown()


def endpoints_of(status_text, node_id):
    """The endpoints describe --status lists for voter `node_id`."""
    m = re.search(r'"id": %d, [^}]*"endpoints": \[([^\]]*)\]' % node_id, status_text)
    return m.group(1) if m else None


def test_grow_to_four_voters_move_one_and_shrink_back_under_acks_all_load(quorum):
    c, lib, extra = quorum
    data = extra.data4
    b = c.bootstrap
    topic = "voters-load"
    create_topic(b, topic, 3, 3)
    acked, errors, stop = [], [], threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": b, "acks": "all", "enable.idempotence": True, "linger.ms": 5})

        def done(err, msg):
            (errors if err else acked).append(err or msg.value().decode())

        i = 0
        while not stop.is_set():
            p.produce(topic, value=f"v{i}".encode(), on_delivery=done)
            p.poll(0)
            i += 1
            time.sleep(0.002)
        p.flush(60)

    t = threading.Thread(target=produce)
    t.start()
    try:
        voters, observers, _ = status(lib, b)
        assert voters == [1, 2, 3]
        dir4 = directory_id(data)
        r = voter_change(lib, b, "add-controller", command_config=extra.props4)
        assert f"Added controller 4 with directory id {dir4}" in r.stdout, r.stdout
        voters, observers, out = status(lib, b)
        assert voters == [1, 2, 3, 4], out
        assert f'"directoryId": "{dir4}"' in out, out
        rows, out = replication(lib, b)
        # Broker 5 fetches the log without voting: an observer.
        assert rows.pop(5, (None, "Observer"))[1] == "Observer", out
        assert sorted(rows) == [1, 2, 3, 4] and rows[4][0] == dir4, out
        assert sorted(s for _, s in rows.values()) == ["Follower", "Follower", "Follower", "Leader"], out
        n_before = len(acked)
        wait_until(lambda: len(acked) > n_before + 50, 30, what="records acknowledged with four voters")

        # UpdateRaftVoter: voter 4 comes back listening on another port and tells the
        # leader, which records it; the others then reach it there, so it catches up.
        out = status(lib, b)[2]
        assert f"127.0.0.1:{extra.port4}" in (endpoints_of(out, 4) or ""), out
        extra.restart4_on_new_port()
        wait_until(lambda: f"127.0.0.1:{extra.port4}" in (endpoints_of(status(lib, b)[2], 4) or ""), 30,
                   what="voter 4's new endpoint in the voter set")
        hw_then = high_watermark(lib, b)
        wait_until(lambda: replication(lib, b)[0][4][1] == "Follower" and log_end_offset(lib, b, 4) >= hw_then, 30,
                   what="voter 4 replicated to at its new port")
        assert c.grep_logs("voter endpoints updated"), "the leader logged no UpdateRaftVoter"

        # --unregister: UnregisterController too, once it is out of the voter set (KIP-1312).
        r = voter_change(lib, b, "remove-controller", "--controller-id", "4", "--controller-directory-id", dir4, "--unregister")
        assert f"Removed KRaft controller 4 with directory id {dir4}" in r.stdout, r.stdout
        voters, observers, out = status(lib, b)
        assert voters == [1, 2, 3], out
        # Still running, it keeps the log as an observer.
        wait_until(lambda: 4 in status(lib, b)[1], 20, what="node 4 listed as an observer")
        n_before = len(acked)
        wait_until(lambda: len(acked) > n_before + 50, 30, what="records acknowledged after the removal")
    finally:
        stop.set()
        t.join(120)
    assert not errors, f"{len(errors)} deliveries failed, first: {errors[0]}"
    got = [m.value().decode() for ms in read_all(b, topic, 3, expected=len(acked)).values() for m in ms]
    assert sorted(got) == sorted(acked), f"{len(acked)} acknowledged, {len(got)} read back"
    assert len(set(got)) == len(got), "a record was read twice"


def test_bad_voter_changes_get_kafkas_errors(quorum, tmp_path):
    c, lib, _ = quorum
    b = c.bootstrap
    n1 = c.node(1)
    voters, _, out = status(lib, b)
    assert voters == [1, 2, 3], f"the voters the previous test should have left: {out}"
    # Node 1 is a voter already: DUPLICATE_VOTER.
    props1 = controller_properties(tmp_path / "node-1.properties", 1, n1.data_dir, n1.controller_port, c.voters,
                                   roles="broker,controller", client_port=n1.port)
    r = quorum_tool(lib, b, "add-controller", command_config=props1)
    assert r.returncode != 0 and "DuplicateVoterException" in r.stdout + r.stderr, r.stdout + r.stderr
    # No such voter, or the right id with another directory id: VOTER_NOT_FOUND.
    other = base64.urlsafe_b64encode(uuidlib.uuid4().bytes).decode().rstrip("=")
    for vid in ("9", "2"):
        r = quorum_tool(lib, b, "remove-controller", "--controller-id", vid, "--controller-directory-id", other)
        assert r.returncode != 0 and "VoterNotFoundException" in r.stdout + r.stderr, r.stdout + r.stderr
    # Shrink to one voter (bootstrap voters have no directory id: Kafka's zero UUID), then
    # the last one cannot go: VOTER_NOT_FOUND, as Kafka's VoterSet refuses an empty set.
    zero = "AAAAAAAAAAAAAAAAAAAAAA"
    leader_first = sorted(c.ids, key=lambda i: i != int(replication_leader(lib, b)))
    removed = []
    for vid in leader_first[:2]:
        voter_change(lib, b, "remove-controller", "--controller-id", str(vid), "--controller-directory-id", zero)
        removed.append(vid)
    voters, _, out = status(lib, b)
    assert len(voters) == 1, out
    last = voters[0]
    r = quorum_tool(lib, b, "remove-controller", "--controller-id", str(last), "--controller-directory-id", zero)
    assert r.returncode != 0 and "VoterNotFoundException" in r.stdout + r.stderr, r.stdout + r.stderr
    # The removed ones (observers since) come back with add-controller.
    for vid in removed:
        n = c.node(vid)
        props = controller_properties(tmp_path / f"node-{vid}.properties", vid, n.data_dir, n.controller_port, c.voters,
                                      roles="broker,controller", client_port=n.port)
        voter_change(lib, b, "add-controller", command_config=props)
    voters, _, out = status(lib, b)
    assert voters == [1, 2, 3], out


def high_watermark(lib, b):
    r = quorum_tool(lib, b, "describe", "--status")
    assert r.returncode == 0, r.stdout + r.stderr
    return int(re.search(r"^HighWatermark:\s+(\d+)", r.stdout, re.M).group(1))


def log_end_offset(lib, b, node_id):
    r = quorum_tool(lib, b, "describe", "--replication")
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(l.split() for l in r.stdout.splitlines()[1:] if l.split() and l.split()[0] == str(node_id))
    return int(row[2])


def test_a_broker_that_fetches_the_metadata_is_an_observer(quorum):
    """Broker 5 votes in nothing but fetches the metadata log: DescribeQuorum lists it as
    an observer with its log end offset and last fetch time, as Kafka lists its brokers."""
    c, lib, _ = quorum
    b = c.bootstrap
    wait_until(lambda: 5 in status(lib, b)[1], 20, what="broker 5 among the observers")
    voters, observers, out = status(lib, b)
    assert 5 not in voters, out
    hw = high_watermark(lib, b)
    rows, out = replication(lib, b)
    assert rows[5][1] == "Observer", out
    row = next(l.split() for l in out.splitlines()[1:] if l.split() and l.split()[0] == "5")
    # NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status
    assert int(row[2]) > 0 and int(row[4]) > 0, out
    wait_until(lambda: log_end_offset(lib, b, 5) >= hw, 20, what="broker 5 fetched up to the high watermark")
    # Its describeMetadataQuorum through broker 5 itself answers the same.
    r = quorum_tool(lib, f"127.0.0.1:{extra_port5(quorum)}", "describe", "--status")
    assert r.returncode == 0 and "CurrentObservers" in r.stdout, r.stdout + r.stderr


def extra_port5(quorum):
    return quorum[2].port5


def replication_leader(lib, b):
    rows, out = replication(lib, b)
    return next(i for i, (_, s) in rows.items() if s == "Leader")
