"""What a run reports: medians and Sluice/Kafka ratios per metric, the disk baseline set
against the best produce, results.md, results.png, results.json and the one-line summary
on stdout."""
import datetime
import os
import platform
import statistics
import subprocess

from common import (CLUSTER_HEAP, CLUSTER_NODES, CLUSTER_PARTITIONS, CLUSTER_TOPIC_CONFIG,
                    DISK_TARGET_PCT, KAFKA_HEAP, KAFKA_VERSION, RDKPERF_PRODUCER_CONF, REPO,
                    SATURATED, SECTIONS)
from metrics import ACKS, GROUPS, METRICS
from security import security_intro


def fmt(v, unit):
    if v is None:
        return "—"
    if unit == "records/s":
        return f"{v:,.0f}"
    if unit == "whole ms":
        return "<1" if v < 1 else f"{v:g}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_ratio(r):
    if r is None:
        return "—"
    if r >= 1:
        return f"{r:.2f}×"
    return f"{r:#.2g}×"  # two significant digits: 0.0031×, 0.20×, not 0.00×


def summarize(h):
    rows = []
    for mid, m in METRICS.items():
        ks, ss = h.samples["kafka"].get(mid, []), h.samples["sluice"].get(mid, [])
        km = statistics.median(ks) if ks else None
        sm = statistics.median(ss) if ss else None
        ratio = sm / km if (km and sm is not None) else None
        rows.append({"id": mid, "group": m.group, "section": m.section, "label": m.label,
                     "unit": m.unit, "higher_is_better": m.higher, "kafka": km, "sluice": sm,
                     "ratio": ratio, "kafka_samples": ks, "sluice_samples": ss})
    return rows


def best_produce(rows, kind):
    """The highest single-broker produce MiB/s median of `kind` (any client, size, acks)."""
    cands = [r for r in rows if r["group"] in ("single", "rdkperf") and r[kind] is not None
             and r["id"].startswith("produce.") and r["id"].endswith(".mib")]
    return max(cands, key=lambda r: r[kind], default=None)


def disk_summary(h, rows):
    """Adds the medians and each broker's best produce MiB/s as a % of the new-data figure to
    h.disk (what results.md and results.json show)."""
    d = h.disk
    if not d or not d["buffered_mib_s"]:
        return
    for key in ("buffered", "rewrite", "fsync"):
        d[f"{key}_median_mib_s"] = statistics.median(d[f"{key}_mib_s"])
    d["target_pct"] = DISK_TARGET_PCT
    for kind in ("sluice", "kafka"):
        r = best_produce(rows, kind)
        if r:
            d[f"{kind}_best_produce"] = {
                "metric": r["id"], "what": f"{r['section']}, {r['label']}", "mib_s": r[kind],
                "pct_of_buffered": 100.0 * r[kind] / d["buffered_median_mib_s"],
                "pct_of_rewrite": 100.0 * r[kind] / d["rewrite_median_mib_s"]}


def saturation(client, broker):
    """Which side used at least SATURATED cores (None without both figures)."""
    if client is None or broker is None:
        return None
    sides = [name for name, v in (("client", client), ("broker", broker)) if v >= SATURATED]
    busy = client + broker >= SATURATED * os.cpu_count()
    return (" and ".join(sides) or "neither") + (
        f" (all {os.cpu_count()} cores busy)" if busy else "")


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except Exception:
        return "?"


