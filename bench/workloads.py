"""The measurements: the steps of each section against a running broker (the librdkafka
generator bench/rdkload.py; Kafka's ProducerPerformance, ConsumerPerformance and
EndToEndLatency; librdkafka's rdkafka_performance), the parsers of those tools' output, and
the disk baseline. The steps take the Harness `h` (harness.py: its settings, run_tool() and
rdk(), where results go) and, against a broker, that session's Session `s`."""
import os
import re
import subprocess
import sys
import time

from common import (CLUSTER_NODES, CLUSTER_PARTITIONS, CLUSTER_TOPIC_CONFIG, MIB,
                    RDKPERF_PRODUCER_CONF, TOOL_HEAP, BudgetExceeded, StepError, last_json)
from metrics import ACKS, SIZES
from procs import cpu_sum, settle_page_reporting

# Bytes the fetch-only client reads per run (whole passes over the topic): a window of
# ~1-3 s on this machine, long enough to leave the connection set-up out.
FETCH_ONLY_BYTES = 8 << 30


# -- steps shared by the sections
def create_topics(h, s, specs, configs=()):
    """specs: NAME:PARTITIONS[:RF]. Returns whether it worked."""
    args = ["create-topics", "--bootstrap", s.b.bootstrap, "--timeout", "60"]
    for t in specs:
        args += ["--topic", t]
    for c in configs:
        args += ["--config", c]
    return s.step("create topics", lambda: h.rdk(
        "create topics", s.L("create-topics"), 90, *args)) is not None


def warm_up(h, s, counts, topic_of, acks="1"):
    """Not measured: the same short produce + consume load against either broker, so a fresh
    JVM's JIT has compiled the produce and fetch paths before the clock runs."""
    for size, n in counts.items():
        common = ["--bootstrap", s.b.bootstrap, "--topic", topic_of(size), "--count", str(n)]
        what = f"warm-up produce {size} B"
        if s.step(what, lambda: h.rdk(
                what, s.L(f"warmup-produce-{size}"), 180, "produce", *common, "--size",
                str(size), "--acks", acks, tick=s.sample)) is None:
            continue
        what = f"warm-up consume {size} B"
        s.step(what, lambda: h.rdk(what, s.L(f"warmup-consume-{size}"), 180, "consume",
                                   *common, tick=s.sample))
    s.log("warm-up done")


