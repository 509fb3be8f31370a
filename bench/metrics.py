"""Every metric a run can record: its id, its group (an H2 section of results.md, the "group"
in results.json), its table, label and unit, and which direction is better; and the record
sizes and acks the single-broker sections measure."""
import collections

from common import CLUSTER_NODES


# Groups are the H2 sections of results.md (and the "group" of each metric in results.json),
# in this order; sections are its tables.
GROUPS = collections.OrderedDict([
    ("single", "Single broker (RF 1): Kafka's tools and the librdkafka generator"),
    ("rdkperf", "Single broker, driven by rdkafka_performance (librdkafka's C tool); "
                "each client's CPU ceiling"),
    ("cluster", f"Cluster: {CLUSTER_NODES} brokers, RF=3, acks=all, min.insync.replicas=2"),
    ("security", "Security: mutual TLS, and 1 000 ACLs (single broker, rdkafka_performance)"),
    ("share", "Share groups (KIP-932): 3 share consumers, one broker"),
])
Metric = collections.namedtuple("Metric", "group section label unit higher")
METRICS = {}  # id -> Metric; higher: True/False (which is better), None (neither)


def metric(mid, group, section, label, unit, higher):
    METRICS[mid] = Metric(group, section, label, unit, higher)


def cpu_metrics(key, group, label):
    """cpu.<key>.client|broker (CPU s per million records) and cores.<key>.client|broker (CPU s
    per wall s: how much of a core each side used)."""
    for side in ("client", "broker"):
        metric(f"cpu.{key}.{side}", group, "CPU per million records (client: the load tool's "
               "process; broker: the broker process(es), same interval)", f"{label} — {side}",
               "CPU s/M rec", False)
    for side in ("client", "broker"):
        metric(f"cores.{key}.{side}", group, "Cores used (CPU s per second of the measuring "
               "window)", label, "cores", None)


