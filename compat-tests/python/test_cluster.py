"""Multi-broker control plane (issue 5): placement, controller failover, fencing,
quorum loss, and `sluice dev-cluster`.

Each test starts its own cluster of `sluice serve` processes (fixture `start_cluster`,
see cluster.py): 3 or 5 combined nodes, all controller voters, heartbeat 500 ms,
broker.session.timeout.ms 3000. On failure every node's log tail and the list of what
the test did (kills, restarts, ...) are attached to the report.
"""

import os
import signal
import time
from collections import Counter
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from conftest import fail_on_invariant_violations
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic

import cluster as cl
from cluster import describe_error, produce_values, raw_metadata, wait_until
from dev_cluster import DevCluster
from helpers import read_all

SESSION_S = 3.0  # broker.session.timeout.ms
ELECTION_S = 2.0  # a new active controller within this after kill -9 of the old one


def _check_read_back(bootstrap, topic, partitions, acked, timeout=60):
    """Reads every partition from the beginning; every acked value must be at its
    acked (partition, offset), and nothing else may be there."""
    got = read_all(bootstrap, topic, partitions, expected=len(acked), timeout=timeout)
    seen = {}
    for p, msgs in got.items():
        for m in msgs:
            seen.setdefault(m.value(), []).append((m.partition(), m.offset()))
    missing = [v for v in acked if v not in seen]
    moved = [(v, acked[v], seen[v]) for v in acked if v in seen and seen[v] != [acked[v]]]
    extra = [v for v in seen if v not in acked]
    assert not missing and not moved and not extra, (
        f"{topic}: {len(missing)} acked records missing (e.g. {missing[:5]}), {len(moved)} "
        f"not (only) at their acked offset (e.g. {moved[:5]}), {len(extra)} never acked "
        f"(e.g. {extra[:5]})")
    return got


# ---------------------------------------------------------------------------
# The query helpers themselves, against the single-node broker of today
# ---------------------------------------------------------------------------
def test_query_helpers_on_single_broker(broker):
    """cluster.py's metadata helpers read what a 1-node Sluice reports (so a failure
    in the cluster tests is about the cluster, not the helpers)."""
    bs = broker.bootstrap
    topic = "helpers-check"
    cl.create_topic(bs, topic, partitions=2, replication_factor=1)
    st = wait_until(lambda: (lambda s: s if sorted(s) == [0, 1] and all(
        p.leader == 1 for p in s.values()) else None)(cl.partition_states(bs, topic)),
        15, what="2 led partitions")
    for p in st.values():
        assert (p.leader, p.replicas, p.isr) == (1, [1], [1]), p
    assert cl.live_broker_ids(bs) == [1]
    assert cl.live_broker_ids(bs, source="metadata") == [1]
    assert cl.controller_id(bs) == 1
    md_st = cl.partition_states_md(bs, topic)
    assert {k: v.as_tuple() for k, v in md_st.items()} == {k: v.as_tuple() for k, v in st.items()}

    raw = raw_metadata(broker.port, [topic])
    assert raw["controller"] == 1 and raw["brokers"] == [1], raw
    rp = raw["topics"][topic]["partitions"]
    assert {k: v.as_tuple() for k, v in rp.items()} == {k: v.as_tuple() for k, v in st.items()}
    assert all(p.leader_epoch is not None and p.leader_epoch >= 0 for p in rp.values()), rp

    r = cl.raw_produce(broker.port, topic, 0, [b"a", b"b"])
    assert r["error"] == 0 and r["base_offset"] == 0, r
    err, hw, records = cl.raw_fetch(broker.port, topic, 0, 0)
    assert err == 0 and hw == 2 and records, (err, hw, len(records))
    assert cl.raw_produce(broker.port, topic, 7, [b"x"])["error"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert cl.raw_fetch(broker.port, topic, 7, 0)[0] == 3

    acked, errors, left = produce_values(bs, topic, [b"c", b"d"], partition=1)
    assert (errors, left) == ([], 0) and sorted(acked.values()) == [(1, 0), (1, 1)], acked

    # wait_until: returns the value, treats exceptions as "not yet", fails with a message.
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("not yet")
        return "ok"

    assert wait_until(flaky, 5, interval=0.01) == "ok"
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="the impossible"):
        wait_until(lambda: False, 0.3, interval=0.05, what="the impossible")
    assert 0.3 <= time.monotonic() - t0 < 2


