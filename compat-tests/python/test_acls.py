"""ACLs with Kafka's semantics, through confluent-kafka's AdminClient (librdkafka).

Plaintext connections are all User:ANONYMOUS, so the tests first run as a super user
(super.users=User:ANONYMOUS) to create topics and ACLs, then restart the broker without
it: the ACLs must have survived, and decide what User:ANONYMOUS may do.
"""

import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

import kproto as kp
from helpers import kafka_tools_lib

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ME = "User:ANONYMOUS"
CREATE_ACLS, DESCRIBE_ACLS = 30, 29
INVALID_REQUEST = 42
SECURITY_DISABLED = 54
TOPIC_AUTHORIZATION_FAILED = 29


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap})


def allow(rtype, name, op, pattern=ResourcePatternType.LITERAL, perm=AclPermissionType.ALLOW):
    return AclBinding(rtype, name, pattern, ME, "*", op, perm)


def create_acls(a, bindings):
    for f in a.create_acls(bindings, request_timeout=20).values():
        f.result(timeout=30)


def describe_all(a):
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return sorted(a.describe_acls(f, request_timeout=20).result(timeout=30))


def produce_one(b, topic):
    """The delivery error code of one message (0 if it was written)."""
    p = Producer({"bootstrap.servers": b.bootstrap, "message.timeout.ms": 10000, "retries": 0})
    out = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: out.append(err))
    p.flush(20)
    assert out, "no delivery report"
    return 0 if out[0] is None else out[0].code()


