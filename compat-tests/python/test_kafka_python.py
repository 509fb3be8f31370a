"""kafka-python (pure Python client) compatibility."""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

N = 1000


@pytest.fixture
def kadmin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="compat-admin",
                         request_timeout_ms=15000)
    yield a
    a.close()


def _topic_configs(kadmin, topic):
    res = kadmin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                  config_filter="all")
    entries = res["topic"][topic]
    return {k: v["value"] for k, v in entries.items()}


def test_produce_consume_roundtrip(broker, kadmin):
    topic = "kp-roundtrip"
    kadmin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5,
                             retries=3, max_in_flight_requests_per_connection=1,
                             request_timeout_ms=15000)
    sent = []
    futures = []
    for i in range(N):
        part = i % 2
        key = f"key-{i}".encode()
        value = f"value-{i}-".encode() + bytes(range(i % 256))
        headers = [("h", str(i).encode())]
        futures.append(producer.send(topic, key=key, value=value, headers=headers,
                                     partition=part))
        sent.append((part, key, value, headers))
    producer.flush(timeout=30)
    metas = [f.get(timeout=30) for f in futures]
    producer.close(timeout=10)

    expected = {0: [], 1: []}
    for (part, key, value, headers), md in zip(sent, metas):
        assert md.partition == part
        expected[part].append((md.offset, key, value, headers))
    for part, items in expected.items():
        assert [o for o, *_ in items] == list(range(len(items))), f"partition {part} offsets"

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             request_timeout_ms=15000)
    try:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        got = {0: [], 1: []}
        deadline = time.monotonic() + 60
        while sum(len(v) for v in got.values()) < N and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    got[tp.partition].append(
                        (r.offset, r.key, r.value, [(k, v) for k, v in r.headers]))
    finally:
        consumer.close()

    assert sum(len(v) for v in got.values()) == N
    assert got == expected


def test_describe_configs_defaults(broker, kadmin):
    topic = "kp-configs"
    kadmin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    cfg = _topic_configs(kadmin, topic)
    assert cfg.get("cleanup.policy") == "delete"
    assert cfg.get("retention.ms") == "604800000"


def test_alter_and_incremental_alter(broker, kadmin):
    topic = "kp-alter"
    kadmin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                   topic_configs={"retention.ms": "100000"})])
    assert _topic_configs(kadmin, topic)["retention.ms"] == "100000"

    # Legacy (non-incremental) AlterConfigs.
    res = kadmin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})],
        incremental=False)
    assert res == {"topic": {topic: "OK"}}, res
    assert _topic_configs(kadmin, topic)["retention.ms"] == "3600000"

    # IncrementalAlterConfigs SET.
    res = kadmin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic,
                        configs={"retention.ms": (AlterConfigOp.SET, "7200000"),
                                 "cleanup.policy": (AlterConfigOp.SET, "compact")})],
        incremental=True)
    assert res == {"topic": {topic: "OK"}}, res
    cfg = _topic_configs(kadmin, topic)
    assert cfg["retention.ms"] == "7200000"
    assert cfg["cleanup.policy"] == "compact"

    # IncrementalAlterConfigs DELETE reverts to the default.
    res = kadmin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic,
                        configs={"retention.ms": (AlterConfigOp.DELETE, None)})],
        incremental=True)
    assert res == {"topic": {topic: "OK"}}, res
    cfg = _topic_configs(kadmin, topic)
    assert cfg["retention.ms"] == "604800000"
    assert cfg["cleanup.policy"] == "compact"
