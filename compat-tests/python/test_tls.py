"""TLS and named listeners with librdkafka (confluent-kafka): SSL and SASL_SSL produce/consume with PEM
and PKCS12 keystores, mTLS (ssl.client.auth=required) and the certificate's principal,
untrusted CAs, garbage on the TLS port, and Metadata answering on the listener asked.
Certificates are made with `openssl` in a temp dir."""

import os
import socket
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import free_port


def run(*args, cwd):
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def make_cert(d, name, subj, ca="ca", san=None):
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj, cwd=d)
    # Extensions make it an X.509 v3 certificate, the only version TLS stacks accept.
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n" if san else "extendedKeyUsage=clientAuth\n")
    ext = ["-extfile", f"{name}.ext"]
    run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
        "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    for ca in ("ca", "other-ca"):
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
            "-days", "2", "-subj", f"/CN=sluice test {ca}", cwd=d)
    make_cert(d, "broker", "/CN=localhost", san="IP:127.0.0.1,DNS:localhost")
    make_cert(d, "alice", "/C=US/O=acme/OU=eng/CN=alice")
    make_cert(d, "mallory", "/CN=mallory", ca="other-ca")
    (d / "broker-keystore.pem").write_text((d / "broker.key").read_text() + (d / "broker.pem").read_text())
    run("openssl", "pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-certfile", "ca.pem",
        "-out", "broker.p12", "-passout", "pass:secret", cwd=d)
    run("openssl", "pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-out", "trust.p12", "-passout", "pass:secret", cwd=d)
    # An encrypted PKCS#8 key, for ssl.key.password.
    run("openssl", "pkcs8", "-topk8", "-in", "broker.key", "-out", "broker-enc.key", "-v2", "aes-256-cbc", "-passout", "pass:keypass", cwd=d)
    (d / "broker-enc-keystore.pem").write_text((d / "broker-enc.key").read_text() + (d / "broker.pem").read_text())
    return d


def ssl_listener(port, plain_port=None):
    """listeners with an SSL listener on `port` (and a PLAINTEXT one on `plain_port`)."""
    ls = f"SSL://127.0.0.1:{port}"
    if plain_port:
        ls = f"PLAINTEXT://127.0.0.1:{plain_port}," + ls
    return ls


def client_conf(certs, port, **kw):
    c = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
         "ssl.ca.location": str(certs / "ca.pem")}
    c.update(kw)
    return c


def roundtrip(conf, topic=None):
    topic = topic or f"tls-{uuid.uuid4().hex[:8]}"
    p = Producer({**conf, "acks": "all"})
    for i in range(20):
        p.produce(topic, value=f"v{i}".encode(), key=b"k")
    assert p.flush(20) == 0, "not every record was delivered"
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < 20 and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [f"v{i}".encode() for i in range(20)]


def fails_to_connect(conf):
    a = AdminClient({**conf, "socket.timeout.ms": 3000})
    with pytest.raises(KafkaException):
        a.list_topics(timeout=4)


def start(tmp_path, settings, env=None):
    """A broker with the given settings (listeners included), waited on at its first port."""
    from conftest import sluice_bin
    data = tmp_path / f"data-{uuid.uuid4().hex[:6]}"
    log = tmp_path / f"{data.name}.log"
    cmd = [sluice_bin(), "serve", "--data-dir", str(data), "--node-id", "1"]
    for k, v in settings.items():
        cmd += ["--set", f"{k}={v}"]
    proc = subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})})
    deadline = time.time() + 20
    while b"sluice ready:" not in log.read_bytes():
        if proc.poll() is not None:
            raise AssertionError(f"sluice exited {proc.returncode}:\n{log.read_text()[:3000]}")
        if time.time() > deadline:
            proc.kill()
            raise AssertionError(f"not ready:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    return proc, log


@pytest.fixture
def brokers(tmp_path):
    procs = []

    def factory(settings, env=None):
        p, log = start(tmp_path, settings, env)
        procs.append(p)
        return p, log

    yield factory
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def pem_settings(certs, port, plain_port=None, **extra):
    s = {"listeners": ssl_listener(port, plain_port),
         "security.inter.broker.protocol": "PLAINTEXT" if plain_port else "SSL",
         "ssl.keystore.type": "PEM",
         "ssl.keystore.location": str(certs / "broker-keystore.pem"),
         "ssl.truststore.type": "PEM",
         "ssl.truststore.location": str(certs / "ca.pem")}
    s.update(extra)
    return s


def test_ssl_with_a_pem_keystore(brokers, certs):
    port = free_port()
    brokers(pem_settings(certs, port))
    roundtrip(client_conf(certs, port))


def test_ssl_with_an_encrypted_pem_key_and_inline_pem(brokers, certs):
    port = free_port()
    brokers(pem_settings(certs, port, **{"ssl.keystore.location": str(certs / "broker-enc-keystore.pem"),
                                          "ssl.key.password": "keypass"}))
    roundtrip(client_conf(certs, port))
    port2 = free_port()
    s = pem_settings(certs, port2)
    del s["ssl.keystore.location"]
    # Inline PEM, as Kafka takes it: the PEM text itself is the value.
    s["ssl.keystore.key"] = (certs / "broker.key").read_text()
    s["ssl.keystore.certificate.chain"] = (certs / "broker.pem").read_text()
    brokers(s)
    roundtrip(client_conf(certs, port2))


def test_ssl_with_pkcs12_keystore_and_truststore(brokers, certs):
    port = free_port()
    brokers({"listeners": ssl_listener(port), "security.inter.broker.protocol": "SSL",
             "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(certs / "broker.p12"),
             "ssl.keystore.password": "secret",
             "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(certs / "trust.p12"),
             "ssl.truststore.password": "secret"})
    roundtrip(client_conf(certs, port))


def test_a_wrong_pkcs12_password_is_a_clear_startup_error(tmp_path, certs):
    port = free_port()
    with pytest.raises(AssertionError, match="ssl.keystore.password"):
        start(tmp_path, {"listeners": ssl_listener(port), "security.inter.broker.protocol": "SSL",
                         "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(certs / "broker.p12"),
                         "ssl.keystore.password": "wrong",
                         "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem")})


