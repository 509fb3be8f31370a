"""Issue 18's security, end to end with librdkafka (confluent-kafka) against one secured broker:
a SASL_SSL listener (PLAIN from the listener's JAAS users, SCRAM-SHA-256/512 made with the
Admin API) and an SSL listener that requires a client certificate, whose principal comes from
ssl.principal.mapping.rules. StandardAuthorizer decides; User:admin is the only super user.
The last test restarts the broker on its data dir: users and ACLs must still decide the same."""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from conftest import Broker, fail_on_invariant_violations, free_port
from test_tls import make_cert, run

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_plainuser="plain-secret";')
# CN=alice,OU=eng,O=acme,C=US -> alice: a certificate and a SASL login can name one principal.
MAPPING = "RULE:^CN=(.*?),OU=(.*?),.*$/$1/L,DEFAULT"
USERS = {"alice": (ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-256", "alice-secret"),
         "bob": (ScramMechanism.SCRAM_SHA_512, "SCRAM-SHA-512", "bob-secret")}


class SecuredBroker(Broker):
    """A broker whose client listeners are SASL_SSL and SSL (mTLS), restartable on its data dir."""

    def __init__(self, tmp_dir, certs):
        self.sasl_port, self.ssl_port = free_port(), free_port()
        super().__init__(tmp_dir, {
            "listeners": f"SASL_SSL://127.0.0.1:{self.sasl_port},SSL://127.0.0.1:{self.ssl_port}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{self.sasl_port},SSL://127.0.0.1:{self.ssl_port}",
            # A single node has no inter-broker links, so SASL there needs no broker login.
            "security.inter.broker.protocol": "SASL_SSL",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "broker-keystore.pem"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
            "listener.name.ssl.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": MAPPING,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:admin",
        }, port=self.sasl_port)

    def command(self):
        cmd = super().command()
        for flag in ("--listen", "--advertise"):
            i = cmd.index(flag)
            del cmd[i:i + 2]
        return cmd


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sec-certs")
    for ca in ("ca", "other-ca"):
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
            "-days", "2", "-subj", f"/CN=sluice test {ca}", cwd=d)
    make_cert(d, "broker", "/CN=localhost", san="IP:127.0.0.1,DNS:localhost")
    make_cert(d, "alice", "/C=US/O=acme/OU=eng/CN=alice")
    make_cert(d, "dave", "/C=US/O=acme/OU=eng/CN=dave")
    make_cert(d, "mallory", "/C=US/O=acme/OU=eng/CN=alice", ca="other-ca")
    (d / "broker-keystore.pem").write_text((d / "broker.key").read_text() + (d / "broker.pem").read_text())
    return d


@pytest.fixture(scope="module")
def secured_broker(tmp_path_factory, certs):
    b = SecuredBroker(tmp_path_factory.mktemp("secured"), certs)
    b.start()
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


def sasl(b, certs, mechanism, user, password, **kw):
    return {"bootstrap.servers": f"127.0.0.1:{b.sasl_port}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs / "ca.pem"), "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **kw}


def mtls(b, certs, who, **kw):
    return {"bootstrap.servers": f"127.0.0.1:{b.ssl_port}", "security.protocol": "SSL",
            "ssl.ca.location": str(certs / "ca.pem"), "ssl.certificate.location": str(certs / f"{who}.pem"),
            "ssl.key.location": str(certs / f"{who}.key"), **kw}


def admin_conf(b, certs):
    return sasl(b, certs, "PLAIN", "admin", "admin-secret")


def user_conf(b, certs, user):
    _, mechanism, password = USERS[user]
    return sasl(b, certs, mechanism, user, password)


def acl(principal, rtype, name, op, pattern=ResourcePatternType.LITERAL, perm=AclPermissionType.ALLOW):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


