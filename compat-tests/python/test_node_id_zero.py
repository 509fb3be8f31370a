"""node.id=0 is a valid node id, as in Kafka (issue 19): many compose files and test
fixtures number their nodes from 0. Raft reserves id 0, so the quorum maps node 0 to a
raft id of its own; everything a client sees names node 0.

One single node with --node-id 0, then a 3-node cluster numbered 0, 1, 2 whose active
controller is killed."""

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from cluster import Cluster, describe_cluster, wait_until
from conftest import fail_on_invariant_violations

SETTINGS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


def produce(bootstrap, topic, values):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acked = []
    for v in values:
        p.produce(topic, value=v.encode(), on_delivery=lambda e, m: e is None and acked.append(m.value().decode()))
    assert p.flush(30) == 0
    return acked


def read_all(bootstrap, topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    try:
        wait_until(lambda: (lambda m: m is not None and m.error() is None and got.append(m.value().decode()))(c.poll(0.5))
                   or len(got) >= n, 30, interval=0, what=f"{n} records of {topic}")
    finally:
        c.close()
    return got


def quorum_leader_is(c, want, via):
    return c.active_controller(via=via, timeout=2) == want


def test_a_single_node_numbered_zero_serves_and_restarts(tmp_path):
    c = Cluster(tmp_path, n=1, settings=SETTINGS, first_id=0)
    try:
        c.start_all()
        assert c.ids == [0]
        wait_until(lambda: quorum_leader_is(c, 0, 0), 10, what="node 0 leading its own quorum")
        assert describe_cluster(c.bootstrap) == (0, [0]), "DescribeCluster names node 0, and as the controller"
        c.create_topic("zero", 1, 1)
        assert c.partition("zero").leader == 0
        acked = produce(c.bootstrap, "zero", [f"v{i}" for i in range(50)])
        assert len(acked) == 50
        c.restart(0)
        wait_until(lambda: quorum_leader_is(c, 0, 0), 10, what="node 0 leading its quorum after a restart")
        assert read_all(c.bootstrap, "zero", 50) == [f"v{i}" for i in range(50)]
    finally:
        c.shutdown()
    fail_on_invariant_violations([n.log_path for n in c.nodes.values()])


def test_a_cluster_numbered_from_zero_elects_a_new_controller(tmp_path):
    c = Cluster(tmp_path, n=3, settings=SETTINGS, first_id=0)
    try:
        c.start_all()
        assert c.ids == [0, 1, 2]
        c.wait_live_brokers([0, 1, 2])
        c.create_topic("zero3", 1, 3, config={"min.insync.replicas": "2"})
        c.wait_partitions("zero3", 1, full_isr=True)
        first = produce(c.bootstrap, "zero3", [f"a{i}" for i in range(100)])
        old = wait_until(lambda: (lambda a: (a,) if a in (0, 1, 2) else None)(c.active_controller()), 10,
                         what="an active controller")[0]
        rest = [i for i in c.ids if i != old]
        c.kill(old)
        new = wait_until(lambda: (lambda a: (a,) if a in rest else None)(c.active_controller(via=rest, timeout=2)), 15,
                         what=f"a new active controller among {rest}")[0]
        assert new != old
        more = produce(c.bootstrap_of(*rest), "zero3", [f"b{i}" for i in range(100)])
        c.start(old)
        c.wait_partitions("zero3", 1, full_isr=True, timeout=30)
        got = read_all(c.bootstrap, "zero3", 200)
        assert sorted(got) == sorted(first + more) and len(got) == 200
    finally:
        c.shutdown()
    fail_on_invariant_violations([n.log_path for n in c.nodes.values()])
