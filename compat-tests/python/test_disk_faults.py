"""Disk faults (issue 23) on a 3-node cluster with fault.injection.enable=true, RF=3 and
min.insync.replicas=2, under an idempotent acks=all librdkafka load.

Kafka's path, as Sluice takes it: a failed write or fsync of a partition's log takes the log
dir offline; the request that met it is answered KAFKA_STORAGE_ERROR; a broker whose every log
dir is offline (Sluice has one, the data dir) halts with exit code 1, without a controlled
shutdown. Its partitions move to the other replicas once its session lapses, and nothing
acknowledged is lost: every acknowledged record is read back once, at its acknowledged offset.
A restart comes back clean (faults live in memory) and rejoins the ISR. `sluice produce`
retries KAFKA_STORAGE_ERROR as Kafka's clients do (stale metadata) and lands its records on
the new leader, each once.
"""

import subprocess
import time

import pytest

from cluster import raw_produce, sluice_bin, wait_until
from faults_lib import Load, add, call, check_acked_once, consume, faults, http_of, topic_rf3, fault_cluster

KAFKA_STORAGE_ERROR = 56


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    yield from fault_cluster(tmp_path_factory, "disk-faults")


def a_leader_but_not_the_controller(c, topic, states):
    controller = wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10,
                            what="an active controller")
    picked = [(p, s.leader) for p, s in sorted(states.items()) if s.leader != controller]
    assert picked, f"every partition of {topic} is led by the controller {controller}"
    return picked[0]


def halted(c, node_id, timeout=15):
    n = c.node(node_id)
    wait_until(lambda: not n.is_running(), timeout, what=f"node {node_id} halting")
    n.exit_codes.append(n.proc.returncode)
    return n.proc.returncode


def test_a_failed_write_on_a_leader_moves_its_partitions_and_loses_nothing(c):
    topic = "disk-write"
    states = topic_rf3(c, topic, partitions=3, config={"min.insync.replicas": "2"})
    part, victim = a_leader_but_not_the_controller(c, topic, states)
    others = [i for i in c.ids if i != victim]
    load = Load(c.bootstrap, topic, part, "w")
    try:
        wait_until(lambda: len(load.acked) >= 50, 20, what="the load acknowledged before the fault")
        add(c, victim, kind="disk", fail="write", topic=topic)
        # The next write meets the failed disk: answered, not dropped.
        probe = raw_produce(c.node(victim).port, topic, part, [b"probe-on-a-failed-disk"], acks=1)
        assert probe["error"] == KAFKA_STORAGE_ERROR, f"a write to a failed disk: {probe}"
        assert halted(c, victim) == 1, "a broker whose only log dir is offline halts with exit code 1"
        halted_at = time.monotonic()
        log = c.node(victim).start_section()
        assert "log dir is offline" in log and "halting" in log, log[-2000:]
        new = wait_until(lambda: (lambda l: l if l in others else None)(c.partition(topic, part, via=others).leader),
                         20, what=f"a new leader of {topic}-{part} among {others}")
        acked_at_halt = len(load.acked)
        wait_until(lambda: len(load.acked) >= acked_at_halt + 50, 40, what=f"writes acknowledged by the new leader {new}")
    finally:
        load.finish()
    check_acked_once(c.bootstrap_of(*others), load, "probe-on-a-failed-disk")
    assert any(t > halted_at for t, _, _ in load.acked), "nothing was acknowledged after the halt"
    # Back with the same data, clean: no fault survives, and it catches up into the ISR.
    c.start(victim)
    assert faults(c, victim) == []
    wait_until(lambda: victim in c.partition(topic, part).isr, 30, what=f"node {victim} back in the ISR of {topic}-{part}")


def test_a_failed_fsync_fails_only_the_topic_it_names_then_halts_the_node(c):
    topic, other = "disk-fsync", "disk-fsync-other"
    # Every append is flushed, so every produce meets fsync.
    states = topic_rf3(c, topic, partitions=3, config={"min.insync.replicas": "2", "flush.messages": "1"})
    part, victim = a_leader_but_not_the_controller(c, topic, states)
    port = c.node(victim).port
    add(c, victim, kind="disk", fail="fsync", topic=other)
    ok = raw_produce(port, topic, part, [b"flushed"], acks=-1)
    assert ok["error"] == 0, f"a disk fault on {other} failed a write to {topic}: {ok}"
    assert c.node(victim).is_running()
    status, _ = call(http_of(c, victim), "DELETE", "/v1/faults")
    assert status == 200
    add(c, victim, kind="disk", fail="fsync")
    failed = raw_produce(port, topic, part, [b"not-flushed"], acks=1)
    assert failed["error"] == KAFKA_STORAGE_ERROR, f"a write whose fsync failed: {failed}"
    assert halted(c, victim) == 1
    others = [i for i in c.ids if i != victim]
    wait_until(lambda: c.partition(topic, part, via=others).leader in others, 20,
               what=f"a new leader of {topic}-{part}")
    got = [v for _, v, _ in consume(c.bootstrap_of(*others), topic, part, 1)]
    assert "flushed" in got, f"the write acknowledged (acks=all) before the fault is gone: {got}"
    c.start(victim)
    wait_until(lambda: victim in c.partition(topic, part).isr, 30, what=f"node {victim} back in the ISR")


def test_the_cli_producer_retries_a_storage_error_onto_the_new_leader(c):
    topic = "disk-cli"
    states = topic_rf3(c, topic, partitions=3, config={"min.insync.replicas": "2"})
    part, victim = a_leader_but_not_the_controller(c, topic, states)
    others = [i for i in c.ids if i != victim]
    add(c, victim, kind="disk", fail="write", topic=topic)
    lines = [f"cli-{i}" for i in range(20)]
    r = subprocess.run([sluice_bin(), "produce", "-b", c.bootstrap, "-p", str(part), topic],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"sluice produce gave up: {r.stderr[-1500:]}"
    assert halted(c, victim) == 1
    got = [v for _, v, _ in consume(c.bootstrap_of(*others), topic, part, len(lines))]
    assert sorted(got) == sorted(lines), f"want each of {len(lines)} records once, got {got}"
    c.start(victim)
    wait_until(lambda: victim in c.partition(topic, part).isr, 30, what=f"node {victim} back in the ISR")


@pytest.mark.parametrize("fault,named", [
    ({"kind": "disk"}, "write or fsync"),
    ({"kind": "disk", "fail": "read"}, "valid: write, fsync"),
    ({"kind": "disk", "fail": "write", "api": "Produce"}, "does not take api"),
])
def test_a_bad_disk_fault_gets_400_naming_the_valid_choices(c, fault, named):
    status, body = call(http_of(c, c.up_ids()[0]), "POST", "/v1/faults", fault)
    assert status == 400 and named in body["error"], (status, body)
