"""The HTTP listener of every node (issue 22): the JSON API under /v1/, /metrics, the
event journal (/v1/events, plain and followed as server-sent events) and JSON logs. Any
node shows every partition's HW and followers and every group, asked of the leaders and
coordinators over their HTTP listeners.

One 3-node `sluice dev-cluster` for the whole file (short replica lag and broker session
timeouts, log.format=json); its tests run in order and tell one incident: a node paused
(SIGSTOP) and resumed (SIGCONT), then the active controller killed with SIGKILL. Events are
read from nodes other than the one hit, as an operator would.
"""

import http.client
import json
import os
import signal
import time
import urllib.error
import urllib.request
import uuid

import pytest

import cluster as cl
import kproto
from cluster import produce_values, wait_until
from conftest import fail_on_invariant_violations
from dev_cluster import DevCluster

LAG_MS = 1000  # replica.lag.time.max.ms: a paused follower leaves the ISRs first...
SESSION_MS = 2500  # broker.session.timeout.ms: ...and is fenced after
TOPIC = "events-isr"


class EventsDevCluster(DevCluster):
    def command(self):
        return super().command() + [
            "--set", "broker.heartbeat.interval.ms=300",
            "--set", f"broker.session.timeout.ms={SESSION_MS}",
            "--set", f"replica.lag.time.max.ms={LAG_MS}",
            "--set", "log.format=json"]

    def node_logs(self):
        return [self.data_dir / f"node-{i}" / "sluice.log" for i in sorted(self.children)]


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    d = EventsDevCluster(tmp_path_factory.mktemp("events"), brokers=3).start()
    try:
        d.wait_output(timeout=60)
        d.stopped = set()  # nodes SIGSTOPped or killed by a test
        yield d
    finally:
        for pid, _ in d.children.values():
            try:
                os.kill(pid, signal.SIGCONT)  # a stopped node cannot act on SIGTERM
            except ProcessLookupError:
                pass
        d.shutdown()
    fail_on_invariant_violations([d.log_path] + d.node_logs())