SIZES = [(1024, "1 KiB"), (100, "100 B")]
ACKS = ["1", "all"]
for _client, _cname in [("java", "ProducerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        for _acks in ACKS:
            _k = f"produce.{_client}.{_size}.{_acks}"
            metric(f"{_k}.mib", "single", f"Produce ({_cname})", f"{_sname} acks={_acks}", "MiB/s", True)
            metric(f"{_k}.rps", "single", f"Produce ({_cname})", f"{_sname} acks={_acks}", "records/s", True)
for _client, _cname in [("java", "ConsumerPerformance"), ("rdk", "librdkafka")]:
    for _size, _sname in SIZES:
        _k = f"consume.{_client}.{_size}"
        metric(f"{_k}.mib", "single", f"Consume ({_cname})", f"{_sname}", "MiB/s", True)
        metric(f"{_k}.rps", "single", f"Consume ({_cname})", f"{_sname}", "records/s", True)
for _size, _sname in SIZES:
    _sec = "Produce (produce-only client, no per-record work: the broker's own ceiling)"
    metric(f"produce.raw.{_size}.mib", "single", _sec, f"{_sname} acks=1", "MiB/s", True)
    metric(f"produce.raw.{_size}.rps", "single", _sec, f"{_sname} acks=1", "records/s", True)
for _size, _sname in SIZES:
    _sec = "Consume (fetch-only client, no per-record work: the broker's own ceiling)"
    metric(f"consume.fetch.{_size}.mib", "single", _sec, _sname, "MiB/s", True)
    metric(f"consume.fetch.{_size}.rps", "single", _sec, _sname, "records/s", True)
_sec = "End-to-end latency, one in flight (EndToEndLatency, 1 KiB, acks=1)"
metric("e2e.java.avg", "single", _sec, "avg", "ms", False)
# The tool prints these percentiles as whole milliseconds, truncated.
metric("e2e.java.p50", "single", _sec, "p50", "whole ms", False)
metric("e2e.java.p99", "single", _sec, "p99", "whole ms", False)
metric("e2e.java.p999", "single", _sec, "p99.9", "whole ms", False)
_sec = "End-to-end latency at a fixed rate (librdkafka, 1 KiB, acks=1)"
metric("e2e.rdk.p50", "single", _sec, "p50", "ms", False)
metric("e2e.rdk.p99", "single", _sec, "p99", "ms", False)
metric("e2e.rdk.p999", "single", _sec, "p99.9", "ms", False)
metric("e2e.rdk.max", "single", _sec, "max", "ms", False)
_sec = ("Broker end-to-end latency at the same rate (raw client: Produce sent when due, "
        "no linger -> Fetch answered; 1 KiB, acks=1)")
metric("e2e.raw.p50", "single", _sec, "p50", "ms", False)
metric("e2e.raw.p99", "single", _sec, "p99", "ms", False)
metric("e2e.raw.p999", "single", _sec, "p99.9", "ms", False)
metric("e2e.raw.max", "single", _sec, "max", "ms", False)
_sec = "Process"
metric("startup.ms", "single", _sec, "start-up: exec to first ApiVersions answer (2 starts per session)", "ms", False)
metric("rss.idle", "single", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("rss.peak", "single", _sec, "peak RSS under load", "MiB", False)
metric("cpu.total", "single", _sec, "broker CPU time for the whole workload", "s", False)


for _size, _sname in SIZES:
    for _acks in ACKS:
        _k = f"produce.rdkperf.{_size}.{_acks}"
        metric(f"{_k}.mib", "rdkperf", "Produce (rdkafka_performance)", f"{_sname} acks={_acks}", "MiB/s", True)
        metric(f"{_k}.rps", "rdkperf", "Produce (rdkafka_performance)", f"{_sname} acks={_acks}", "records/s", True)
for _size, _sname in SIZES:
    metric(f"consume.rdkperf.{_size}.mib", "rdkperf", "Consume (rdkafka_performance)", _sname, "MiB/s", True)
    metric(f"consume.rdkperf.{_size}.rps", "rdkperf", "Consume (rdkafka_performance)", _sname, "records/s", True)
for _size, _sname in SIZES:
    for _acks in ACKS:
        cpu_metrics(f"rdkperf.produce.{_size}.{_acks}", "rdkperf",
                    f"rdkafka_performance produce {_sname} acks={_acks}")
for _size, _sname in SIZES:
    cpu_metrics(f"rdkperf.consume.{_size}", "rdkperf", f"rdkafka_performance consume {_sname}")
for _size, _sname in SIZES:
    for _acks in ACKS:
        cpu_metrics(f"java.produce.{_size}.{_acks}", "rdkperf",
                    f"ProducerPerformance {_sname} acks={_acks}")
for _size, _sname in SIZES:
    cpu_metrics(f"produce.raw.{_size}", "rdkperf", f"produce-only {_sname} acks=1")
for _size, _sname in SIZES:
    cpu_metrics(f"fetch.consume.{_size}", "rdkperf", f"fetch-only consume {_sname}")


_sec = "Cluster throughput (1 KiB, 3 partitions, RF=3)"
metric("cluster.produce.mib", "cluster", _sec, "ProducerPerformance acks=all", "MiB/s", True)
metric("cluster.produce.rps", "cluster", _sec, "ProducerPerformance acks=all", "records/s", True)
metric("cluster.consume.mib", "cluster", _sec, "ConsumerPerformance", "MiB/s", True)
metric("cluster.consume.rps", "cluster", _sec, "ConsumerPerformance", "records/s", True)
_sec = "Cluster processes (RSS and CPU: sums over the three broker processes)"
metric("cluster.startup.ms", "cluster", _sec, "start-up: first exec to all three answering "
       "ApiVersions", "ms", False)
metric("cluster.rss.idle", "cluster", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("cluster.rss.peak", "cluster", _sec, "peak RSS under load", "MiB", False)
cpu_metrics("cluster.produce", "cluster", "ProducerPerformance 1 KiB acks=all")
for _size, _sname in SIZES:
    for _op, _sec in (("produce.tls", "Produce over TLS (acks=1)"), ("consume.tls", "Consume over TLS"),
                      ("produce.acl", "Produce over TLS with the authorizer and 1 000 ACLs (acks=1)")):
        metric(f"{_op}.{_size}.mib", "security", _sec, _sname, "MiB/s", True)
        metric(f"{_op}.{_size}.rps", "security", _sec, _sname, "records/s", True)
for _size, _sname in SIZES:
    metric(f"acl.cost.{_size}", "security", "ACL run / TLS run, same broker (produce records/s)",
           _sname, "×", True)
for _size, _sname in SIZES:
    cpu_metrics(f"tls.produce.{_size}", "security", f"produce over TLS {_sname}")
    cpu_metrics(f"tls.consume.{_size}", "security", f"consume over TLS {_sname}")
    cpu_metrics(f"acl.produce.{_size}", "security", f"produce with ACLs {_sname}")


_sec = "Share-group consumption (ShareConsumerPerformance, 3 consumers, 1 KiB, 3 partitions)"
metric("share.consume.mib", "share", _sec, "3 share consumers, implicit acknowledgement", "MiB/s", True)
metric("share.consume.rps", "share", _sec, "3 share consumers, implicit acknowledgement", "records/s", True)
_sec = "Share-group processes"
metric("share.rss.idle", "share", _sec, "idle RSS (after topic creation)", "MiB", False)
metric("share.rss.peak", "share", _sec, "peak RSS under load", "MiB", False)
cpu_metrics("share.consume", "share", "ShareConsumerPerformance 3 consumers 1 KiB")
