"""Several log dirs per broker (issue 19, KIP-113): a failing dir takes only its own
partitions offline. A 3-node cluster, each node with log.dirs=a,b, RF=3 and
min.insync.replicas=2, under an idempotent acks=all librdkafka load: a disk fault fails the
writes of one topic on its leader, whose dir holding that topic goes offline. The node stays
up (its other dir is fine), the controller moves the leadership of the failed dir's
partitions and takes the node out of their ISRs, the partitions in its other dir keep their
ISR places, and every acknowledged record is read back once, at its acknowledged offset.
"""

import time

import pytest

from cluster import raw_produce, wait_until
from faults_lib import Load, add, check_acked_once, topic_rf3, fault_cluster

KAFKA_STORAGE_ERROR = 56


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    yield from fault_cluster(tmp_path_factory, "log-dirs", **{"log.dirs": "{data}/a,{data}/b"})


def dir_of(c, node_id, topic, partition):
    """Which of the node's log dirs (a or b) holds the partition's files."""
    found = [d for d in ("a", "b") if (c.node(node_id).data_dir / d / f"{topic}-{partition}").is_dir()]
    assert len(found) == 1, f"{topic}-{partition} on node {node_id} is in {found or 'no dir'}"
    return found[0]


def test_a_failed_dir_moves_only_its_partitions_and_loses_nothing(c):
    bad, good = "jbod-bad", "jbod-good"
    # One partition of `bad`: on each node its replica lives in exactly one dir.
    states = topic_rf3(c, bad, partitions=1, config={"min.insync.replicas": "2"})
    topic_rf3(c, good, partitions=4, config={"min.insync.replicas": "2"})
    victim = states[0].leader
    others = [i for i in c.ids if i != victim]
    failed_dir = dir_of(c, victim, bad, 0)
    spread = {p: dir_of(c, victim, good, p) for p in range(4)}
    assert set(spread.values()) == {"a", "b"}, f"new partitions go to the dir with the fewest: {spread}"
    healthy = [p for p, d in spread.items() if d != failed_dir]
    sick = [p for p, d in spread.items() if d == failed_dir]
    load = Load(c.bootstrap, bad, 0, "w")
    try:
        wait_until(lambda: len(load.acked) >= 50, 20, what="the load acknowledged before the fault")
        add(c, victim, kind="disk", fail="write", topic=bad)
        probe = raw_produce(c.node(victim).port, bad, 0, [b"probe-on-a-failed-dir"], acks=1)
        assert probe["error"] == KAFKA_STORAGE_ERROR, f"a write to a failed dir: {probe}"
        new = wait_until(lambda: (lambda l: l if l in others else None)(c.partition(bad, 0, via=others).leader),
                         20, what=f"a new leader of {bad}-0 among {others}")
        faulted_at = time.monotonic()
        acked_then = len(load.acked)
        wait_until(lambda: len(load.acked) >= acked_then + 50, 40, what=f"writes acknowledged by the new leader {new}")
    finally:
        load.finish()
    # Only the failed dir went: the node runs and says so.
    assert c.node(victim).is_running(), "a broker with a log dir left keeps running"
    log = c.node(victim).start_section()
    assert "log dir is offline" in log and "halting" not in log, log[-2000:]
    wait_until(lambda: victim not in c.partition(bad, 0, via=others).isr, 20,
               what=f"node {victim} out of the ISR of {bad}-0")
    for p in sick:
        wait_until(lambda: (lambda s: victim not in s.isr and s.leader != victim)(c.partition(good, p, via=others)), 20,
                   what=f"node {victim} neither leading nor in the ISR of {good}-{p} (in the failed dir)")
    # The partitions in the healthy dir keep serving: acks=all writes still count the victim in.
    for p in healthy:
        r = raw_produce(c.node(c.partition(good, p).leader).port, good, p, [b"still-served"], acks=-1)
        assert r["error"] == 0, f"{good}-{p} (node {victim}'s replica in its healthy dir): {r}"
        assert victim in c.partition(good, p).isr, f"node {victim} left the ISR of {good}-{p} in its healthy dir"
    check_acked_once(c.bootstrap_of(*others), load, "probe-on-a-failed-dir")
    assert any(t > faulted_at for t, _, _ in load.acked), "nothing was acknowledged after the failover"