def test_mtls_required_needs_a_trusted_client_certificate_and_names_its_principal(brokers, certs):
    port = free_port()
    _, log = brokers(pem_settings(certs, port, **{"ssl.client.auth": "required"}),
                     env={"SLUICE_LOG": "info,sluice::net=debug"})
    fails_to_connect(client_conf(certs, port))
    fails_to_connect(client_conf(certs, port, **{"ssl.certificate.location": str(certs / "mallory.pem"),
                                                 "ssl.key.location": str(certs / "mallory.key")}))
    roundtrip(client_conf(certs, port, **{"ssl.certificate.location": str(certs / "alice.pem"),
                                          "ssl.key.location": str(certs / "alice.key")}))
    text = log.read_text()
    assert "principal=User:CN=alice,OU=eng,O=acme,C=US" in text, text[-2000:]


def test_principal_mapping_rules(brokers, certs):
    port = free_port()
    _, log = brokers(pem_settings(certs, port, **{"ssl.client.auth": "requested",
                                                  "ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U,DEFAULT"}),
                     env={"SLUICE_LOG": "info,sluice::net=debug"})
    roundtrip(client_conf(certs, port))  # requested: no certificate is fine
    roundtrip(client_conf(certs, port, **{"ssl.certificate.location": str(certs / "alice.pem"),
                                          "ssl.key.location": str(certs / "alice.key")}))
    assert "principal=User:ALICE@ENG" in log.read_text()


def test_an_untrusted_ca_fails(brokers, certs):
    port = free_port()
    brokers(pem_settings(certs, port))
    fails_to_connect({**client_conf(certs, port), "ssl.ca.location": str(certs / "other-ca.pem")})


def test_garbage_and_plaintext_on_the_tls_port_close_only_that_connection(brokers, certs):
    port = free_port()
    brokers(pem_settings(certs, port))
    good = AdminClient(client_conf(certs, port))
    assert good.list_topics(timeout=10).brokers
    for junk in (b"\x16\x03\x01\xff\xff" + os.urandom(200), os.urandom(3000),
                 # A plaintext ApiVersions request, as a client with the wrong security.protocol sends.
                 bytes.fromhex("0000001a0012000300000001000a7361646b6c69656e74000000")):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(junk)
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
    fails_to_connect({"bootstrap.servers": f"127.0.0.1:{port}"})  # plaintext librdkafka on TLS
    assert good.list_topics(timeout=10).brokers, "the broker stopped serving its other connections"
    roundtrip(client_conf(certs, port))


def test_metadata_answers_with_the_addresses_of_the_listener_asked(brokers, certs):
    ssl_port, plain_port = free_port(), free_port()
    brokers(pem_settings(certs, ssl_port, plain_port))
    over_ssl = AdminClient(client_conf(certs, ssl_port)).list_topics(timeout=10)
    over_plain = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain_port}"}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in over_ssl.brokers.values()] == [("127.0.0.1", ssl_port)]
    assert [(b.host, b.port) for b in over_plain.brokers.values()] == [("127.0.0.1", plain_port)]
    roundtrip(client_conf(certs, ssl_port))
    roundtrip({"bootstrap.servers": f"127.0.0.1:{plain_port}"})


