"""`sluice scenario list` and `sluice scenario run NAME` (issue 23): each scenario runs
against a real dev-cluster, exits 0 only if what Kafka promises held, and narrates the
cluster's event journal as it goes.
* leader-crash starts its own dev-cluster (none runs at its dir) and stops it at the end:
  a new leader from the ISR, 1000 acknowledged records read back exactly, the old leader
  back in the ISR; the narration shows the fencing, the election and the ISR changes.
* The others share one dev-cluster already running at --cluster, and each must leave it
  with every node running:
  - min-isr: acks=all refused with NOT_ENOUGH_REPLICAS while one replica of two is in
    sync, acks=1 lands, acks=all again once the follower is back;
  - slow-follower: the delayed follower leaves the ISR (isr_shrunk) without being fenced,
    the high watermark moves meanwhile, and it comes back (isr_expanded);
  - unclean-election: 0 records lost with it off (the partition offline), 100 lost with it
    on (an unclean leader_changed);
  - controller-failover: controller_changed to another node, a topic created after it,
    the surviving brokers never fenced;
  - network-partition: the write sent to the isolated leader is refused, a new leader
    takes the load, the old one truncates its divergent tail; 0 acknowledged lost;
  - election-storm: elections counted (at least one per restart), latency printed, 0 lost;
  - disk-failure: KAFKA_STORAGE_ERROR, the node halts, leadership moves, 0 lost, and the
    node rejoins with no fault left.
* an unknown scenario exits non-zero naming the valid ones.
"""

import json
import re
import subprocess

import pytest

from cluster import pid_alive, sluice_bin
from dev_cluster import DevCluster, free_base_port

FAST = ["--set", "broker.heartbeat.interval.ms=300", "--set", "broker.session.timeout.ms=3000",
        "--set", "replica.lag.time.max.ms=2000"]
NAMES = ["leader-crash", "min-isr", "slow-follower", "unclean-election", "controller-failover",
         "network-partition", "election-storm", "disk-failure"]


class FastDevCluster(DevCluster):
    def command(self):
        return super().command() + FAST