def get(addr, path, timeout=5):
    """(status, decoded JSON body) of GET http://addr/path."""
    try:
        with urllib.request.urlopen(f"http://{addr}{path}", timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def ok(addr, path):
    status, body = get(addr, path)
    assert status == 200, (path, status, body)
    return body


def events(addr, since=None):
    return ok(addr, "/v1/events" + ("" if since is None else f"?since={since}"))


def last_seq(addr):
    evs = ok(addr, "/v1/events?limit=1")
    return evs[-1]["seq"] if evs else 0


def bootstrap_of(d, ids):
    return ",".join(d.children[i][1] for i in ids)


def test_node_lines_name_the_http_listener_and_views_answer(dc):
    P = dc.base_port
    assert sorted(dc.http) == [1, 2, 3], dc.output()
    for i, addr in dc.http.items():
        assert addr == f"127.0.0.1:{P + 200 + i - 1}", (i, addr)
    clusters = {i: ok(a, "/v1/cluster") for i, a in dc.http.items()}
    ids = {c["cluster_id"] for c in clusters.values()}
    assert len(ids) == 1 and None not in ids, clusters
    for i, c in clusters.items():
        assert c["node_id"] == i, c
        assert c["quorum"]["voters"] == [1, 2, 3], c
    wait_until(lambda: all(ok(a, "/v1/cluster")["controller_id"] in (1, 2, 3) for a in dc.http.values()), 10,
               what="every node to know the active controller")
    c = ok(dc.http[1], "/v1/cluster")
    assert c["quorum"]["leader_id"] == c["controller_id"] and c["quorum"]["leader_epoch"] >= 1, c

    brokers = wait_until(lambda: (lambda b: b if all(x["live"] for x in b) and len(b) == 3 else None)(
        ok(dc.http[2], "/v1/brokers")), 10, what="3 live brokers in /v1/brokers")
    for b in brokers:
        i = b["broker_id"]
        assert b["endpoints"] == {"PLAINTEXT": f"127.0.0.1:{P + i - 1}"}, b
        assert b["fenced"] is False and b["rack"] is None, b

    status, body = get(dc.http[1], "/v1/topics/no-such-topic")
    assert status == 404 and "no-such-topic" in body["error"], (status, body)
    status, body = get(dc.http[1], "/v1/no-such-path")
    assert status == 404 and "error" in body, (status, body)
    status, body = get(dc.http[1], "/v1/events?since=soon")
    assert status == 400 and "since" in body["error"], (status, body)

    with urllib.request.urlopen(f"http://{dc.http[3]}/metrics", timeout=5) as r:
        assert r.headers["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8", r.headers
        text = r.read().decode()
    assert "sluice_live_brokers 3" in text, text

    # The cluster's start is in the journal: every broker registered and unfenced, a
    # controller elected; newest last, seq increasing.
    evs = events(dc.http[2])
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    for e in evs:
        assert {"seq", "time_ms", "type"} <= set(e), e
    registered = {e["broker_id"] for e in evs if e["type"] == "broker_registered"}
    unfenced = {e["broker_id"] for e in evs if e["type"] == "broker_unfenced"}
    assert registered == unfenced == {1, 2, 3}, evs
    reg = next(e for e in evs if e["type"] == "broker_registered" and e["broker_id"] == 2)
    assert reg["endpoints"] == {"PLAINTEXT": f"127.0.0.1:{P + 1}"} and reg["epoch"] > 0, reg
    assert isinstance(reg["time_ms"], int) and abs(reg["time_ms"] / 1000 - time.time()) < 120, reg
    assert any(e["type"] == "controller_changed" and e["controller_id"] in (1, 2, 3) for e in evs), evs
    # Metadata events are numbered alike on every node.
    other = {e["seq"]: e for e in events(dc.http[3]) if e["type"] != "controller_changed"}
    for e in evs:
        if e["type"] != "controller_changed" and e["seq"] in other:
            assert other[e["seq"]] == e, (e, other[e["seq"]])


def test_group_view_after_a_consumer_commits(dc):
    from confluent_kafka import Consumer

    bootstrap = bootstrap_of(dc, [1, 2, 3])
    topic, group = "events-group-topic", "events-group"
    cl.create_topic(bootstrap, topic, 1, 3)
    acked, errors, left = produce_values(bootstrap, topic, [b"v%d" % i for i in range(5)])
    assert (len(acked), errors, left) == (5, [], 0)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        assert len(got) == 5, got
        c.commit(message=got[-1], asynchronous=False)

        def coordinator_view():
            views = {i: get(a, f"/v1/groups/{group}?local=true") for i, a in dc.http.items()}
            found = [(i, b) for i, (s, b) in views.items() if s == 200]
            return found[0] if len(found) == 1 and found[0][1]["partitions"] else None

        coordinator, g = wait_until(coordinator_view, 10, what=f"one node coordinating {group} with its offsets")
        assert g["group_id"] == group and g["protocol_type"] == "consumer", g
        assert g["state"] == "Stable" and len(g["members"]) == 1, g
        assert {"member_id", "client_id", "client_host"} <= set(g["members"][0]), g
        # The classic protocol's assignment bytes, decoded.
        assert g["members"][0]["assignment"] == [{"topic": topic, "partitions": [0]}], g
        p = g["partitions"][0]
        assert (p["topic"], p["partition"], p["committed_offset"]) == (topic, 0, 5), g
        assert p["high_watermark"] == 5 and p["lag"] == 0, g
        # Every node answers for the group with its coordinator's view, and lists it once.
        for i, a in dc.http.items():
            assert ok(a, f"/v1/groups/{group}") == g, f"node {i}'s view of {group} differs from its coordinator's"
            listed = [x for x in ok(a, "/v1/groups") if x["group_id"] == group]
            assert len(listed) == 1 and listed[0]["state"] == "Stable", (i, listed)
            assert listed[0]["coordinator"] == coordinator, (i, listed, coordinator)
            local = [x for x in ok(a, "/v1/groups?local=true") if x["group_id"] == group]
            assert len(local) == (1 if i == coordinator else 0), (i, local)
    finally:
        c.close()
    status, body = get(dc.http[1], "/v1/groups/no-such-group")
    assert status == 404 and "no-such-group" in body["error"], (status, body)


def _share_heartbeat(port, group, member, epoch, topics):
    """One ShareGroupHeartbeat v1 to the node on `port`: (error code, epoch)."""
    body = (kproto.compact_string(group) + kproto.compact_string(member) + kproto.i32(epoch)
            + kproto.compact_nullable_string(None)
            + (kproto.uvarint(0) if topics is None else kproto.uvarint(len(topics) + 1) + b"".join(kproto.compact_string(t) for t in topics))
            + kproto.EMPTY_TAGS)
    with kproto.Conn(port) as conn:
        r = conn.request(76, 1, body, flexible=True)
        r.i32()
        err = r.i16()
        r.compact_string()  # error message
        r.compact_string()  # member id
        return err, r.i32()


def test_group_view_of_a_share_group_with_its_members_assignment(dc):
    bootstrap = bootstrap_of(dc, [1, 2, 3])
    topic, group, member = "events-share-topic", "events-share", str(uuid.uuid4())
    cl.create_topic(bootstrap, topic, 2, 3)
    ports = [int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")]
    # The share group's coordinator is the group coordinator: ask each node until one takes it.
    joined = None
    for port in ports:
        err, epoch = _share_heartbeat(port, group, member, 0, [topic])
        if err == 0:
            joined = (port, epoch)
            break
        assert err == 14 or err == 16, err  # COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR
    assert joined, "no node coordinates the share group"
    port, epoch = joined

    def assigned(addr):
        status, g = get(addr, f"/v1/groups/{group}")
        if status != 200 or not g["members"] or not g["members"][0]["assignment"]:
            _share_heartbeat(port, group, member, epoch, None)
            return None
        return g

    for i, a in dc.http.items():
        g = wait_until(lambda: assigned(a), 10, what=f"node {i} showing the share group's assignment")
        assert (g["group_type"], g["protocol_type"], g["state"]) == ("share", "share", "Stable"), g
        assert [m["member_id"] for m in g["members"]] == [member], g
        assert g["members"][0]["assignment"] == [{"topic": topic, "partitions": [0, 1]}], g
        listed = [x for x in ok(a, "/v1/groups") if x["group_id"] == group]
        assert len(listed) == 1 and listed[0]["group_type"] == "share", (i, listed)
    assert _share_heartbeat(port, group, member, -1, None)[0] == 0


def test_any_node_shows_every_partitions_progress_from_its_leader(dc):
    bootstrap = bootstrap_of(dc, [1, 2, 3])
    topic = "events-progress"
    cl.create_topic(bootstrap, topic, 3, 3)
    acked, errors, left = produce_values(bootstrap, topic, [b"p%d" % i for i in range(30)])
    assert (len(acked), errors, left) == (30, [], 0)
    per_partition = {}
    for p, _ in acked.values():
        per_partition[p] = per_partition.get(p, 0) + 1

    def complete(addr):
        t = ok(addr, f"/v1/topics/{topic}")
        parts = t["partitions"]
        good = all(p.get("high_watermark") == per_partition.get(p["partition"], 0)
                   and len(p.get("followers", [])) == 2 and all(f["lag"] == 0 for f in p["followers"])
                   for p in parts)
        return parts if good and len(parts) == 3 else None

    for i, a in dc.http.items():
        parts = wait_until(lambda: complete(a), 15, what=f"node {i} showing every partition's HW and followers")
        assert len({p["leader"] for p in parts}) >= 2, parts  # some came from a peer
        local = ok(a, f"/v1/topics/{topic}?local=true")["partitions"]
        with_hw = {p["partition"] for p in local if "high_watermark" in p}
        assert with_hw == {p["partition"] for p in parts if p["leader"] == i}, (i, local)


def _victim(dc):
    """A node that is not the active controller (pausing that one is the last test's job)."""
    ctl = ok(dc.http[1], "/v1/cluster")["controller_id"]
    return next(i for i in sorted(dc.children) if i != ctl)


def test_sigstop_shrinks_isrs_then_fences_and_moves_leaders(dc):
    bootstrap = bootstrap_of(dc, [1, 2, 3])
    cl.create_topic(bootstrap, TOPIC, 3, 3)
    wait_until(lambda: all(len(p["isr"]) == 3 and p["leader"] >= 0
                           for p in ok(dc.http[1], f"/v1/topics/{TOPIC}")["partitions"]), 15,
               what=f"{TOPIC} led with full ISRs")
    victim = _victim(dc)
    reader = next(i for i in sorted(dc.children) if i != victim)
    before = ok(dc.http[reader], f"/v1/topics/{TOPIC}")["partitions"]
    led = {p["partition"] for p in before if p["leader"] == victim}
    followed = {p["partition"] for p in before if p["leader"] != victim}
    assert led and followed, before  # 3 partitions over 3 nodes: each leads one
    since = last_seq(dc.http[reader])

    os.kill(dc.children[victim][0], signal.SIGSTOP)
    dc.stopped.add(victim)
    dc.victim, dc.reader, dc.fenced_since = victim, reader, since

    def story():
        evs = events(dc.http[reader], since)
        fenced = [e for e in evs if e["type"] == "broker_fenced" and e["broker_id"] == victim]
        moved = {e["partition"] for e in evs if e["type"] == "leader_changed" and e["topic"] == TOPIC
                 and e["previous_leader"] == victim}
        return evs if fenced and moved == led else None

    evs = wait_until(story, SESSION_MS / 1000 + 10, what=f"node {victim} fenced and its leaderships moved")
    shrunk = [e for e in evs if e["type"] == "isr_shrunk" and e["topic"] == TOPIC
              and e["partition"] in followed]
    assert {e["partition"] for e in shrunk} == followed, evs
    fence = next(e for e in evs if e["type"] == "broker_fenced" and e["broker_id"] == victim)
    for e in shrunk:
        assert victim in e["isr_before"] and victim not in e["isr_after"], e
        assert sorted(e["isr_after"]) == sorted(set(e["isr_before"]) - {victim}), e
        assert e["leader"] != victim, e
        # The leaders dropped the silent follower before the controller fenced it.
        assert e["seq"] < fence["seq"], (e, fence)
    for e in evs:
        if e["type"] == "leader_changed" and e["previous_leader"] == victim:
            assert e["reason"] == "clean" and e["leader"] not in (victim, -1), e
            assert e["seq"] > fence["seq"] and e["leader_epoch"] >= 1, e
    assert fence["epoch"] > 0 and isinstance(fence["time_ms"], int), fence

    # The topic view shows the shrunk ISRs and the paused replica offline; a leader shows
    # its paused follower falling behind once there is something to fall behind on.
    live = bootstrap_of(dc, [i for i in dc.children if i != victim])
    acked, errors, left = produce_values(live, TOPIC, [b"while-paused-%d" % i for i in range(30)])
    assert (len(acked), errors, left) == (30, [], 0)
    t = ok(dc.http[reader], f"/v1/topics/{TOPIC}")
    for p in t["partitions"]:
        assert victim not in p["isr"] and p["offline_replicas"] == [victim], t
    lagging = []
    for p in t["partitions"]:
        view = ok(dc.http[p["leader"]], f"/v1/topics/{TOPIC}")["partitions"][p["partition"]]
        assert view["high_watermark"] <= view["log_end_offset"], view
        f = {x["broker_id"]: x for x in view["followers"]}
        assert set(f) == set(p["replicas"]) - {p["leader"]}, view
        if view["log_end_offset"] > 0:
            lagging.append(f[victim]["lag"])
    assert lagging and all(lag > 0 for lag in lagging), (lagging, t)


def test_sigcont_expands_isrs_and_unfences(dc):
    victim, reader = dc.victim, dc.reader
    os.kill(dc.children[victim][0], signal.SIGCONT)
    dc.stopped.discard(victim)

    def back():
        evs = events(dc.http[reader], dc.fenced_since)
        unfenced = [e for e in evs if e["type"] == "broker_unfenced" and e["broker_id"] == victim]
        expanded = {e["partition"] for e in evs if e["type"] == "isr_expanded" and e["topic"] == TOPIC
                    and victim in e["isr_after"]}
        return (evs, unfenced[0]) if unfenced and expanded == {0, 1, 2} else None

    evs, unfence = wait_until(back, 20, what=f"node {victim} unfenced and back in every ISR of {TOPIC}")
    fence = next(e for e in evs if e["type"] == "broker_fenced" and e["broker_id"] == victim)
    assert unfence["seq"] > fence["seq"] and unfence["epoch"] == fence["epoch"], (fence, unfence)
    for e in evs:
        if e["type"] == "isr_expanded" and e["topic"] == TOPIC and victim in e["isr_after"]:
            assert victim not in e["isr_before"], e
            assert e["seq"] > fence["seq"], e
    t = ok(dc.http[victim], f"/v1/topics/{TOPIC}")
    assert all(victim in p["isr"] and p["offline_replicas"] == [] for p in t["partitions"]), t


def test_since_limit_and_follow(dc):
    addr = dc.http[dc.reader]
    all_events = events(addr)
    last = all_events[-1]["seq"]
    # The cluster may still be settling (ISRs of other topics): later events can arrive
    # between two reads, so compare only up to `last`.
    assert all(e["seq"] > last for e in events(addr, last))
    mid = all_events[len(all_events) // 2]["seq"]
    newer = events(addr, mid)
    assert newer and all(e["seq"] > mid for e in newer), newer
    assert [e for e in newer if e["seq"] <= last] == [e for e in all_events if e["seq"] > mid]
    assert [e["seq"] for e in ok(addr, f"/v1/events?since={mid}&limit=2")] == [e["seq"] for e in newer[:2]]

    host, port = addr.rsplit(":", 1)
    # Keep-alive comments come every 5 s, so a read never waits 10 s on a live stream.
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", f"/v1/events?follow=true&since={last}")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type").startswith("text/event-stream"), resp.status
    t0 = time.monotonic()
    cl.create_topic(bootstrap_of(dc, [1, 2, 3]), "events-follow", 2, 3)
    event_id, found = None, None
    while found is None and time.monotonic() - t0 < 10:
        line = resp.readline().decode().rstrip("\n")
        if line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("data:"):
            e = json.loads(line[5:].strip())
            assert e["seq"] > last and e["seq"] == event_id, (e, event_id)
            if e["type"] == "topic_created" and e["topic"] == "events-follow":
                found = e
    conn.close()
    assert found, "no topic_created for events-follow on the stream within 10 s"
    assert (found["partitions"], found["replication_factor"]) == (2, 3), found
    assert len(found["topic_id"]) == 36, found
    print(f"topic_created streamed {time.monotonic() - t0:.2f} s after the create")

    # A client reconnecting with Last-Event-ID gets what came after it only.
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/v1/events?follow", headers={"Last-Event-ID": str(found["seq"] - 1)})
    resp = conn.getresponse()
    first = None
    while first is None:
        line = resp.readline().decode()
        if line.startswith("data:"):
            first = json.loads(line[5:])
    conn.close()
    assert first["seq"] == found["seq"], (first, found)


def test_json_logs_carry_the_event_fields(dc):
    lines = []
    for path in dc.node_logs():
        for raw in path.read_text(errors="replace").splitlines():
            if raw.strip():
                obj = json.loads(raw)  # every line is one JSON object
                assert isinstance(obj, dict) and "level" in obj and "message" in obj, raw
                lines.append(obj)
    isr = [o for o in lines if "isr_before" in o and "isr_after" in o]
    assert any(o.get("topic") == TOPIC and "partition" in o and "leader" in o for o in isr), isr[:5]
    elected = [o for o in lines if "previous_leader" in o]
    assert any(o.get("topic") == TOPIC and o.get("reason") == "clean" and "leader_epoch" in o
               for o in elected), elected[:5]
    fenced = [o for o in lines if o.get("broker_id") == dc.victim and "fenc" in o["message"]]
    assert fenced, "no log line on fencing with broker_id"


def test_killing_the_controller_is_a_controller_change_on_the_survivors(dc):
    old = ok(dc.http[1], "/v1/cluster")["controller_id"]
    survivors = [i for i in sorted(dc.children) if i != old]
    since = {i: last_seq(dc.http[i]) for i in survivors}
    os.kill(dc.children[old][0], signal.SIGKILL)
    dc.stopped.add(old)

    def changed():
        out = {}
        for i in survivors:
            evs = [e for e in events(dc.http[i], since[i]) if e["type"] == "controller_changed"]
            if not evs or evs[-1]["controller_id"] not in survivors:
                return None
            out[i] = evs[-1]
        return out

    seen = wait_until(changed, 15, what=f"controller_changed away from {old} on nodes {survivors}")
    new = {e["controller_id"] for e in seen.values()}
    assert len(new) == 1, seen
    for e in seen.values():
        assert e["epoch"] >= 1 and isinstance(e["time_ms"], int), e
    wait_until(lambda: all(ok(dc.http[i], "/v1/cluster")["controller_id"] in new for i in survivors), 10,
               what="/v1/cluster to name the new controller")
