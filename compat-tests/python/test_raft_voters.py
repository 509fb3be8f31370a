"""KIP-853 dynamic controller quorum, driven by Kafka 4.4's own `kafka-metadata-quorum`
(MetadataQuorumCommand: the Java admin's addRaftVoter, removeRaftVoter and
describeMetadataQuorum) against a 3-node Sluice cluster, one cluster for the file.

A fourth node starts as a controller outside the voter set (an observer); add-controller
reads its directory id from the meta.properties Sluice wrote and grows the quorum to four
voters, remove-controller shrinks it back, while a producer writes with acks=all; every
acknowledged record is then read back exactly once. Bad changes get Kafka's errors.
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
    r = quorum_tool(lib, bootstrap, "describe", "--status")
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


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    lib = kafka_tools_lib()
    base = tmp_path_factory.mktemp("voters")
    c = Cluster(base / "cluster", n=3)
    observer = None
    try:
        c.start_all()
        (port,) = free_ports(1, avoid=[n.port for n in c.nodes.values()] + [n.controller_port for n in c.nodes.values()])
        data = base / "node-4"
        data.mkdir()
        props = controller_properties(base / "node-4.properties", 4, data, port, c.voters)
        log = open(base / "node-4.log", "ab")
        observer = subprocess.Popen([sluice_bin(), "serve", "--config", str(props)], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: READY_MARK in (base / "node-4.log").read_text(errors="replace") or observer.poll() is not None,
                   30, what="node 4 ready")
        assert observer.poll() is None, tail_lines(base / "node-4.log")
        yield c, lib, props, data
    finally:
        if observer is not None and observer.poll() is None:
            observer.terminate()
            try:
                observer.wait(timeout=15)
            except subprocess.TimeoutExpired:
                observer.kill()
                observer.wait()
        c.shutdown()


def test_grow_to_four_voters_and_shrink_back_under_acks_all_load(quorum):
    c, lib, props, data = quorum
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
        r = quorum_tool(lib, b, "add-controller", command_config=props)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"Added controller 4 with directory id {dir4}" in r.stdout, r.stdout
        voters, observers, out = status(lib, b)
        assert voters == [1, 2, 3, 4], out
        assert f'"directoryId": "{dir4}"' in out, out
        rows, out = replication(lib, b)
        assert sorted(rows) == [1, 2, 3, 4] and rows[4][0] == dir4, out
        assert sorted(s for _, s in rows.values()) == ["Follower", "Follower", "Follower", "Leader"], out
        n_before = len(acked)
        wait_until(lambda: len(acked) > n_before + 50, 30, what="records acknowledged with four voters")

        r = quorum_tool(lib, b, "remove-controller", "--controller-id", "4", "--controller-directory-id", dir4)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"Removed KRaft controller 4 with directory id {dir4}" in r.stdout, r.stdout
        voters, observers, out = status(lib, b)
        assert voters == [1, 2, 3], out
        # Still running, it keeps the log as an observer.
        wait_until(lambda: status(lib, b)[1] == [4], 20, what="node 4 listed as an observer")
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
    c, lib, _, _ = quorum
    b = c.bootstrap
    n1 = c.node(1)
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
        r = quorum_tool(lib, b, "remove-controller", "--controller-id", str(vid), "--controller-directory-id", zero)
        assert r.returncode == 0, r.stdout + r.stderr
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
        r = quorum_tool(lib, b, "add-controller", command_config=props)
        assert r.returncode == 0, r.stdout + r.stderr
    voters, _, out = status(lib, b)
    assert voters == [1, 2, 3], out


def replication_leader(lib, b):
    rows, out = replication(lib, b)
    return next(i for i, (_, s) in rows.items() if s == "Leader")
