"""The Docker image and compose cluster, with librdkafka (confluent-kafka) on the host.

Run by compat-tests/docker/run.sh, which installs and starts the engine and builds the
image first. Every container and compose project a test starts, it removes.
"""

import io
import os
import socket
import subprocess
import tarfile
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

IMAGE = os.environ.get("SLUICE_IMAGE", "sluice:dev")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE = os.path.join(ROOT, "docker", "compose.yaml")
KAFKA_STYLE = os.path.join(os.path.dirname(__file__), "kafka-single-node.yaml")


def sh(*args, check=True, env=None, timeout=120):
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, cond, timeout=60.0, every=0.2):
    deadline = time.time() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def answers(port):
    """True once the broker behind the port answers ApiVersions."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.settimeout(1)
            body = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + (1).to_bytes(4, "big") + (4).to_bytes(2, "big") + b"ping"
            s.sendall(len(body).to_bytes(4, "big") + body)
            head = s.recv(10)
            return len(head) == 10 and head[8:10] == b"\0\0"
    except OSError:
        return False


def round_trip(bootstrap, topic, n=100):
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode())
    assert p.flush(30) == 0
    return consume_all(bootstrap, topic, n)


def consume_all(bootstrap, topic, n, partitions=(0,)):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    got = []
    deadline = time.time() + 60
    while len(got) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return got


class Container:
    def __init__(self, *run_args):
        self.id = sh("docker", "run", "-d", *run_args).stdout.strip()

    def logs(self):
        r = sh("docker", "logs", self.id, check=False)
        return r.stdout + r.stderr

    def remove(self):
        sh("docker", "rm", "-f", "-v", self.id, check=False)


@pytest.fixture(scope="module")
def single():
    port = free_port()
    started = time.time()
    c = Container("-p", f"127.0.0.1:{port}:{port}", "-e", f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port}", IMAGE)
    try:
        wait_for("the container's first ApiVersions answer", lambda: answers(port), timeout=30, every=0.005)
        print(f"\ncontainer start to first ApiVersions answer: {(time.time() - started) * 1000:.0f} ms (docker run included)")
        yield c, port
    finally:
        c.remove()


def test_image_is_small_and_runs_as_a_non_root_user():
    size = int(sh("docker", "image", "inspect", "--format", "{{.Size}}", IMAGE).stdout)
    user = sh("docker", "image", "inspect", "--format", "{{.Config.User}}", IMAGE).stdout.strip()
    print(f"\nimage {IMAGE}: {size / 1e6:.1f} MB")
    assert user and not user.startswith("0") and user != "root"
    assert size < 40e6, "the image holds more than the binary and its libraries"


def test_single_node_produce_and_consume_from_the_host(single):
    c, port = single
    got = round_trip(f"127.0.0.1:{port}", "single-rt")
    assert got == [f"v{i}" for i in range(100)]
    mem = sh("docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", c.id).stdout.strip()
    print(f"\nidle memory after the round trip (docker stats): {mem}")


def test_the_readme_testcontainers_python_snippet_waits_for_a_ready_broker():
    """The README's snippet, on a free port instead of 9092 (other suites may hold 9092).
    Ryuk, Testcontainers' reaper, is an image that cannot be pulled here; the test removes
    its container itself."""
    os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import HealthcheckWaitStrategy, LogMessageWaitStrategy

    for wait in (LogMessageWaitStrategy("sluice ready"), HealthcheckWaitStrategy()):
        port = free_port()
        kafka = (
            DockerContainer(IMAGE)
            .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://localhost:{port}")
            .with_bind_ports(port, port)
            .waiting_for(wait)
        )
        kafka.start()
        try:
            # Ready means ready: the first request after start() is answered.
            assert answers(port), f"{type(wait).__name__}: start() returned before the broker answered"
            assert round_trip(f"localhost:{port}", f"tc-{type(wait).__name__}", n=10) == [f"v{i}" for i in range(10)]
        finally:
            kafka.stop()


def test_unknown_key_is_a_clear_error():
    r = sh("docker", "run", "--rm", "-e", "KAFKA_NO_SUCH_KEY=1", IMAGE, check=False, timeout=60)
    assert r.returncode != 0
    assert "KAFKA_NO_SUCH_KEY" in r.stderr and "no.such.key" in r.stderr, r.stderr


def test_clean_stop_and_restart_keep_the_data(single):
    c, port = single
    bootstrap = f"127.0.0.1:{port}"
    round_trip(bootstrap, "kept", n=50)
    sh("docker", "stop", "-t", "20", c.id)
    assert sh("docker", "inspect", "--format", "{{.State.ExitCode}}", c.id).stdout.strip() == "0"
    marker = sh("docker", "cp", f"{c.id}:/var/lib/sluice/.clean-shutdown", "-", check=False)
    assert marker.returncode == 0, f"no clean-shutdown marker after docker stop: {marker.stderr}"
    assert "shut down cleanly" in c.logs()
    sh("docker", "start", c.id)
    wait_for("the restarted container", lambda: answers(port), timeout=30)
    assert consume_all(bootstrap, "kept", 50) == [f"v{i}" for i in range(50)]
    assert "no clean-shutdown marker" not in c.logs()


def compose(project, file, env, *args, timeout=180):
    return sh("docker-compose", "-p", project, "-f", file, *args, env={**os.environ, **env}, timeout=timeout)


def health(container_id):
    return sh("docker", "inspect", "--format", "{{.State.Health.Status}}", container_id, check=False).stdout.strip()


def test_an_apache_kafka_compose_service_runs_with_only_the_image_changed():
    project = f"sluicekafkastyle{os.getpid()}"
    port = free_port()
    env = {"HOST_PORT": str(port), "SLUICE_IMAGE": IMAGE}
    try:
        compose(project, KAFKA_STYLE, env, "up", "-d")
        cid = compose(project, KAFKA_STYLE, env, "ps", "-q", "broker").stdout.strip()
        wait_for("the healthcheck", lambda: health(cid) == "healthy", timeout=60)
        got = round_trip(f"localhost:{port}", "kafka-style")
        assert got == [f"v{i}" for i in range(100)]
    finally:
        compose(project, KAFKA_STYLE, env, "down", "-v", "-t", "5")


class Ledger:
    """An acks=all producer in a thread: every acknowledged value, in order of the acks."""

    def __init__(self, bootstrap, topic):
        self.acked, self.errors, self.stop = [], [], threading.Event()
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 120000})
        self.topic = topic
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        i = 0
        while not self.stop.is_set():
            def done(err, msg, v=f"r{i}"):
                (self.errors if err else self.acked).append(v if not err else str(err))
            try:
                self.p.produce(self.topic, value=f"r{i}".encode(), on_delivery=done)
                i += 1
            except BufferError:
                pass
            self.p.poll(0.002)
        self.p.flush(120)

    def finish(self):
        self.stop.set()
        self.t.join(150)


def leader_of(admin, topic, partition=0):
    md = admin.list_topics(topic, timeout=10).topics[topic].partitions[partition]
    return md.leader, list(md.isrs)


def test_compose_cluster_survives_a_killed_node_without_losing_acked_records():
    project = f"sluicecluster{os.getpid()}"
    ports = [free_port() for _ in range(3)]
    env = {f"SLUICE_PORT_{i + 1}": str(p) for i, p in enumerate(ports)}
    env["SLUICE_IMAGE"] = IMAGE
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    try:
        compose(project, COMPOSE, env, "up", "-d")
        ids = {n: compose(project, COMPOSE, env, "ps", "-q", f"sluice-{n}").stdout.strip() for n in (1, 2, 3)}
        wait_for("three healthy nodes", lambda: all(health(c) == "healthy" for c in ids.values()), timeout=90)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("ledger", 1, 3, config={"min.insync.replicas": "2"})])["ledger"].result(30)
        wait_for("a full ISR", lambda: len(leader_of(admin, "ledger")[1]) == 3, timeout=30)
        ledger = Ledger(bootstrap, "ledger")
        wait_for("acks before the kill", lambda: len(ledger.acked) > 500, timeout=60)
        old_leader, _ = leader_of(admin, "ledger")
        sh("docker", "kill", ids[old_leader])
        at_kill = len(ledger.acked)
        wait_for("a new leader in Metadata",
                 lambda: leader_of(admin, "ledger")[0] not in (old_leader, -1), timeout=60, every=0.5)
        wait_for("acks after the kill (min.insync.replicas=2 of 3)", lambda: len(ledger.acked) > at_kill + 500, timeout=60)
        sh("docker", "start", ids[old_leader])
        wait_for("the restarted node back in the ISR",
                 lambda: old_leader in leader_of(admin, "ledger")[1], timeout=90, every=0.5)
        ledger.finish()
        assert not ledger.errors, ledger.errors[:5]
        got = consume_all(bootstrap, "ledger", len(ledger.acked))
        missing = set(ledger.acked) - set(got)
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
        assert len(got) == len(set(got)), "a record was read twice"
        print(f"\n{len(ledger.acked)} records acknowledged across the kill and restart, every one read once")
    finally:
        compose(project, COMPOSE, env, "down", "-v", "-t", "5")


def test_secured_compose_cluster_serves_sasl_ssl_clients(tmp_path):
    secrets = tmp_path / "secrets"
    sh(os.path.join(ROOT, "docker", "certs"), str(secrets))
    project = f"sluicesasl{os.getpid()}"
    ports = [free_port() for _ in range(3)]
    env = {f"SLUICE_PORT_{i + 1}": str(p) for i, p in enumerate(ports)}
    env.update(SLUICE_IMAGE=IMAGE, SLUICE_SECRETS=str(secrets), SLUICE_ADMIN_PASSWORD="s3cret-admin")
    file = os.path.join(ROOT, "docker", "compose-sasl.yaml")
    conf = {"bootstrap.servers": ",".join(f"localhost:{p}" for p in ports), "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "s3cret-admin",
            "ssl.ca.location": str(secrets / "ca.pem")}
    try:
        compose(project, file, env, "up", "-d")
        ids = [compose(project, file, env, "ps", "-q", f"sluice-{n}").stdout.strip() for n in (1, 2, 3)]
        wait_for("three healthy secured nodes", lambda: all(health(c) == "healthy" for c in ids), timeout=90)
        admin = AdminClient(conf)
        admin.create_topics([NewTopic("secured", 1, 3)])["secured"].result(30)
        p = Producer({**conf, "acks": "all"})
        for i in range(50):
            p.produce("secured", value=f"s{i}".encode())
        assert p.flush(30) == 0
        c = Consumer({**conf, "group.id": "secured-g", "auto.offset.reset": "earliest"})
        c.subscribe(["secured"])
        got = []
        deadline = time.time() + 60
        while len(got) < 50 and time.time() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        c.close()
        assert got == [f"s{i}" for i in range(50)]
        wrong = Producer({**conf, "sasl.password": "wrong"})
        wrong.produce("secured", value=b"x")
        assert wrong.flush(10) == 1, "a wrong password must not produce"
    finally:
        compose(project, file, env, "down", "-v", "-t", "5")
