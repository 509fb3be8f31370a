"""Leadership moving back and moving with it (issue 6): preferred-leader election with
ElectLeaders and with auto.leader.rebalance.enable, and the group coordinator following
the leadership of its __consumer_offsets partition.

Real `sluice serve` processes (fixture `start_cluster`, see cluster.py) and confluent-kafka
(librdkafka) clients.
"""

import time

from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition

from cluster import wait_until


def _leader(c, topic, via):
    return c.raw_partitions(topic, via)[0].leader


def _offsets_partition(group, partitions=50):
    """The __consumer_offsets partition of a group: Java's String.hashCode, as Kafka."""
    h = 0
    for ch in group:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return abs(h) % partitions


def test_elect_leaders_moves_leadership_back_to_the_preferred_replica(start_cluster):
    # Automatic rebalancing off, so only the explicit election can move it back.
    c = start_cluster(3, auto_leader_rebalance_enable=False)
    c.create_topic("pref", 1, 3)
    preferred = c.partitions("pref")[0].replicas[0]
    other = next(i for i in c.ids if i != preferred)
    c.kill(preferred)
    wait_until(lambda: _leader(c, "pref", other) not in (-1, preferred), 20, what="a new leader")
    c.start(preferred)
    wait_until(lambda: sorted(c.partitions("pref", via=other)[0].isr) == sorted(c.ids), 30,
               what="the preferred replica back in the ISR")
    assert _leader(c, "pref", other) != preferred, "nothing should move it back by itself"
    a = c.admin(*c.ids)
    res = a.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", 0)]).result(timeout=15)
    err = res[TopicPartition("pref", 0)]
    assert err is None, f"election failed: {err}"
    wait_until(lambda: _leader(c, "pref", other) == preferred, 10, what="the preferred leader leading")
    # Asked again, there is nothing to do: ELECTION_NOT_NEEDED.
    again = a.elect_leaders(ElectionType.PREFERRED, [TopicPartition("pref", 0)]).result(timeout=15)
    assert again[TopicPartition("pref", 0)] is not None
    assert "ELECTION_NOT_NEEDED" in str(again[TopicPartition("pref", 0)])


def test_auto_leader_rebalance_returns_leadership(start_cluster):
    c = start_cluster(3, leader_imbalance_check_interval_seconds=1)
    c.create_topic("auto", 1, 3)
    preferred = c.partitions("auto")[0].replicas[0]
    other = next(i for i in c.ids if i != preferred)
    c.kill(preferred)
    wait_until(lambda: _leader(c, "auto", other) not in (-1, preferred), 20, what="a new leader")
    c.start(preferred)
    wait_until(lambda: _leader(c, "auto", other) == preferred, 30,
               what="leadership back on the preferred replica, with no request")


def test_group_coordinator_moves_with_its_offsets_partition(start_cluster):
    c = start_cluster(3, offsets_topic_replication_factor=3)
    c.create_topic("g", 3, 3)
    bs = c.bootstrap
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(300):
        p.produce("g", value=b"%d" % i, partition=i % 3)
    assert p.flush(20) == 0
    group = "moving-group"
    cons = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    cons.subscribe(["g"])
    n, deadline = 0, time.monotonic() + 40
    while n < 150 and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is not None and not m.error():
            n += 1
    assert n >= 150, f"consumed only {n}"
    cons.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in cons.committed([TopicPartition("g", i) for i in range(3)], timeout=10)}
    assert sum(o for o in committed.values() if o > 0) >= 150, committed
    part = _offsets_partition(group)
    coordinator = c.raw_partitions("__consumer_offsets", c.ids[0])[part].leader
    assert coordinator in c.ids, coordinator
    cons.close()
    c.kill(coordinator)
    survivors = [i for i in c.ids if i != coordinator]
    # Another broker leads the group's partition now and answers for the group, with the
    # offsets committed before the crash (commits are acknowledged once on the ISR).
    probe = Consumer({"bootstrap.servers": c.bootstrap_of(*survivors), "group.id": group})
    got = wait_until(
        lambda: (lambda r: r if r == committed else None)(
            {tp.partition: tp.offset for tp in probe.committed([TopicPartition("g", i) for i in range(3)], timeout=3)}),
        30, interval=0.5, what=f"the committed offsets {committed} from the new coordinator")
    new_coord = c.raw_partitions("__consumer_offsets", survivors[0])[part].leader
    probe.close()
    assert new_coord != coordinator and new_coord in survivors, (coordinator, new_coord)
    assert got == committed


def test_elect_leaders_answers_every_requested_partition(broker):
    """Kafka answers each partition asked for, ELECTION_NOT_NEEDED where the preferred
    replica already leads (or, unclean, where there is a leader); asked for every
    partition, it leaves those out."""
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic("elect-all", 3, 1)])["elect-all"].result(15)
    tps = [TopicPartition("elect-all", p) for p in range(3)]
    wait_until(lambda: all(p.leader >= 0 for p in a.list_topics("elect-all", timeout=5).topics["elect-all"].partitions.values()),
               10, what="leaders for elect-all")
    for kind in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        res = a.elect_leaders(kind, tps).result(timeout=15)
        assert sorted((tp.topic, tp.partition) for tp in res) == [("elect-all", p) for p in range(3)], f"{kind}: {res}"
        for tp, err in res.items():
            assert err is not None and "ELECTION_NOT_NEEDED" in str(err), f"{kind} {tp}: {err}"
    every = a.elect_leaders(ElectionType.PREFERRED, None).result(timeout=15)
    assert not any(tp.topic == "elect-all" for tp in every), f"asked for all, it reported {every}"
