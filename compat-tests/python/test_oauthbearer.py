"""SASL/OAUTHBEARER with librdkafka (confluent-kafka) against one broker with four
OAUTHBEARER listeners: unsecured (alg: none) tokens over SASL_PLAINTEXT and SASL_SSL,
and signed RS256 tokens checked against a JWKS file and against a JWKS served over
HTTP (refreshed when a token names a key the set lacks). The authorizer is on: the
token's principal (User:alice) is what the ACLs name. Keys, certificates and
signatures are made with `openssl`."""

import base64
import http.server
import json
import ssl
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

from conftest import fail_on_invariant_violations, free_port
from test_tls import make_cert, run, start

LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWKS_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class RsaKey:
    """An RSA key made by openssl; signs RS256 JWTs and describes itself as a JWK."""

    def __init__(self, d, name):
        self.path = d / f"{name}.key"
        self.kid = name
        run("openssl", "genrsa", "-out", str(self.path), "2048", cwd=d)
        out = subprocess.run(["openssl", "rsa", "-in", str(self.path), "-noout", "-modulus"], check=True,
                             capture_output=True, text=True).stdout
        self.n = bytes.fromhex(out.strip().split("=", 1)[1])

    def jwk(self):
        return {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256", "n": b64url(self.n), "e": b64url(b"\x01\x00\x01")}

    def token(self, sub="alice", lifetime=600, kid=None, now=None):
        now = int(now or time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": kid or self.kid}
        claims = {"sub": sub, "iat": now, "exp": now + lifetime, "iss": "sluice-test"}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.path)], input=signing_input.encode(),
                             check=True, capture_output=True).stdout
        return f"{signing_input}.{b64url(sig)}", now + lifetime


class JwksServer:
    """An HTTP endpoint serving whatever JWKS `keys` holds now, counting its GETs; over
    https with `tls` (an ssl.SSLContext)."""

    def __init__(self, tls=None):
        self.keys = []
        self.gets = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.gets += 1
                body = json.dumps({"keys": outer.keys}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("oauth")
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=sluice test ca", cwd=d)
    make_cert(d, "broker", "/CN=localhost", san="IP:127.0.0.1,DNS:localhost")
    (d / "broker-keystore.pem").write_text((d / "broker.key").read_text() + (d / "broker.pem").read_text())
    key, rotated, stranger = RsaKey(d, "key1"), RsaKey(d, "key2"), RsaKey(d, "stranger")
    (d / "jwks.json").write_text(json.dumps({"keys": [key.jwk()]}))
    http_jwks = JwksServer()
    http_jwks.keys = [key.jwk()]
    # The https endpoint has a certificate of the test CA, which the broker trusts through the
    # JAAS option ssl.truststore.location (Kafka's OAuth code takes its ssl.* from the JAAS options).
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(d / "broker.pem"), str(d / "broker.key"))
    https_jwks = JwksServer(tls)
    https_jwks.keys = [key.jwk()]
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "JWKS", "HTTPJWKS", "HTTPSJWKS")}
    file_url = f"file://{d / 'jwks.json'}"
    settings = {
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "JWKS:SASL_PLAINTEXT,HTTPJWKS:SASL_PLAINTEXT,HTTPSJWKS:SASL_PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(d / "broker-keystore.pem"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # The PLAINTEXT listener is the test's admin door.
        "super.users": "User:ANONYMOUS",
        "org.apache.kafka.sasl.oauthbearer.allowed.urls": f"{file_url},{http_jwks.url},{https_jwks.url}",
        "sasl.oauthbearer.expected.issuer": "sluice-test",
    }
    for listener in ("sasl_plaintext", "sasl_ssl", "jwks", "httpjwks"):
        settings[f"listener.name.{listener}.oauthbearer.sasl.jaas.config"] = f"{LOGIN} required;"
    settings["listener.name.httpsjwks.oauthbearer.sasl.jaas.config"] = (
        f'{LOGIN} required ssl.truststore.location="{d / "ca.pem"}";')
    for listener, url in (("jwks", file_url), ("httpjwks", http_jwks.url), ("httpsjwks", https_jwks.url)):
        settings[f"listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class"] = JWKS_HANDLER
        settings[f"listener.name.{listener}.oauthbearer.sasl.oauthbearer.jwks.endpoint.url"] = url
    # A long scheduled refresh: only a token with an unknown key id makes the broker reload sooner.
    settings["listener.name.httpjwks.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms"] = "3600000"
    settings["listener.name.httpsjwks.oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms"] = "3600000"
    proc, log = start(d, settings)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['PLAINTEXT']}"})
    acls = [AclBinding(ResourceType.TOPIC, "oauth.", ResourcePatternType.PREFIXED, "User:alice", "*", op, AclPermissionType.ALLOW)
            for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)]
    acls.append(AclBinding(ResourceType.GROUP, "oauth.", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.READ,
                           AclPermissionType.ALLOW))
    for f in admin.create_acls(acls).values():
        f.result(timeout=20)
    yield {"dir": d, "ports": ports, "admin": admin, "key": key, "rotated": rotated, "stranger": stranger,
           "http": http_jwks, "https": https_jwks, "log": log}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    http_jwks.close()
    https_jwks.close()
    fail_on_invariant_violations([log])