def consume(b, topic, group, timeout=20):
    """(messages read, first error code) for a group consumer of `topic`."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got, error = 0, None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not got and error is None:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    error = m.error().code()
                continue
            got += 1
    except KafkaException as e:
        error = e.args[0].code()
    finally:
        c.close()
    return got, error


@pytest.fixture
def secured(start_broker):
    """A broker whose ACLs were set up by a super user, restarted without one."""
    b = start_broker({"authorizer.class.name": AUTHORIZER, "super.users": ME})
    a = admin(b)
    topics = ["app.orders", "app.secret", "other"]
    for f in a.create_topics([NewTopic(t, 1, 1) for t in topics], request_timeout=20).values():
        f.result(timeout=30)
    create_acls(a, [
        # Enough on the cluster to manage ACLs afterwards.
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER),
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        allow(ResourceType.TOPIC, "app.", AclOperation.ALL, ResourcePatternType.PREFIXED),
        allow(ResourceType.TOPIC, "app.secret", AclOperation.WRITE, perm=AclPermissionType.DENY),
        allow(ResourceType.GROUP, "readers", AclOperation.READ),
    ])
    before = describe_all(a)
    assert len(before) == 5
    b.settings.pop("super.users")
    b.restart()
    return b, before


def test_acls_survive_a_restart_and_describe_filters(secured):
    b, before = secured
    a = admin(b)
    assert describe_all(a) == before
    f = AclBindingFilter(ResourceType.TOPIC, "app.orders", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    matched = a.describe_acls(f, request_timeout=20).result(timeout=30)
    assert {m.name for m in matched} == {"app."}, matched


def test_prefixed_allow_lets_produce_and_elsewhere_topic_authorization_fails(secured):
    b, _ = secured
    assert produce_one(b, "app.orders") == 0
    assert produce_one(b, "other") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_deny_beats_the_prefixed_allow_until_it_is_deleted(secured):
    b, _ = secured
    assert produce_one(b, "app.secret") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    a = admin(b)
    f = AclBindingFilter(ResourceType.TOPIC, "app.secret", ResourcePatternType.LITERAL, ME, "*", AclOperation.WRITE,
                         AclPermissionType.DENY)
    deleted = a.delete_acls([f], request_timeout=20)[f].result(timeout=30)
    assert len(deleted) == 1 and deleted[0].permission_type == AclPermissionType.DENY
    assert produce_one(b, "app.secret") == 0


def test_unauthorized_topics_are_hidden_from_metadata(secured):
    b, _ = secured
    names = set(admin(b).list_topics(timeout=10).topics)
    assert {"app.orders", "app.secret"} <= names
    assert "other" not in names


def test_a_group_needs_its_own_read_acl(secured):
    b, _ = secured
    assert produce_one(b, "app.orders") == 0
    got, err = consume(b, "app.orders", "strangers")
    assert (got, err) == (0, KafkaError.GROUP_AUTHORIZATION_FAILED)
    got, err = consume(b, "app.orders", "readers")
    assert got == 1 and err is None


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(start_broker):
    b = start_broker()
    a = admin(b)  # kept: a client destroyed mid-request fails it with _DESTROY
    fut = a.create_acls([allow(ResourceType.TOPIC, "t", AclOperation.READ)], request_timeout=20)
    with pytest.raises(KafkaException) as e:
        list(fut.values())[0].result(timeout=30)
    assert e.value.args[0].code() == KafkaError.SECURITY_DISABLED
    # librdkafka's describe_acls shows an error response as an empty list: ask by hand.
    assert raw_describe_acls(b, 1) == SECURITY_DISABLED


def test_without_cluster_alter_creating_acls_is_refused(start_broker):
    b = start_broker({"authorizer.class.name": AUTHORIZER})
    a = admin(b)
    fut = a.create_acls([allow(ResourceType.TOPIC, "t", AclOperation.READ)], request_timeout=20)
    with pytest.raises(KafkaException) as e:
        list(fut.values())[0].result(timeout=30)
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def raw_create_acls(b, rtype, pattern, principal="User:alice", op=3, perm=3):
    """CreateAcls v1 by hand: the error code of its one creation."""
    body = kp.array([None], lambda _: (kp.i8(rtype) + kp.string("t") + kp.i8(pattern) + kp.string(principal)
                                       + kp.string("*") + kp.i8(op) + kp.i8(perm)))
    with kp.Conn(b.port) as c:
        r = c.request(CREATE_ACLS, 1, body, flexible=False)
        r.i32()  # throttle
        results = r.array(lambda r: (r.i16(), r.string()))
    assert len(results) == 1
    return results[0][0]


def raw_describe_acls(b, rtype):
    """DescribeAcls v1 by hand (every pattern, operation and permission): its error code."""
    body = kp.i8(rtype) + kp.nullable_string(None) + kp.i8(1) + kp.nullable_string(None) + kp.nullable_string(None) \
        + kp.i8(1) + kp.i8(1)
    with kp.Conn(b.port) as c:
        r = c.request(DESCRIBE_ACLS, 1, body, flexible=False)
        r.i32()  # throttle
        return r.i16()


def test_bad_acl_input_is_an_invalid_request(start_broker):
    b = start_broker({"authorizer.class.name": AUTHORIZER, "super.users": ME})
    assert raw_create_acls(b, 42, 3) == INVALID_REQUEST, "unknown resource type"
    assert raw_create_acls(b, 1, 3) == INVALID_REQUEST, "ANY resource type"
    assert raw_create_acls(b, 2, 9) == INVALID_REQUEST, "unknown pattern type"
    assert raw_create_acls(b, 2, 2) == INVALID_REQUEST, "MATCH is only for filters"
    assert raw_create_acls(b, 2, 3, principal="alice") == INVALID_REQUEST, "principal without a type"
    assert raw_create_acls(b, 2, 3, op=1) == INVALID_REQUEST, "ANY operation"
    assert raw_create_acls(b, 2, 3) == 0
    # An unknown filter in a DescribeAcls is refused too.
    assert raw_describe_acls(b, 42) == INVALID_REQUEST
    assert b.is_alive()


def acl_command(lib, *args):
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{lib}/*", "org.apache.kafka.tools.AclCommand", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_kafka_acls_tool_adds_lists_and_removes(start_broker):
    lib = kafka_tools_lib()
    b = start_broker({"authorizer.class.name": AUTHORIZER, "super.users": ME})
    bs = ["--bootstrap-server", b.bootstrap]
    r = acl_command(lib, *bs, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
                    "--topic", "tool-", "--resource-pattern-type", "prefixed")
    assert r.returncode == 0, r.stdout + r.stderr
    r = acl_command(lib, *bs, "--list", "--topic", "tool-", "--resource-pattern-type", "prefixed")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "User:alice" in r.stdout and "READ" in r.stdout and "WRITE" in r.stdout, r.stdout
    r = acl_command(lib, *bs, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
                    "--topic", "tool-", "--resource-pattern-type", "prefixed")
    assert r.returncode == 0, r.stdout + r.stderr
    a = admin(b)
    left = describe_all(a)
    assert [(x.name, x.operation) for x in left] == [("tool-", AclOperation.WRITE)], left


def test_plaintext_broker_links_are_anonymous_and_replicate_as_a_super_user(start_cluster):
    """Principals come only from authentication, as in Kafka: over PLAINTEXT another
    broker's fetches are User:ANONYMOUS, so (as Kafka's docs say) a cluster with an
    authorizer and plaintext links names User:ANONYMOUS in super.users. Followers then
    fetch: acks=all with min.insync.replicas=3 needs both of them in sync."""
    from cluster import produce_values
    c = start_cluster(3, settings={"authorizer.class.name": AUTHORIZER, "super.users": ME,
                                   "broker.heartbeat.interval.ms": 500, "broker.session.timeout.ms": 3000})
    c.wait_live_brokers([1, 2, 3])
    c.create_topic("replicated", 1, 3, config={"min.insync.replicas": "3"})
    c.wait_partitions("replicated", 1, full_isr=True)
    acked, errors, undelivered = produce_values(c.bootstrap, "replicated", [b"r-%d" % i for i in range(20)])
    assert len(acked) == 20 and not errors and not undelivered, errors
