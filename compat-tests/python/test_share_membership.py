"""Share-group membership survives the coordinator's restart (KIP-932; Kafka keeps it in
__consumer_offsets as ShareGroup* records and replays them on load): a member keeps its id
and epoch and the group epoch goes on after a kill -9, an Empty share group is still
listed and describable after a restart, and a deleted one stays deleted. Raw
ShareGroupHeartbeat / ShareGroupDescribe / ListGroups / DeleteGroups over sockets (no
Python client has a share consumer). One broker for the file's first tests; the last
kills the coordinator of a 3-node cluster."""

import time

import pytest

import kproto as kp
from conftest import Broker, fail_on_invariant_violations
from helpers import create_topic

HEARTBEAT, DESCRIBE, LIST_GROUPS, DELETE_GROUPS, FIND_COORDINATOR = 76, 77, 16, 42, 10
NOT_READY = (14, 15, 16)
UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND = 25, 69
TOPIC = "share-membership"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("share-membership"))
    b.start()
    create_topic(b.bootstrap, TOPIC, partitions=2)
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


def until_ready(call, what):
    """Calls `call` until its first item is not a coordinator-not-ready error."""
    deadline = time.monotonic() + 30
    while True:
        got = call()
        if got[0] not in NOT_READY or time.monotonic() > deadline:
            assert got[0] not in NOT_READY, f"{what}: coordinator not ready within 30 s ({got})"
            return got
        time.sleep(0.2)


def find_coordinator(port, group):
    """FindCoordinator v6 of a group: (error, node id, port)."""
    with kp.Conn(port) as c:
        r = c.request(FIND_COORDINATOR, 6, kp.i8(0) + kp.uvarint(2) + kp.compact_string(group) + kp.EMPTY_TAGS, flexible=True)
        r.i32()
        (got,) = r.compact_array(lambda x: (x.compact_string(), x.i32(), x.compact_string(), x.i32(), x.i16(),
                                            x.compact_string(), x.tagged_fields()))
        return got[4], got[1], got[3]


def heartbeat(port, group, member_id, epoch, subscribe=None):
    """One ShareGroupHeartbeat v1 (after FindCoordinator, which has the broker load the
    group's partition): (error, member id, member epoch)."""
    with kp.Conn(port) as c:
        c.request(FIND_COORDINATOR, 6, kp.i8(0) + kp.uvarint(2) + kp.compact_string(group) + kp.EMPTY_TAGS, flexible=True)
        body = kp.compact_string(group) + kp.compact_string(member_id) + kp.i32(epoch) + kp.compact_nullable_string(None)
        body += (kp.uvarint(len(subscribe) + 1) + b"".join(kp.compact_string(t) for t in subscribe)
                 if subscribe else kp.uvarint(0))
        r = c.request(HEARTBEAT, 1, body + kp.EMPTY_TAGS, flexible=True)
        r.i32()
        err = r.i16()
        r.compact_string()
        return err, r.compact_string(), r.i32()


def describe(port, group):
    """ShareGroupDescribe v1 of one group: (error, state, group epoch, {member id: epoch})."""
    with kp.Conn(port) as c:
        r = c.request(DESCRIBE, 1, kp.uvarint(2) + kp.compact_string(group) + kp.i8(0) + kp.EMPTY_TAGS, flexible=True)
        r.i32()

        def member(m):
            mid = m.compact_string()
            m.compact_string()
            epoch = m.i32()
            m.compact_string(), m.compact_string()
            m.compact_array(lambda t: t.compact_string())
            m.compact_array(lambda t: (t._take(16), t.compact_string(), t.compact_array(lambda p: p.i32()), t.tagged_fields()))
            m.tagged_fields()
            m.tagged_fields()
            return mid, epoch

        def group_(g):
            err = g.i16()
            g.compact_string(), g.compact_string()
            state, epoch = g.compact_string(), g.i32()
            g.i32(), g.compact_string()
            members = dict(g.compact_array(member) or [])
            g.i32(), g.tagged_fields()
            return err, state, epoch, members

        (got,) = r.compact_array(group_)
        return got


def list_share_groups(port):
    """ListGroups v5 filtered to the share type: {group id: state}."""
    with kp.Conn(port) as c:
        body = kp.uvarint(1) + kp.uvarint(2) + kp.compact_string("Share") + kp.EMPTY_TAGS
        r = c.request(LIST_GROUPS, 5, body, flexible=True)
        r.i32()
        assert r.i16() == 0
        groups = r.compact_array(lambda g: (g.compact_string(), g.compact_string(), g.compact_string(),
                                            g.compact_string(), g.tagged_fields()))
        return {g[0]: g[2] for g in groups or []}


