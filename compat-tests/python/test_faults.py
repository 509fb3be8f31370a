"""Fault injection (issue 23) on one 3-node cluster with fault.injection.enable=true.

Request faults, for client developers, with librdkafka (confluent-kafka):
* Produce answering NOT_LEADER_OR_FOLLOWER three times: the idempotent producer retries and
  every record lands exactly once, in order.
* InitProducerId answering COORDINATOR_NOT_AVAILABLE twice: a transactional producer still
  initialises and commits.
* A disconnect on Fetch: the consumer reconnects and misses nothing.
* Latency and an injected Metadata error, through `sluice fault`.
* A clock skew on a leader shifts its LogAppendTime stamps until cleared.
Link faults:
* `cut --peer N` reaches a node's calls to broker N (a produce forwarded from the HTTP
  listener fails, one to another leader does not) and, at the controller, N's heartbeats:
  N is fenced, and unfenced after healing. Made at a voter toward the quorum leader, it
  cuts their Raft traffic both ways: the voter loses the leader and is fenced, the leader
  stays, and after healing the voter follows it again.
* `delay --peer N` makes a link slow, not narrow: under a 300 ms delay toward the quorum
  leader a voter keeps up with the metadata log and keeps its leader.
* Isolating the leader of a partition under an idempotent acks=all load (RF=3,
  min.insync.replicas=2): a new leader among the other two, the isolated node acknowledges
  no write after the cut, and after healing it rejoins the ISR and truncates its divergent
  tail; 0 acknowledged records lost, 0 duplicates.
Bad input: unknown kind, API or error name gets HTTP 400 naming the valid ones (and
`sluice fault` exits non-zero); a node without fault.injection.enable answers 403; a
restart starts clean. Every change is a `fault_injected`/`fault_cleared` journal event.
"""

import json
import subprocess
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

import kproto
from cluster import raw_metadata, raw_produce, sluice_bin, wait_until
from faults_lib import HTTP_AT, Load, add, call, consume, faults, http_of, topic_rf3, fault_cluster

RECORDS = 300


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    yield from fault_cluster(tmp_path_factory, "faults", **{"group.initial.rebalance.delay.ms": "0"})


@pytest.fixture(autouse=True)
def healed(request):
    """Clears every node's faults after each test, so one test's fault never leaks into the next."""
    yield
    if "c" in request.fixturenames:
        c = request.getfixturevalue("c")
        for i in c.up_ids():
            call(http_of(c, i), "DELETE", "/v1/faults")


def fault_events(c, node_id, fault_id):
    status, body = call(http_of(c, node_id), "GET", "/v1/events?since=0")
    assert status == 200, body
    return [e for e in body if e["type"].startswith("fault_") and e.get("fault_id") == fault_id]


def cli(*args):
    return subprocess.run([sluice_bin(), "fault", *args], capture_output=True, text=True, timeout=30)


def test_produce_answering_not_leader_three_times_is_retried_and_lands_exactly_once(c):
    topic = "inject-produce"
    leader = topic_rf3(c, topic)[0].leader
    f = add(c, leader, kind="inject", api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=3)
    assert (f["api"], f["error"], f["error_code"], f["remaining"]) == ("Produce", "NOT_LEADER_OR_FOLLOWER", 6, 3)
    errors = []
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "retry.backoff.ms": 50})
    for i in range(RECORDS):
        p.produce(topic, value=f"v{i}".encode(), partition=0,
                  on_delivery=lambda err, _m: err is not None and errors.append(err))
        p.poll(0)
        if i % 100 == 0:
            p.flush(30)  # several requests, so the three errors hit more than one of them
    assert p.flush(30) == 0 and not errors, errors
    assert faults(c, leader) == [], "the fault was not used up: the producer never met the errors"
    got = consume(c.bootstrap, topic, 0, RECORDS)
    assert [v for _, v, _ in got] == [f"v{i}" for i in range(RECORDS)], "lost, duplicated or reordered records"
    ev = fault_events(c, leader, f["id"])
    assert [e["type"] for e in ev] == ["fault_injected", "fault_cleared"], ev
    assert ev[1]["reason"] == "count used up" and ev[0]["seq"] < ev[1]["seq"]


