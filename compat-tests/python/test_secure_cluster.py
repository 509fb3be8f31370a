"""`sluice dev-cluster --security sasl_ssl`: TLS on every link, SCRAM-SHA-512 logins for
clients and between brokers, ACLs on. The replication kill test runs over it; a broker
with a wrong inter-broker password registers but never joins an ISR; a client that does
not log in is refused."""

import os
import re
import signal
import subprocess

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from cluster import pid_alive, sluice_bin, tail_lines, wait_until
from dev_cluster import DevCluster
from helpers import read_all
from test_replication import LedgerProducer, _check_ledger

TOPIC = "secure-kill"


class SecureDevCluster(DevCluster):
    """A DevCluster with --security sasl_ssl, whose nodes this test can also kill and
    start again by hand (`sluice serve --config node-<id>/config.toml`)."""

    def __init__(self, base_dir):
        super().__init__(base_dir, brokers=3)
        self.restarted = {}  # node id -> Popen

    def command(self):
        return super().command() + [
            "--security", "sasl_ssl", "--set", "broker.heartbeat.interval.ms=500",
            "--set", "broker.session.timeout.ms=3000", "--set", "replica.lag.time.max.ms=5000"]

    def client_conf(self):
        lines = (self.data_dir / "librdkafka.conf").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def log_path_of(self, node):
        return self.data_dir / f"node-{node}" / "sluice.log"

    def pid(self, node):
        p = self.restarted.get(node)
        return p.pid if p is not None else self.children[node][0]

    def kill(self, node):
        pid = self.pid(node)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if node in self.restarted:
            self.restarted.pop(node).wait(10)
        wait_until(lambda: not pid_alive(pid), 10, what=f"node {node} (pid {pid}) gone")

    def start_node(self, node, *sets):
        log = self.log_path_of(node)
        ready_before = log.read_text(errors="replace").count("sluice ready:")
        cmd = [sluice_bin(), "serve", "--config", str(self.data_dir / f"node-{node}" / "config.toml")]
        for s in sets:
            cmd += ["--set", s]
        with open(log, "ab") as f:
            self.restarted[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f,
                                                    stderr=subprocess.STDOUT)
        wait_until(lambda: log.read_text(errors="replace").count("sluice ready:") > ready_before, 60,
                   what=f"node {node} ready again:\n{tail_lines(log)}")

    def shutdown(self, timeout=10.0):
        for p in self.restarted.values():
            p.send_signal(signal.SIGTERM)
        for p in self.restarted.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        super().shutdown(timeout)


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    dc = SecureDevCluster(tmp_path_factory.mktemp("secure-cluster"))
    dc.start()
    try:
        dc.wait_output(timeout=90)
        yield dc
    finally:
        dc.shutdown()


def _admin(conf):
    return AdminClient(dict(conf, **{"socket.connection.setup.timeout.ms": 3000,
                                     "reconnect.backoff.max.ms": 500}))


def _partition(conf, topic):
    """(leader, sorted replicas, sorted ISR) of partition 0."""
    from confluent_kafka import TopicCollection
    a = _admin(conf)  # kept: a client that is dropped fails its futures
    d = a.describe_topics(TopicCollection([topic]), request_timeout=5)[topic].result(timeout=8)
    p = d.partitions[0]
    return (p.leader.id if p.leader else -1, sorted(n.id for n in p.replicas), sorted(n.id for n in p.isr))


def _try_partition(conf, topic):
    try:
        return _partition(conf, topic)
    except Exception:
        return (-1, [], [])


def _wait_isr(conf, topic, want, what):
    wait_until(lambda: _try_partition(conf, topic)[2] == sorted(want), 60,
               what=f"{what}: ISR of {topic}/0 == {sorted(want)} (last {_try_partition(conf, topic)})")


def test_the_written_client_settings_log_in_and_the_topic_replicates(secure):
    conf = secure.client_conf()
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanisms"] == "SCRAM-SHA-512", conf
    java = (secure.data_dir / "client.properties").read_text()
    assert "ScramLoginModule required username=\"admin\"" in java and "ssl.truststore.location=" in java, java
    assert f"password: {conf['sasl.password']}" in secure.output()
    a = _admin(conf)
    fs = a.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})],
                                    request_timeout=15)
    fs[TOPIC].result(timeout=20)
    _wait_isr(conf, TOPIC, [1, 2, 3], "a new RF=3 topic over SASL_SSL links")


