"""`sluice` as a Kafka client tool (topic, produce, consume, group, cluster, events)
against one shared `sluice serve` process; its answers are checked against
confluent-kafka's view of the same broker. Also: SASL_SSL through the client settings
`dev-cluster --security sasl_ssl` writes, cluster health on a 3-node cluster with a
paused node, and `events` against a stub of the HTTP event journal."""

import json
import os
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from conftest import Broker, fail_on_invariant_violations, free_port, sluice_bin


def run_cli(args, bootstrap=None, input=None, timeout=60, env=None):
    cmd = [sluice_bin(), *args]
    if bootstrap is not None:
        cmd += ["-b", bootstrap]
    e = dict(os.environ)
    e.pop("SLUICE_BROKERS", None)
    e.update(env or {})
    return subprocess.run(cmd, input=input, capture_output=True, timeout=timeout, env=e)


def ok(args, bootstrap, input=None, timeout=60):
    r = run_cli(args, bootstrap, input=input, timeout=timeout)
    assert r.returncode == 0, f"{args} exited {r.returncode}:\n{r.stderr.decode()}\n{r.stdout.decode()}"
    return r.stdout.decode()


def ok_json(args, bootstrap, input=None):
    return json.loads(ok([*args, "--format", "json"], bootstrap, input=input))


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("cli-tool"), {"group.initial.rebalance.delay.ms": "0"})
    b.start()
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


def test_topic_create_describe_alter_add_partitions_delete(broker):
    bs = broker.bootstrap
    t = name("cli-topic")
    out = ok(["topic", "create", t, "-p", "3", "-r", "1", "-c", "retention.ms=123456"], bs)
    assert t in out
    listed = ok_json(["topic", "list"], bs)
    assert {"topic": t, "partitions": 3, "replicas": 1} == {k: v for k, v in
                                                           next(x for x in listed if x["topic"] == t).items()
                                                           if k in ("topic", "partitions", "replicas")}
    assert t in ok(["topic", "list"], bs).split()

    d = ok_json(["topic", "describe", t], bs)
    md = AdminClient({"bootstrap.servers": bs}).list_topics(t, timeout=10).topics[t]
    assert d["topic"] == t and d["partition_count"] == 3 and d["replication_factor"] == 1
    assert d["configs"] == {"retention.ms": "123456"}
    for p in d["partitions"]:
        m = md.partitions[p["partition"]]
        assert (p["leader"], p["replicas"], p["isr"]) == (m.leader, list(m.replicas), list(m.isrs))
        assert p["offline_replicas"] == [] and p["high_watermark"] == 0
    text = ok(["topic", "describe", t], bs)
    assert "HIGH-WATERMARK" in text and "retention.ms=123456" in text

    ok(["topic", "alter-config", t, "--set", "cleanup.policy=compact", "--delete", "retention.ms"], bs)
    assert ok_json(["topic", "describe", t], bs)["configs"] == {"cleanup.policy": "compact"}
    ok(["topic", "add-partitions", t, "-n", "5"], bs)
    assert ok_json(["topic", "describe", t], bs)["partition_count"] == 5

    again = run_cli(["topic", "create", t, "-p", "1"], bs)
    assert again.returncode != 0 and b"TOPIC_ALREADY_EXISTS" in again.stderr, again.stderr
    assert ok_json(["topic", "delete", t], bs) == [{"topic": t, "error": None}]
    gone = run_cli(["topic", "describe", t], bs)
    assert gone.returncode != 0 and b"UNKNOWN_TOPIC_OR_PARTITION" in gone.stderr, gone.stderr