def test_init_producer_id_answering_coordinator_not_available_twice_still_initialises(c):
    topic = "inject-txn"
    topic_rf3(c, topic)
    # The transaction coordinator is one of the nodes: each answers its first two with the error.
    ids = {i: add(c, i, kind="inject", api="InitProducerId", error="COORDINATOR_NOT_AVAILABLE", count=2)["id"]
           for i in c.ids}
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "faults-txn"})
    p.init_transactions(60)
    used = [i for i in c.ids if not faults(c, i)]
    assert used, "no node answered InitProducerId with the injected error twice"
    assert any(e["type"] == "fault_cleared" for e in fault_events(c, used[0], ids[used[0]]))
    p.begin_transaction()
    p.produce(topic, value=b"committed", partition=0)
    p.commit_transaction(30)
    got = consume(c.bootstrap, topic, 0, 1)
    assert [v for _, v, _ in got] == ["committed"]


def test_a_disconnect_on_fetch_is_survived_by_a_consumer_that_misses_nothing(c):
    topic = "disconnect-fetch"
    leader = topic_rf3(c, topic)[0].leader
    p = Producer({"bootstrap.servers": c.bootstrap, "enable.idempotence": True})
    for i in range(RECORDS):
        p.produce(topic, value=f"d{i}".encode(), partition=0)
    assert p.flush(30) == 0
    add(c, leader, kind="disconnect", api="Fetch", count=2)
    got = consume(c.bootstrap, topic, 0, RECORDS)
    assert faults(c, leader) == [], "the consumer never fetched through the disconnects"
    assert [o for o, _, _ in got] == list(range(RECORDS)), "skipped or repeated offsets"
    assert [v for _, v, _ in got] == [f"d{i}" for i in range(RECORDS)]


def test_latency_and_an_injected_metadata_error_through_the_cli(c):
    topic = "inject-metadata"
    topic_rf3(c, topic)
    node = c.ids[0]
    addr = http_of(c, node)
    r = cli("--http", addr, "inject", "--api", "metadata", "--error", "UNKNOWN_TOPIC_OR_PARTITION", "--count", "1")
    assert r.returncode == 0, r.stderr
    assert "inject Metadata UNKNOWN_TOPIC_OR_PARTITION" in r.stdout
    port = c.node(node).port
    assert raw_metadata(port, [topic])["topics"][topic]["error"] == kproto.UNKNOWN_TOPIC_OR_PARTITION
    assert raw_metadata(port, [topic])["topics"][topic]["error"] == 0, "count 1 answers one request"
    r = cli("--http", addr, "--format", "json", "latency", "--api", "Metadata", "--ms", "400")
    assert r.returncode == 0, r.stderr
    fault_id = json.loads(r.stdout)["id"]
    listed = cli("--http", addr, "list")
    assert f"{fault_id}  latency Metadata 400 ms" in listed.stdout, listed.stdout
    started = time.monotonic()
    raw_metadata(port, [topic])
    assert time.monotonic() - started >= 0.4
    r = cli("--http", addr, "clear", str(fault_id))
    assert r.returncode == 0 and "cleared" in r.stdout, (r.stdout, r.stderr)
    started = time.monotonic()
    raw_metadata(port, [topic])
    assert time.monotonic() - started < 0.4
    assert "no active faults" in cli("--http", addr, "list").stdout


