"""The share section (issue 20): share-group consumption (KIP-932) with Kafka's own
ShareConsumerPerformance, 3 share consumers in one group sharing a 3-partition topic, against
one broker of each kind. Run with `bench/run --only share`; it is not part of the default run.

Per session: the topics are created, ProducerPerformance writes the records (not measured),
the group is set to share.auto.offset.reset=earliest with Kafka's ConfigCommand (a share
group starts at the latest offset otherwise), an unmeasured warm-up group reads a smaller
topic, then the measured group reads every record once with implicit acknowledgement."""
import os
import re

from common import TOOL_HEAP, StepError
from workloads import create_topics, producer_perf

PARTITIONS = 3
CONSUMERS = 3
SIZE = 1024


def share_steps(h, s):
    n, warm = h.share_n, h.share_warmup_n
    if not create_topics(h, s, [f"sh-1024:{PARTITIONS}", f"sh-warmup:{PARTITIONS}"]):
        return
    s.record_idle_rss("share.rss.idle")
    for topic, count in (("sh-warmup", warm), ("sh-1024", n)):
        what = f"ProducerPerformance {count:,} x 1 KiB to {topic} (not measured)"
        if s.step(what, lambda: producer_perf(h, s, what, topic, SIZE, "1", count,
                                              f"pp-{topic}")) is None:
            return
    warm_group, group = f"bench-share-warmup-{os.getpid()}", f"bench-share-{os.getpid()}"
    for g in (warm_group, group):
        if s.step(f"group config of {g}", lambda: earliest(h, s, g)) is None:
            return
    what = "warm-up ShareConsumerPerformance"
    # The first share group on a broker also waits for __share_group_state to be created
    # (50 partitions on either broker): minutes on a loaded machine, hence the long timeout.
    s.step(what, lambda: share_perf(h, s, what, "sh-warmup", warm_group, warm, "share-warmup",
                                    idle_ms=180_000))
    s.log("warm-up done")
    what = f"ShareConsumerPerformance {CONSUMERS} consumers 1 KiB"
    r = s.step(what, lambda: share_perf(h, s, what, "sh-1024", group, n, "share-1024",
                                        cpu_key="share.consume"))
    if r:
        s.record("share.consume.mib", r["mib"])
        s.record("share.consume.rps", r["rps"])
        s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
    s.record_peak_rss("share.rss.peak")


def earliest(h, s, group):
    """share.auto.offset.reset=earliest on the group (IncrementalAlterConfigs, GROUP)."""
    return h.run_tool(f"kafka-configs {group}", h.java(
        TOOL_HEAP, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", s.b.bootstrap,
        "--alter", "--entity-type", "groups", "--entity-name", group,
        "--add-config", "share.auto.offset.reset=earliest"), s.L(f"configs-{group}"), timeout=90)


def share_perf(h, s, what, topic, group, n, log_name, cpu_key=None, idle_ms=60_000):
    """idle_ms: the tool's --timeout, the longest it waits for a record (also the first)."""
    out, usage = s.measured(what, h.java(
        TOOL_HEAP, "org.apache.kafka.tools.ShareConsumerPerformance",
        "--bootstrap-server", s.b.bootstrap, "--topic", topic, "--group", group,
        "--num-records", str(n), "--threads", str(CONSUMERS), "--timeout", str(idle_ms)),
        s.L(log_name), timeout=idle_ms / 1000 + 300)
    r = parse_share_perf(out, n, what)
    if cpu_key:
        s.record_cpu(cpu_key, n, usage)
    return r


# start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg and one
# more count: the group's totals (the per-consumer lines end "for share consumer N").
SHARE_TOTAL = re.compile(r"^[^,]+, [^,]+, ([\d.]+), ([\d.]+), ([\d.]+), (\d+), (\d+)\s*$", re.M)


def parse_share_perf(out, n, what):
    """The group's totals. The tool's clock runs from its start, so the members' joining the
    group (ShareGroupHeartbeat until each has its assignment) is inside it, for both brokers."""
    m = None
    for m in SHARE_TOTAL.finditer(out):
        pass
    if not m:
        raise StepError(f"{what}: no result line in its output:\n{out[-800:]}")
    got = int(m.group(4))
    if got < n:
        raise StepError(f"{what}: consumed {got} of {n} records\n{out[-800:]}")
    # Kafka's tools say MB for MiB.
    return {"mib": float(m.group(2)), "rps": float(m.group(3)), "records": got}