def test_produce_then_consume_round_trips_keys_values_and_headers(broker):
    bs = broker.bootstrap
    t = name("cli-rt")
    ok(["topic", "create", t, "-p", "3", "-r", "1"], bs)
    lines = "".join(f"key-{i}:value {i}\n" for i in range(20)).encode()
    summary = ok_json(["produce", t, "--key-delimiter", ":", "-H", "src=cli", "-H", "n=1"], bs, input=lines)
    assert summary["records"] == 20 and sum(p["records"] for p in summary["partitions"]) == 20

    recs = [json.loads(x) for x in ok(["consume", t, "--from-beginning", "--exit-at-end", "--format", "json"], bs).splitlines()]
    assert sorted((r["key"], r["value"]) for r in recs) == sorted((f"key-{i}", f"value {i}") for i in range(20))
    assert all(r["headers"] == [{"key": "src", "value": "cli"}, {"key": "n", "value": "1"}] for r in recs)
    assert all(r["topic"] == t and r["timestamp"] > 0 for r in recs)

    # The keyed partition is the Java client's (murmur2), as librdkafka's murmur2_random picks.
    p = Producer({"bootstrap.servers": bs, "partitioner": "murmur2_random"})
    where = {}
    for i in range(20):
        p.produce(t, key=f"key-{i}", value=b"x", on_delivery=lambda err, m: where.__setitem__(m.key().decode(), m.partition()))
    assert p.flush(20) == 0
    assert {r["key"]: r["partition"] for r in recs} == where

    # confluent-kafka reads what the tool wrote; the tool's template prints it kcat-style.
    c = Consumer({"bootstrap.servers": bs, "group.id": name("g"), "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(t, 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    part0 = sorted(r["offset"] for r in recs if r["partition"] == 0)
    while len(got) < len(part0) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.key().decode(), m.value().decode(), m.headers()))
    c.close()
    assert len(got) == len(part0) and all(h == [("src", b"cli"), ("n", b"1")] for _, _, h in got)
    out = ok(["consume", t, "-p", "0", "--offset", "0", "-n", "2", "-f", "%t|%p|%o|%k|%s|%h|%K|%S\\n"], bs)
    first = out.splitlines()
    assert len(first) == 2
    k, v, _ = got[0]
    assert first[0] == f"{t}|0|0|{k}|{v}|src=cli,n=1|{len(k)}|{len(v)}"