@pytest.mark.parametrize("fault, named", [
    ({"kind": "explode"}, "inject, latency, disconnect, isolate, cut, delay, drop, clock"),
    ({"kind": "inject", "api": "Produse", "error": 6}, "InitProducerId"),
    ({"kind": "inject", "api": "Produce", "error": "NOT_A_LEADER"}, "NOT_LEADER_OR_FOLLOWER"),
    ({"kind": "inject", "api": "CreateTopics", "error": 6}, "APIs that can: Produce, Fetch"),
    ({"kind": "latency", "api": "Produce"}, "needs ms"),
    ({"kind": "cut", "peer": 2, "colour": "red"}, "unknown field"),
])
def test_a_bad_fault_gets_400_naming_the_valid_choices(c, fault, named):
    status, body = call(http_of(c, 1), "POST", "/v1/faults", fault)
    assert status == 400 and named in body["error"], (status, body)
    assert faults(c, 1) == []


def test_the_cli_exits_non_zero_on_bad_input_and_unknown_ids(c):
    addr = http_of(c, 1)
    r = cli("--http", addr, "inject", "--api", "Nope", "--error", "6")
    assert r.returncode != 0 and "valid names" in r.stderr and "Produce" in r.stderr, r.stderr
    r = cli("--http", addr, "inject", "--api", "Produce", "--error", "NOPE")
    assert r.returncode != 0 and "NOT_LEADER_OR_FOLLOWER" in r.stderr, r.stderr
    r = cli("--http", addr, "clear", "999999")
    assert r.returncode != 0 and "404" in r.stderr, r.stderr
    assert cli("--http", addr, "explode").returncode != 0


def test_a_node_without_fault_injection_enabled_answers_403(start_broker):
    b = start_broker({"http.listener": "127.0.0.1:0"})
    addr = wait_until(lambda: (HTTP_AT.findall(b.stderr_path.read_text(errors="replace")) or [None])[-1], 10,
                      what="the broker's HTTP listener address")
    for method, path, body in [("GET", "/v1/faults", None), ("POST", "/v1/faults", {"kind": "isolate"}),
                               ("DELETE", "/v1/faults", None), ("DELETE", "/v1/faults/1", None)]:
        status, answer = call(addr, method, path, body)
        assert status == 403 and "fault.injection.enable" in answer["error"], (method, path, status, answer)
    r = cli("--http", addr, "isolate")
    assert r.returncode != 0 and "403" in r.stderr, r.stderr


