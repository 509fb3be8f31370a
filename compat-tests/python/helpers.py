"""Shared client-side helpers (confluent-kafka based)."""

import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap, name, partitions=1, config=None, timeout=30):
    a = admin(bootstrap)
    fut = a.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=timeout, request_timeout=timeout)
    fut[name].result(timeout=timeout)
    wait_for_partitions(a, name, partitions, timeout)
    return a


def wait_for_partitions(a, name, partitions, timeout=15):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        md = a.list_topics(topic=name, timeout=5)
        t = md.topics.get(name)
        last = t
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return t
        time.sleep(0.1)
    raise AssertionError(f"topic {name} did not get {partitions} led partitions: {last}")


def describe_topic_configs(a, name, timeout=15):
    res = ConfigResource(ResourceType.TOPIC, name)
    futs = a.describe_configs([res], request_timeout=timeout)
    entries = futs[res].result(timeout=timeout)
    return {k: e.value for k, e in entries.items()}


def new_consumer(bootstrap, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "sluice-compat-unused",  # required by the client; never subscribed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        "check.crcs": True,
    }
    conf.update(extra)
    return Consumer(conf)


def read_all(bootstrap, topic, partitions, expected=None, timeout=60, **extra):
    """Read every partition from the beginning until EOF on all of them (and, if
    `expected` is given, until that many records were seen).

    Returns {partition: [Message, ...]} in the order delivered.
    """
    c = new_consumer(bootstrap, **extra)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out = {p: [] for p in range(partitions)}
        eof = set()
        total = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msgs = c.consume(num_messages=1000, timeout=0.5)
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(f"consumer error: {err}")
                out[m.partition()].append(m)
                eof.discard(m.partition())
                total += 1
            if len(eof) == partitions and (expected is None or total >= expected):
                return out
        raise AssertionError(
            f"timed out reading {topic}: got {total} records"
            f"{'' if expected is None else f' of {expected}'}, eof partitions {sorted(eof)}")
    finally:
        c.close()


def unique_topic(prefix):
    return f"{prefix}-{int(time.time() * 1000) % 10_000_000}"


def kafka_tools_lib():
    """The directory of Kafka 4.4's tool jars (compat-tests/cli/fetch-lib.sh fetches them)."""
    here = Path(__file__).resolve().parent
    for lib in (here.parent / "cli" / "lib", Path("/work/main/compat-tests/cli/lib")):
        if (lib / "kafka-tools-4.4.0.jar").exists():
            return lib
    pytest.skip("Kafka's tools are not fetched (compat-tests/cli/fetch-lib.sh)")
