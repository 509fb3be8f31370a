"""The security section: the same single brokers with a mutual-TLS listener, driven by
rdkafka_performance over TLS (produce and consume), then again with the StandardAuthorizer on
and 1 000 ACLs (produce). Both brokers get the same certificates, made once per run with
openssl, and the same settings under Kafka's key names."""
import os
import subprocess

from brokers import KafkaBroker, SluiceBroker, free_port
from common import RDKPERF_PRODUCER_CONF, StepError
from metrics import SIZES
from workloads import create_topics, parse_rdkperf_consume, parse_rdkperf_produce, rdkperf_run

ACL_COUNT = 1000
CLIENT_CN = "bench-client"
# The client's principal as both brokers derive it from its certificate (Kafka's DEFAULT rule).
CLIENT_PRINCIPAL = f"User:CN={CLIENT_CN}"
TOPIC_PREFIX = "tls-"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def make_certs(d):
    """A CA, the brokers' certificate (for 127.0.0.1) and the client's, as PEM files in d."""
    os.makedirs(d, exist_ok=True)

    def run(*argv):
        r = subprocess.run(argv, cwd=d, capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise StepError(f"{' '.join(argv[:3])}: {r.stderr[-400:]}")

    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=sluice bench ca")
    for name, subj, ext in (("broker", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                            ("client", f"/CN={CLIENT_CN}", "extendedKeyUsage=clientAuth")):
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", subj)
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext + "\n")
        run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    with open(os.path.join(d, "broker-keystore.pem"), "w") as out:
        for part in ("broker.key", "broker.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    return d


def tls_settings(h, acl):
    """What both brokers get on top of their plaintext listener (Kafka's key names)."""
    c = h.security_certs
    s = [("ssl.keystore.type", "PEM"), ("ssl.keystore.location", os.path.join(c, "broker-keystore.pem")),
         ("ssl.truststore.type", "PEM"), ("ssl.truststore.location", os.path.join(c, "ca.pem")),
         ("ssl.client.auth", "required")]
    if acl:
        # The plaintext listener (the harness's admin client, Kafka's own controller link) is
        # User:ANONYMOUS, the super user; the TLS client is held to its ACLs.
        s += [("authorizer.class.name", AUTHORIZER), ("super.users", "User:ANONYMOUS")]
    return s


class TlsMixin:
    """A broker with an SSL listener next to its plaintext one; `acl` turns the authorizer on."""
    acl = False

    def init_tls(self):
        self.ssl_port = free_port()
        self.ssl_bootstrap = f"127.0.0.1:{self.ssl_port}"

    def settings(self):
        return tls_settings(self.h, self.acl)


class TlsKafka(TlsMixin, KafkaBroker):
    def __init__(self, h, session_dir):
        super().__init__(h, session_dir)
        self.init_tls()

    def client_listeners(self):
        return super().client_listeners() + [("SSL", "SSL", self.ssl_port)]


class TlsSluice(TlsMixin, SluiceBroker):
    def __init__(self, h, session_dir):
        super().__init__(h, session_dir)
        self.init_tls()

    def listen_args(self):
        return ["--set", f"listeners=PLAINTEXT://{self.bootstrap},SSL://{self.ssl_bootstrap}",
                "--set", "security.inter.broker.protocol=PLAINTEXT"]


class AclKafka(TlsKafka):
    acl = True


class AclSluice(TlsSluice):
    acl = True


BROKERS = {("tls", "kafka"): TlsKafka, ("tls", "sluice"): TlsSluice,
           ("acl", "kafka"): AclKafka, ("acl", "sluice"): AclSluice}


def client_args(h):
    c = h.security_certs
    return ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={os.path.join(c, 'ca.pem')}",
            "-X", f"ssl.certificate.location={os.path.join(c, 'client.pem')}",
            "-X", f"ssl.key.location={os.path.join(c, 'client.key')}"]


def produce(h, s, kind, size):
    n = h.n["rdkperf"][size]
    return rdkperf_run(h, s, f"rdkafka_performance over TLS{' with ACLs' if kind == 'acl' else ''}: "
                       f"produce {size} B acks=1", "produce", str(size), n, parse_rdkperf_produce,
                       ["-P", "-t", f"{TOPIC_PREFIX}{size}", "-s", str(size), "-c", str(n),
                        "-X", "acks=1"] + RDKPERF_PRODUCER_CONF + client_args(h),
                       kind=kind, bootstrap=s.b.ssl_bootstrap)


def topics(h):
    return [f"{TOPIC_PREFIX}{size}:{h.partitions}" for size, _ in SIZES]


def tls_steps(h, s):
    """Produce, then consume what it wrote, each size, over mutual TLS; no authorizer."""
    if not create_topics(h, s, topics(h)):
        return
    for size, _ in SIZES:
        produce(h, s, "tls", size)
    parts = [a for p in range(h.partitions) for a in ("-p", str(p))]
    for size, _ in SIZES:
        n = h.n["rdkperf"][size]
        rdkperf_run(h, s, f"rdkafka_performance over TLS: consume {size} B", "consume", str(size),
                    n, parse_rdkperf_consume,
                    ["-C", "-t", f"{TOPIC_PREFIX}{size}", *parts, "-o", "beginning", "-e",
                     "-c", str(n)] + client_args(h), kind="tls", bootstrap=s.b.ssl_bootstrap)


def acl_steps(h, s):
    """The same produce over TLS with the authorizer on and ACL_COUNT ACLs, one of which lets
    the client write; recorded also as a fraction of the same broker's TLS-only rate."""
    if not create_topics(h, s, topics(h)):
        return
    if s.step("create ACLs", lambda: h.rdk(
            "create ACLs", s.L("create-acls"), 120, "create-acls", "--bootstrap", s.b.bootstrap,
            "--principal", CLIENT_PRINCIPAL, "--topic-prefix", TOPIC_PREFIX,
            "--count", str(ACL_COUNT))) is None:
        return
    for size, _ in SIZES:
        r = produce(h, s, "acl", size)
        base = h.samples[s.kind].get(f"produce.tls.{size}.rps")
        if r and base:
            s.record(f"acl.cost.{size}", r["rps"] / base[-1])


def security_intro(h):
    n = h.n["rdkperf"]
    return [
        f"rdkafka_performance (librdkafka {h.rdkperf_version}) over TLS with a client "
        "certificate (`ssl.client.auth=required`), against a single broker with an SSL listener "
        "next to its plaintext one: both brokers use the same PEM keystore and truststore "
        "(RSA 2048, made by openssl for the run), the JVM's and rustls's default TLS 1.3 "
        f"cipher. Produce `-P -s SIZE -c N -X acks=1 {' '.join(RDKPERF_PRODUCER_CONF)}`, "
        f"{n[1024]:,} × 1 KiB and {n[100]:,} × 100 B, then consume the same records as in the "
        "rdkafka_performance section. ACLs: each broker started again with "
        f"`authorizer.class.name={AUTHORIZER}` and {ACL_COUNT:,} ACLs (an ALLOW of WRITE and "
        f"READ for `{CLIENT_PRINCIPAL}` on the prefix `{TOPIC_PREFIX}`, the rest for other "
        "principals and topics, literal and prefixed, 10 % DENY), made through the plaintext "
        "listener as the super user; the same produce runs over TLS. \"ACL run / TLS run\" is "
        "that broker's produce rate with the ACLs over its rate in the TLS session of the same "
        "repetition.",
    ]