def delete_group(port, group):
    """DeleteGroups v2 of one group: its error."""
    with kp.Conn(port) as c:
        r = c.request(DELETE_GROUPS, 2, kp.uvarint(2) + kp.compact_string(group) + kp.EMPTY_TAGS, flexible=True)
        r.i32()
        (err,) = r.compact_array(lambda g: (g.compact_string(), g.i16(), g.tagged_fields())[1])
        return err


def test_a_member_keeps_its_id_and_epoch_after_a_kill_9(broker):
    g = "sm-kill"
    err, a, _ = until_ready(lambda: heartbeat(broker.port, g, "", 0, [TOPIC]), "join a")
    assert err == 0
    err, b, b_epoch = heartbeat(broker.port, g, "", 0, [TOPIC])
    assert err == 0 and b_epoch == 2
    # a catches up with the epoch b's join made.
    err, _, a_epoch = heartbeat(broker.port, g, a, 1)
    assert (err, a_epoch) == (0, 2)
    before = describe(broker.port, g)
    assert before == (0, "Stable", 2, {a: 2, b: 2})

    broker.restart(kill=True)

    # Both go on with their ids and epochs: no UNKNOWN_MEMBER_ID, no FENCED_MEMBER_EPOCH.
    assert until_ready(lambda: heartbeat(broker.port, g, a, 2), "a after restart") == (0, a, 2)
    assert heartbeat(broker.port, g, b, 2) == (0, b, 2)
    assert describe(broker.port, g) == before
    # The group epoch goes on from the stored one.
    err, c, c_epoch = heartbeat(broker.port, g, "", 0, [TOPIC])
    assert (err, c_epoch) == (0, 3)
    # A member that left stays gone after another restart.
    assert heartbeat(broker.port, g, b, -1)[0] == 0
    broker.restart(kill=True)
    assert until_ready(lambda: heartbeat(broker.port, g, b, 3), "b after leaving")[0] == UNKNOWN_MEMBER_ID
    err, state, epoch, members = describe(broker.port, g)
    assert (err, state, epoch, sorted(members)) == (0, "Stable", 4, sorted([a, c]))


def test_an_empty_group_outlives_a_restart_until_deleted(broker):
    g = "sm-empty"
    err, a, epoch = until_ready(lambda: heartbeat(broker.port, g, "", 0, [TOPIC]), "join")
    assert (err, epoch) == (0, 1)
    assert heartbeat(broker.port, g, a, -1)[0] == 0
    assert list_share_groups(broker.port).get(g) == "Empty"

    broker.restart()

    until_ready(lambda: heartbeat(broker.port, "sm-warm", "", 0, [TOPIC]), "warm-up join")
    assert list_share_groups(broker.port).get(g) == "Empty"
    assert describe(broker.port, g) == (0, "Empty", 2, {})
    assert delete_group(broker.port, g) == 0

    broker.restart(kill=True)

    until_ready(lambda: heartbeat(broker.port, "sm-warm2", "", 0, [TOPIC]), "warm-up join")
    assert g not in list_share_groups(broker.port)
    assert describe(broker.port, g)[0] == GROUP_ID_NOT_FOUND


def test_membership_survives_a_kill_9_of_the_coordinator_in_a_cluster(start_cluster):
    c = start_cluster(3, offsets_topic_replication_factor=3)
    c.create_topic(TOPIC, 2, 3)
    g = "sm-cluster"

    def at_coordinator(via, member_id, epoch, subscribe=None):
        err, node, port = find_coordinator(via, g)
        return heartbeat(port, g, member_id, epoch, subscribe) if err == 0 else (err, None, None)

    port0 = c.node(c.ids[0]).port
    err, a, _ = until_ready(lambda: at_coordinator(port0, "", 0, [TOPIC]), "join a")
    assert err == 0
    err, b, _ = at_coordinator(port0, "", 0, [TOPIC])
    assert err == 0
    assert at_coordinator(port0, a, 1) == (0, a, 2)
    coordinator = find_coordinator(port0, g)[1]

    c.kill(coordinator)

    via = c.node([i for i in c.ids if i != coordinator][0]).port

    def after_failover():
        try:
            return at_coordinator(via, a, 2)
        except (OSError, kp.ConnectionClosed):
            # The dead node is still named coordinator until its partitions move.
            return (NOT_READY[0], None, None)

    assert until_ready(after_failover, "a at the new coordinator") == (0, a, 2)
    assert find_coordinator(via, g)[1] != coordinator
    assert at_coordinator(via, b, 2) == (0, b, 2)
    # The group epoch goes on: a third member's join makes it 3.
    assert at_coordinator(via, "", 0, [TOPIC])[2] == 3