def test_unauthenticated_and_wrong_password_clients_are_refused(secure):
    conf = secure.client_conf()
    tls_only = {k: v for k, v in conf.items() if not k.startswith("sasl.")}
    tls_only["security.protocol"] = "SSL"
    wrong = dict(conf, **{"sasl.password": "not-" + conf["sasl.password"]})
    for bad in (tls_only, wrong):
        with pytest.raises(KafkaException):
            _admin(dict(bad, log_level=0)).list_topics(timeout=4)  # refused: its retries need no log
    assert _admin(conf).list_topics(timeout=10).brokers, "the right password still works"


@pytest.mark.timeout(300)
def test_kill_9_of_the_leader_under_acks_all_loses_nothing(secure):
    conf = secure.client_conf()
    _wait_isr(conf, TOPIC, [1, 2, 3], "before the kill")
    extra = {k: v for k, v in conf.items() if k != "bootstrap.servers"}
    prod = LedgerProducer(conf["bootstrap.servers"], TOPIC, 1, rate=300, **extra).start()
    try:
        wait_until(lambda: len(prod.acked) >= 200, 30, what="200 acks before the kill")
        leader = _partition(conf, TOPIC)[0]
        secure.kill(leader)
        before = len(prod.acked)
        wait_until(lambda: len(prod.acked) >= before + 200, 60,
                   what=f"acks go on with leader {leader} killed ({len(prod.acked)} of {before + 200})")
        secure.start_node(leader)
        _wait_isr(conf, TOPIC, [1, 2, 3], f"node {leader} back in the ISR after its restart")
        before = len(prod.acked)
        wait_until(lambda: len(prod.acked) >= before + 200, 60, what="acks after the restart")
    finally:
        left = prod.stop()
    assert not prod.fatal, prod.fatal
    assert left == 0, f"{left} records never delivered"
    got = read_all(conf["bootstrap.servers"], TOPIC, 1, expected=len(prod.acked), timeout=60, **extra)
    records = [(m.partition(), m.offset(), m.value()) for msgs in got.values() for m in msgs]
    _check_ledger(prod.acked, records, "secure cluster, leader killed")
    prod.p = None  # its librdkafka handle would otherwise outlive the cluster, reconnecting


def test_a_broker_with_a_wrong_inter_broker_password_does_not_join_the_isr(secure):
    conf = secure.client_conf()
    _wait_isr(conf, TOPIC, [1, 2, 3], "before the restart")
    leader = _partition(conf, TOPIC)[0]
    node = next(n for n in (1, 2, 3) if n != leader)
    secure.kill(node)
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="broker" password="wrong-password";')
    log = secure.log_path_of(node)
    failed_before = log.read_text(errors="replace").count("login to the leader failed")
    secure.start_node(node, f"listener.name.broker.scram-sha-512.sasl.jaas.config={jaas}")
    # Two refusals: it keeps trying (with backoff) and keeps being refused.
    wait_until(lambda: log.read_text(errors="replace").count("login to the leader failed") >= failed_before + 2, 30,
               what=f"node {node} logs its failed logins:\n{tail_lines(log)}")
    text = log.read_text(errors="replace")
    assert "invalid credentials" in text, tail_lines(log)
    # It is registered and alive, yet stays out of the ISR.
    ids = sorted(_admin(conf).list_topics(timeout=10).brokers)
    assert node in ids, ids
    leader_now, replicas, isr = _partition(conf, TOPIC)
    assert node in replicas and node not in isr, (node, leader_now, replicas, isr)
    # With its real credentials it catches up again.
    secure.kill(node)
    secure.start_node(node)
    _wait_isr(conf, TOPIC, [1, 2, 3], f"node {node} rejoins with the right password")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEADER = re.compile(r"metadata quorum leader changed.*?leader=(\d+) term=(\d+)")


def _quorum_leader(secure):
    """The active controller: the leader of the highest term any node's log names."""
    best = (-1, -1)
    for n in (1, 2, 3):
        text = _ANSI.sub("", secure.log_path_of(n).read_text(errors="replace"))
        for leader, term in _LEADER.findall(text):
            best = max(best, (int(term), int(leader)))
    return best