def test_group_describe_shows_lag_and_seek_resets_an_empty_group(broker):
    bs = broker.bootstrap
    t, g = name("cli-lag"), name("cli-group")
    ok(["topic", "create", t, "-p", "1", "-r", "1"], bs)
    ok(["produce", t], bs, input=b"".join(b"r%d\n" % i for i in range(10)))
    c = Consumer({"bootstrap.servers": bs, "group.id": g, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": "lag-checker"})
    c.subscribe([t])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 4 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen += 1
    c.commit(offsets=[TopicPartition(t, 0, 4)], asynchronous=False)

    live = ok_json(["group", "describe", g], bs)
    assert live["state"] == "Stable" and len(live["members"]) == 1
    assert live["members"][0]["client_id"] == "lag-checker"
    assert live["members"][0]["assignment"] == [{"topic": t, "partitions": [0]}]
    refused = run_cli(["group", "seek", g, "--to", "earliest"], bs)
    assert refused.returncode != 0 and b"NON_EMPTY_GROUP" in refused.stderr, refused.stderr
    c.close()

    d = ok_json(["group", "describe", g], bs)
    assert d["state"] == "Empty" and d["members"] == []
    assert d["offsets"] == [{"topic": t, "partition": 0, "committed_offset": 4, "log_end_offset": 10, "lag": 6, "member_id": None}]
    assert d["total_lag"] == 6
    assert "LOG-END-OFFSET" in ok(["group", "describe", g], bs)
    assert any(x["group"] == g for x in ok_json(["group", "list"], bs))

    for to, want in [("earliest", 0), ("offset:7", 7), ("latest", 10)]:
        ok(["group", "seek", g, "--to", to, "--topic", t], bs)
        assert ok_json(["group", "describe", g], bs)["offsets"][0]["committed_offset"] == want, to
    ok(["group", "seek", g, "--to", "timestamp:0"], bs)
    assert ok_json(["group", "describe", g], bs)["offsets"][0]["committed_offset"] == 0

    assert ok_json(["group", "delete", g], bs) == [{"group": g, "error": None}]
    assert not any(x["group"] == g for x in ok_json(["group", "list"], bs))

    # consume -g joins a KIP-848 group, starts at its committed offsets and commits what it read.
    g2 = name("cli-member")
    assert ok(["consume", t, "-g", g2, "--from-beginning", "-n", "3"], bs).split() == ["r0", "r1", "r2"]
    d2 = ok_json(["group", "describe", g2], bs)
    assert d2["offsets"][0]["committed_offset"] == 3 and d2["offsets"][0]["lag"] == 7 and d2["members"] == []
    assert ok(["consume", t, "-g", g2, "-n", "2"], bs).split() == ["r3", "r4"]
    assert ok_json(["group", "describe", g2], bs)["offsets"][0]["committed_offset"] == 5


def test_cluster_info_and_health_of_a_healthy_node(broker):
    bs = broker.bootstrap
    info = ok_json(["cluster", "info"], bs)
    admin = AdminClient({"bootstrap.servers": bs})
    cid = admin.describe_cluster(request_timeout=10).result(timeout=10).cluster_id
    assert info["cluster_id"] == cid and info["controller_id"] == 1
    assert [(b["node_id"], b["host"], b["port"]) for b in info["brokers"]] == [(1, "127.0.0.1", broker.port)]
    assert "CONTROLLER" in ok(["cluster", "info"], bs)
    h = run_cli(["cluster", "health", "--format", "json"], bs)
    assert h.returncode == 0, h.stderr
    got = json.loads(h.stdout)
    assert got["is_healthy"] is True and got["unhealthy_reasons"] == [] and got["all_nodes"] == [1]
    assert b"Healthy:" in run_cli(["cluster", "health"], bs).stdout


def test_an_unreachable_broker_fails_fast(broker):
    start = time.monotonic()
    r = run_cli(["topic", "list"], "127.0.0.1:1", timeout=20)
    assert r.returncode != 0 and b"cannot connect to 127.0.0.1:1" in r.stderr, r.stderr
    # A port that accepts but never answers costs the request timeout, not a hang.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        r2 = run_cli(["topic", "list", "-X", "request.timeout.ms=500"], f"127.0.0.1:{s.getsockname()[1]}", timeout=20)
    finally:
        s.close()
    assert r2.returncode != 0 and b"no response within" in r2.stderr, r2.stderr
    assert time.monotonic() - start < 10
    bad = run_cli(["topic", "list", "-X", "security.protocol=BOGUS"], broker.bootstrap)
    assert bad.returncode != 0 and b"security.protocol" in bad.stderr


class StubJournal(BaseHTTPRequestHandler):
    """A STUB of a node's event journal (`GET /v1/events`), not the real listener: it
    answers the documented contract so the client side can be tested on its own."""

    EVENTS = [
        {"seq": 1, "time_ms": 1764636795123, "type": "broker_fenced", "broker": 3},
        {"seq": 2, "time_ms": 1764636796000, "type": "leader_changed", "topic": "t", "partition": 0,
         "previous_leader": 3, "leader": 1, "leader_epoch": 4, "reason": "clean"},
    ]

    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path.startswith("/v1/events?follow=true"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for e in self.EVENTS:
                for piece in (": keep-alive\n\n", f"id: {e['seq']}\n", f"data: {json.dumps(e)}\n\n"):
                    b = piece.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                    self.wfile.flush()
            time.sleep(30)  # the stream stays open; the test stops the client
            return
        since = int(self.path.split("since=")[1]) if "since=" in self.path else 0
        body = json.dumps([e for e in self.EVENTS if e["seq"] > since]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_events_reads_the_journal_and_follows_its_stream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubJournal)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    addr = f"127.0.0.1:{server.server_address[1]}"
    try:
        out = ok(["events", "--http", addr], None).splitlines()
        assert out[0] == "2025-12-02T00:53:15.123Z broker_fenced broker=3 seq=1"
        assert out[1].startswith("2025-12-02T00:53:16.000Z leader_changed ") and " reason=clean" in out[1]
        r = run_cli(["events", "--since", "1", "--format", "json"], env={"SLUICE_HTTP": addr})
        assert r.returncode == 0 and [json.loads(x) for x in r.stdout.decode().splitlines()] == StubJournal.EVENTS[1:]

        p = subprocess.Popen([sluice_bin(), "events", "--follow", "--format", "json", "--http", addr],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            got = [json.loads(p.stdout.readline()) for _ in StubJournal.EVENTS]
            assert got == StubJournal.EVENTS
            assert p.poll() is None, "--follow keeps reading"
        finally:
            p.kill()
            p.wait()
        down = run_cli(["events", "--http", "127.0.0.1:1"])
        assert down.returncode != 0 and b"cannot connect" in down.stderr
    finally:
        server.shutdown()


def test_sasl_ssl_through_the_client_settings_dev_cluster_writes(tmp_path):
    from dev_cluster import DevCluster

    class SecureOne(DevCluster):
        def command(self):
            return super().command() + ["--security", "sasl_ssl"]

    dc = SecureOne(tmp_path, brokers=1).start()
    try:
        dc.wait_output(timeout=60)
        java, rdkafka = str(dc.data_dir / "client.properties"), str(dc.data_dir / "librdkafka.conf")
        t = name("cli-secure")
        # No -b: bootstrap.servers comes from the file.
        r = run_cli(["topic", "create", t, "-p", "1", "-r", "1", "--config", java])
        assert r.returncode == 0, r.stderr
        r = run_cli(["produce", t, "--config", rdkafka], input=b"s1\ns2\n")
        assert r.returncode == 0, r.stderr
        r = run_cli(["consume", t, "--from-beginning", "--exit-at-end", "--config", java])
        assert r.returncode == 0 and r.stdout.split() == [b"s1", b"s2"], r.stderr
        wrong = run_cli(["topic", "list", "--config", rdkafka, "-X", "sasl.password=wrong"])
        assert wrong.returncode != 0 and b"SASL_AUTHENTICATION_FAILED" in wrong.stderr, wrong.stderr
        plain = run_cli(["topic", "list", "-X", "request.timeout.ms=2000"], dc.bootstrap)
        assert plain.returncode != 0
    finally:
        dc.shutdown()


def test_cluster_health_names_a_paused_nodes_partitions_and_waits_until_healthy(start_cluster):
    c = start_cluster(n=3, replica_lag_time_max_ms=2000)
    t = name("cli-health")
    ok(["topic", "create", t, "-p", "3", "-r", "3", "-c", "min.insync.replicas=3"], c.bootstrap)
    quick = ["-X", "request.timeout.ms=2000", "-X", "socket.connection.setup.timeout.ms=2000"]
    r = run_cli(["cluster", "health", "--exit-when-healthy", *quick], c.bootstrap, timeout=60)
    assert r.returncode == 0, r.stderr
    c.pause(3)
    try:
        deadline = time.monotonic() + 30
        while True:
            r = run_cli(["cluster", "health", "--format", "json", *quick], c.live_bootstrap)
            got = json.loads(r.stdout) if r.stdout.strip() else {}
            if r.returncode == 1 and len(got.get("under_replicated_partitions", [])) == 3:
                break
            assert time.monotonic() < deadline, f"health never named the partitions: {r.returncode} {got} {r.stderr}"
            time.sleep(0.5)
        assert got["is_healthy"] is False and "under_replicated_partitions" in got["unhealthy_reasons"]
        assert sorted(got["under_replicated_partitions"]) == [f"{t}/{p}" for p in range(3)]
        assert sorted(got["under_min_isr_partitions"]) == [f"{t}/{p}" for p in range(3)]
        text = run_cli(["cluster", "health", *quick], c.live_bootstrap)
        assert text.returncode == 1 and f"{t}/0".encode() in text.stdout and b"Under-replicated partitions:" in text.stdout
    finally:
        c.resume(3)
    r = run_cli(["cluster", "health", "--exit-when-healthy", *quick], c.bootstrap, timeout=90)
    assert r.returncode == 0, r.stderr
    assert b"Healthy:                     true" in r.stdout


# ---------------------------------------------------------------- against Apache Kafka 4.4
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KAFKA_LIB = os.environ.get("KAFKA_LIB", os.path.join(REPO, "bench", ".cache", "kafka-4.4.0-lib"))


def kafka_lib():
    """Kafka 4.4.0's jars, fetched from Maven Central with bench/pom.xml as bench/run does."""
    if not os.path.isfile(os.path.join(KAFKA_LIB, "kafka_2.13-4.4.0.jar")):
        tmp = KAFKA_LIB + ".tmp"
        r = subprocess.run(["mvn", "-B", "-q", "-f", os.path.join(REPO, "bench", "pom.xml"),
                            "dependency:copy-dependencies", f"-Dbench.lib.dir={tmp}"],
                           capture_output=True, timeout=900)
        assert r.returncode == 0, f"mvn could not fetch Kafka's jars:\n{r.stdout.decode()[-3000:]}"
        os.replace(tmp, KAFKA_LIB)
    return KAFKA_LIB


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    import base64
    lib = kafka_lib()
    d = tmp_path_factory.mktemp("kafka-4.4")
    port, cport = free_port(), free_port()
    cfg = d / "server.properties"
    cfg.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT", f"log.dirs={d / 'data'}",
        f"controller.quorum.bootstrap.servers=127.0.0.1:{cport}",
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1", "group.initial.rebalance.delay.ms=0",
    ]) + "\n")
    java = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={os.path.join(REPO, 'bench', 'log4j2.properties')}",
            "-cp", os.path.join(lib, "*")]
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=").replace("-", "a").replace("_", "b")
    fmt = subprocess.run(java + ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(cfg), "--standalone"],
                         capture_output=True, timeout=120)
    assert fmt.returncode == 0, fmt.stderr.decode()[-3000:]
    log = open(d / "kafka.log", "wb")
    p = subprocess.Popen(java + ["kafka.Kafka", str(cfg)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    bs = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while run_cli(["cluster", "info", "-X", "request.timeout.ms=2000"], bs).returncode != 0:
            assert p.poll() is None, f"Kafka exited:\n{(d / 'kafka.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"Kafka not ready:\n{(d / 'kafka.log').read_text()[-3000:]}"
            time.sleep(0.5)
        yield bs
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()


def normalized_session(bs):
    """The same commands' JSON output, with what differs between brokers by design (ids,
    timestamps, ports, the broker's own config defaults) taken out."""
    t, g = name("same"), name("same-group")
    out = {}
    out["create"] = ok_json(["topic", "create", t, "-p", "2", "-r", "1", "-c", "retention.ms=86400000"], bs)
    out["create"].pop("topic_id")
    d = ok_json(["topic", "describe", t], bs)
    d.pop("topic_id")
    for p in d["partitions"]:
        p["leader"] = p["replicas"] = p["isr"] = "node"
        p.pop("leader_epoch")
    out["describe"] = d
    summary = ok_json(["produce", t, "-K", ":", "-H", "h=1"], bs, input=b"".join(b"k%d:v%d\n" % (i, i) for i in range(6)))
    out["produce"] = summary
    recs = [json.loads(x) for x in ok(["consume", t, "--from-beginning", "-e", "--format", "json"], bs).splitlines()]
    for r in recs:
        r.pop("timestamp")
    out["consume"] = sorted(recs, key=lambda r: (r["partition"], r["offset"]))
    ok(["consume", t, "-g", g, "--from-beginning", "-e"], bs)
    gd = ok_json(["group", "describe", g], bs)
    gd.pop("coordinator")
    # The assignor of an empty KIP-848 group: Kafka 4.4 answers "", Sluice "uniform"
    # (ConsumerGroupDescribe's assignor_name; a broker-side difference, noted, not the tool's).
    gd.pop("protocol")
    out["group"] = gd
    out["described_after"] = ok_json(["topic", "describe", t], bs)["partitions"][0]["high_watermark"]
    out["delete"] = ok_json(["topic", "delete", t], bs)
    for k in ("create", "delete"):
        out[k] = json.loads(json.dumps(out[k]).replace(t, "TOPIC"))
    return json.loads(json.dumps(out).replace(t, "TOPIC").replace(g, "GROUP"))


def test_the_same_commands_give_the_same_answers_on_apache_kafka(broker, kafka):
    on_kafka = normalized_session(kafka)
    on_sluice = normalized_session(broker.bootstrap)
    assert on_sluice == on_kafka, json.dumps({"sluice": on_sluice["group"], "kafka": on_kafka["group"]})
    assert on_kafka["group"]["total_lag"] == 0 and len(on_kafka["consume"]) == 6
