"""Helpers of the fault-injection tests: a node's /v1/faults over HTTP, an idempotent
acks=all load that keeps every acknowledgement, and reading a partition back whole."""

import json
import re
import threading
import time
import urllib.error
import urllib.request

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from cluster import Cluster
from conftest import fail_on_invariant_violations

HTTP_AT = re.compile(r"metrics on http://([0-9.:]+)/metrics")

# What every fault test's cluster runs with: faults on, and failures noticed in seconds.
FAULT_SETTINGS = {
    "http.listener": "127.0.0.1:0",
    "fault.injection.enable": "true",
    "replica.lag.time.max.ms": "2000",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


def fault_cluster(tmp_path_factory, name, **extra):
    """A module fixture's body: a started 3-node cluster with FAULT_SETTINGS (and `extra`),
    shut down afterwards, failing the module if a node logged a broken invariant."""
    cluster = Cluster(tmp_path_factory.mktemp(name), n=3, settings={**FAULT_SETTINGS, **extra})
    try:
        cluster.start_all()
        yield cluster
    finally:
        cluster.shutdown()
    fail_on_invariant_violations([n.log_path for n in cluster.nodes.values()])


def http_of(c, node_id):
    found = HTTP_AT.findall(c.node(node_id).start_section())
    assert found, f"node {node_id} logged no HTTP listener address"
    return found[-1]


def call(addr, method, path, body=None):
    """(status, JSON body) of one HTTP request."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://{addr}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def add(c, node_id, **fault):
    status, body = call(http_of(c, node_id), "POST", "/v1/faults", fault)
    assert status == 201, f"adding {fault} on node {node_id}: HTTP {status} {body}"
    return body


def faults(c, node_id):
    status, body = call(http_of(c, node_id), "GET", "/v1/faults")
    assert status == 200, body
    return body["faults"]


def topic_rf3(c, name, partitions=1, config=None):
    c.create_topic(name, partitions, 3, config=config)
    c.wait_partitions(name, partitions, full_isr=True, timeout=30)
    return c.partitions(name)


def consume(bootstrap, topic, partition, expected, timeout=60):
    """Every record of one partition from the start: [(offset, value, leader_epoch)].
    Transport errors (the injected disconnects) are counted, not fatal."""
    transport_errors = []
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-unused",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "error_cb": lambda e: transport_errors.append(e)})
    try:
        cons.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        out, eof = [], False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (eof and len(out) >= expected):
            for m in cons.consume(num_messages=1000, timeout=0.5):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof = True
                        continue
                    transport_errors.append(m.error())
                    continue
                eof = False
                out.append((m.offset(), m.value().decode(), m.leader_epoch()))
        assert eof and len(out) >= expected, (
            f"read {len(out)} of {expected} records of {topic}-{partition} in {timeout}s "
            f"(errors {transport_errors[:5]})")
        return out
    finally:
        cons.close()


def check_acked_once(bootstrap, load, probe):
    """Reads the load's partition back and asserts that every acknowledged record is there
    exactly once, at its acknowledged offset, and that `probe` (answered with an error) is not."""
    assert not load.failed, f"records failed: {load.failed[:5]}"
    got = consume(bootstrap, load.topic, load.partition, len(load.acked))
    values = [v for _, v, _ in got]
    assert probe not in values
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} duplicates"
    at = {v: o for o, v, _ in got}
    lost = [v for _, v, _ in load.acked if v not in at]
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"
    moved = [(v, o, at[v]) for _, v, o in load.acked if at[v] != o]
    assert not moved, f"acknowledged offsets that changed: {moved[:5]}"


class Load:
    """An idempotent acks=all librdkafka producer writing <prefix>0, <prefix>1, ... to one
    partition from a thread; each acknowledgement is kept with its offset and when it arrived."""

    def __init__(self, bootstrap, topic, partition, prefix):
        self.topic, self.partition, self.prefix = topic, partition, prefix
        self.acked = []  # (monotonic time, value, offset)
        self.failed = []
        self.stop = threading.Event()
        self.p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                           "linger.ms": 5, "request.timeout.ms": 3000, "message.timeout.ms": 90000,
                           "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _delivered(self, err, msg):
        if err is not None:
            self.failed.append((msg.value().decode(), err))
        else:
            self.acked.append((time.monotonic(), msg.value().decode(), msg.offset()))

    def _run(self):
        i = 0
        while not self.stop.is_set():
            self.p.produce(self.topic, value=f"{self.prefix}{i}".encode(), partition=self.partition, on_delivery=self._delivered)
            i += 1
            self.p.poll(0.01)
        self.p.flush(60)

    def finish(self):
        self.stop.set()
        self.thread.join(90)
        assert not self.thread.is_alive(), "the producer did not flush in 90 s"