def test_an_isolated_leader_acknowledges_nothing_and_rejoins_after_healing(c):
    topic = "partitioned"
    states = topic_rf3(c, topic, partitions=3, config={"min.insync.replicas": "2"})
    controller = wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10,
                            what="an active controller")
    # A leader that is not the active controller: the quorum keeps deciding through the cut.
    picked = [(p, s.leader) for p, s in sorted(states.items()) if s.leader != controller]
    assert picked, f"every partition of {topic} is led by the controller {controller}"
    part, victim = picked[0]
    others = [i for i in c.ids if i != victim]
    victim_port = c.node(victim).port
    # One load from before the cut. The isolated node still answers clients, with its stale
    # view (it leads, in the old epoch): a client that only asks it, as librdkafka's does,
    # waits for the heal. A second load, started once the new leader is elected and
    # bootstrapped from the other two, writes through the new leader meanwhile.
    before = Load(c.bootstrap, topic, part, "a")
    during = None
    try:
        wait_until(lambda: len(before.acked) >= 50, 20, what="the load acknowledged before the cut")
        epoch_before = raw_metadata(victim_port, [topic])["topics"][topic]["partitions"][part].leader_epoch
        iso = add(c, victim, kind="isolate")
        cut_at = time.monotonic()
        # Clients still reach the isolated node, and it acknowledges nothing.
        probe = raw_produce(victim_port, topic, part, [b"probe-after-cut"], acks=-1, timeout_ms=2000)
        assert probe["error"] != 0, f"the isolated node acknowledged a write: {probe}"
        new = wait_until(lambda: (lambda l: l if l in others else None)(c.partition(topic, part, via=others).leader),
                         20, what=f"a new leader of {topic}-{part} among {others}")
        during = Load(c.bootstrap_of(*others), topic, part, "b")
        wait_until(lambda: len(during.acked) >= 50, 30, what=f"writes acknowledged by the new leader {new}")
        status, _ = call(http_of(c, victim), "DELETE", f"/v1/faults/{iso['id']}")
        assert status == 200
        healed_at = time.monotonic()
        acked_at_heal = len(before.acked)
        wait_until(lambda: len(before.acked) >= acked_at_heal + 50, 30, what="the first load going on after the heal")
        wait_until(lambda: victim in c.partition(topic, part, via=others).isr, 30,
                   what=f"node {victim} back in the ISR of {topic}-{part}")
        wait_until(lambda: any("truncated a divergent tail" in ln and f"topic={topic}" in ln
                               and f"partition={part}" in ln for ln in c.node(victim).start_section().splitlines()),
                   10, what=f"node {victim} truncating its divergent tail of {topic}-{part}")
    finally:
        before.finish()
        if during is not None:
            during.finish()
    acked = before.acked + during.acked
    assert not before.failed and not during.failed, f"records failed: {(before.failed + during.failed)[:5]}"
    got = consume(c.bootstrap, topic, part, len(acked))
    values = [v for _, v, _ in got]
    assert "probe-after-cut" not in values, "the write the isolated node took survived the heal"
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} duplicates"
    at = {v: (o, e) for o, v, e in got}
    lost = [v for _, v, _ in acked if v not in at]
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"
    moved = [(v, o, at[v]) for _, v, o in acked if at[v][0] != o]
    assert not moved, f"acknowledged offsets that changed: {moved[:5]}"
    # The new leader took writes while the old one was cut off.
    assert any(t < healed_at for t, _, _ in during.acked), "nothing was acknowledged during the cut"
    assert any(e is not None and e > epoch_before for _, _, e in got), f"nothing was written after epoch {epoch_before}"
    # What the isolated node appended after the cut could not reach a follower, so had it
    # acknowledged any of it, that record would be among the lost above (its tail was
    # truncated), and the probe shows it refuses acks=all outright. An acknowledgement that
    # arrives late for a record of the old epoch is no sign of that: a batch the followers had
    # copied just before the cut is answered NOT_LEADER_OR_FOLLOWER at the heal (or times out)
    # and acknowledged on the idempotent retry by the new leader, still stored in its epoch.
    ev = fault_events(c, victim, iso["id"])
    assert [e["type"] for e in ev] == ["fault_injected", "fault_cleared"], ev


def test_a_clock_skew_shifts_the_log_append_time_of_that_node_until_cleared(c):
    topic = "clock-skew"
    states = topic_rf3(c, topic, partitions=3, config={"message.timestamp.type": "LogAppendTime"})
    controller = wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10,
                            what="an active controller")
    # Not the controller: its clock also times the brokers' sessions.
    part, leader = next(((p, s.leader) for p, s in sorted(states.items()) if s.leader != controller), (None, None))
    assert leader is not None, f"every partition of {topic} is led by the controller {controller}"
    skew = 3_600_000
    r = cli("--http", http_of(c, leader), "clock", "--skew-ms", str(skew))
    assert r.returncode == 0 and "clock skew 3600000 ms" in r.stdout, (r.stdout, r.stderr)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "1"})
    p.produce(topic, value=b"skewed", partition=part)
    assert p.flush(30) == 0
    status, _ = call(http_of(c, leader), "DELETE", "/v1/faults")
    assert status == 200
    p.produce(topic, value=b"plain", partition=part)
    assert p.flush(30) == 0
    cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "faults-unused", "enable.auto.commit": False})
    try:
        cons.assign([TopicPartition(topic, part, OFFSET_BEGINNING)])
        seen = {}
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None and m.error() is None:
                seen[m.value().decode()] = m.timestamp()[1]
    finally:
        cons.close()
    now_ms = time.time() * 1000
    assert set(seen) == {"skewed", "plain"}, seen
    assert abs(seen["skewed"] - (now_ms + skew)) < 60_000, f"the skewed append time is {seen['skewed'] - now_ms:.0f} ms from now"
    assert abs(seen["plain"] - now_ms) < 60_000, f"after clearing, the append time is {seen['plain'] - now_ms:.0f} ms from now"


