"""`sluice scenario list` and `sluice scenario run NAME` (issue 23): each scenario runs
against a real dev-cluster, exits 0 only if what Kafka promises held, and narrates the
cluster's event journal as it goes.
* leader-crash starts its own dev-cluster (none runs at its dir) and stops it at the end:
  a new leader from the ISR, 1000 acknowledged records read back exactly, the old leader
  back in the ISR; the narration shows the fencing, the election and the ISR changes.
* min-isr uses a dev-cluster already running at --cluster: acks=all refused with
  NOT_ENOUGH_REPLICAS while one replica of two is in sync, acks=1 lands, acks=all again
  once the follower is back; the cluster is left running with every node up.
* an unknown scenario exits non-zero naming the valid ones.
"""

import json
import re
import subprocess

from cluster import pid_alive, sluice_bin
from dev_cluster import DevCluster, free_base_port

FAST = ["--set", "broker.heartbeat.interval.ms=300", "--set", "broker.session.timeout.ms=3000",
        "--set", "replica.lag.time.max.ms=2000"]


class FastDevCluster(DevCluster):
    def command(self):
        return super().command() + FAST


def scenario(*args):
    return subprocess.run([sluice_bin(), "scenario", *args], capture_output=True, text=True, timeout=180)


def test_list_names_both_scenarios():
    r = scenario("list")
    assert r.returncode == 0, r.stderr
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == ["leader-crash", "min-isr"], r.stdout


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


def test_min_isr_on_a_running_cluster_refuses_acks_all_with_not_enough_replicas(tmp_path):
    d = FastDevCluster(tmp_path, brokers=3).start()
    try:
        d.wait_output(timeout=60)
        r = scenario("run", "min-isr", "--cluster", str(d.data_dir))
        out = r.stdout
        assert r.returncode == 0 and "scenario min-isr: HELD" in out, (out, r.stderr)
        assert "started one" not in out, "the running dev-cluster was used"
        assert "acks=all refused, as it must be" in out and "NOT_ENOUGH_REPLICAS (19)" in out, out
        assert re.search(r"event: \S+ isr_shrunk .*isr_after=\d ", out), out
        assert "read back exactly the 120 acknowledged records" in out, out
        st = subprocess.run([sluice_bin(), "dev", "status", "--format", "json", "--cluster", str(d.data_dir)],
                            capture_output=True, text=True, timeout=30)
        assert st.returncode == 0, st.stderr
        assert [n["state"] for n in json.loads(st.stdout)["nodes"]] == ["running"] * 3, st.stdout
    finally:
        d.shutdown()


def test_an_unknown_scenario_exits_non_zero_naming_the_valid_ones(tmp_path):
    r = scenario("run", "no-such", "--cluster", str(tmp_path))
    assert r.returncode != 0 and "unknown scenario 'no-such'" in r.stderr and "leader-crash, min-isr" in r.stderr, r
