"""Issue 19, "done means" 1: ApiVersions against Kafka 4.4.

Every client-facing API key of Kafka 4.4 (its schema's listeners include `broker`) must
be advertised at exactly its 4.4 version range, except the keys in OWED below, each
named with the issue that brings it. A key in OWED that is already advertised at its
full 4.4 range fails too, so the table shrinks as those issues land.

The 4.4 ranges are read from compat-tests/kafka-api-versions-4.4.txt (a copy of the
project's list, read from the message JSON files of kafka-clients 4.4.0), or from the
file KAFKA_API_VERSIONS_44 names.
"""

import os
from pathlib import Path

import pytest

import kproto
from conftest import REPO_ROOT, Broker

VERSIONS_FILE = Path(os.environ.get(
    "KAFKA_API_VERSIONS_44", REPO_ROOT / "compat-tests" / "kafka-api-versions-4.4.txt"))

# Keys Sluice does not serve at their 4.4 range yet: key -> the issue that brings them.
OWED = {}

REBOOTSTRAP_REQUIRED = 129


def kafka_44_client_keys():
    """{key: (name, min, max)} for the keys Kafka 4.4 serves to clients."""
    if not VERSIONS_FILE.exists():
        pytest.fail(f"{VERSIONS_FILE} is missing (set KAFKA_API_VERSIONS_44)")
    keys = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        parts = line.split()
        if not parts or not parts[0].isdigit():
            continue
        key, name, _v41, v44, listeners = int(parts[0]), parts[1], parts[2], parts[3], parts[4]
        if "broker" not in listeners.split(","):
            continue
        lo, hi = (int(x) for x in v44.split("-"))
        keys[key] = (name, lo, hi)
    assert len(keys) > 70, f"{VERSIONS_FILE} lists only {len(keys)} client-facing keys"
    return keys


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("api-versions-44"))
    b.start()
    yield b
    b.stop()


def advertised(broker, version=3):
    with kproto.Conn(broker.port) as c:
        err, versions = kproto.api_versions(c, version)
    assert err == 0, f"ApiVersions v{version} answered error {err}"
    return versions


def test_every_client_key_is_advertised_at_its_44_range(broker):
    want = kafka_44_client_keys()
    unknown = sorted(set(OWED) - set(want))
    assert not unknown, f"OWED names keys Kafka 4.4 does not serve to clients: {unknown}"
    got = advertised(broker)
    wrong, landed, owed = [], [], []
    for key, (name, lo, hi) in sorted(want.items()):
        have = got.get(key)
        if key in OWED:
            if have == (lo, hi):
                landed.append(f"{key} {name} {lo}-{hi}: advertised in full, drop it from OWED")
            else:
                owed.append(f"{key} {name} {lo}-{hi} (advertised: {have}): issue {OWED[key]}")
        elif have != (lo, hi):
            wrong.append(f"{key} {name}: advertised {have}, Kafka 4.4 serves {lo}-{hi}")
    print("\nAPI keys still owed:\n  " + "\n  ".join(owed))
    assert not wrong, "advertised ranges differ from Kafka 4.4:\n" + "\n".join(wrong)
    assert not landed, "\n".join(landed)
    extra = sorted(k for k in got if k not in want and k not in (52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82))
    assert not extra, f"advertised keys that Kafka 4.4 does not serve at all: {extra}"


def describe_cluster_id(broker):
    from confluent_kafka.admin import AdminClient
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    return a.describe_cluster(request_timeout=10).result(timeout=15).cluster_id


def api_versions_v5(broker, cluster_id, node_id):
    """ApiVersions v5 (KIP-1242) naming the cluster and node the client means to reach."""
    body = (kproto.compact_string("sluice-compat") + kproto.compact_string("1.0")
            + kproto.compact_nullable_string(cluster_id) + kproto.i32(node_id) + kproto.EMPTY_TAGS)
    with kproto.Conn(broker.port) as c:
        r = c.request(kproto.API_VERSIONS, 5, body)
        err = r.i16()
        keys = r.compact_array(lambda rr: (rr.i16(), rr.i16(), rr.i16(), rr.tagged_fields())[:3])
    return err, keys