def post_record(c, node_id, topic, partition, value):
    """(status, body) of producing one record through node `node_id`'s HTTP listener."""
    return call(http_of(c, node_id), "POST", f"/v1/topics/{topic}/partitions/{partition}/records",
                {"key": None, "value": value, "headers": {}})


def test_a_cut_link_to_one_peer_stops_calls_to_that_broker_only(c):
    # A node forwards an HTTP-produced record to the partition's leader over the peer
    # transport (as it sends transaction markers): `cut --peer` must reach that call.
    topic = "cut-peer-calls"
    states = topic_rf3(c, topic, partitions=3)
    leaders = {p: s.leader for p, s in states.items()}
    via = next(i for i in c.ids if list(leaders.values()).count(i) < len(leaders))
    cut_part, peer = next((p, l) for p, l in sorted(leaders.items()) if l != via)
    other = next(((p, l) for p, l in sorted(leaders.items()) if l not in (via, peer)), None)
    status, body = post_record(c, via, topic, cut_part, "before")
    assert status == 201, body
    cut = add(c, via, kind="cut", peer=peer)
    status, body = post_record(c, via, topic, cut_part, "during")
    assert status == 409 and "BROKER_NOT_AVAILABLE" in body["error"], (status, body)
    if other is not None:
        status, body = post_record(c, via, topic, other[0], "elsewhere")
        assert status == 201, f"a link to node {other[1]} was not cut: {status} {body}"
    call(http_of(c, via), "DELETE", f"/v1/faults/{cut['id']}")
    status, body = wait_until(lambda: (lambda r: r if r[0] == 201 else None)(post_record(c, via, topic, cut_part, "after")),
                              20, what="the forwarded produce after healing")
    assert body["partition"] == cut_part, body


def last_event_seq(c, node_id):
    return max([e["seq"] for e in call(http_of(c, node_id), "GET", "/v1/events?since=0")[1]] + [0])


def events_since(c, node_id, since, kind, **fields):
    """Node `node_id`'s journal events of type `kind` after `since` whose fields match, or None."""
    evs = call(http_of(c, node_id), "GET", f"/v1/events?since={since}")[1]
    return [e for e in evs if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())] or None


def raft_view(c, node_id):
    """(leader, term) of the metadata quorum as node `node_id`'s own Raft state has it."""
    status, body = call(http_of(c, node_id), "GET", "/v1/cluster")
    assert status == 200, body
    return body["quorum"]["leader_id"], body["quorum"]["leader_epoch"]


def active_controller(c):
    return wait_until(lambda: (lambda a: a if a > 0 else None)(c.active_controller()), 10, what="an active controller")


def test_a_controller_that_cut_its_link_to_one_broker_fences_it_and_unfences_it_after_healing(c):
    # The broker's heartbeats reach the controller's listener but are lost there: its
    # requests name their sender, so a one-peer cut at the controller covers them.
    controller = active_controller(c)
    victim = next(i for i in c.ids if i != controller)
    since = last_event_seq(c, controller)
    cut = add(c, controller, kind="cut", peer=victim)
    wait_until(lambda: events_since(c, controller, since, "broker_fenced", broker_id=victim), 20,
               what=f"node {victim} fenced by the controller that cut it off")
    assert c.active_controller() == controller, "the cut moved the controller"
    call(http_of(c, controller), "DELETE", f"/v1/faults/{cut['id']}")
    wait_until(lambda: events_since(c, controller, since, "broker_unfenced", broker_id=victim), 30,
               what=f"node {victim} unfenced after healing")