ACLS = [
    acl("User:alice", ResourceType.TOPIC, "alice.", AclOperation.ALL, ResourcePatternType.PREFIXED),
    acl("User:alice", ResourceType.TOPIC, "alice.secret", AclOperation.WRITE, perm=AclPermissionType.DENY),
    acl("User:alice", ResourceType.GROUP, "alice-group", AclOperation.READ),
    acl("User:bob", ResourceType.TOPIC, "bob.", AclOperation.ALL, ResourcePatternType.PREFIXED),
    acl("User:bob", ResourceType.GROUP, "bob-", AclOperation.READ, ResourcePatternType.PREFIXED),
    acl("User:plainuser", ResourceType.TOPIC, "plain.", AclOperation.ALL, ResourcePatternType.PREFIXED),
    acl("User:plainuser", ResourceType.GROUP, "plain-", AclOperation.READ, ResourcePatternType.PREFIXED),
]
TOPICS = ["alice.orders", "alice.secret", "alice.roundtrip", "bob.events", "bob.roundtrip", "plain.roundtrip", "other"]


def all_acls(a):
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)
    return sorted(a.describe_acls(f, request_timeout=20).result(timeout=30))


def scram_users(a):
    descs = a.describe_user_scram_credentials().result(timeout=20)
    return {u: {(i.mechanism, i.iterations) for i in d.scram_credential_infos} for u, d in descs.items()}


@pytest.fixture(scope="module")
def setup(secured_broker, certs):
    """Users, topics and ACLs, all made by the super user over SASL_SSL through the Admin API."""
    broker = secured_broker
    a = AdminClient(admin_conf(broker, certs))
    ups = [UserScramCredentialUpsertion(u, ScramCredentialInfo(m, 8192), pw.encode()) for u, (m, _, pw) in USERS.items()]
    for f in a.alter_user_scram_credentials(ups).values():
        f.result(timeout=20)
    for f in a.create_topics([NewTopic(t, 1, 1) for t in TOPICS], request_timeout=20).values():
        f.result(timeout=30)
    for f in a.create_acls(ACLS, request_timeout=20).values():
        f.result(timeout=30)
    return broker


def produce_one(conf, topic):
    """The delivery error code of one record (0 if it was written)."""
    p = Producer({**conf, "message.timeout.ms": 10000, "retries": 0})
    out = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: out.append(err))
    p.flush(20)
    assert out, "no delivery report"
    return 0 if out[0] is None else out[0].code()


def consume(conf, topic, group, want=1, timeout=20):
    """(values read, first error code) for a group consumer of `topic`."""
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got, error = [], None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and len(got) < want and error is None:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    error = m.error().code()
                continue
            got.append(m.value())
    except KafkaException as e:
        error = e.args[0].code()
    finally:
        c.close()
    return got, error


