"""The seed's incidents, seen on the metrics pages (issue 22): one 3-node cluster, an RF=3
topic. SIGSTOP a follower: the leaders count ISR shrinks and report under-replicated
partitions; SIGCONT: they count expansions. kill -9 the active controller: the new one
counts a controller change and the leader elections it makes."""

import pytest

from cluster import Cluster, wait_until
from conftest import fail_on_invariant_violations
import metrics_page as mp

LAG_MS = 1500
SETTINGS = {
    "metrics.listener": "127.0.0.1:0",
    "replica.lag.time.max.ms": str(LAG_MS),
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}
TOPIC = "incidents"
PARTITIONS = 6


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("incidents"), n=3, settings=SETTINGS)
    try:
        cluster.start_all()
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        wait_until(lambda: all(len(p.isr) == 3 for p in cluster.partitions(TOPIC).values()), 20,
                   what=f"{TOPIC}: every partition with its 3 replicas in sync")
        yield cluster
    finally:
        cluster.shutdown()
    fail_on_invariant_violations([n.log_path for n in cluster.nodes.values()])


def page(c, node_id):
    return mp.scrape(mp.address(c.node(node_id).log_text()))


def metric(c, node_id, name, **labels):
    return mp.value(page(c, node_id), name, **labels)


def elections(c, node_id):
    f = page(c, node_id)
    return sum(s.value for s in f["sluice_leader_elections"].samples if s.name == "sluice_leader_elections_total")


def test_a_paused_follower_shrinks_the_isr_and_its_return_expands_it(c):
    controller = wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10,
                            what="an active controller")
    # A follower that is not the controller, so the quorum keeps deciding while it sleeps.
    paused = next(i for i in c.ids if i != controller)
    others = [i for i in c.ids if i != paused]
    shrinks = {i: metric(c, i, "sluice_isr_shrinks_total") for i in others}
    expands = {i: metric(c, i, "sluice_isr_expands_total") for i in others}
    c.pause(paused)
    try:
        wait_until(lambda: sum(metric(c, i, "sluice_isr_shrinks_total") - shrinks[i] for i in others) > 0,
                   LAG_MS / 1000 + 10, what=f"an ISR shrink counted on the leaders {others}")
        wait_until(lambda: sum(metric(c, i, "sluice_under_replicated_partitions") for i in others) > 0, 10,
                   what="under-replicated partitions reported by the leaders")
        wait_until(lambda: metric(c, controller, "sluice_fenced_brokers") == 1, 10,
                   what=f"node {paused} fenced on the controller's page")
    finally:
        c.resume(paused)
    wait_until(lambda: sum(metric(c, i, "sluice_isr_expands_total") - expands[i] for i in others) > 0, 20,
               what=f"node {paused} back in an ISR, counted as an expansion by a leader")
    wait_until(lambda: all(len(p.isr) == 3 for p in c.partitions(TOPIC).values()), 20,
               what="every ISR whole again")
    wait_until(lambda: sum(metric(c, i, "sluice_under_replicated_partitions") for i in c.ids) == 0, 10,
               what="no under-replicated partition left")
    assert metric(c, controller, "sluice_live_brokers") == 3


def test_killing_the_active_controller_is_counted_by_the_new_one(c):
    old = wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10,
                     what="an active controller")
    led = [p for p in c.partitions(TOPIC).values() if p.leader == old]
    assert led, f"the controller {old} leads no partition of {TOPIC}: nothing to elect after its death"
    rest = [i for i in c.ids if i != old]
    changes = {i: metric(c, i, "sluice_controller_changes_total") for i in rest}
    before = {i: elections(c, i) for i in rest}
    c.kill(old)
    new = wait_until(lambda: (lambda a: a if a in rest else None)(c.active_controller(via=rest)), 15,
                     what=f"a new active controller among {rest}")
    wait_until(lambda: metric(c, new, "sluice_controller_changes_total") > changes[new], 10,
               what=f"a controller change counted on the new controller {new}")
    wait_until(lambda: metric(c, new, "sluice_active_controller") == 1, 10,
               what=f"node {new} reporting itself the active controller")
    # It fences the dead node after its session and moves the leadership of its partitions.
    wait_until(lambda: elections(c, new) - before[new] >= len(led), 20,
               what=f"{len(led)} leader elections counted on the new controller {new}")
    f = page(c, new)
    assert mp.value(f, "sluice_leader_election_seconds_count") >= len(led)
    assert mp.value(f, "sluice_leader_elections_total", kind="clean") >= len(led)