def test_a_voter_that_cut_its_link_to_the_quorum_leader_loses_the_leader_and_is_fenced_until_healed(c):
    # The cut is made at the voter, not at the leader: the leader's Raft messages arriving,
    # the voter's going out and its heartbeats to the controller are all traffic of that one
    # link. As in Kafka, a voter that cannot hear the leader stops following it (its election
    # timer runs out; pre-vote keeps it from disrupting the others) and, unable to heartbeat,
    # is fenced; the leader and the third voter carry on.
    leader = active_controller(c)
    voter, third = [i for i in c.ids if i != leader]
    wait_until(lambda: raft_view(c, voter)[0] == leader, 10, what=f"node {voter} following {leader}")
    since = last_event_seq(c, leader)
    cut = add(c, voter, kind="cut", peer=leader)
    try:
        wait_until(lambda: raft_view(c, voter)[0] is None, 20, what=f"node {voter} losing the quorum leader {leader}")
        wait_until(lambda: events_since(c, leader, since, "broker_fenced", broker_id=voter), 20,
                   what=f"node {voter} fenced by the controller it cut itself off from")
        assert raft_view(c, third)[0] == leader and c.active_controller(via=third) == leader, "the cut moved the controller"
    finally:
        call(http_of(c, voter), "DELETE", f"/v1/faults/{cut['id']}")
    wait_until(lambda: raft_view(c, voter)[0] == leader, 20, what=f"node {voter} following {leader} again")
    wait_until(lambda: events_since(c, leader, since, "broker_unfenced", broker_id=voter), 30,
               what=f"node {voter} unfenced after healing")


def metadata_offset(c, node_id):
    """The offset of the metadata log that node `node_id` has applied."""
    status, body = call(http_of(c, node_id), "GET", "/v1/cluster")
    assert status == 200, body
    return body["metadata_offset"]


def test_a_delay_on_the_link_to_the_quorum_leader_makes_it_slow_not_narrow(c):
    # A delay holds each message for its time; the messages behind it do not wait for
    # theirs on top. Held one after another (300 ms each), the leader's heartbeats and
    # appends (a dozen a second) outran the voter: its backlog, and with it its lag behind
    # the metadata log, grew for as long as the delay lasted, so it never caught up, and the
    # old answers in such a backlog kept a deposed leader looking alive to itself.
    leader = active_controller(c)
    voter = next(i for i in c.ids if i != leader)
    wait_until(lambda: raft_view(c, voter)[0] == leader, 10, what=f"node {voter} following {leader}")
    term = raft_view(c, voter)[1]
    since = last_event_seq(c, voter)
    delay = add(c, voter, kind="delay", peer=leader, ms=300)
    try:
        time.sleep(12)  # what a narrowed link would have let pile up meanwhile
        target = metadata_offset(c, leader)
        wait_until(lambda: metadata_offset(c, voter) >= target, 10,
                   what=f"node {voter} applying the metadata log up to the leader's {target} while the delay is on")
        view = raft_view(c, voter)
        changes = events_since(c, voter, since, "controller_changed")
    finally:
        call(http_of(c, voter), "DELETE", f"/v1/faults/{delay['id']}")
    assert view == (leader, term), f"node {voter}'s view of the quorum under a 300 ms delay: {view}, was {(leader, term)}"
    assert not changes, f"node {voter} saw the quorum leader change under a 300 ms delay: {changes}"


def test_a_restart_starts_clean(c):
    node = c.ids[-1]
    add(c, node, kind="latency", api="DeleteRecords", ms=1)
    add(c, node, kind="disconnect", api="DescribeAcls", count=5)
    assert len(faults(c, node)) == 2
    c.restart(node)
    assert faults(c, node) == []
    c.wait_live_brokers(c.ids, timeout=30)