def producer_perf(h, s, what, topic, size, acks, n, log_name, cpu_key=None):
    """ProducerPerformance, unthrottled, the first 20% not counted (--warmup-records)."""
    out, usage = s.measured(what, h.java(
        TOOL_HEAP, "org.apache.kafka.tools.ProducerPerformance",
        "--bootstrap-server", s.b.bootstrap, "--topic", topic,
        "--num-records", str(n), "--record-size", str(size),
        "--throughput", "-1", "--command-property", f"acks={acks}",
        "--warmup-records", str(n // 5)), s.L(log_name))
    r = parse_pp(out, n, n - n // 5, what)
    if cpu_key:
        s.record_cpu(cpu_key, n, usage)
    return r


def consumer_perf(h, s, what, topic, size, n, log_name):
    out = h.run_tool(what, h.java(
        TOOL_HEAP, "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server", s.b.bootstrap, "--topic", topic,
        "--num-records", str(n), "--timeout", "30000",
        "--group", f"bench-cp-{size}-{os.getpid()}"),
        s.L(log_name), timeout=240, tick=s.sample)
    return parse_cp(out, n, size, what)


# -- the single-broker section (and rdkafka_performance against the same brokers)
def single_steps(h, s):
    sizes = [sz for sz, _ in SIZES]
    topics = [f"warmup-{sz}:{h.partitions}" for sz in sizes]
    if "single" in h.sections:
        topics += [f"{pre}-{sz}-{a}:{h.partitions}" for pre in ("jp", "rp")
                   for sz in sizes for a in ACKS]
        topics += ["lat-java:1", "lat-rdk:1", "lat-raw:1"]
        topics += [f"po-{sz}:{h.partitions}" for sz in sizes]
    if "rdkperf" in h.sections and h.rdkperf_bin:
        topics += [f"kp-{sz}-{a}:{h.partitions}" for sz in sizes for a in ACKS]
    if not create_topics(h, s, topics):
        return
    time.sleep(2)
    s.record_idle_rss("rss.idle")
    warm_up(h, s, h.warmup_n, lambda size: f"warmup-{size}")
    if "single" in h.sections:
        cpu0 = cpu_sum(s.b.pids)
        produce_java(h, s)
        produce_rdk(h, s)
        consume_single(h, s)
        e2e_java(h, s)
        e2e_rdk(h, s)
        cpu1 = cpu_sum(s.b.pids)
        if cpu0 is not None and cpu1 is not None:
            s.record("cpu.total", cpu1 - cpu0)
        s.record_peak_rss("rss.peak")
        # The broker's own figures, with clients that leave out a client library's per-record
        # work and linger (after cpu.total, which stays the real clients' workload).
        for size, _ in SIZES:
            produce_only(h, s, size, h.n["rdk"][size])
        for size, _ in SIZES:
            fetch_only(h, s, size, h.n["rdk"][size])
        broker_latency(h, s)
    if "rdkperf" in h.sections and h.rdkperf_bin:
        rdkperf_steps(h, s)


def produce_java(h, s):
    for size, _ in SIZES:
        for acks in ACKS:
            n = h.n["java"][size]
            what = f"ProducerPerformance {size} B acks={acks}"
            r = s.step(what, lambda: producer_perf(
                h, s, what, f"jp-{size}-{acks}", size, acks, n, f"pp-{size}-{acks}",
                f"java.produce.{size}.{acks}"))
            if r:
                s.record(f"produce.java.{size}.{acks}.mib", r["mib"])
                s.record(f"produce.java.{size}.{acks}.rps", r["rps"])
                s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
                if s.kind == "kafka" and size == 1024 and acks == "1":
                    s.info["kafka_java_1k_rps"] = r["rps"]


def produce_rdk(h, s):
    for size, _ in SIZES:
        for acks in ACKS:
            n = h.n["rdk"][size]
            what = f"librdkafka produce {size} B acks={acks}"
            r = s.step(what, lambda: h.rdk(
                what, s.L(f"rdk-produce-{size}-{acks}"), 240, "produce", "--bootstrap",
                s.b.bootstrap, "--topic", f"rp-{size}-{acks}", "--count", str(n), "--size",
                str(size), "--acks", acks, tick=s.sample))
            if r:
                s.record(f"produce.rdk.{size}.{acks}.mib", r["mib_per_s"])
                s.record(f"produce.rdk.{size}.{acks}.rps", r["records_per_s"])
                s.log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")
                if s.kind == "kafka" and size == 1024 and acks == "1":
                    s.info["kafka_rdk_1k_rps"] = r["records_per_s"]


def consume_single(h, s):
    # Both consumers read what the librdkafka producer wrote with acks=1 (the longer topic).
    for size, _ in SIZES:
        n = h.n["rdk"][size]
        what = f"ConsumerPerformance {size} B"
        r = s.step(what, lambda: consumer_perf(h, s, what, f"rp-{size}-1", size, n,
                                               f"cp-{size}"))
        if r:
            s.record(f"consume.java.{size}.mib", r["mib"])
            s.record(f"consume.java.{size}.rps", r["rps"])
            s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s "
                  f"(group join {r['rebalance_ms']:.0f} ms, not counted)")
        what = f"librdkafka consume {size} B"
        r = s.step(what, lambda: h.rdk(
            what, s.L(f"rdk-consume-{size}"), 240, "consume", "--bootstrap", s.b.bootstrap,
            "--topic", f"rp-{size}-1", "--count", str(n), tick=s.sample))
        if r:
            s.record(f"consume.rdk.{size}.mib", r["mib_per_s"])
            s.record(f"consume.rdk.{size}.rps", r["records_per_s"])
            s.log(f"{what}: {r['mib_per_s']:.1f} MiB/s, {r['records_per_s']:.0f} rec/s")


def raw_client(h, s, what, script, args, key, prefix):
    """Runs one of the bench's raw clients (fetchload.py, produceload.py) with CPU accounting
    (cpu.<key>), records <prefix>.mib and .rps and returns its JSON result."""

    def run():
        out, usage = s.measured(what, [h.py, os.path.join(h.here, script)] + args,
                                s.L(what.replace(" ", "-")))
        r = last_json(out, what)
        # The tool's own CPU over its measuring window: its start-up (the interpreter, the
        # batch it builds) is not the load.
        usage["cpu_s"] = r.get("cpu_s", usage.get("cpu_s"))
        s.record_cpu(key, r["records"], usage, window_s=r["seconds"])
        return r

    r = s.step(what, run)
    if r:
        s.record(f"{prefix}.mib", r["mib_per_s"])
        s.record(f"{prefix}.rps", r["records_per_s"])
    return r


def produce_only(h, s, size, n):
    """bench/produceload.py, acks=1: what the broker takes from a client that does no
    per-record work."""
    what = f"produce-only {size} B acks=1"
    r = raw_client(h, s, what, "produceload.py", [
        "--bootstrap", s.b.bootstrap, "--topic", f"po-{size}", "--partitions",
        str(h.partitions), "--count", str(n), "--size", str(size), "--acks", "1"],
        f"produce.raw.{size}", f"produce.raw.{size}")
    if r:
        s.log(f"{what}: {r['mib_per_s']:.0f} MiB/s, {r['records_per_s']:.0f} rec/s, "
              f"{r['records_per_batch']} records per batch")


def fetch_only(h, s, size, n):
    """bench/fetchload.py over the same topic, read FETCH_ONLY_BYTES worth of passes: what the
    broker serves to a client that does no per-record work."""
    passes = max(1, round(FETCH_ONLY_BYTES / (n * size)))
    what = f"fetch-only consume {size} B"
    r = raw_client(h, s, what, "fetchload.py", [
        "--bootstrap", s.b.bootstrap, "--topic", f"rp-{size}-1", "--partitions",
        str(h.partitions), "--count", str(n), "--passes", str(passes)],
        f"fetch.consume.{size}", f"consume.fetch.{size}")
    if r:
        s.log(f"{what}: {r['mib_per_s']:.0f} MiB/s, {r['records_per_s']:.0f} rec/s, "
              f"{r['passes']} passes, {r['bytes_per_fetch'] / 1024:.0f} KiB per fetch")


def e2e_java(h, s):
    """End-to-end, one record in flight (Kafka's tool)."""
    what = "EndToEndLatency"

    def run():
        out = h.run_tool(what, h.java(
            TOOL_HEAP, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server",
            s.b.bootstrap, "--topic", "lat-java", "--num-records", str(h.e2e_java_n),
            "--producer-acks", "1", "--record-size", "1024"),
            s.L("e2e-java"), timeout=240, tick=s.sample)
        return parse_e2e(out, what)

    r = s.step(what, run)
    if r:
        for k in ("avg", "p50", "p99", "p999"):
            s.record(f"e2e.java.{k}", r[k])
        s.log(f"{what}: avg {r['avg']:.3f} ms, p50 {r['p50']} p99 {r['p99']} "
              f"p99.9 {r['p999']} ms")


def set_e2e_rate(h, s):
    info = s.info
    if h.e2e_rate is None and s.kind == "kafka":
        cands = [v for v in (info.get("kafka_java_1k_rps"), info.get("kafka_rdk_1k_rps")) if v]
        if cands:
            h.e2e_rate = int(0.5 * min(cands) / 100) * 100 or 100
            h.e2e_rate_basis = (
                f"half of the lower of Kafka's 1 KiB acks=1 max ({h.tag}): "
                f"ProducerPerformance {info.get('kafka_java_1k_rps', 0):.0f} rec/s, "
                f"librdkafka {info.get('kafka_rdk_1k_rps', 0):.0f} rec/s")
            s.log(f"fixed e2e rate set to {h.e2e_rate} rec/s ({h.e2e_rate_basis})")
    if h.e2e_rate is None:
        h.e2e_rate = 1000
        h.e2e_rate_basis = "fallback (Kafka's max was not measured before the first e2e run)"
        h.notes.append(f"e2e rate: {h.e2e_rate_basis}")


def e2e_rdk(h, s):
    """End-to-end at a fixed rate (librdkafka)."""
    set_e2e_rate(h, s)
    what = f"librdkafka e2e at {h.e2e_rate} rec/s"
    r = s.step(what, lambda: h.rdk(
        what, s.L("e2e-rdk"), h.e2e_rdk_secs + 90, "e2e", "--bootstrap", s.b.bootstrap,
        "--topic", "lat-rdk", "--rate", str(h.e2e_rate), "--seconds",
        str(h.e2e_rdk_secs), "--warmup", str(h.e2e_rdk_warmup), "--size", "1024",
        "--acks", "1", tick=s.sample))
    if not r:
        return
    for k in ("p50", "p99", "p999", "max"):
        s.record(f"e2e.rdk.{k}", r[f"{k}_us"] / 1000.0)
    s.info["e2e_rdk"] = r
    # Both brokers keep Kafka's layout (<log dir>/<topic>-<partition>/<offset>.log), so the
    # segment files show whether a segment roll fell into the window: the tail latencies
    # depend on it.
    rolls = segment_count(os.path.join(s.b.dir, "data", "lat-rdk-0")) - 1
    r["segment_rolls"] = rolls
    s.log(f"{what}: p50 {r['p50_us'] / 1000:.2f} p99 {r['p99_us'] / 1000:.2f} p99.9 "
          f"{r['p999_us'] / 1000:.2f} max {r['max_us'] / 1000:.2f} ms; achieved "
          f"{r['achieved_rate']:.0f} rec/s; segment rolls during the run: {rolls}")
    if r["achieved_rate"] < 0.95 * r["target_rate"]:
        h.notes.append(f"[{h.tag}] {s.kind}: the e2e generator fell behind "
                       f"({r['achieved_rate']:.0f} of {r['target_rate']:.0f} rec/s)")


def broker_latency(h, s):
    """bench/brokerlat.py at the librdkafka e2e rate: produce request sent -> fetch answered."""
    set_e2e_rate(h, s)
    what = f"broker e2e at {h.e2e_rate} rec/s"

    def run():
        out = h.run_tool(what, [
            h.py, os.path.join(h.here, "brokerlat.py"), "--bootstrap", s.b.bootstrap,
            "--topic", "lat-raw", "--rate", str(h.e2e_rate), "--seconds", str(h.e2e_rdk_secs),
            "--warmup", str(h.e2e_rdk_warmup), "--size", "1024"], s.L("e2e-raw"),
            timeout=h.e2e_rdk_secs + 60, tick=s.sample)
        return last_json(out, what)

    r = s.step(what, run)
    if not r:
        return
    for k in ("p50", "p99", "p999", "max"):
        s.record(f"e2e.raw.{k}", r[f"{k}_ms"])
    s.log(f"{what}: p50 {r['p50_ms']:.3f} p99 {r['p99_ms']:.3f} p99.9 {r['p999_ms']:.3f} "
          f"max {r['max_ms']:.2f} ms; produce answered p50 {r['ack_p50_ms']:.3f} p99 "
          f"{r['ack_p99_ms']:.3f} ms; {r['records_per_batch']} records per request")
    if r["achieved_rate"] < 0.95 * h.e2e_rate or r["max_behind_s"] > 0.1:
        h.notes.append(f"[{h.tag}] {s.kind}: the broker e2e client fell behind "
                       f"({r['achieved_rate']:.0f} of {h.e2e_rate} rec/s, up to "
                       f"{r['max_behind_s'] * 1000:.0f} ms late)")


# -- rdkafka_performance
def rdkperf_steps(h, s):
    for size, _ in SIZES:
        for acks in ACKS:
            n = h.n["rdkperf"][size]
            rdkperf_run(h, s, f"rdkafka_performance produce {size} B acks={acks}",
                        "produce", f"{size}.{acks}", n, parse_rdkperf_produce,
                        ["-P", "-t", f"kp-{size}-{acks}", "-s", str(size), "-c", str(n),
                         "-X", f"acks={acks}"] + RDKPERF_PRODUCER_CONF)
    for size, _ in SIZES:
        # Reads what it wrote with acks=1, every partition from the beginning; -e: stop at
        # the end of all partitions should there be fewer records than expected.
        n = h.n["rdkperf"][size]
        parts = [a for p in range(h.partitions) for a in ("-p", str(p))]
        rdkperf_run(h, s, f"rdkafka_performance consume {size} B", "consume", str(size),
                    n, parse_rdkperf_consume,
                    ["-C", "-t", f"kp-{size}-1", *parts, "-o", "beginning", "-e",
                     "-c", str(n)])


def rdkperf_run(h, s, what, op, case, n, parse, args, kind="rdkperf", bootstrap=None):
    """One rdkafka_performance run; op: produce|consume, case: <size>[.<acks>]; its metrics
    are <op>.<kind>.<case>.mib|rps and the CPU ones of <kind>.<op>.<case>. Returns the parsed
    result, or None when the step failed."""

    def run():
        out, usage = s.measured(what, [h.rdkperf_bin, "-b", bootstrap or s.b.bootstrap] + args,
                                s.L(f"{kind}-{op}-{case.replace('.', '-')}"))
        r = parse(out, n, what)
        s.record_cpu(f"{kind}.{op}.{case}", n, usage, window_s=r["ms"] / 1000.0 or None)
        return r, usage

    res = s.step(what, run)
    if not res:
        return None
    r, usage = res
    s.record(f"{op}.{kind}.{case}.mib", r["mib"])
    s.record(f"{op}.{kind}.{case}.rps", r["rps"])
    s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s; CPU s: client "
          f"{fmt_opt(usage.get('cpu_s'))}, broker {fmt_opt(usage.get('broker_cpu_s'))} "
          f"in {usage['wall_s']:.2f} s")
    return r


# -- the cluster section
def cluster_steps(h, s):
    p = CLUSTER_PARTITIONS
    if not create_topics(h, s, [f"cl-1024:{p}:{CLUSTER_NODES}",
                                f"cl-warmup:{p}:{CLUSTER_NODES}"], CLUSTER_TOPIC_CONFIG):
        return
    time.sleep(2)
    s.record_idle_rss("cluster.rss.idle")
    # Warm-up, not measured, with the tool measured next: three fresh JVMs spend most of
    # their first ~100k ProducerPerformance records (16 KiB batches, many small requests)
    # in the JIT compilers.
    what = "warm-up ProducerPerformance 1 KiB acks=all"
    s.step(what, lambda: producer_perf(h, s, what, "cl-warmup", 1024, "all",
                                       h.cluster_warmup_n, "warmup-pp-1024-all"))
    s.log("warm-up done")
    n = h.cluster_n
    what = "ProducerPerformance 1 KiB acks=all"
    r = s.step(what, lambda: producer_perf(h, s, what, "cl-1024", 1024, "all", n,
                                           "pp-1024-all", "cluster.produce"))
    if r:
        s.record("cluster.produce.mib", r["mib"])
        s.record("cluster.produce.rps", r["rps"])
        s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s")
    what = "ConsumerPerformance 1 KiB"
    r = s.step(what, lambda: consumer_perf(h, s, what, "cl-1024", 1024, n, "cp-1024"))
    if r:
        s.record("cluster.consume.mib", r["mib"])
        s.record("cluster.consume.rps", r["rps"])
        s.log(f"{what}: {r['mib']:.1f} MiB/s, {r['rps']:.0f} rec/s "
              f"(group join {r['rebalance_ms']:.0f} ms, not counted)")
    s.record_peak_rss("cluster.rss.peak")


# -- the disk baseline
def disk_baseline(h):
    """Plain buffered sequential writes to the filesystem of the data dirs, before any broker
    runs, in 1 MiB os.write() blocks. The baseline is new data: each pass writes a new file and
    keeps it (a log grows; it never rewrites what it just freed), so the page cache needs
    memory it does not hold yet, as a broker's does. For comparison, the same amount rewritten
    into a file just truncated (pages the kernel just freed: memory speed), and new data
    ending with one fsync."""
    h.tag = "disk"
    fs = filesystem_of(h.tmp)
    d = h.disk = {"dir": h.tmp, "filesystem": fs, "mib": h.disk_mib,
                  "buffered_mib_s": [], "rewrite_mib_s": [], "fsync_mib_s": [], "fsync_only_s": []}
    block = os.urandom(MIB)
    kept = []
    # From the same starting point as every broker session (see procs.settle_page_reporting).
    settle_page_reporting()
    try:
        for i in range(h.disk_reps):
            if h.remaining() < 60:
                raise BudgetExceeded()
            kept.append(os.path.join(h.tmp, f"disk-baseline-{i}.bin"))
            secs, _ = timed_write(kept[-1], h.disk_mib, block, fsync=False, keep=True)
            d["buffered_mib_s"].append(h.disk_mib / secs)
            secs, _ = timed_write(kept[-1], h.disk_mib, block, fsync=False, keep=True)
            d["rewrite_mib_s"].append(h.disk_mib / secs)
        for i in range(h.disk_reps):
            kept.append(os.path.join(h.tmp, f"disk-baseline-fsync-{i}.bin"))
            secs, fsync_s = timed_write(kept[-1], h.disk_mib, block, fsync=True, keep=True)
            d["fsync_mib_s"].append(h.disk_mib / secs)
            d["fsync_only_s"].append(fsync_s)
    finally:
        for path in kept:
            os.unlink(path)
    smp = lambda vs: ", ".join(f"{v:.0f}" for v in vs)  # noqa: E731
    print(f"bench: [disk] {h.disk_mib} MiB per pass to {fs}: new data {smp(d['buffered_mib_s'])}"
          f" MiB/s; rewritten {smp(d['rewrite_mib_s'])} MiB/s; new data with a final fsync "
          f"{smp(d['fsync_mib_s'])} MiB/s", file=sys.stderr, flush=True)


def fmt_opt(v):
    return "?" if v is None else f"{v:.2f}"


def find_rdkperf(path):
    """(path, librdkafka version, None) when bench/run found rdkafka_performance, else
    (None, None, why not)."""
    if not path or not os.access(path, os.X_OK):
        return None, None, (f"no rdkafka_performance at {path or '(none given)'}: it is built by "
                            "bench/run from the librdkafka build that `compat-tests/librdkafka/run "
                            "--build-only` caches")
    try:
        # Without arguments it prints its usage, with the librdkafka version, and exits 1.
        r = subprocess.run([path], capture_output=True, text=True, timeout=30)
        m = re.search(r"librdkafka version (\S+)", r.stdout + r.stderr)
        return path, (m.group(1) if m else "?"), None
    except (OSError, subprocess.SubprocessError) as e:
        return None, None, f"{path} does not run: {e}"


def timed_write(path, mib, block, fsync, keep=False):
    """Writes `mib` MiB to `path` (created or truncated) in 1 MiB os.write() calls (into the page
    cache); with fsync, ends with one fsync. Deletes the file unless `keep`. Returns (seconds in
    all, seconds of the fsync)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        t0 = time.monotonic()
        for _ in range(mib):
            if os.write(fd, block) != len(block):
                raise OSError(f"short write to {path}")
        t1 = time.monotonic()
        if fsync:
            os.fsync(fd)
        t2 = time.monotonic()
    finally:
        os.close(fd)
        if not keep:
            os.unlink(path)
    return t2 - t0, t2 - t1


def filesystem_of(path):
    """'<device> (<fs type>, mounted at <mount point>)' from /proc/mounts."""
    path = os.path.realpath(path)
    best = None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, fstype = line.split()[:3]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and (
                        best is None or len(mnt) > len(best[1])):
                    best = (dev, mnt, fstype)
    except OSError:
        pass
    return f"{best[0]} ({best[2]}, mounted at {best[1]})" if best else "?"


def segment_count(partition_dir):
    try:
        return sum(1 for f in os.listdir(partition_dir) if f.endswith(".log"))
    except OSError:
        return 0


# ------------------------------------------------------------------------------- parsers
PP_FINAL = re.compile(
    r"^(\d+) steady state records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th",
    re.M)


def last_match(rx, out, what):
    m = None
    for m in rx.finditer(out):
        pass
    if not m:
        raise StepError(f"{what}: no summary line in its output:\n{out[-800:]}")
    return m


def parse_pp(out, n, steady, what):
    """The steady-state summary (the records after --warmup-records)."""
    total = re.search(r"^(\d+) records sent, .* ms 99\.9th\.", out, re.M)
    if not total:
        raise StepError(f"{what}: no final summary line in its output:\n{out[-800:]}")
    if int(total.group(1)) != n:
        raise StepError(f"{what}: {total.group(1)} of {n} records sent")
    m = last_match(PP_FINAL, out, what)
    sent = int(m.group(1))
    if sent != steady:
        raise StepError(f"{what}: steady state covers {sent} records, expected {steady}")
    return {"rps": float(m.group(2)), "mib": float(m.group(3)), "p99_ms": int(m.group(8))}


def parse_cp(out, n, size, what):
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    rows = [l.split(",") for l in out.splitlines() if l.count(",") == 9 and "start.time" not in l]
    if not rows:
        raise StepError(f"{what}: no result line in its output:\n{out[-800:]}")
    f = [x.strip() for x in rows[-1]]
    got = int(f[4])
    if got < n:
        raise StepError(f"{what}: consumed {got} of {n} records")
    fetch_ms = float(f[7])
    if fetch_ms <= 0:
        raise StepError(f"{what}: fetch time {fetch_ms} ms")
    # fetch.MB.sec and fetch.nMsg.sec leave out the group join (rebalance.time.ms).
    return {"mib": float(f[8]), "rps": float(f[9]), "rebalance_ms": float(f[6])}


def parse_e2e(out, what):
    a = re.search(r"Avg latency: ([\d.]+) ms", out)
    p = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99.9th = (\d+)", out)
    if not (a and p):
        raise StepError(f"{what}: no latency lines in its output:\n{out[-800:]}")
    return {"avg": float(a.group(1)), "p50": int(p.group(1)), "p99": int(p.group(2)),
            "p999": int(p.group(3))}


# rdkafka_performance prints a summary line every second and a last one at the end. Its "MB/s"
# is bytes per microsecond, i.e. 10^6 bytes/s; msgs/s and MB/s are computed from microseconds.
RDKPERF_PRODUCED = re.compile(
    r"^% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s, (\d+) produce failures, (\d+) in queue", re.M)
RDKPERF_CONSUMED = re.compile(
    r"^% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([\d.]+) MB/s\)", re.M)


def parse_rdkperf_produce(out, n, what):
    """Producer clock: from just before the first produce() (after the client is created, so
    it includes connecting and the first metadata request) to the last delivery report."""
    m = last_match(RDKPERF_PRODUCED, out, what)
    delivered, failed, queued = int(m.group(3)), int(m.group(4)), int(m.group(9))
    if delivered != n or failed or queued:
        raise StepError(f"{what}: {delivered} of {n} records delivered, {failed} failed, "
                        f"{queued} still queued\n{out[-800:]}")
    # "produce failures" are produce() calls refused with a full local queue, then retried.
    return {"rps": float(m.group(6)), "mib": float(m.group(7)) * 1e6 / MIB, "ms": int(m.group(5)),
            "backpressure": int(m.group(8))}


def parse_rdkperf_consume(out, n, what):
    """Consumer clock: from the first record received to the last."""
    m = last_match(RDKPERF_CONSUMED, out, what)
    got = int(m.group(1))
    if got < n:
        raise StepError(f"{what}: consumed {got} of {n} records\n{out[-800:]}")
    return {"rps": float(m.group(4)), "mib": float(m.group(5)) * 1e6 / MIB, "ms": int(m.group(3))}
