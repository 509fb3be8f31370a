"""Admin calls right after kill -9 of the active controller (issue 27).

A client that starts during the metadata quorum's election must be able to reach the
controller at once: Metadata and DescribeCluster must not name the dead node as
`controller_id` (librdkafka caches it and sends CreateTopics there, timing out), and
the broker that is named forwards the request to whichever node wins the election.

One 3-node cluster for all rounds. Each round: kill -9 the active controller (the
quorum leader, from DescribeQuorum), create a fresh confluent-kafka AdminClient on the
two survivors at once, describe_cluster, then create_topics; both within ROUND_S of
the kill. Then the killed node is restarted and the round ends once every node's own
Metadata lists all three brokers again (it is registered and unfenced). Every round
runs even after a failure, so the report says how many failed and why.

Also, on one broker: what it names as controller in each Metadata and DescribeCluster
version, and its answer to DescribeCluster for controllers (KIP-919).
"""

import os
import time

from confluent_kafka.admin import AdminClient, NewTopic

import kproto
from cluster import describe_error, raw_metadata, wait_until

ROUNDS = int(os.environ.get("SLUICE_FAILOVER_ROUNDS", "20"))
ROUND_S = 5.0  # describe_cluster + create_topics, from the kill


def _round(c, rnd):
    """One kill and the admin calls after it: (killed node, problem or None, what the
    calls saw)."""
    old = c.wait_controller(timeout=10)
    survivors = [i for i in c.ids if i != old]
    c.kill(old)
    t0 = time.monotonic()
    a = AdminClient({"bootstrap.servers": c.bootstrap_of(*survivors),
                     "socket.connection.setup.timeout.ms": 3000,
                     "reconnect.backoff.max.ms": 500})
    seen = {}

    def left():
        return max(0.1, t0 + ROUND_S - time.monotonic())

    try:
        d = a.describe_cluster(request_timeout=ROUND_S).result(timeout=left())
        named = d.controller.id if d.controller is not None else -1
        seen["described"] = (round(time.monotonic() - t0, 2), named, sorted(n.id for n in d.nodes))
        if named not in survivors:
            return old, f"describe_cluster named controller {named}, not a survivor {survivors}", seen
        name = f"failover-{rnd}"
        fut = a.create_topics([NewTopic(name, num_partitions=1, replication_factor=2)],
                              operation_timeout=ROUND_S, request_timeout=ROUND_S)[name]
        fut.result(timeout=left())
        seen["created"] = round(time.monotonic() - t0, 2)
    except Exception as e:  # noqa: BLE001 - a timeout or an error: this round failed
        return old, f"after {time.monotonic() - t0:.2f}s: {describe_error(e)}", seen
    took = time.monotonic() - t0
    if took > ROUND_S:
        return old, f"took {took:.2f}s (limit {ROUND_S}s)", seen
    return old, None, seen


def _restore(c, old):
    """Restarts `old` and waits until every node lists all brokers as live."""
    for attempt in range(10):
        try:
            c.start(old)
            break
        except AssertionError as e:
            # A client's reconnect to the dead port can land on that very port as its
            # source port (a loopback self-connect) and hold it for a moment.
            if "Address already in use" not in str(e) or attempt == 9:
                raise
            time.sleep(0.5)
    want = c.ids

    def all_see_all():
        return all(raw_metadata(c.node(i).port, [], timeout=2)["brokers"] == want for i in c.ids)
    wait_until(all_see_all, 20, what=f"every node's Metadata to list brokers {want} again")


def test_admin_calls_right_after_controller_kill(start_cluster):
    c = start_cluster(3)
    c.wait_live_brokers([1, 2, 3])
    t_start = time.monotonic()
    failures, lines = [], []
    for rnd in range(ROUNDS):
        old, problem, seen = _round(c, rnd)
        line = f"round {rnd:2d}: killed {old}, {seen}" + (f" FAILED: {problem}" if problem else "")
        lines.append(line)
        print(line)
        if problem:
            failures.append(line)
        _restore(c, old)
    total = time.monotonic() - t_start
    print(f"{ROUNDS - len(failures)} of {ROUNDS} rounds ok in {total:.1f}s")
    assert not failures, (f"{len(failures)} of {ROUNDS} rounds failed ({total:.1f}s):\n"
                          + "\n".join(lines))


def _describe_cluster_v1(port, endpoint_type):
    """(error code, endpoint type, controller id, broker ids) of a raw DescribeCluster v1."""
    body = kproto.i8(0) + kproto.i8(endpoint_type) + kproto.EMPTY_TAGS
    with kproto.Conn(port) as c:
        r = c.request(kproto.DESCRIBE_CLUSTER, 1, body)
    r.i32()  # throttle
    err = r.i16()
    r.compact_string()  # error message
    etype = r.i8()
    r.compact_string()  # cluster id
    ctl = r.i32()

    def broker(rr):
        bid = rr.i32()
        rr.compact_string()
        rr.i32()
        rr.compact_string()
        rr.tagged_fields()
        return bid

    return err, etype, ctl, sorted(r.compact_array(broker) or [])


def test_controller_id_of_a_single_broker_and_endpoint_types(broker):
    """The one broker names itself in Metadata (v1+) and DescribeCluster; Metadata v0,
    which has no controller field, still answers; DescribeCluster for controllers is
    MISMATCHED_ENDPOINT_TYPE on a broker listener, as on Kafka's brokers, and an unknown
    endpoint type is UNSUPPORTED_ENDPOINT_TYPE."""
    assert raw_metadata(broker.port, [])["controller"] == 1
    with kproto.Conn(broker.port) as c:
        r = c.request(kproto.METADATA, 0, kproto.array([], kproto.string))
    brokers = r.array(lambda rr: (rr.i32(), rr.string(), rr.i32())[0])
    assert brokers == [1], brokers
    assert r.i32() == 0 and r.remaining() == 0  # no topics, and no controller field
    assert _describe_cluster_v1(broker.port, 1) == (0, 1, 1, [1])
    assert _describe_cluster_v1(broker.port, 2)[0] == 114  # MISMATCHED_ENDPOINT_TYPE
    assert _describe_cluster_v1(broker.port, 7)[0] == 115  # UNSUPPORTED_ENDPOINT_TYPE