def tool_version(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception:
        return "?"


def metric_table(rows):
    out = ["| metric | unit | Kafka | Sluice | Sluice/Kafka | samples Kafka ; Sluice |",
           "|---|---|---:|---:|---:|---|"]
    for r in rows:
        arrow = {True: " ↑", False: " ↓", None: ""}[r["higher_is_better"]]
        smp = (", ".join(fmt(v, r["unit"]) for v in r["kafka_samples"]) + " ; " +
               ", ".join(fmt(v, r["unit"]) for v in r["sluice_samples"]))
        out.append(f"| {r['label']}{arrow} | {r['unit']} | {fmt(r['kafka'], r['unit'])} | "
                   f"{fmt(r['sluice'], r['unit'])} | {fmt_ratio(r['ratio'])} | {smp} |")
    return out


def cores_table(rows):
    """cores.<key>.client and .broker side by side, with which side saturated a core."""
    by = {r["id"]: r for r in rows}
    keys = list(dict.fromkeys(r["id"].rsplit(".", 1)[0] for r in rows))
    out = [f"| run | Kafka: client / broker | Sluice: client / broker | saturated a core "
           f"(≥ {SATURATED} CPU s per s) |", "|---|---:|---:|---|"]
    for k in keys:
        c, b = by[f"{k}.client"], by[f"{k}.broker"]
        cells, verdicts = [], []
        for kind, name in (("kafka", "Kafka"), ("sluice", "Sluice")):
            cells.append(f"{fmt(c[kind], 'cores')} / {fmt(b[kind], 'cores')}")
            v = saturation(c[kind], b[kind])
            if v:
                verdicts.append(f"{name}: {v}")
        out.append(f"| {c['label']} | {cells[0]} | {cells[1]} | {'; '.join(verdicts) or '—'} |")
    return out


def rdkperf_intro(h):
    n = h.n["rdkperf"]
    tool = [
        f"`{h.rdkperf_bin}` (librdkafka {h.rdkperf_version}), against the same single brokers "
        f"after the runs above. Produce: `-P -s SIZE -c N -X acks=1|all "
        f"{' '.join(RDKPERF_PRODUCER_CONF)}` (the tool itself sets linger.ms=1000, which would "
        f"hold the last batches that long), {n[1024]:,} × 1 KiB and {n[100]:,} × 100 B, "
        f"partitioner default, clock from just before the first produce() to the last delivery "
        f"report. Consume: `-C -p 0..{h.partitions - 1} -o beginning -e -c N` on the acks=1 "
        f"topics (the tool sets queued.min.messages=1000000 itself), clock from the first record "
        f"to the last. Its MB/s (10^6 B/s) is converted to MiB/s."]
    if not h.rdkperf_bin:
        tool = [f"rdkafka_performance not run: {h.skipped.get('rdkperf', 'no results')}."]
    return tool + [
        "",
        "CPU: the load tool's utime + stime (all threads, from wait4 when it exits; for "
        "ProducerPerformance that includes the JVM's start-up and JIT), the broker process(es)' "
        "utime + stime from /proc/PID/stat over the tool's lifetime. Shown per million records "
        "sent or read, and as \"cores\": CPU seconds per second of the measuring window "
        "(rdkafka_performance: its own clock, which leaves out e.g. the consumer's ~0.5 s of "
        "idle start-up; ProducerPerformance: its lifetime). A side at ≥ "
        f"{SATURATED} cores saturated a core; on {os.cpu_count()} cores client + broker cannot "
        f"exceed {os.cpu_count()}.",
    ]


def cluster_intro(h):
    return [
        f"Kafka: {CLUSTER_NODES} KRaft nodes in combined mode (process.roles=broker,controller), "
        f"static quorum (controller.quorum.voters lists all three), each formatted with the same "
        f"cluster id, JVM `{CLUSTER_HEAP}` G1 each, internal topics at Kafka's defaults (RF 3). "
        f"Sluice: `sluice dev-cluster --brokers {CLUSTER_NODES}` (a supervisor starting "
        f"{CLUSTER_NODES} `sluice serve` nodes; RSS and CPU are the nodes', without the "
        f"supervisor). Both: group.initial.rebalance.delay.ms=0.",
        "",
        f"Topic: {CLUSTER_PARTITIONS} partitions, RF={CLUSTER_NODES}, "
        f"{', '.join(CLUSTER_TOPIC_CONFIG)}; created once every partition has its full ISR. "
        f"Kafka's three storage formats took {fmt_ms_median(h, 'cluster')} before each start "
        f"(not counted). "
        f"Unmeasured warm-up: ProducerPerformance {h.cluster_warmup_n:,} × 1 KiB acks=all to "
        f"another topic (three fresh JVMs spend their first ~100k of these records mostly in the "
        f"JIT compilers). Then ProducerPerformance {h.cluster_n:,} × 1 KiB acks=all (first 20% "
        f"not counted) and ConsumerPerformance reading them back. "
        f"{h.cluster_reps} repetition(s), alternating which broker goes first.",
    ]


def fmt_ms_median(h, section):
    fmts = [r["format_ms"] for r in h.runs if r.get("format_ms") and r["section"] == section]
    return f"{statistics.median(fmts):,.0f} ms (median)" if fmts else "—"


def settle_row(h):
    waits = [r["reporting_settle_s"] for r in h.runs if r.get("reporting_settle_s") is not None]
    what = (f"before the starts of each single-broker session the harness waited "
            f"{min(waits):.1f}-{max(waits):.1f} s in all (median {statistics.median(waits):.1f}), "
            f"each time until the balloon driver had handed back most of the memory freed "
            f"before (until its reported_kib counter moved less than 384 MiB in 2.5 s), so no "
            f"session starts with gigabytes of freed, still-backed pages that the one before it "
            f"left (see the disk baseline); not before the cluster starts (neither cluster comes "
            f"near the page cache's write rate)"
            if any(waits) else "no free page reporting counter on this machine: no wait")
    return f"| free page reporting | {what} |"


def single_intro(h):
    return [f"Kafka's `StorageTool format` (run before each Kafka start, not counted in its "
            f"start-up time) took {fmt_ms_median(h, 'single')}.", "",
            "The produce-only client (`bench/produceload.py`) sends one ~1 MB batch per "
            "partition per Produce request (librdkafka's batch defaults), built once and sent "
            "again and again (the broker assigns the offsets, outside the CRC), 5 requests in "
            "flight, acks=1, on its own topics: no per-record work in the client, so what it "
            "measures is the broker's validation and append and the kernel's page-cache "
            "writes of new data (see the disk baseline).", "",
            "The fetch-only client (`bench/fetchload.py`) reads the same topics as the "
            "consumers, several passes from offset 0, with plain Fetch requests on one "
            "connection, one in flight, at the consumers' default sizes (fetch.max.bytes "
            "50 MiB, max.partition.fetch.bytes 1 MiB); it parses only the batch headers (no "
            "CRC check, no per-record decoding), so it shows what each broker itself serves "
            "where the real consumers are bound by their own per-record work (see the cores "
            "table). Only whole batches are counted: Kafka fills each partition up to the "
            "byte limit and cuts the last batch, which the client fetches again.", "",
            "The broker end-to-end latency (`bench/brokerlat.py`) runs at the librdkafka "
            "fixed rate: every millisecond one Produce request (acks=1) with rate/1000 "
            "records, sent when due, on one connection, and one Fetch kept waiting at the end "
            "of the log on another; latency is from a request's send to the arrival of the "
            "Fetch response with its batch. The librdkafka figures above include the "
            "producer's linger.ms=1 (up to 1 ms per record) and the clients' threads; these "
            "leave both out and keep only a small Python select() loop, the same for both "
            "brokers."]


def share_intro(h):
    return [
        f"One broker of each kind, as in the single-broker section (Kafka's share groups are on "
        f"by default in 4.4, as Sluice's). ProducerPerformance writes {h.share_n:,} × 1 KiB "
        f"records to a 3-partition topic and {h.share_warmup_n:,} to another (not measured); "
        f"an unmeasured warm-up share group reads the second. Then Kafka's "
        f"ShareConsumerPerformance with `--threads 3` (three KafkaShareConsumers in one share "
        f"group, implicit acknowledgement, the client's defaults) reads the first, the group "
        f"set to share.auto.offset.reset=earliest with ConfigCommand beforehand. The tool's "
        f"clock starts before the consumers join, so the join (ShareGroupHeartbeat until each "
        f"member has its partitions) is inside it, for both. {h.a.reps} repetition(s), "
        f"alternating which broker goes first.",
    ]


GROUP_INTRO = {"single": single_intro, "rdkperf": rdkperf_intro, "cluster": cluster_intro,
               "security": security_intro, "share": share_intro}


def heading(text):
    return ["", text, ""]


def group_markdown(h, group, rows):
    out = heading(f"## {GROUPS[group]}")
    if not any(r["kafka_samples"] or r["sluice_samples"] for r in rows):
        return out + [f"Not run: {h.skipped.get(group, 'no results')}."]
    out += GROUP_INTRO[group](h)
    for section in dict.fromkeys(r["section"] for r in rows):
        srows = [r for r in rows if r["section"] == section]
        if not any(r["kafka_samples"] or r["sluice_samples"] for r in srows):
            continue
        out += heading(f"### {section}")[0 if out[-1] else 1:]
        out += cores_table(srows) if srows[0]["unit"] == "cores" else metric_table(srows)
    return out


def disk_markdown(h):
    out = heading("## Disk baseline (before any broker ran)")
    d = h.disk
    if not d or not d["buffered_mib_s"]:
        return out + [f"Not run: {h.skipped.get('disk', 'no results')}."]
    smp = lambda vs: ", ".join(f"{v:,.0f}" for v in vs)  # noqa: E731
    out += ["Each pass writes new data to a new file and keeps it, as a log grows: the page "
            "cache must take memory it does not hold yet. On this VM that is the dear part "
            "(a virtio balloon with free page reporting hands freed memory back to the host, "
            "and touching it again faults it in from the host), so the rewrite row, which "
            "reuses the pages the kernel has just freed, runs at memory speed and is no "
            "baseline for a broker's appends. Brokers pay the same cost for every new byte. "
            "Memory freed and not yet handed back still writes at memory speed, so each broker "
            "session, and these passes, start only once the memory the run before freed has "
            "been handed back (see the header); what the clients free within a session is the "
            "same for both brokers.", "",
            "| | |", "|---|---|",
            f"| filesystem of the data dirs | {d['filesystem']} |",
            f"| plain buffered sequential writes of new data: {d['mib']:,} MiB per pass to a new "
            f"file in 1 MiB `os.write()` calls, no fsync | **{d['buffered_median_mib_s']:,.0f} "
            f"MiB/s** (median of {smp(d['buffered_mib_s'])}) |",
            f"| new data ending with one fsync | {d['fsync_median_mib_s']:,.0f} MiB/s (median of "
            f"{smp(d['fsync_mib_s'])}; the fsync alone took "
            f"{', '.join(f'{v:.2f}' for v in d['fsync_only_s'])} s) |",
            f"| the same file rewritten right after (pages just freed: memory speed) | "
            f"{d['rewrite_median_mib_s']:,.0f} MiB/s (median of {smp(d['rewrite_mib_s'])}) |"]
    for kind, name in (("sluice", "Sluice"), ("kafka", "Kafka")):
        b = d.get(f"{kind}_best_produce")
        if not b:
            continue
        verdict = ""
        if kind == "sluice":
            verdict = (f" — target ≥ {DISK_TARGET_PCT} %: "
                       f"{'met' if b['pct_of_buffered'] >= DISK_TARGET_PCT else 'NOT met'}")
        out.append(f"| {name}'s best single-broker produce (median) | {b['mib_s']:,.0f} MiB/s "
                   f"({b['what']}) = **{b['pct_of_buffered']:.0f} %** of the new-data figure"
                   f"{verdict}; {b['pct_of_rewrite']:.0f} % of the rewrite figure |")
    return out


def write_markdown(h, rows, path, wall_s, complete):
    a = h.a
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    out = []
    out.append("# Sluice vs Apache Kafka — benchmark results\n")
    out.append(f"Generated by `bench/run{' --quick' if h.quick else ''}` on "
               f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {wall_s / 60:.1f} min"
               f"{'' if complete else ' — **INCOMPLETE: time budget ran out**'}.\n")
    out.append("| | |\n|---|---|")
    out.append(f"| Sluice | {getattr(h, 'sluice_desc', h.sluice_bin)} |")
    out.append(f"| Kafka | {KAFKA_VERSION} (kafka_2.13 from Maven Central), KRaft combined mode, "
               f"one node, JVM `{KAFKA_HEAP}` G1 (cluster: see its section) |")
    out.append(f"| Java | {tool_version(['java', '-version'])} |")
    out.append(f"| librdkafka | {h.rdk_version} (confluent-kafka); rdkafka_performance: "
               f"{h.rdkperf_version or 'not run'} |")
    out.append(f"| machine | {os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.system()} "
               f"{platform.release()}; load average at the end {load[0]:.2f} |")
    out.append(f"| sections | {', '.join(s for s in SECTIONS if s in h.sections)} |")
    out.append(f"| repetitions | single broker: {a.reps} per broker, cluster: {h.cluster_reps}; "
               f"alternating which starts first; the tables show medians |")
    out.append(f"| topics | {h.partitions} partition(s) for throughput, 1 for latency; RF 1; "
               f"created with the same admin client |")
    out.append(f"| records per run | ProducerPerformance {h.n['java'][1024]:,} × 1 KiB and "
               f"{h.n['java'][100]:,} × 100 B (first 20% not counted: --warmup-records); "
               f"librdkafka produce and both consumers {h.n['rdk'][1024]:,} × 1 KiB and "
               f"{h.n['rdk'][100]:,} × 100 B; before that an unmeasured warm-up of "
               f"{h.warmup_n[1024]:,} × 1 KiB + {h.warmup_n[100]:,} × 100 B produced and "
               f"consumed |")
    out.append(f"| e2e | EndToEndLatency {h.e2e_java_n:,} records; librdkafka "
               f"(producer linger.ms=1) {h.e2e_rate or '—'} rec/s for {h.e2e_rdk_secs} s "
               f"(first {h.e2e_rdk_warmup} s not counted): {h.e2e_rate_basis or '—'} |")
    rolls = {k: [r["e2e_rdk"].get("segment_rolls") for r in h.runs
                 if r["broker"] == k and "e2e_rdk" in r] for k in ("kafka", "sluice")}
    out.append(f"| e2e segment rolls | segment rolls of the latency topic during each "
               f"fixed-rate run (default segment size 1 GiB; a roll inside the window moves the "
               f"tail latencies): Kafka {rolls['kafka']}, Sluice {rolls['sluice']} |")
    out.append(settle_row(h))
    out.append("")
    out.append("Ratio is Sluice / Kafka; ↑ means higher is better, ↓ lower is better. "
               "MiB = 2^20 bytes (what Kafka's tools call MB).")
    for group in GROUPS:
        out += group_markdown(h, group, [r for r in rows if r["group"] == group])
    out += disk_markdown(h)
    out += heading("## Failures")
    out.extend([f"- {f.splitlines()[0]}" for f in h.failures] or ["None."])
    out += heading("## Notes")
    out.extend([f"- {n}" for n in h.notes] or ["None."])
    out += heading("## Caveats")
    out.append("- Brokers, clients and the harness share the same cores; throughput numbers "
               "are client+broker numbers on this machine, not broker limits: see the cores "
               "table for which side saturated a core.")
    out.append("- The librdkafka generator is Python (confluent-kafka): at 100 B it is limited "
               "by the Python loop rather than by the broker; rdkafka_performance is not.")
    out.append("- EndToEndLatency reports whole milliseconds (truncated); its avg is exact.")
    out.append("- The cluster runs three brokers and the client on the same cores: it shows the "
               "cost of replication on one machine, not a distributed deployment.")
    out.append("- Per-process logs of this run: `bench/results/logs/`.")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_chart(h, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {r["id"]: r for r in rows}
    fig, axes = plt.subplots(3, 2, figsize=(16, 15))
    colors = {"kafka": "#4c72b0", "sluice": "#dd8452"}

    def bars(ax, ids, labels, title, ylabel, log=False):
        import numpy as np
        x = np.arange(len(ids))
        w = 0.38
        for i, kind in enumerate(["kafka", "sluice"]):
            vals = [by[m][kind] if by[m][kind] is not None else 0 for m in ids]
            bs = ax.bar(x + (i - 0.5) * w, vals, w, label="Kafka 4.4.0" if kind == "kafka"
                        else "Sluice", color=colors[kind])
            for rect, v, m in zip(bs, vals, ids):
                if v or by[m][kind] is not None:
                    ax.annotate(fmt(v, by[m]["unit"]), (rect.get_x() + rect.get_width() / 2, v),
                                ha="center", va="bottom", fontsize=7)
        # Ratio Sluice/Kafka as the last line of each tick label.
        ax.set_xticks(x)
        ax.set_xticklabels([f"{lab}\n{fmt_ratio(by[m]['ratio'])}" for lab, m in zip(labels, ids)],
                           fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        if log and any(by[m][k] for m in ids for k in ("kafka", "sluice")):
            ax.set_yscale("log")
        ax.legend(fontsize=8)

    tp_ids, tp_labels = [], []
    for client, cl in [("java", "Java"), ("rdk", "rdk")]:
        for size, sn in [(1024, "1K"), (100, "100B")]:
            for acks in ACKS:
                tp_ids.append(f"produce.{client}.{size}.{acks}.mib")
                tp_labels.append(f"P {cl}\n{sn}/{acks}")
    # (The fetch-only client's GiB/s would flatten every other bar: its rows are in the tables.)
    for client, cl in [("java", "Java"), ("rdk", "rdk")]:
        for size, sn in [(1024, "1K"), (100, "100B")]:
            tp_ids.append(f"consume.{client}.{size}.mib")
            tp_labels.append(f"C {cl}\n{sn}")
    bars(axes[0][0], tp_ids, tp_labels, "Throughput, MiB/s (higher is better). P = produce, "
         "C = consume; last label line: Sluice/Kafka", "MiB/s")
    lat_ids = ["e2e.java.avg", "e2e.java.p50", "e2e.java.p99", "e2e.java.p999",
               "e2e.rdk.p50", "e2e.rdk.p99", "e2e.rdk.p999", "e2e.raw.p50", "e2e.raw.p99",
               "e2e.raw.p999"]
    lat_labels = ["1-in-flight\navg", "1-in-flight\np50", "1-in-flight\np99",
                  "1-in-flight\np99.9", f"{h.e2e_rate}/s\np50", f"{h.e2e_rate}/s\np99",
                  f"{h.e2e_rate}/s\np99.9", "broker\np50", "broker\np99", "broker\np99.9"]
    bars(axes[0][1], lat_ids, lat_labels, "End-to-end latency (ms, lower is better)", "ms")
    bars(axes[1][0], ["startup.ms", "cluster.startup.ms"],
         ["exec → first ApiVersions", "cluster: all 3 answer"],
         "Start-up time (ms, log scale, lower is better)", "ms", log=True)
    bars(axes[1][1], ["rss.idle", "rss.peak", "cpu.total", "cluster.rss.idle", "cluster.rss.peak"],
         ["idle RSS (MiB)", "peak RSS\nunder load (MiB)", "CPU time for\nworkload (s)",
          "cluster idle RSS\n(MiB, 3 nodes)", "cluster peak RSS\n(MiB, 3 nodes)"],
         "Resources (log scale, lower is better)", "MiB / s", log=True)
    ids, labels = [], []
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"produce.rdkperf.{size}.{acks}.mib")
            labels.append(f"P rdkperf\n{sn}/{acks}")
    for size, sn in [(1024, "1K"), (100, "100B")]:
        ids.append(f"consume.rdkperf.{size}.mib")
        labels.append(f"C rdkperf\n{sn}")
    ids += ["cluster.produce.mib", "cluster.consume.mib"]
    labels += ["P cluster\n1K/all", "C cluster\n1K"]
    ax = axes[2][0]
    bars(ax, ids, labels, "rdkafka_performance (single broker) and 3-broker cluster, MiB/s",
         "MiB/s")
    if h.disk and h.disk.get("buffered_median_mib_s"):
        buf = h.disk["buffered_median_mib_s"]
        ax.axhline(buf, color="grey", ls="--", lw=1, label="disk, buffered writes of new data")
        ax.axhline(buf * DISK_TARGET_PCT / 100, color="grey", ls=":", lw=1,
                   label=f"{DISK_TARGET_PCT} % of that")
        ax.legend(fontsize=8)
    ids, labels = [], []
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"cpu.rdkperf.produce.{size}.{acks}.broker")
            labels.append(f"P rdkperf\n{sn}/{acks}")
    for size, sn in [(1024, "1K"), (100, "100B")]:
        for acks in ACKS:
            ids.append(f"cpu.java.produce.{size}.{acks}.broker")
            labels.append(f"P Java\n{sn}/{acks}")
    ids.append("cpu.cluster.produce.broker")
    labels.append("P cluster\n1K/all")
    bars(axes[2][1], ids, labels, "Broker CPU seconds per million records (log scale, lower is "
         "better)", "CPU s / M records", log=True)
    fig.suptitle(f"Sluice vs Kafka {KAFKA_VERSION} — medians of {h.a.reps} run(s)"
                 f"{' (quick)' if h.quick else ''}; {os.cpu_count()} cores", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def one_line(h, rows, wall_s, complete):
    by = {r["id"]: r for r in rows}

    def r(mid, label):
        v = by[mid]["ratio"]
        return f"{label} {fmt_ratio(v).replace('×', 'x')}" if v is not None else f"{label} n/a"

    parts = []
    if "single" in h.sections:
        parts += [r("produce.java.1024.1.mib", "produce 1KiB acks=1"),
                  r("produce.java.100.all.rps", "produce 100B acks=all rec/s"),
                  r("consume.java.1024.mib", "consume"),
                  r("consume.fetch.1024.mib", "fetch-only consume"),
                  r("e2e.rdk.p99", "e2e p99"),
                  r("e2e.raw.p99", "broker e2e p99"),
                  r("startup.ms", "startup"),
                  r("rss.idle", "idle RSS"),
                  r("rss.peak", "peak RSS")]
    if h.rdkperf_bin:
        parts += [r("produce.rdkperf.1024.1.mib", "rdkafka_performance produce 1KiB acks=1"),
                  r("consume.rdkperf.1024.mib", "rdkafka_performance consume 1KiB")]
    if "cluster" in h.sections:
        parts += [r("cluster.produce.mib", "cluster produce acks=all"),
                  r("cluster.consume.mib", "cluster consume")]
    if "share" in h.sections:
        parts += [r("share.consume.rps", "share consume (3 consumers)")]
    parts = ["Sluice/Kafka " + ", ".join(parts)] if parts else []
    d = h.disk or {}
    if d.get("buffered_median_mib_s"):
        best = d.get("sluice_best_produce")
        parts.append(f"disk buffered writes of new data {d['buffered_median_mib_s']:.0f} MiB/s" + (
            f", Sluice's best produce {best['pct_of_buffered']:.0f}% of that" if best else ""))
    status = "ok" if (complete and not h.failures) else f"{len(h.failures)} failure(s)"
    return (f"bench{' --quick' if h.quick else ''}: " + "; ".join(parts) +
            f" [{h.a.reps} rep(s), {wall_s / 60:.1f} min, {status}] -> "
            f"{os.path.relpath(os.path.join(h.results_dir, 'results.md'), os.getcwd())}")


def results_json(h, rows, wall_s, complete):
    return {
        "quick": h.quick, "reps": h.a.reps, "wall_s": wall_s, "complete": complete,
        "sections": [s for s in SECTIONS if s in h.sections],
        "e2e_rate": h.e2e_rate, "e2e_rate_basis": h.e2e_rate_basis,
        "records": h.n, "partitions": h.partitions,
        "skipped": h.skipped,
        "rdkperf": {"bin": h.rdkperf_bin, "librdkafka": h.rdkperf_version,
                    "producer_conf": RDKPERF_PRODUCER_CONF, "records": h.n["rdkperf"]},
        "cluster": {"nodes": CLUSTER_NODES, "partitions": CLUSTER_PARTITIONS,
                    "topic_config": CLUSTER_TOPIC_CONFIG, "kafka_heap": CLUSTER_HEAP,
                    "records": h.cluster_n, "warmup_records": h.cluster_warmup_n,
                    "reps": h.cluster_reps},
        "disk": h.disk,
        "metrics": rows, "runs": h.runs, "failures": h.failures, "notes": h.notes,
    }
