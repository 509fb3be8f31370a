"""`sluice dev kill|restart|pause|resume N` and `sluice dev status` (issue 23) against one
real 3-node `sluice dev-cluster`, checked with librdkafka's admin client (confluent-kafka):
* status lists the three nodes running, with the pids the dev-cluster printed;
* kill the leader of a partition: status says dead, its pid is gone, the survivors elect
  new leaders from the ISR; pausing the dead node is refused; restart brings it back (new
  pid, same data) and it rejoins every ISR;
* pause a node: status says paused, it leaves the ISRs once its session and replica lag run
  out; resume: it is back in every ISR;
* errors exit non-zero with a clear message: unknown node, no cluster at a dir, a second
  dev-cluster on the same dir. Every command is logged by the dev-cluster.
"""

import json
import subprocess

import pytest

from cluster import create_topic, partition_states_md, pid_alive, sluice_bin, wait_until
from conftest import fail_on_invariant_violations
from dev_cluster import DevCluster

TOPIC = "dev-control"
PARTITIONS = 3


class ControlDevCluster(DevCluster):
    def command(self):
        # Short session and lag, so a killed or paused node leaves the ISRs in a few seconds.
        return super().command() + [
            "--set", "broker.heartbeat.interval.ms=300",
            "--set", "broker.session.timeout.ms=2500",
            "--set", "replica.lag.time.max.ms=1000"]


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    d = ControlDevCluster(tmp_path_factory.mktemp("devctl"), brokers=3).start()
    try:
        d.wait_output(timeout=60)
        create_topic(d.bootstrap, TOPIC, PARTITIONS, 3)
        wait_until(lambda: all(len(p.isr) == 3 for p in partition_states_md(d.bootstrap, TOPIC).values()), 30,
                   what="full ISRs")
        yield d
    finally:
        # The dev-cluster resumes a node it paused before stopping it; a node it lost track
        # of (it was SIGKILLed) is SIGKILLed by shutdown() by its last printed pid.
        d.shutdown()
    fail_on_invariant_violations([d.log_path] + [d.data_dir / f"node-{i}" / "sluice.log" for i in (1, 2, 3)])


def dev(d, *args, cluster=None):
    return subprocess.run([sluice_bin(), "dev", *args, "--cluster", str(cluster or d.data_dir)],
                          capture_output=True, text=True, timeout=90)


def status(d):
    r = dev(d, "status", "--format", "json")
    assert r.returncode == 0, r.stderr
    return {n["node"]: n for n in json.loads(r.stdout)["nodes"]}


def others(node):
    return [i for i in (1, 2, 3) if i != node]


def bootstrap_of(d, ids):
    return ",".join(d.children[i][1] for i in ids)


def states(d, ids):
    return partition_states_md(bootstrap_of(d, ids), TOPIC)


def without(d, node):
    """Every partition led by another node, with `node` out of its ISR (asked of the others)."""
    ps = states(d, others(node))
    return all(p.leader in others(node) and node not in p.isr for p in ps.values()) and ps


def rejoined(d, node):
    return all(len(p.isr) == 3 for p in states(d, (1, 2, 3)).values())


def test_status_lists_every_node_running_with_its_pid(dc):
    s = status(dc)
    assert sorted(s) == [1, 2, 3], s
    for i, n in s.items():
        assert n["state"] == "running" and n["pid"] == dc.children[i][0], (n, dc.children)
        assert n["listening"] == dc.children[i][1] and n["http"] == dc.http[i], n
    text = dev(dc, "status")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["NODE", "PID", "STATE", "LISTENING", "HTTP"], text.stdout
    assert [ln.split()[2] for ln in lines[1:]] == ["running"] * 3, text.stdout


def test_killing_a_leader_elects_another_and_restart_rejoins_the_isr(dc):
    leader = states(dc, (1, 2, 3))[0].leader
    old_pid = dc.children[leader][0]
    r = dev(dc, "kill", str(leader))
    assert r.returncode == 0 and f"killed node {leader}" in r.stdout, (r.stdout, r.stderr)
    assert status(dc)[leader]["state"] == "dead"
    assert not pid_alive(old_pid)

    ps = wait_until(lambda: without(dc, leader), 30, what=f"new leaders without node {leader}")
    assert all(p.leader in p.isr for p in ps.values()), ps

    refused = dev(dc, "pause", str(leader))
    assert refused.returncode != 0 and f"node {leader} is dead" in refused.stderr, refused

    r = dev(dc, "restart", str(leader))
    assert r.returncode == 0 and f"restarted node {leader}" in r.stdout, (r.stdout, r.stderr)
    s = status(dc)[leader]
    assert s["state"] == "running" and s["pid"] != old_pid and pid_alive(s["pid"]), s
    dc.parse()
    assert dc.children[leader][0] == s["pid"], "the dev-cluster printed the restarted node's new pid"
    wait_until(lambda: rejoined(dc, leader), 30, what=f"node {leader} back in every ISR")
    out = dc.output()
    assert f"dev: kill {leader}: killed node {leader}" in out and f"dev: restart {leader}: restarted" in out, out


def test_a_paused_node_leaves_the_isr_and_comes_back_on_resume(dc):
    node = next(i for i in (3, 2, 1) if i != states(dc, (1, 2, 3))[0].leader)
    r = dev(dc, "pause", str(node))
    assert r.returncode == 0 and f"paused node {node}" in r.stdout, (r.stdout, r.stderr)
    try:
        assert status(dc)[node]["state"] == "paused"
        wait_until(lambda: without(dc, node), 30, what=f"node {node} out of every ISR")
        assert pid_alive(dc.children[node][0]), "a paused node is stopped, not dead"
    finally:
        r = dev(dc, "resume", str(node))
    assert r.returncode == 0 and f"resumed node {node}" in r.stdout, (r.stdout, r.stderr)
    assert status(dc)[node]["state"] == "running"
    wait_until(lambda: rejoined(dc, node), 30, what=f"node {node} back in every ISR")
    assert f"dev: pause {node}: paused node {node}" in dc.output()


def test_errors_exit_non_zero_and_say_what_is_wrong(dc, tmp_path):
    r = dev(dc, "kill", "9")
    assert r.returncode != 0 and "unknown node 9" in r.stderr and "1,2,3" in r.stderr, r
    r = dev(dc, "status", cluster=tmp_path / "nothing-here")
    assert r.returncode != 0 and "no dev-cluster running at" in r.stderr, r
    second = subprocess.run([sluice_bin(), "dev-cluster", "--data-dir", str(dc.data_dir), "--base-port", "1"],
                            capture_output=True, text=True, timeout=30)
    assert second.returncode != 0 and "already running" in second.stderr, second
    assert all(n["state"] == "running" for n in status(dc).values()), "the refused second cluster touched nothing"