def test_api_versions_v5_checks_cluster_and_node(broker):
    cluster_id = describe_cluster_id(broker)
    assert cluster_id, "the broker reports a cluster id"
    err, keys = api_versions_v5(broker, cluster_id, 1)
    assert err == 0 and keys, "the right cluster and node: a normal answer"
    err, keys = api_versions_v5(broker, "another-cluster-id-AAAAA", 1)
    assert err == REBOOTSTRAP_REQUIRED and keys, "another cluster: REBOOTSTRAP_REQUIRED, with the API list"
    err, _ = api_versions_v5(broker, cluster_id, 7)
    assert err == REBOOTSTRAP_REQUIRED, "another node id at this address: REBOOTSTRAP_REQUIRED"
    err, _ = api_versions_v5(broker, None, -1)
    assert err == 0, "a client that knows neither is not checked"


# OffsetCommit v10 and OffsetFetch v10 (KIP-848) name topics by id.
OFFSET_COMMIT, OFFSET_FETCH = 8, 9
UNKNOWN_TOPIC_ID = 100


def topic_id_bytes(broker, topic):
    """The 16 bytes of `topic`'s id, created with one partition."""
    import base64
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka import TopicCollection
    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    d = a.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    return base64.urlsafe_b64decode(str(d.topic_id) + "==")


def offset_commit_v10(broker, group, topic_id, offset):
    """[(topic id, partition, error)] of committing `offset` to partition 0 of `topic_id`."""
    partition = kproto.i32(0) + kproto.i64(offset) + kproto.i32(-1) + kproto.compact_nullable_string(None) + kproto.EMPTY_TAGS
    topic = topic_id + kproto.uvarint(2) + partition + kproto.EMPTY_TAGS
    body = (kproto.compact_string(group) + kproto.i32(-1) + kproto.compact_string("")
            + kproto.compact_nullable_string(None) + kproto.uvarint(2) + topic + kproto.EMPTY_TAGS)
    with kproto.Conn(broker.port) as c:
        r = c.request(OFFSET_COMMIT, 10, body, flexible=True)
        r.i32()
        topics = r.compact_array(lambda t: (t._take(16), t.compact_array(
            lambda p: (p.i32(), p.i16(), p.tagged_fields())[:2]), t.tagged_fields())[:2])
    return [(tid, p, err) for tid, parts in topics for p, err in parts]


def offset_fetch_v10(broker, group, topic_id):
    """[(topic id, partition, offset, error)] for partition 0 of `topic_id`."""
    topic = topic_id + kproto.uvarint(2) + kproto.i32(0) + kproto.EMPTY_TAGS
    grp = (kproto.compact_string(group) + kproto.compact_nullable_string(None) + kproto.i32(-1)
           + kproto.uvarint(2) + topic + kproto.EMPTY_TAGS)
    body = kproto.uvarint(2) + grp + kproto.i8(0) + kproto.EMPTY_TAGS
    with kproto.Conn(broker.port) as c:
        r = c.request(OFFSET_FETCH, 10, body, flexible=True)
        r.i32()
        groups = r.compact_array(lambda g: (g.compact_string(), g.compact_array(
            lambda t: (t._take(16), t.compact_array(
                lambda p: (p.i32(), p.i64(), p.i32(), p.compact_string(), p.i16(), p.tagged_fields())),
                t.tagged_fields())[:2]), g.i16(), g.tagged_fields()))
    (_, topics, group_error, _), = groups
    assert group_error == 0, f"OffsetFetch v10 group error {group_error}"
    return [(tid, p[0], p[1], p[4]) for tid, parts in topics for p in parts]


COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS = 15, 14


def test_offset_commit_and_fetch_v10_name_topics_by_id(broker):
    import time
    tid = topic_id_bytes(broker, "v10-offsets")
    # As a client would: FindCoordinator (which creates the offsets topic), until it answers.
    deadline = time.monotonic() + 30
    while True:
        with kproto.Conn(broker.port) as c:
            err = c.request(kproto.FIND_COORDINATOR, 0, kproto.string("v10-group")).i16()
        got = offset_commit_v10(broker, "v10-group", tid, 42) if err == 0 else None
        if (got and got[0][2] not in (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert got == [(tid, 0, 0)]
    assert offset_fetch_v10(broker, "v10-group", tid) == [(tid, 0, 42, 0)]
    unknown = bytes(range(1, 17))
    assert offset_commit_v10(broker, "v10-group", unknown, 7) == [(unknown, 0, UNKNOWN_TOPIC_ID)]
    assert offset_fetch_v10(broker, "v10-group", unknown) == [(unknown, 0, -1, UNKNOWN_TOPIC_ID)]