def scenario(*args):
    return subprocess.run([sluice_bin(), "scenario", *args], capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    d = FastDevCluster(tmp_path_factory.mktemp("scenarios"), brokers=3).start()
    try:
        d.wait_output(timeout=60)
        yield d
    finally:
        d.shutdown()


def run_on(dc, name):
    """Runs scenario `name` on the shared cluster; its output, once it held and left every node running."""
    r = scenario("run", name, "--cluster", str(dc.data_dir))
    out = r.stdout
    assert r.returncode == 0 and f"scenario {name}: HELD" in out, (out, r.stderr)
    assert "started one" not in out, "the running dev-cluster was used"
    st = subprocess.run([sluice_bin(), "dev", "status", "--format", "json", "--cluster", str(dc.data_dir)],
                        capture_output=True, text=True, timeout=30)
    assert st.returncode == 0, st.stderr
    assert [n["state"] for n in json.loads(st.stdout)["nodes"]] == ["running"] * 3, st.stdout
    return out


def test_list_names_every_scenario():
    r = scenario("list")
    assert r.returncode == 0, r.stderr
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == NAMES, r.stdout


def test_leader_crash_starts_a_cluster_elects_from_the_isr_and_loses_nothing(tmp_path):
    r = scenario("run", "leader-crash", "--cluster", str(tmp_path / "dc"), "--base-port", str(free_base_port()))
    out = r.stdout
    assert r.returncode == 0 and "scenario leader-crash: HELD" in out, (out, r.stderr)
    started = re.search(r"started one \(pid (\d+)", out)
    assert started, out
    killed = int(re.search(r"killing the leader, node (\d)", out).group(1))
    assert f"killed node {killed}" in out, out
    assert re.search(rf"event: \S+ broker_fenced broker_id={killed}\b", out), out
    assert re.search(rf"event: \S+ leader_changed .*previous_leader={killed} reason=clean", out), out
    assert re.search(r"event: \S+ isr_expanded ", out), out
    assert out.count("a consumer read all 1000 acknowledged records") == 2, out
    assert not pid_alive(int(started.group(1))), "the dev-cluster the scenario started is stopped"


def test_min_isr_refuses_acks_all_with_not_enough_replicas(dc):
    out = run_on(dc, "min-isr")
    assert "acks=all refused, as it must be" in out and "NOT_ENOUGH_REPLICAS (19)" in out, out
    assert re.search(r"event: \S+ isr_shrunk .*isr_after=\d ", out), out
    assert "read back exactly the 120 acknowledged records" in out, out


def test_slow_follower_leaves_the_isr_unfenced_while_writes_go_on_and_comes_back(dc):
    out = run_on(dc, "slow-follower")
    f = re.search(r"slowing node (\d)'s link", out).group(1)
    assert re.search(rf"event: \S+ isr_shrunk isr_after=\S+ isr_before=\S*{f}", out), out
    hw = re.search(r"high watermark (\d+) -> (\d+) while node", out)
    assert hw and int(hw.group(2)) > int(hw.group(1)), out
    assert re.search(rf"event: \S+ isr_expanded isr_after=\S*{f}", out), out
    assert not re.search(rf"event: \S+ broker_fenced broker_id={f}\b", out), out
    assert re.search(r"all \d+ acknowledged, 0 lost", out), out


def test_unclean_election_loses_nothing_when_off_and_counts_the_loss_when_on(dc):
    out = run_on(dc, "unclean-election")
    assert "unclean.leader.election.enable=false: 0 records lost" in out, out
    assert "offline: no leader" in out, out
    assert "unclean.leader.election.enable=true: 100 acknowledged records lost" in out, out
    assert re.search(r"event: \S+ leader_changed .*reason=unclean", out), out
    assert re.search(r"event: \S+ config_changed .*key=unclean.leader.election.enable .*value=true", out), out


def test_controller_failover_elects_another_controller_and_fences_no_survivor(dc):
    out = run_on(dc, "controller-failover")
    old = re.search(r"killing the active controller, node (\d)", out).group(1)
    new = re.search(r"the quorum elected node (\d) controller", out).group(1)
    assert new != old, out
    assert re.search(rf"event: \S+ controller_changed controller_id={new}\b", out), out
    assert "metadata changes work under controller" in out and "stayed unfenced throughout" in out, out
    fenced = set(re.findall(r"event: \S+ broker_fenced broker_id=(\d)", out))
    assert fenced == {old}, (fenced, out)
    assert "a consumer read all 600 acknowledged records after the failover" in out, out


def test_network_partition_isolated_leader_acks_nothing_and_truncates_after_healing(dc):
    out = run_on(dc, "network-partition")
    iso = re.search(r"isolating node (\d)", out).group(1)
    assert f"the isolated node {iso} acknowledged nothing" in out, out
    new = re.search(r"node (\d) leads \S+ now", out).group(1)
    assert new != iso, out
    assert "truncated a divergent tail" in out, out
    assert re.search(r"all \d+ acknowledged, 0 lost", out), out
    assert "the probe the isolated node appended is gone" in out, out


def test_election_storm_counts_elections_shows_latency_and_loses_nothing(dc):
    out = run_on(dc, "election-storm")
    counted = re.search(r"the journal counted (\d+) leader elections \((\d+) of them", out)
    assert counted and int(counted.group(2)) >= 4, out
    assert len(re.findall(r"event: \S+ leader_changed ", out)) >= int(counted.group(2)), out
    assert re.search(r"produce latency through the storm: \d+ acknowledged batches .* p50 \d+ ms, p99 \d+ ms, max \d+ ms", out), out
    assert re.search(r"all \d+ acknowledged, 0 lost", out), out


def test_disk_failure_halts_the_leader_moves_leadership_and_loses_nothing(dc):
    out = run_on(dc, "disk-failure")
    assert "the write was answered KAFKA_STORAGE_ERROR" in out and "KAFKA_STORAGE_ERROR (56)" in out, out
    node = re.search(r"node (\d) halted: its only log dir is offline", out).group(1)
    assert re.search(rf"event: \S+ broker_fenced broker_id={node}\b", out), out
    assert "leadership moved to node" in out, out
    assert "a consumer read all 600 acknowledged records with the failed node down" in out, out
    assert f"node {node} recovered its log and rejoined the ISR, with no fault left" in out, out


def test_an_unknown_scenario_exits_non_zero_naming_the_valid_ones(tmp_path):
    r = scenario("run", "no-such", "--cluster", str(tmp_path))
    assert r.returncode != 0 and "unknown scenario 'no-such'" in r.stderr and ", ".join(NAMES) in r.stderr, r