# ---------------------------------------------------------------------------
# a. Placement and clients bootstrapped from one broker
# ---------------------------------------------------------------------------
def test_topic_spread_and_clients_via_one_broker(start_cluster):
    c = start_cluster(3)
    c.wait_live_brokers([1, 2, 3])
    topic = "spread"
    n_parts, n_recs = 6, 600

    # Admin client that knows node 1 only.
    cl.create_topic(c.bootstrap_of(1), topic, n_parts, 3)
    st = c.wait_partitions(topic, n_parts, full_isr=True, replication_factor=3)

    for p in st.values():
        assert sorted(p.replicas) == [1, 2, 3], f"partition {p.partition}: replicas {p.replicas}"
        assert p.leader in p.replicas, f"partition {p.partition}: leader {p.leader}"
        assert sorted(p.isr) == [1, 2, 3], f"partition {p.partition}: ISR {p.isr}"
    leaders = Counter(p.leader for p in st.values())
    assert leaders == {1: 2, 2: 2, 3: 2}, (
        f"leaders not spread evenly: {dict(leaders)} "
        f"({ {k: v.as_tuple() for k, v in st.items()} })")

    # Every node serves the same view of brokers, leaders and replicas, and names itself
    # as the controller to send admin requests to (it forwards them to the active one).
    want = {k: (v.leader, sorted(v.replicas)) for k, v in st.items()}

    def views_agree():
        bad = {}
        for i in c.ids:
            md = raw_metadata(c.node(i).port, [topic])
            parts = md["topics"][topic]["partitions"]
            view = {k: (v.leader, sorted(v.replicas)) for k, v in parts.items()}
            if md["brokers"] != [1, 2, 3] or md["controller"] != i or view != want:
                bad[i] = (md["brokers"], md["controller"], view)
        return not bad or None
    wait_until(views_agree, 10, what="every node's own Metadata to agree on brokers and "
               f"partition leaders {want}, each naming itself as controller")

    # librdkafka producer that knows node 2 only; keyed records to all 6 partitions.
    values = [b"spread-%04d" % i for i in range(n_recs)]
    p = Producer({"bootstrap.servers": c.bootstrap_of(2), "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 30000})
    acked, errors = {}, []

    def cb(err, msg):
        if err is None:
            acked[msg.value()] = (msg.partition(), msg.offset())
        else:
            errors.append((msg.value(), err.name()))

    for i, v in enumerate(values):
        p.produce(topic, key=b"key-%d" % i, value=v, partition=i % n_parts, on_delivery=cb)
        p.poll(0)
    left = p.flush(60)
    assert errors == [], f"{len(errors)} delivery errors, e.g. {errors[:10]}"
    assert left == 0 and len(acked) == n_recs, f"{left} undelivered, {len(acked)} acked"
    per_part = Counter(part for part, _ in acked.values())
    assert per_part == {i: n_recs // n_parts for i in range(n_parts)}, per_part

    # Consumer that knows node 3 only.
    _check_read_back(c.bootstrap_of(3), topic, n_parts, acked)


# ---------------------------------------------------------------------------
# b. kill -9 of the active controller
# ---------------------------------------------------------------------------
def test_active_controller_failover(start_cluster):
    c = start_cluster(3)
    c.wait_live_brokers([1, 2, 3])
    old = c.wait_controller()
    assert old in c.ids
    survivors = [i for i in c.ids if i != old]

    c.kill(old)
    t0 = time.monotonic()
    new, asked_at = None, None
    while time.monotonic() - t0 < ELECTION_S + 8:
        try:
            got = c.active_controller(via=survivors, timeout=1)
        except Exception:  # noqa: BLE001 - node busy / election in progress
            got = None
        if got not in (None, -1, old):
            # DescribeQuorum waits for the election: count until its answer.
            new, asked_at = got, time.monotonic() - t0
            break
        time.sleep(0.05)
    assert new is not None, f"no new controller reported within {ELECTION_S + 8}s of killing {old}"
    assert new in survivors, f"controller {new} is not a live node ({survivors})"
    # The first answer naming the new controller came within ELECTION_S.
    assert asked_at <= ELECTION_S, (
        f"new controller {new} first seen {asked_at:.2f}s after the kill "
        f"(limit {ELECTION_S}s)")

    # Both survivors agree, each names itself to clients as the controller (never the
    # dead node), and the killed node gets fenced by the new controller.
    for i in survivors:
        wait_until(lambda i=i: c.active_controller(via=i, timeout=2) == new, 5,
                   what=f"node {i} to report active controller {new}")
        assert raw_metadata(c.node(i).port, [])["controller"] == i
    c.wait_live_brokers(survivors, timeout=SESSION_S + 7, via=survivors)

    cl.create_topic(c.bootstrap_of(*survivors), "after-failover", 2, 2)
    st = c.wait_partitions("after-failover", 2, replication_factor=2)
    for p in st.values():
        assert sorted(p.replicas) == survivors, f"replicas on a dead node: {p}"

    c.start(old)  # waits for its `sluice ready:` line
    c.wait_live_brokers([1, 2, 3])
    cl.create_topic(c.bootstrap_of(old), "after-restart", 3, 3)
    st = c.wait_partitions("after-restart", 3, full_isr=True, replication_factor=3)
    assert all(sorted(p.replicas) == [1, 2, 3] for p in st.values()), st


# ---------------------------------------------------------------------------
# c. kill -9 of a non-controller broker: fenced, then back
# ---------------------------------------------------------------------------
def test_dead_broker_is_fenced_and_returns(start_cluster):
    c = start_cluster(3)
    c.wait_live_brokers([1, 2, 3])
    ctl = c.wait_controller()
    victim = next(i for i in c.ids if i != ctl)
    survivors = [i for i in c.ids if i != victim]

    c.kill(victim)
    t0 = time.monotonic()
    c.wait_live_brokers(survivors, timeout=SESSION_S + 5, via=survivors)
    fenced_after = time.monotonic() - t0
    # Metadata (not only DescribeCluster) of every survivor drops it too.
    for i in survivors:
        wait_until(lambda i=i: raw_metadata(c.node(i).port, [])["brokers"] == survivors, 5,
                   what=f"node {i}'s Metadata to list brokers {survivors}")
        assert cl.live_broker_ids(c.bootstrap_of(i), source="metadata") == survivors
    print(f"node {victim} fenced {fenced_after:.2f}s after kill -9")

    c.start(victim)
    c.wait_live_brokers([1, 2, 3])
    for i in c.ids:
        wait_until(lambda i=i: raw_metadata(c.node(i).port, [])["brokers"] == [1, 2, 3], 10,
                   what=f"node {i}'s Metadata to list all 3 brokers")
    # Losing and regaining a broker that is not the controller moves no controller.
    assert c.active_controller() == ctl


# ---------------------------------------------------------------------------
# d. 5 voters: a majority keeps the metadata log writable, a minority does not
# ---------------------------------------------------------------------------
def test_five_voters_quorum(start_cluster):
    c = start_cluster(5)
    c.wait_live_brokers([1, 2, 3, 4, 5])
    ctl = c.wait_controller()
    others = [i for i in c.ids if i != ctl]

    for v in others[:2]:
        c.kill(v)
    up = c.up_ids()
    c.wait_live_brokers(up, timeout=SESSION_S + 7)
    cl.create_topic(c.live_bootstrap, "quorum-3of5", 3, 2)
    st = c.wait_partitions("quorum-3of5", 3, replication_factor=2)
    for p in st.values():
        assert set(p.replicas) <= set(up), f"replica on a dead node: {p}"

    third = others[2]
    c.kill(third)
    t0 = time.monotonic()
    a = c.admin()
    fut = a.create_topics([NewTopic("quorum-2of5", num_partitions=1, replication_factor=1)],
                          operation_timeout=5, request_timeout=5)["quorum-2of5"]
    try:
        fut.result(timeout=20)
    except KafkaException as e:
        print(f"create_topics without quorum failed after {time.monotonic() - t0:.1f}s: "
              f"{describe_error(e)}")
    except FutureTimeout:
        pytest.fail("create_topics with 2 of 5 voters alive neither failed nor succeeded "
                    "within 20 s")
    else:
        pytest.fail(f"create_topics succeeded with only 2 of 5 voters alive ({c.up_ids()})")
    assert time.monotonic() - t0 <= 20

    # A third voter back: a majority again, and the metadata log takes writes.
    c.start(third)
    cl.create_topic(c.live_bootstrap, "quorum-back", 1, 2, timeout=20)
    c.wait_partitions("quorum-back", 1, replication_factor=2)


# ---------------------------------------------------------------------------
# e. sluice dev-cluster
# ---------------------------------------------------------------------------
@pytest.fixture
def dev_cluster(request, tmp_path):
    clusters = getattr(request.node, "_sluice_clusters", None)
    if clusters is None:
        clusters = request.node._sluice_clusters = []
    d = DevCluster(tmp_path / "dev", brokers=3)
    clusters.append(d)
    yield d
    d.shutdown()
    fail_on_invariant_violations([d.log_path])


def test_dev_cluster(dev_cluster):
    d = dev_cluster
    P = d.base_port
    d.start()
    bootstrap, children = d.wait_output()
    assert bootstrap == f"127.0.0.1:{P},127.0.0.1:{P + 1},127.0.0.1:{P + 2}", bootstrap
    assert len(children) == 3, children
    assert sorted(addr for _, addr in children.values()) == sorted(bootstrap.split(",")), children
    pids = {i: pid for i, (pid, _) in children.items()}
    assert len(set(pids.values())) == 3, pids
    for i, pid in pids.items():
        assert cl.pid_alive(pid), f"node {i} pid {pid} is not running"
        assert cl.pid_ppid(pid) == d.proc.pid, (
            f"node {i} pid {pid} is not a child of dev-cluster ({d.proc.pid})")
        assert "sluice" in cl.pid_cmdline(pid), cl.pid_cmdline(pid)

    ids = sorted(children)
    wait_until(lambda: cl.live_broker_ids(bootstrap) == ids, 30,
               what=f"live brokers {ids} via {bootstrap}")
    cl.create_topic(bootstrap, "dev", 3, 3)
    wait_until(lambda: all(p.leader >= 0 and len(p.isr) == 3
                           for p in cl.partition_states(bootstrap, "dev").values()), 20,
               what="dev topic led with full ISR")
    acked, errors, left = produce_values(bootstrap, "dev", [b"dev-%d" % i for i in range(300)])
    assert (errors, left, len(acked)) == ([], 0, 300), (errors[:5], left, len(acked))
    _check_read_back(bootstrap, "dev", 3, acked)

    # kill -9 one child (not the controller): dev-cluster and the others keep running.
    ctl = cl.quorum_leader(int(bootstrap.split(",")[0].rsplit(":", 1)[1]))
    victim = next(i for i in ids if i != ctl)
    os.kill(pids[victim], signal.SIGKILL)
    time.sleep(1.0)
    assert d.proc.poll() is None, f"dev-cluster exited ({d.proc.returncode}) when a child died"
    for i in ids:
        if i != victim:
            assert cl.pid_alive(pids[i]), f"node {i} (pid {pids[i]}) died with node {victim}"
    rest = [i for i in ids if i != victim]
    wait_until(lambda: cl.live_broker_ids(bootstrap) == rest, SESSION_S + 7,
               what=f"node {victim} fenced, live brokers {rest}")
    cl.create_topic(bootstrap, "dev-after", 2, 2)
    wait_until(lambda: all(p.leader in rest for p in
                           cl.partition_states(bootstrap, "dev-after").values()), 20,
               what="dev-after led by live nodes")
    acked, errors, left = produce_values(bootstrap, "dev-after",
                                         [b"after-%d" % i for i in range(100)])
    assert (errors, left, len(acked)) == ([], 0, 100), (errors[:5], left, len(acked))
    _check_read_back(bootstrap, "dev-after", 2, acked)

    # SIGTERM: dev-cluster stops every child and exits.
    d.proc.send_signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(timeout=20)
    except Exception:  # noqa: BLE001
        pytest.fail("dev-cluster did not exit within 20 s of SIGTERM")
    wait_until(lambda: not any(cl.pid_alive(pids[i]) for i in rest), 20,
               what=f"children {[pids[i] for i in rest]} to exit after SIGTERM")
    print(f"dev-cluster exited with {rc}")


def test_killed_dev_cluster_takes_its_nodes_along(dev_cluster):
    """SIGKILL of dev-cluster itself (no chance to clean up): the kernel stops its nodes."""
    d = dev_cluster
    d.start()
    _, children = d.wait_output()
    pids = [pid for pid, _ in children.values()]
    assert all(cl.pid_alive(p) for p in pids), pids
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(timeout=10)
    wait_until(lambda: not any(d.is_ours(p) for p in pids), 20,
               what=f"nodes {pids} to exit after dev-cluster was killed")