def test_named_listeners_with_advertised_addresses(brokers, certs):
    client, internal = free_port(), free_port()
    brokers({"listeners": f"CLIENT://127.0.0.1:{client},INTERNAL://127.0.0.1:{internal}",
             "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
             "inter.broker.listener.name": "INTERNAL",
             "advertised.listeners": f"CLIENT://localhost:{client}"})
    md = AdminClient({"bootstrap.servers": f"127.0.0.1:{client}"}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("localhost", client)]
    md = AdminClient({"bootstrap.servers": f"127.0.0.1:{internal}"}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", internal)]


@pytest.mark.parametrize("settings,message", [
    ({"listeners": "CLIENT://127.0.0.1:0"}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.type": "PEM"}, "needs a keystore"),
    ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "Only one of"),
    ({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": "/etc/hostname"}, "JKS"),
])
def test_inconsistent_listener_settings_stop_the_broker_at_startup(tmp_path, settings, message):
    with pytest.raises(AssertionError, match=message):
        start(tmp_path, settings)


def test_a_cluster_whose_broker_and_controller_links_are_tls_replicates(start_cluster, certs):
    """Every node's one listener (named PLAINTEXT by --listen) is mapped to SSL, and so is
    CONTROLLER: replica fetches, peer calls and the Raft links all run over TLS."""
    c = start_cluster(3, {"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SSL",
                          "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "broker-keystore.pem"),
                          "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
                          "ssl.client.auth": "required"})
    conf = {"bootstrap.servers": c.bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(certs / "ca.pem"),
            "ssl.certificate.location": str(certs / "alice.pem"), "ssl.key.location": str(certs / "alice.key")}
    topic = f"tls-rf3-{uuid.uuid4().hex[:6]}"
    a = AdminClient(conf)
    a.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    deadline = time.time() + 30
    while True:
        p = a.list_topics(topic, timeout=10).topics[topic].partitions[0]
        if len(p.isrs) == 3 or time.time() > deadline:
            break
        time.sleep(0.2)
    assert len(p.isrs) == 3, f"followers did not catch up over TLS: isr {p.isrs}"
    roundtrip(conf, topic)


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret";')


def test_sasl_ssl_with_scram_and_plain(brokers, certs):
    """SASL_SSL is TLS first, then the SASL login: SCRAM-SHA-512 (user made over the plain
    listener) and PLAIN work; a wrong password fails."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    plain, port = free_port(), free_port()
    brokers(pem_settings(certs, port, plain, **{
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS}))
    a = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
    up = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret")
    for f in a.alter_user_scram_credentials([up]).values():
        f.result(timeout=20)
    sasl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice"}
    roundtrip(client_conf(certs, port, **sasl, **{"sasl.password": "alice-secret"}))
    roundtrip(client_conf(certs, port, **{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                          "sasl.username": "admin", "sasl.password": "admin-secret"}))
    fails_to_connect(client_conf(certs, port, **sasl, **{"sasl.password": "wrong"}))


def test_a_client_certificate_principal_is_what_acls_name(brokers, certs):
    """With the authorizer on, alice's certificate principal may write the prefix an ACL
    grants it, and nothing else."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, NewTopic,
                                       ResourcePatternType, ResourceType)
    plain, port = free_port(), free_port()
    brokers(pem_settings(certs, port, plain, **{
        "ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS"}))
    a = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
    mine, other = f"alice.{uuid.uuid4().hex[:6]}", f"bob.{uuid.uuid4().hex[:6]}"
    for t, f in a.create_topics([NewTopic(mine, 1, 1), NewTopic(other, 1, 1)]).items():
        f.result(timeout=20)
    alice = "User:CN=alice,OU=eng,O=acme,C=US"
    acls = [AclBinding(ResourceType.TOPIC, "alice.", ResourcePatternType.PREFIXED, alice, "*", op, AclPermissionType.ALLOW)
            for op in (AclOperation.WRITE, AclOperation.DESCRIBE)]
    for f in a.create_acls(acls).values():
        f.result(timeout=20)
    conf = client_conf(certs, port, **{"ssl.certificate.location": str(certs / "alice.pem"),
                                       "ssl.key.location": str(certs / "alice.key"), "message.timeout.ms": 8000})
    for topic, ok in ((mine, True), (other, False)):
        errs = []
        p = Producer(conf)
        p.produce(topic, b"x", on_delivery=lambda err, msg: errs.append(err))
        p.flush(15)
        assert len(errs) == 1, errs
        if ok:
            assert errs[0] is None, errs
        else:
            assert errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs
