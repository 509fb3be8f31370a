"""confluent-kafka (librdkafka) end-to-end compatibility."""

from confluent_kafka import Producer

from helpers import admin, create_topic, read_all

CODECS = ["gzip", "snappy", "lz4", "zstd", "none"]
PER_CODEC = 20_000
PARTITIONS = 3


def _value(codec, i):
    # Somewhat compressible, varying length.
    return (f"value|{codec}|{i:06d}|" + "abcdefgh" * (i % 13)).encode()


def _headers(codec, i):
    return [("codec", codec.encode()), ("seq", str(i).encode()), ("empty", b""),
            ("null", None)]


def test_metadata_shows_partitions(broker):
    a = create_topic(broker.bootstrap, "meta-topic", partitions=PARTITIONS)
    md = a.list_topics(timeout=10)
    assert "meta-topic" in md.topics
    t = md.topics["meta-topic"]
    assert t.error is None
    assert sorted(t.partitions) == [0, 1, 2]
    for p in t.partitions.values():
        assert p.leader == 1
        assert p.error is None
    assert 1 in md.brokers
    b = md.brokers[1]
    assert (b.host, b.port) == ("127.0.0.1", broker.port)

    cluster = a.describe_cluster(request_timeout=10).result(timeout=15)
    assert [n.id for n in cluster.nodes] == [1]


def test_produce_all_codecs_and_read_back(broker):
    topic = "codecs"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)

    # (codec, i) -> (partition, offset), plus per-partition production order.
    delivered = {}
    errors = []
    for codec in CODECS:
        p = Producer({
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "compression.type": codec,
            "linger.ms": 5,
            "enable.idempotence": False,
            # One request in flight: a retried batch (after a retriable error such as
            # NOT_LEADER_OR_FOLLOWER) cannot overtake a later one, so per-partition
            # order is a broker property here.
            "max.in.flight.requests.per.connection": 1,
            "message.timeout.ms": 60000,
        })

        def on_delivery(err, msg, codec=codec):
            if err is not None:
                errors.append((codec, err))
                return
            i = int(msg.key().decode().split("-")[1])
            delivered[(codec, i)] = (msg.partition(), msg.offset())

        # Start with the topic's metadata known to this producer.
        md = p.list_topics(topic, timeout=10)
        assert len(md.topics[topic].partitions) == PARTITIONS

        for i in range(PER_CODEC):
            while True:
                try:
                    p.produce(topic, key=f"{codec}-{i}".encode(), value=_value(codec, i),
                              headers=_headers(codec, i), on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 1000 == 0:
                p.poll(0)
        remaining = p.flush(60)
        assert remaining == 0, f"{codec}: {remaining} messages not delivered"

    assert errors == [], f"delivery errors: {errors[:10]}"
    assert len(delivered) == PER_CODEC * len(CODECS)

    # Every partition got something (keys are spread by the hash partitioner).
    by_partition = {p: [] for p in range(PARTITIONS)}
    for codec in CODECS:  # production order: codecs sequentially, i ascending
        for i in range(PER_CODEC):
            part, off = delivered[(codec, i)]
            by_partition[part].append((off, codec, i))
    for part, items in by_partition.items():
        assert items, f"partition {part} received no records"
        bad = [(x, y) for x, y in zip(items, items[1:]) if x[0] >= y[0]]
        assert not bad, (f"partition {part}: {len(bad)} offset inversions in production "
                         f"order, e.g. {bad[:5]}")

    got = read_all(broker.bootstrap, topic, PARTITIONS, expected=PER_CODEC * len(CODECS),
                   timeout=120)
    total = sum(len(v) for v in got.values())
    assert total == PER_CODEC * len(CODECS)

    for part, msgs in got.items():
        expected = by_partition[part]
        assert len(msgs) == len(expected), f"partition {part}: {len(msgs)} != {len(expected)}"
        for m, (off, codec, i) in zip(msgs, expected):
            assert m.offset() == off, f"partition {part}: offset {m.offset()} != {off}"
            assert m.key() == f"{codec}-{i}".encode()
            assert m.value() == _value(codec, i)
            assert m.headers() == _headers(codec, i), f"headers at {part}/{off}"


def _produce_and_check(broker, topic, acks, n=1000):
    create_topic(broker.bootstrap, topic, partitions=1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "linger.ms": 5,
                  "enable.idempotence": False,
                  "max.in.flight.requests.per.connection": 1})
    errors = []
    offsets = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=cb)
    assert p.flush(30) == 0
    assert errors == []
    assert len(offsets) == n
    got = read_all(broker.bootstrap, topic, 1, expected=n, timeout=30)[0]
    assert [m.value() for m in got] == [b"v%d" % i for i in range(n)]
    assert [m.key() for m in got] == [b"k%d" % i for i in range(n)]
    assert [m.offset() for m in got] == list(range(n))
    return offsets


def test_acks_1(broker):
    offsets = _produce_and_check(broker, "acks1", "1")
    assert offsets == list(range(1000))


def test_acks_0(broker):
    _produce_and_check(broker, "acks0", "0")


def test_idempotent_producer_smoke(broker):
    topic = "idem-client"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                  "linger.ms": 5})
    errors = []
    p_keys = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            p_keys.append(msg.key())

    for i in range(5000):
        p.produce(topic, key=b"%d" % i, value=b"x" * (i % 50), on_delivery=cb)
    assert p.flush(30) == 0
    assert errors == []
    got = read_all(broker.bootstrap, topic, PARTITIONS, expected=5000, timeout=30)
    keys = [m.key() for msgs in got.values() for m in msgs]
    assert len(keys) == 5000
    assert sorted(keys) == sorted(b"%d" % i for i in range(5000))
    a = admin(broker.bootstrap)
    assert topic in a.list_topics(timeout=10).topics
