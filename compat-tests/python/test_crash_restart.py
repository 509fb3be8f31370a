"""Durability across SIGKILL and clean SIGTERM restarts."""

import threading
import time

from confluent_kafka import Producer

from helpers import admin, create_topic, describe_topic_configs, read_all, wait_for_partitions

PARTITIONS = 3
MAX_RECORDS = 150_000


def test_acked_records_survive_kill_9(broker):
    topic = "crash"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)

    acked = []  # (partition, offset, value)
    errors = []
    stop = threading.Event()
    produced = [0]

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            errors.append(err)

    p = Producer({
        "bootstrap.servers": broker.bootstrap,
        "acks": "all",
        "linger.ms": 2,
        "enable.idempotence": False,
        "message.timeout.ms": 20000,
        "retry.backoff.ms": 100,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    })

    def produce_loop():
        n = 0
        while not stop.is_set() and n < MAX_RECORDS:
            # bounded rate: at most ~100 records every 5 ms (~20k/s)
            for _ in range(100):
                try:
                    p.produce(topic, key=b"%d" % (n % 97), value=b"val-%08d" % n,
                              on_delivery=on_delivery)
                    n += 1
                except BufferError:
                    break
            p.poll(0)
            time.sleep(0.005)
        produced[0] = n

    t = threading.Thread(target=produce_loop, daemon=True)
    t.start()
    try:
        time.sleep(2.0)
        acked_before_kill = len(acked)
        broker.stop(kill=True)
        time.sleep(0.5)
        broker.start()
        time.sleep(1.5)
    finally:
        stop.set()
        t.join(30)
    remaining = p.flush(30)

    assert acked_before_kill > 0, "nothing was acknowledged before the kill; test is void"
    assert len(acked) > 0
    print(f"produced={produced[0]} acked={len(acked)} (before kill {acked_before_kill}) "
          f"errors={len(errors)} unflushed={remaining}")

    got = read_all(broker.bootstrap, topic, PARTITIONS, timeout=90)
    log = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
    missing = [(pp, o, v) for pp, o, v in acked if log.get((pp, o)) != v]
    assert not missing, (
        f"{len(missing)} of {len(acked)} acknowledged records missing or different after "
        f"kill -9, e.g. {missing[:5]} (found there: "
        f"{[log.get((pp, o)) for pp, o, _ in missing[:5]]})")
    # offsets in each partition's log are dense from 0 after recovery
    for part, msgs in got.items():
        offs = [m.offset() for m in msgs]
        assert offs == list(range(len(offs))), f"partition {part}: gaps in offsets"


def test_clean_restart_keeps_topics_and_configs(broker):
    topic = "durable-config"
    create_topic(broker.bootstrap, topic, partitions=2, config={"retention.ms": "12345"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce(topic, value=b"r%d" % i, partition=i % 2)
    assert p.flush(30) == 0

    broker.restart(kill=False)
    assert not broker.last_stop_escalated, "broker ignored SIGTERM (needed SIGKILL)"

    a = admin(broker.bootstrap)
    wait_for_partitions(a, topic, 2)
    assert describe_topic_configs(a, topic)["retention.ms"] == "12345"
    got = read_all(broker.bootstrap, topic, 2, expected=10, timeout=30)
    assert [m.value() for m in got[0]] == [b"r%d" % i for i in range(0, 10, 2)]
    assert [m.value() for m in got[1]] == [b"r%d" % i for i in range(1, 10, 2)]