def unsecured(env, listener, principal, errors=None):
    c = {"bootstrap.servers": f"127.0.0.1:{env['ports'][listener]}", "security.protocol": listener,
         "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
         "sasl.oauthbearer.config": f"principal={principal} scope=kafka"}
    if listener == "SASL_SSL":
        c["ssl.ca.location"] = str(env["dir"] / "ca.pem")
    if errors is not None:
        c["error_cb"] = errors.append
    return c


def signed(env, listener, token_fn, errors=None):
    c = {"bootstrap.servers": f"127.0.0.1:{env['ports'][listener]}", "security.protocol": "SASL_PLAINTEXT",
         # (token, expiry, principal): the principal is only librdkafka's own label.
         "sasl.mechanism": "OAUTHBEARER", "oauth_cb": lambda _config: (*token_fn(), "client")}
    if errors is not None:
        c["error_cb"] = errors.append
    return c


def new_topic(env):
    topic = f"oauth.{uuid.uuid4().hex[:8]}"
    env["admin"].create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=20)
    return topic


def produce(conf, topic, n=5):
    delivered = []
    p = Producer({**conf, "message.timeout.ms": 10000})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
    p.flush(20)
    return delivered


def consume(conf, topic, n=5):
    c = Consumer({**conf, "group.id": f"oauth.g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return got


def roundtrip(conf, topic):
    assert produce(conf, topic) == [None] * 5
    assert consume(conf, topic) == [f"v{i}" for i in range(5)]


def auth_fails(conf, errors):
    """A client with `conf` reports an authentication error (librdkafka connects at once)."""
    p = Producer(conf)
    deadline = time.monotonic() + 15
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        assert time.monotonic() < deadline, f"no authentication error: {errors}"
        p.poll(0.1)
    return [e.str() for e in errors]


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_unsecured_tokens_log_in_and_the_acls_of_their_principal_decide(env, listener):
    topic = new_topic(env)
    roundtrip(unsecured(env, listener, "alice"), topic)
    # bob logs in just as well, but no ACL lets him write there.
    errs = produce(unsecured(env, listener, "bob"), topic, n=1)
    assert len(errs) == 1 and errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs


def test_signed_tokens_against_a_jwks_file(env):
    topic = new_topic(env)
    roundtrip(signed(env, "JWKS", lambda: env["key"].token()), topic)
    # A token whose principal has no ACL is authenticated and then refused.
    errs = produce(signed(env, "JWKS", lambda: env["key"].token(sub="bob")), topic, n=1)
    assert len(errs) == 1 and errs[0] is not None and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs


@pytest.mark.parametrize("case", ["expired", "wrong key", "forged kid", "unsigned"])
def test_bad_tokens_fail_with_an_authentication_error(env, case):
    key, stranger = env["key"], env["stranger"]
    errors = []
    if case == "unsigned":
        conf = unsecured(env, "SASL_PLAINTEXT", "alice", errors)
        conf["bootstrap.servers"] = f"127.0.0.1:{env['ports']['JWKS']}"
    else:
        make = {
            # Expired well past the 30 s clock skew (librdkafka itself refuses a token already expired).
            "expired": lambda: (key.token(now=time.time() - 700, lifetime=600)[0], time.time() + 600),
            "wrong key": lambda: stranger.token(),
            "forged kid": lambda: stranger.token(kid="key1"),
        }[case]
        conf = signed(env, "JWKS", make, errors)
    msgs = auth_fails(conf, errors)
    assert any("invalid_token" in m for m in msgs), msgs


@pytest.mark.parametrize("listener", ["HTTPJWKS", "HTTPSJWKS"])
def test_an_http_jwks_reloads_when_a_token_names_a_new_key(env, listener):
    server, rotated = env["http" if listener == "HTTPJWKS" else "https"], env["rotated"]
    assert server.url.startswith("https://" if listener == "HTTPSJWKS" else "http://")
    topic = new_topic(env)
    roundtrip(signed(env, listener, lambda: env["key"].token()), topic)
    # The issuer starts signing with key2 and publishes it: the first login with key2 makes
    # the broker fetch the set again (its hour-long schedule would be too late).
    server.keys = [env["key"].jwk(), rotated.jwk()]
    before = server.gets
    deadline = time.monotonic() + 20
    while True:
        errs = produce(signed(env, listener, lambda: rotated.token()), topic, n=1)
        if errs == [None]:
            break
        assert time.monotonic() < deadline, f"key2 never accepted: {errs}"
        time.sleep(0.2)
    assert server.gets > before