def test_the_quorum_forms_over_sasl_ssl_and_a_wrong_controller_password_is_refused(secure):
    conf = secure.client_conf()
    node_conf = (secure.data_dir / "node-1" / "config.toml").read_text()
    assert "CONTROLLER:SASL_SSL" in node_conf and '"sasl.mechanism.controller.protocol" = "SCRAM-SHA-512"' in node_conf, node_conf
    _wait_isr(conf, TOPIC, [1, 2, 3], "before the restart")
    _, leader = _quorum_leader(secure)
    node = next(n for n in (1, 2, 3) if n != leader)
    secure.kill(node)
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="broker" password="wrong-password";')
    logs = {n: secure.log_path_of(n) for n in (1, 2, 3)}
    refused_before = {n: logs[n].read_text(errors="replace").count("controller listener: SASL login refused") for n in logs}
    cmd = [sluice_bin(), "serve", "--config", str(secure.data_dir / f"node-{node}" / "config.toml"),
           "--set", f"listener.name.controller.scram-sha-512.sasl.jaas.config={jaas}"]
    with open(logs[node], "ab") as f:
        secure.restarted[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
    wait_until(lambda: "SASL login to the controller listener as broker (SCRAM-SHA-512) failed"
               in logs[node].read_text(errors="replace"), 30,
               what=f"node {node} logs its refused controller login:\n{tail_lines(logs[node])}")
    others = [n for n in logs if n != node]
    wait_until(lambda: any(logs[n].read_text(errors="replace").count("controller listener: SASL login refused")
                           > refused_before[n] for n in others), 30,
               what="a controller logs the refused login")
    assert "invalid credentials" in logs[node].read_text(errors="replace"), tail_lines(logs[node])
    # It cannot take part: it drops out of the ISR (fenced: no heartbeat gets through).
    wait_until(lambda: node not in _try_partition(conf, TOPIC)[2] and _try_partition(conf, TOPIC)[0] > 0, 30,
               what=f"node {node} out of the ISR of {TOPIC} (last {_try_partition(conf, TOPIC)})")
    secure.kill(node)
    secure.start_node(node)
    _wait_isr(conf, TOPIC, [1, 2, 3], f"node {node} rejoins with the right controller password")


def test_kill_9_of_the_active_controller_elects_a_new_one_over_sasl(secure):
    conf = secure.client_conf()
    _wait_isr(conf, TOPIC, [1, 2, 3], "before the kill")
    term, leader = _quorum_leader(secure)
    assert leader in (1, 2, 3), (term, leader)
    secure.kill(leader)
    new = wait_until(lambda: (lambda t, l: l if t > term and l != leader else None)(*_quorum_leader(secure)), 30,
                     what=f"a new quorum leader after killing {leader}")
    assert new != leader
    # The new active controller decides: a topic on the two nodes left is created.
    a = _admin(conf)  # kept: a client that is dropped fails its futures
    fs = a.create_topics([NewTopic("after-controller-kill", 1, 2)], request_timeout=15)
    fs["after-controller-kill"].result(timeout=30)
    secure.start_node(leader)
    _wait_isr(conf, TOPIC, [1, 2, 3], f"node {leader} back after the controller kill")


class MtlsDevCluster(DevCluster):
    def command(self):
        return super().command() + ["--security", "ssl"]


def test_dev_cluster_with_mutual_tls(tmp_path):
    """--security ssl: brokers reach each other with their node certificates (super users
    by their certificate principal), the written client settings carry the admin's
    certificate, and a client without one is refused."""
    dc = MtlsDevCluster(tmp_path, brokers=3).start()
    try:
        dc.wait_output(timeout=90)
        conf = dict(line.split("=", 1) for line in (dc.data_dir / "librdkafka.conf").read_text().splitlines()
                    if "=" in line)
        assert conf["security.protocol"] == "SSL" and "ssl.certificate.location" in conf, conf
        a = _admin(conf)
        a.create_topics([NewTopic("mtls", 1, 3)], request_timeout=15)["mtls"].result(timeout=20)
        _wait_isr(conf, "mtls", [1, 2, 3], "an RF=3 topic over mutual-TLS broker links")
        no_cert = {k: v for k, v in conf.items() if k not in ("ssl.certificate.location", "ssl.key.location")}
        with pytest.raises(KafkaException):
            _admin(dict(no_cert, log_level=0)).list_topics(timeout=4)
    finally:
        dc.shutdown()