def login_errors(conf, want):
    """The error codes a client reports when it connects with `conf`: as soon as one of `want`
    came, or what came in 10 s."""
    errors = []
    # A producer connects to the bootstrap servers at once, for its first metadata request.
    p = Producer({**conf, "socket.timeout.ms": 3000, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not want & {e.code() for e in errors}:
        p.poll(0.1)
    return {e.code() for e in errors}


def test_the_admin_api_made_the_users_and_acls(setup, certs):
    a = AdminClient(admin_conf(setup, certs))
    assert scram_users(a) == {"alice": {(ScramMechanism.SCRAM_SHA_256, 8192)},
                              "bob": {(ScramMechanism.SCRAM_SHA_512, 8192)}}
    assert all_acls(a) == sorted(ACLS)


@pytest.mark.parametrize("user,topic,group", [("plainuser", "plain.roundtrip", "plain-readers"),
                                              ("alice", "alice.roundtrip", "alice-group"),
                                              ("bob", "bob.roundtrip", "bob-readers")])
def test_sasl_ssl_produce_and_group_consume(setup, certs, user, topic, group):
    """PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over TLS, each user in what its ACLs grant."""
    conf = sasl(setup, certs, "PLAIN", user, "plain-secret") if user == "plainuser" else user_conf(setup, certs, user)
    p = Producer({**conf, "acks": "all"})
    for i in range(5):
        p.produce(topic, b"%s-%d" % (user.encode(), i))
    assert p.flush(20) == 0
    got, err = consume(conf, topic, group, want=5)
    assert err is None
    assert got == [b"%s-%d" % (user.encode(), i) for i in range(5)]


def test_a_wrong_password_is_an_authentication_error(setup, certs):
    for conf in (sasl(setup, certs, "SCRAM-SHA-512", "bob", "wrong"), sasl(setup, certs, "SCRAM-SHA-256", "bob", "bob-secret"),
                 sasl(setup, certs, "PLAIN", "admin", "wrong")):
        assert KafkaError._AUTHENTICATION in login_errors(conf, {KafkaError._AUTHENTICATION}), conf["sasl.mechanism"]


def test_an_untrusted_ca_is_an_ssl_error(setup, certs):
    bad_ca = {"ssl.ca.location": str(certs / "other-ca.pem")}
    ssl_error = {KafkaError._SSL}
    assert KafkaError._SSL in login_errors({**user_conf(setup, certs, "alice"), **bad_ca}, ssl_error)
    assert KafkaError._SSL in login_errors({**mtls(setup, certs, "alice"), **bad_ca}, ssl_error)
    # A client certificate the broker's truststore does not vouch for: the broker ends the
    # handshake, which the client sees as an SSL (or transport) error.
    refused = {KafkaError._SSL, KafkaError._TRANSPORT}
    assert login_errors(mtls(setup, certs, "mallory"), refused) & refused
    # And none at all on the listener that requires one.
    conf = mtls(setup, certs, "alice")
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    assert login_errors(conf, refused) & refused


def test_the_mapped_certificate_principal_is_what_acls_decide_on(setup, certs):
    # CN=alice,... maps to User:alice, whose ACLs are those of the SCRAM user alice.
    assert produce_one(mtls(setup, certs, "alice"), "alice.orders") == 0
    assert produce_one(mtls(setup, certs, "alice"), "bob.events") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # CN=dave,... maps to User:dave, who has no ACL.
    assert produce_one(mtls(setup, certs, "dave"), "alice.orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    got, err = consume(mtls(setup, certs, "alice"), "alice.orders", "alice-group", timeout=10)
    assert got and err is None


def test_a_prefixed_allow_grants_and_a_deny_wins(setup, certs):
    alice = user_conf(setup, certs, "alice")
    assert produce_one(alice, "alice.orders") == 0
    assert produce_one(alice, "alice.secret") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_one(alice, "other") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_one(user_conf(setup, certs, "bob"), "alice.orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_consumer_group_needs_its_own_read_acl(setup, certs):
    alice = user_conf(setup, certs, "alice")
    assert produce_one(alice, "alice.orders") == 0
    assert consume(alice, "alice.orders", "strangers") == ([], KafkaError.GROUP_AUTHORIZATION_FAILED)
    # bob's group prefix is no use for alice.
    assert consume(alice, "alice.orders", "bob-readers") == ([], KafkaError.GROUP_AUTHORIZATION_FAILED)
    got, err = consume(alice, "alice.orders", "alice-group")
    assert got and err is None


def access(b, certs):
    """What each login may do: a table of produce results and a group read."""
    alice, bob = user_conf(b, certs, "alice"), user_conf(b, certs, "bob")
    return {
        "alice->alice.orders": produce_one(alice, "alice.orders"),
        "alice->alice.secret": produce_one(alice, "alice.secret"),
        "alice->bob.events": produce_one(alice, "bob.events"),
        "bob->bob.events": produce_one(bob, "bob.events"),
        "cert alice->alice.orders": produce_one(mtls(b, certs, "alice"), "alice.orders"),
        "cert dave->alice.orders": produce_one(mtls(b, certs, "dave"), "alice.orders"),
        "alice group strangers": consume(alice, "alice.orders", "strangers")[1],
        "wrong password": KafkaError._AUTHENTICATION in login_errors(sasl(b, certs, "SCRAM-SHA-256", "alice", "x"),
                                                                     {KafkaError._AUTHENTICATION}),
    }


def test_users_and_acls_persist_over_a_restart(setup, certs):
    """Last in this module: it restarts the shared broker."""
    b = setup
    a = AdminClient(admin_conf(b, certs))
    acls_before, users_before = all_acls(a), scram_users(a)
    before = access(b, certs)
    assert before["alice->alice.orders"] == 0 and before["cert dave->alice.orders"] != 0, before
    b.stop()
    assert b.last_exit_code == 0 and not b.last_stop_escalated
    b.start()
    # Logging in again with SCRAM works only if the credentials came back.
    a = AdminClient(user_conf(b, certs, "bob"))
    assert "bob.events" in a.list_topics(timeout=10).topics
    a = AdminClient(admin_conf(b, certs))
    assert all_acls(a) == acls_before
    assert scram_users(a) == users_before
    assert access(b, certs) == before
