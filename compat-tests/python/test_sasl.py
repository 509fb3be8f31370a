"""SASL on a SASL_PLAINTEXT client listener with librdkafka: PLAIN from the listener's
JAAS users, SCRAM-SHA-256/512 from credentials made with the Admin API; wrong passwords
and unknown mechanisms fail with an authentication error."""

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

from conftest import Broker, fail_on_invariant_violations, free_port

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret";')


class SaslBroker(Broker):
    """A broker whose one client listener is SASL_PLAINTEXT."""

    def command(self):
        cmd = super().command()
        # --listen/--advertise would make the listener PLAINTEXT; name it instead.
        for flag in ("--listen", "--advertise"):
            i = cmd.index(flag)
            del cmd[i:i + 2]
        listener = f"SASL_PLAINTEXT://{self.bootstrap}"
        # Kafka's rule: the inter-broker listener must be one of them (a single node has no
        # inter-broker links, so SASL there needs no broker credentials).
        return cmd + ["--set", f"listeners={listener}", "--set", f"advertised.listeners={listener}",
                      "--set", "security.inter.broker.protocol=SASL_PLAINTEXT"]


@pytest.fixture
def sasl_broker(tmp_path):
    b = SaslBroker(tmp_path / "sasl", {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }, port=free_port())
    b.start()
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


def client_conf(b, mechanism, user, password, errors=None):
    conf = {
        "bootstrap.servers": b.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    if errors is not None:
        conf["error_cb"] = errors.append
    return conf


def produce_and_consume(b, mechanism, user, password):
    topic = f"sasl-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    a = AdminClient(client_conf(b, mechanism, user, password))
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    p = Producer(client_conf(b, mechanism, user, password))
    for i in range(5):
        p.produce(topic, f"{mechanism}-{i}".encode())
    assert p.flush(20) == 0
    c = Consumer({**client_conf(b, mechanism, user, password), "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    assert got == [f"{mechanism}-{i}" for i in range(5)]


def auth_fails(b, mechanism, user, password):
    errors = []
    a = AdminClient(client_conf(b, mechanism, user, password, errors))
    with pytest.raises(Exception):
        a.list_topics(timeout=5)
    a.poll(1)  # error_cb runs from poll
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    return [e.str() for e in errors]


def test_plain_scram_and_wrong_passwords(sasl_broker):
    b = sasl_broker
    produce_and_consume(b, "PLAIN", "alice", "alice-secret")
    msgs = auth_fails(b, "PLAIN", "alice", "wrong")
    assert any("Invalid username or password" in m for m in msgs), msgs

    # SCRAM users are made over an authenticated admin connection.
    admin = AdminClient(client_conf(b, "PLAIN", "admin", "admin-secret"))
    ups = [UserScramCredentialUpsertion("scram256", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"s256-secret"),
           UserScramCredentialUpsertion("scram512", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"s512-secret")]
    for f in admin.alter_user_scram_credentials(ups).values():
        f.result(timeout=20)
    produce_and_consume(b, "SCRAM-SHA-256", "scram256", "s256-secret")
    produce_and_consume(b, "SCRAM-SHA-512", "scram512", "s512-secret")
    msgs = auth_fails(b, "SCRAM-SHA-256", "scram256", "wrong")
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-256" in m for m in msgs), msgs
    # A user's credential is per mechanism: scram256 has none for SHA-512.
    auth_fails(b, "SCRAM-SHA-512", "scram256", "s256-secret")
    auth_fails(b, "SCRAM-SHA-512", "nobody", "x")


def test_unauthenticated_requests_close_the_connection(sasl_broker):
    """A PLAINTEXT client on a SASL listener: its Metadata request closes the connection."""
    errors = []
    a = AdminClient({"bootstrap.servers": sasl_broker.bootstrap, "error_cb": errors.append})
    with pytest.raises(Exception):
        a.list_topics(timeout=3)
    # The broker is fine afterwards.
    produce_and_consume(sasl_broker, "PLAIN", "admin", "admin-secret")


def test_many_failed_logins_leave_the_broker_serving(sasl_broker):
    for _ in range(20):
        errors = []
        p = Producer(client_conf(sasl_broker, "SCRAM-SHA-512", "nobody", "x", errors))
        p.poll(0.3)
        p.flush(0.2)
    produce_and_consume(sasl_broker, "PLAIN", "alice", "alice-secret")


def test_sasl_users_are_the_principals_acls_name(tmp_path):
    """With the authorizer on, what a SASL login says decides: the super user (admin, via
    PLAIN) grants alice WRITE on a prefix; alice produces there and nowhere else; carol, a
    SCRAM user with no ACL, is refused the same topic."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    b = SaslBroker(tmp_path / "sasl-acl", {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }, port=free_port())
    b.start()
    try:
        admin = AdminClient(client_conf(b, "PLAIN", "admin", "admin-secret"))
        topic = f"alice.{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
        upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                              b"carol-secret")
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(timeout=20)
        acls = [AclBinding(ResourceType.TOPIC, "alice.", ResourcePatternType.PREFIXED, "User:alice", "*", op,
                           AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.DESCRIBE)]
        for f in admin.create_acls(acls).values():
            f.result(timeout=20)

        def produce(mechanism, user, password, to):
            delivered = []
            p = Producer({**client_conf(b, mechanism, user, password), "message.timeout.ms": 8000})
            p.produce(to, b"x", on_delivery=lambda err, msg: delivered.append(err))
            p.flush(15)
            return delivered

        assert produce("PLAIN", "alice", "alice-secret", topic) == [None]
        other = f"bob.{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(other, 1, 1)])[other].result(timeout=20)
        errs = produce("PLAIN", "alice", "alice-secret", other)
        assert len(errs) == 1 and errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs
        errs = produce("SCRAM-SHA-256", "carol", "carol-secret", topic)
        assert len(errs) == 1 and errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs
    finally:
        b.stop()
    fail_on_invariant_violations([b.stderr_path])
