#!/usr/bin/env python3
"""Sluice vs Apache Kafka benchmark harness. Start it through bench/run, which prepares the
Python venv, the Kafka jars, the sluice binary and librdkafka's rdkafka_performance, then runs
this file with the venv's Python.

This process stays single-threaded and never loads librdkafka itself (topic admin and the
librdkafka load generator run as child processes, bench/rdkload.py), so every child can be
started with a parent-death signal: if the harness is killed, its brokers die with it.

Sections of a run (each can be left out, see --only): the disk baseline, the single-broker
comparison (Kafka's tools and bench/rdkload.py), rdkafka_performance against the same single
brokers, and the 3-broker cluster (RF=3, acks=all).

The parts, one module each: procs.py (child processes, /proc), brokers.py (the brokers and
clusters under test), workloads.py (the measurements and the parsers of their tools' output),
metrics.py (what is recorded), report.py (results.md, .png, .json and the summary line),
common.py (shared constants and exceptions); this file holds the orchestration of a run and
its command line.
"""
import argparse
import datetime
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from brokers import BROKERS
from security import BROKERS as SECURITY_BROKERS, acl_steps, make_certs, tls_steps
from common import (CLUSTER_HEAP, DISK_TARGET_PCT, HERE, JVM_PERF_OPTS, KAFKA_HEAP,
                    KAFKA_VERSION, MIB, OPT_IN, REPO, SECTIONS, BudgetExceeded, StepError,
                    last_json)
from procs import PROCS, cpu_sum, reap, remove_stale_tmp, rss_sum, tail
from report import (disk_summary, git_rev, one_line, results_json, summarize, write_chart,
                    write_markdown)
from sharebench import share_steps
from workloads import cluster_steps, disk_baseline, find_rdkperf, single_steps


# Starts before each single-broker session's own, for more start-up samples (extra_startups).
EXTRA_STARTS = 1


def add_settle(info, b):
    """Adds what broker b's start waited for free page reporting to the session's total."""
    if b.settle_s is not None:
        info["reporting_settle_s"] = info.get("reporting_settle_s", 0.0) + b.settle_s


HELP_EPILOG = """\
what it does
  disk      Before any broker runs: plain buffered sequential writes of new data (1 MiB
            os.write() blocks to a new file per pass, kept, no fsync) to the filesystem of the
            brokers' data dirs; the same file rewritten (memory speed); new data ending with
            one fsync -> MiB/s; Sluice's best single-broker produce MiB/s as a %% of the
            new-data figure (target >= %d %%).
  single    For each repetition it starts Kafka and Sluice one after the other (alternating
            which goes first), each fresh on loopback with an empty data dir in a temp dir,
            creates the same topics (same partitions, RF 1, same admin client) and runs,
            against each:
    * ProducerPerformance (Kafka's tool) and the librdkafka generator: 1 KiB and 100 B
      records, acks=1 and acks=all, unthrottled -> MiB/s and records/s
    * ConsumerPerformance and the librdkafka generator: read back the 1 KiB and 100 B
      acks=1 topics -> MiB/s and records/s
    * a fetch-only client (bench/fetchload.py: Fetch requests, batch headers parsed, no
      per-record work) over the same topics, ~8 GiB of passes -> the broker's own ceiling
    * EndToEndLatency (Kafka's tool; one record in flight, 1 KiB, acks=1) -> avg/p50/p99/p99.9
    * librdkafka fixed-rate end-to-end latency, 1 KiB, acks=1, at about half of Kafka's
      measured max (the lower of the two clients' 1 KiB acks=1 results against Kafka)
    * a produce-only client (bench/produceload.py: one pre-built ~1 MB batch per partition
      sent again and again, 5 requests in flight, acks=1) -> the broker's own produce ceiling
    * the broker's own end-to-end latency (bench/brokerlat.py: the same record rate, one
      Produce request of rate/1000 records every ms, sent when due, and a waiting Fetch;
      no client library, no linger) -> p50/p99/p99.9
    * start-up time: exec of the broker process to the first answered ApiVersions (probed
      with connect + ApiVersions v3 every 1 ms)
    * idle RSS (after topic creation), peak RSS under load and broker CPU seconds, from
      /proc/PID (for Kafka, the JVM's own process; heap %s)
  rdkperf   In the same single-broker sessions, after the above: librdkafka's own C tool
            rdkafka_performance (from the librdkafka build compat-tests/librdkafka/run caches;
            skipped with a note when absent) produces 1 KiB and 100 B records with acks=1 and
            acks=all and consumes the acks=1 topics. For it and for ProducerPerformance: the
            client's and the broker's CPU seconds per million records and CPU per wall second,
            so a client-bound figure is not mistaken for the broker's.
  cluster   Per repetition (alternating): 3 Kafka KRaft nodes in combined mode (heap %s
            each) and `sluice dev-cluster --brokers 3`; a 3-partition topic with RF=3 and
            min.insync.replicas=2: ProducerPerformance 1 KiB acks=all, ConsumerPerformance
            1 KiB, start-up until all three answer, summed RSS of the three broker processes.
  security  Per repetition (alternating), each broker twice with an SSL listener next to its
            plaintext one, the same PEM certificates for both, ssl.client.auth=required:
            rdkafka_performance over TLS produces 1 KiB and 100 B (acks=1) and consumes them;
            then, restarted with the StandardAuthorizer and 1 000 ACLs (one lets the client
            write), the same produce -> its rate with ACLs over its rate without. Only with
            --only security (results in bench/results/security/).
  share     Only with --only share (results in bench/results/share/): per repetition, one
            broker of each kind; Kafka's ShareConsumerPerformance --threads 3 (three share
            consumers in one share group, implicit acknowledgement) reads 500k x 1 KiB records
            of a 3-partition topic, after an unmeasured warm-up group -> MiB/s, records/s, CPU.
  Medians over the repetitions and the Sluice/Kafka ratio go to bench/results/results.md,
  results.png and results.json; logs of every process to bench/results/logs/.

exit status
  0 when every measurement ran, 1 when any failed or the time budget ran out (the results
  files are still written, failures listed), 2 on a setup error.
""" % (DISK_TARGET_PCT, KAFKA_HEAP, CLUSTER_HEAP)


# ------------------------------------------------------------------------------- harness
class Session:
    """A broker or cluster under test for one session: runs steps against it, samples the summed
    RSS of its processes while tools run, keeps CPU accounting and reports failed steps."""

    def __init__(self, h, b, info):
        self.h = h
        self.b = b
        self.kind = b.name
        self.info = info
        self.peak_kib = 0

    def L(self, step):
        return os.path.join(self.h.logdir, f"{self.h.tag}-{step}.log")

    def log(self, msg):
        print(f"bench: [{self.h.tag}] {msg}", file=sys.stderr, flush=True)

    def record(self, mid, value):
        self.h.record(self.kind, mid, value)

    def sample(self):
        r = rss_sum(self.b.pids)
        if r and r > self.peak_kib:
            self.peak_kib = r

    def step(self, what, fn):
        gone = self.b.death()
        if gone:
            self.h.fail(self.kind, what, f"skipped: broker is not running ({gone})")
            return None
        if self.h.remaining() < 5:
            raise BudgetExceeded()
        try:
            return fn()
        except StepError as e:
            self.h.fail(self.kind, what, e)
            return None

    def measured(self, name, argv, log_path, timeout=240):
        """Runs a load tool with CPU accounting. Returns its stdout and a dict: the tool's own CPU
        seconds (cpu_s) and lifetime (wall_s), and the CPU seconds the broker process(es) used
        meanwhile (broker_cpu_s, from /proc/PID/stat)."""
        usage = {}
        before = cpu_sum(self.b.pids)
        out = self.h.run_tool(name, argv, log_path, timeout, tick=self.sample, usage=usage)
        after = cpu_sum(self.b.pids)
        usage["broker_cpu_s"] = None if None in (before, after) else after - before
        return out, usage

    def record_cpu(self, key, records, usage, window_s=None):
        """cpu.<key>.client|broker: CPU s per million records; cores.<key>.client|broker: CPU s
        per second of the measuring window (the tool's own clock when given, e.g. a consumer's
        first to last record, which leaves out its idle start-up; else the tool's lifetime)."""
        window = window_s or usage.get("wall_s")
        self.info.setdefault("cpu", {})[key] = dict(usage, records=records, window_s=window)
        for side, cpu in (("client", usage.get("cpu_s")), ("broker", usage.get("broker_cpu_s"))):
            if cpu is not None and window:
                self.record(f"cpu.{key}.{side}", cpu / (records / 1e6))
                self.record(f"cores.{key}.{side}", cpu / window)

    def record_idle_rss(self, mid):
        idle = rss_sum(self.b.pids)
        if idle:
            self.record(mid, idle / 1024)
            self.info["rss_idle_mib"] = idle / 1024
        self.sample()

    def record_peak_rss(self, mid):
        if self.peak_kib:
            self.record(mid, self.peak_kib / 1024)
            self.info["rss_peak_mib"] = self.peak_kib / 1024


class Harness:
    def __init__(self, a):
        self.a = a
        self.quick = a.quick
        self.sections = a.sections
        self.lib = a.kafka_lib
        self.sluice_bin = a.sluice_bin
        self.py = a.python or sys.executable
        self.rdkload = os.path.join(HERE, "rdkload.py")
        self.here = HERE  # where the raw clients (fetchload.py, ...) are
        self.results_dir = a.results_dir
        self.logdir = os.path.join(self.results_dir, "logs")
        self.t_start = time.monotonic()
        self.deadline = self.t_start + a.max_minutes * 60
        self.samples = {"kafka": {}, "sluice": {}}
        self.failures = []
        self.notes = []
        self.runs = []
        self.disk = None
        self.e2e_rate = a.e2e_rate
        self.e2e_rate_basis = "given with --e2e-rate" if a.e2e_rate else None
        self.tag = "setup"
        self.common_broker_settings = [
            # Same on both: no 3 s wait for more members before the first rebalance
            # (ConsumerPerformance joins a group).
            ("group.initial.rebalance.delay.ms", "0"),
        ]
        env = dict(os.environ)
        env.pop("SLUICE_LOG", None)
        env.pop("KAFKA_OPTS", None)
        env.pop("JAVA_TOOL_OPTIONS", None)
        self.child_env = env
        q = self.quick
        sc = a.scale
        # Records per produce run, by client and record size (the librdkafka clients are faster
        # at 1 KiB, so they get more records for a long enough measuring window).
        self.n = {
            "java": {1024: int(sc * (100_000 if q else 500_000)),
                     100: int(sc * (500_000 if q else 3_000_000))},
            "rdk": {1024: int(sc * (200_000 if q else 1_000_000)),
                    100: int(sc * (500_000 if q else 3_000_000))},
            "rdkperf": {1024: int(sc * (500_000 if q else 1_000_000)),
                        100: int(sc * (1_500_000 if q else 3_000_000))},
        }
        self.warmup_n = {1024: 100_000 if q else 200_000, 100: 300_000 if q else 1_000_000}
        self.e2e_java_n = 2_000 if q else 5_000
        self.e2e_rdk_secs = 8 if q else 20
        self.e2e_rdk_warmup = 1 if q else 2
        self.partitions = a.partitions
        self.cluster_n = int(sc * (100_000 if q else 150_000))
        self.cluster_warmup_n = 50_000 if q else 100_000
        self.cluster_reps = a.cluster_reps
        # Records the share consumers read (and, before them, the warm-up group).
        self.share_n = int(sc * (200_000 if q else 500_000))
        self.share_warmup_n = 50_000 if q else 100_000
        self.disk_mib = a.disk_mib
        self.disk_reps = 1 if q else 3
        # Why a section did not run: group -> reason.
        self.skipped = {s: "not selected (--only / --no-...)" for s in SECTIONS
                        if s not in self.sections}
        self.rdkperf_bin = self.rdkperf_version = None
        if {"rdkperf", "security"} & self.sections:
            self.rdkperf_bin, self.rdkperf_version, why = find_rdkperf(a.rdkperf_bin)
            if why:
                self.skipped["rdkperf"] = self.skipped["security"] = why

    # -- helpers
    def java(self, heap, cls, *args, log_level="WARN"):
        return (["java"] + heap.split() + JVM_PERF_OPTS.split() +
                [f"-Dlog4j2.configurationFile={os.path.join(HERE, 'log4j2.properties')}",
                 f"-Dbench.log.level={log_level}", "-cp", os.path.join(self.lib, "*"), cls] +
                list(args))

    def remaining(self):
        return self.deadline - time.monotonic()

    def run_tool(self, name, argv, log_path, timeout, capture=True, tick=None, usage=None):
        """Run a tool to completion. Returns its stdout. Raises StepError on timeout, non-zero
        exit or a failed start; the tool's stderr goes to log_path. With a dict as `usage`, fills
        in the tool's CPU seconds (cpu_s: utime + stime of all its threads, from wait4) and its
        lifetime (wall_s)."""
        left = self.remaining()
        if left < 5:
            raise BudgetExceeded()
        timeout = min(timeout, left)
        with open(log_path, "ab") as f:
            f.write(f"$ {' '.join(argv)}\n".encode())
        t0 = time.monotonic()
        p = PROCS.start(argv, log_path, cwd=tempfile.gettempdir(), env=self.child_env,
                        capture=capture)
        out = b""
        t_end = t0 + timeout
        try:
            # Read stdout in the same loop that samples the broker: no threads.
            eof = not capture
            while True:
                if not eof:
                    r, _, _ = select.select([p.stdout], [], [], 0.1)
                    if r:
                        chunk = os.read(p.stdout.fileno(), 65536)
                        if chunk:
                            out += chunk
                        else:
                            eof = True
                elif reap(p) is not None:
                    break
                else:
                    time.sleep(0.02)
                if tick:
                    tick()
                if time.monotonic() > t_end:
                    PROCS.stop(p, grace=5)
                    raise StepError(f"{name}: timed out after {timeout:.0f}s\n{tail(log_path)}")
        finally:
            if p.poll() is None or p in PROCS.live:
                PROCS.stop(p, grace=5)
        text = out.decode("utf-8", "replace")
        with open(log_path, "a") as f:
            f.write("--- stdout ---\n" + text + f"--- exit {p.returncode} ---\n")
        if p.returncode != 0:
            raise StepError(f"{name}: exited with status {p.returncode}\n{tail(log_path)}")
        if usage is not None:
            usage.update(cpu_s=getattr(p, "_bench_cpu_s", None),
                         wall_s=getattr(p, "_bench_exit_t", time.monotonic()) - t0)
        return text

    def rdk(self, name, log_path, timeout, *args, tick=None):
        out = self.run_tool(name, [self.py, self.rdkload] + list(args), log_path, timeout,
                            tick=tick)
        return last_json(out, name, "\n" + tail(log_path))

    def record(self, broker, mid, value):
        if value is not None:
            self.samples[broker].setdefault(mid, []).append(value)

    def fail(self, broker, what, err):
        msg = f"[{self.tag}] {broker} {what}: {err}"
        self.failures.append(msg)
        print(f"bench: FAILED {msg}", file=sys.stderr, flush=True)

    # -- one broker (or cluster) session
    def session(self, section, rep, kind):
        self.tag = f"{'' if section == 'single' else section + '-'}rep{rep + 1}-{kind}"
        sdir = tempfile.mkdtemp(prefix=f"{section}-{kind}-", dir=self.tmp)
        b = {**BROKERS, **SECURITY_BROKERS}[(section, kind)](self, sdir)
        info = {"section": section, "rep": rep + 1, "broker": kind}
        self.runs.append(info)
        s = Session(self, b, info)
        single = section == "single"
        try:
            if single:
                self.extra_startups(section, kind, s)
            start_metric = {"single": "startup.ms", "cluster": "cluster.startup.ms"}.get(section)
            s.log("starting")
            try:
                ms = b.start(timeout=min(120 if section == "cluster" else 60, max(5, self.remaining())))
            except StepError as e:
                self.fail(kind, "start", e)
                info["died"] = b.death()  # already reported
                return
            info["startup_ms"] = ms
            info["format_ms"] = b.format_ms
            add_settle(info, b)
            if start_metric:
                s.record(start_metric, ms)
            s.log(f"{'all nodes answered' if section == 'cluster' else 'answered'} ApiVersions {ms:.1f} ms "
                  f"after exec" + (f" (storage format took {b.format_ms:.0f} ms before that)"
                                   if b.format_ms else ""))
            STEPS[section](self, s)
        finally:
            if b.started():
                self.stop_session(s)
            shutil.rmtree(sdir, ignore_errors=True)

    def extra_startups(self, section, kind, s):
        """More start-up samples before the session's own start: the same broker started on an
        empty data dir of its own and stopped again, EXTRA_STARTS times. From one start to the
        next the figure moves by a few ms on this VM (Sluice's is a few ms in all)."""
        for i in range(EXTRA_STARTS):
            d = tempfile.mkdtemp(prefix=f"{section}-{kind}-start-", dir=self.tmp)
            b = BROKERS[(section, kind)](self, d)
            try:
                ms = b.start(timeout=min(60, max(5, self.remaining())))
                add_settle(s.info, b)
                s.record("startup.ms", ms)
                s.log(f"extra start {i + 1}: answered ApiVersions {ms:.1f} ms after exec")
            except StepError as e:
                self.fail(kind, f"extra start {i + 1}", e)
            finally:
                if b.started():
                    b.stop()
                shutil.rmtree(d, ignore_errors=True)

    def stop_session(self, s):
        b, info, kind = s.b, s.info, s.kind
        gone = b.death()
        if gone and "died" not in info:
            info["died"] = gone
            self.fail(kind, "broker process", f"exited on its own: {gone}\n{b.tail()}")
        secs, statuses = b.stop()
        info["stop_s"] = secs
        info["exit_status"] = statuses[0] if len(statuses) == 1 else statuses
        bad = [st for st in statuses if st not in (0, -signal.SIGTERM, 143)]
        if not gone and bad:
            self.notes.append(f"[{self.tag}] {kind} exited with status {bad} on SIGTERM "
                              f"(logs: bench/results/logs/{self.tag}-*)")

    # -- the whole run
    def run(self):
        os.makedirs(self.logdir, exist_ok=True)
        for f in os.listdir(self.logdir):
            if f.endswith(".log"):
                os.unlink(os.path.join(self.logdir, f))
        remove_stale_tmp(self.a.tmp_dir or tempfile.gettempdir())
        self.tmp = tempfile.mkdtemp(prefix="sluice-bench.", dir=self.a.tmp_dir)
        with open(os.path.join(self.tmp, "owner.pid"), "w") as f:
            f.write(f"{os.getpid()}\n")
        # Run a private copy, so a rebuild of target/release during the run cannot give the
        # later sessions a different binary.
        st = os.stat(self.sluice_bin)
        self.sluice_desc = (f"`{os.path.relpath(self.sluice_bin, REPO)}` built "
                            f"{datetime.datetime.fromtimestamp(st.st_mtime):%Y-%m-%d %H:%M:%S}, "
                            f"{st.st_size / MIB:.0f} MiB; repo at commit {git_rev()}")
        copy = os.path.join(self.tmp, "sluice")
        try:
            shutil.copy2(self.sluice_bin, copy)
            subprocess.run([copy, "--help"], capture_output=True, timeout=30, check=True)
            self.sluice_bin = copy
        except (OSError, subprocess.SubprocessError) as e:  # e.g. a noexec temp dir
            self.notes.append(f"ran {self.sluice_bin} in place (a private copy failed: {e})")
        for sec in ("rdkperf", "security"):
            if sec in self.sections and not self.rdkperf_bin:
                self.notes.append(f"{sec} section skipped: {self.skipped[sec]}")
        complete = True
        try:
            if "disk" in self.sections:
                disk_baseline(self)
            if "single" in self.sections or ("rdkperf" in self.sections and self.rdkperf_bin):
                for rep in range(self.a.reps):
                    for kind in broker_order(rep):
                        self.session("single", rep, kind)
            if "cluster" in self.sections:
                for rep in range(self.cluster_reps):
                    for kind in broker_order(rep):
                        self.session("cluster", rep, kind)
            if "security" in self.sections and self.rdkperf_bin:
                self.security_certs = make_certs(os.path.join(self.tmp, "certs"))
                for rep in range(self.a.reps):
                    for kind in broker_order(rep):
                        self.session("tls", rep, kind)
                        self.session("acl", rep, kind)
            if "share" in self.sections:
                for rep in range(self.a.reps):
                    for kind in broker_order(rep):
                        self.session("share", rep, kind)
        except BudgetExceeded:
            complete = False
            msg = f"time budget of {self.a.max_minutes} min ran out during {self.tag}; results are partial"
            self.failures.append(msg)
            print(f"bench: {msg}", file=sys.stderr)
        finally:
            PROCS.stop_all()
            if not self.a.keep_tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
        return complete


# What a session of each kind runs against its broker.
STEPS = {"single": single_steps, "cluster": cluster_steps, "tls": tls_steps, "acl": acl_steps,
         "share": share_steps}


def broker_order(rep):
    """Alternating which broker goes first: rep 1 Kafka, rep 2 Sluice, ..."""
    return ["kafka", "sluice"] if rep % 2 == 0 else ["sluice", "kafka"]


# ------------------------------------------------------------------------------------ main
def parse_args():
    ap = argparse.ArgumentParser(
        prog="bench/run", description="Benchmark Sluice against Apache Kafka "
        f"{KAFKA_VERSION} on this machine, with Kafka's own perf tools, a librdkafka "
        "generator and librdkafka's rdkafka_performance.", epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="1 repetition and smaller runs (a few minutes)")
    ap.add_argument("--reps", type=int,
                    help="single-broker repetitions per broker (default 3; 1 with --quick)")
    ap.add_argument("--cluster-reps", type=int,
                    help="cluster repetitions per broker (default: as --reps)")
    ap.add_argument("--only", metavar="SECTION[,SECTION]",
                    help=f"run only these sections: {', '.join(SECTIONS)} (default: all but "
                    f"{', '.join(OPT_IN)})")
    for s in ("disk", "rdkperf", "cluster", "security"):
        ap.add_argument(f"--no-{s}", action="append_const", dest="skip", const=s,
                        help=f"leave out the {s} section")
    ap.add_argument("--partitions", type=int, default=3,
                    help="partitions of the single-broker throughput topics (default 3)")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every measured record count by this (default 1)")
    ap.add_argument("--e2e-rate", type=int,
                    help="fixed rate for the librdkafka e2e test (default: half of Kafka's max)")
    ap.add_argument("--disk-mib", type=int,
                    help="MiB written per disk baseline pass (default 2048; 1024 with --quick)")
    ap.add_argument("--max-minutes", type=float,
                    help="time budget for the measurements (default 25; 8 with --quick)")
    ap.add_argument("--results-dir", help="where results go (default bench/results; "
                    "bench/results/SECTION for --only security or --only share, so the full "
                    "run's stay)")
    ap.add_argument("--tmp-dir", default=None, help="where broker data dirs go (default $TMPDIR)")
    ap.add_argument("--keep-tmp", action="store_true", help="keep broker data dirs")
    # Set by bench/run:
    ap.add_argument("--kafka-lib", default=os.environ.get("BENCH_KAFKA_LIB"), help=argparse.SUPPRESS)
    ap.add_argument("--sluice-bin", default=os.environ.get("SLUICE_BIN"), help=argparse.SUPPRESS)
    ap.add_argument("--rdkperf-bin", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--python", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.reps is None:
        a.reps = 1 if a.quick else 3
    if a.cluster_reps is None:
        a.cluster_reps = a.reps
    if a.max_minutes is None:
        a.max_minutes = 8 if a.quick else 25
    if a.disk_mib is None:
        a.disk_mib = 1024 if a.quick else 2048
    sections = set(SECTIONS) - set(OPT_IN)
    if a.only:
        sections = {s.strip() for s in a.only.split(",") if s.strip()}
        unknown = sections - set(SECTIONS)
        if unknown:
            ap.error(f"--only: unknown section(s) {', '.join(sorted(unknown))}; "
                     f"choose from {', '.join(SECTIONS)}")
    a.sections = sections - set(a.skip or [])
    if a.results_dir is None:
        # A run of one opt-in section keeps its results apart, so the full run's stay.
        alone = next(iter(a.sections)) if len(a.sections) == 1 else None
        a.results_dir = os.path.join(HERE, "results", *([alone] if alone in OPT_IN else []))
    return a


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def main():
    a = parse_args()
    if not a.kafka_lib or not os.path.isdir(a.kafka_lib):
        print("bench: the Kafka jars are missing; run this through bench/run", file=sys.stderr)
        return 2
    if not a.sluice_bin or not os.access(a.sluice_bin, os.X_OK):
        print(f"bench: no sluice binary at {a.sluice_bin!r}; run this through bench/run",
              file=sys.stderr)
        return 2
    a.results_dir = os.path.abspath(a.results_dir)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)

    h = Harness(a)
    try:
        h.rdk_version = subprocess.run(
            [h.py, "-c", "import confluent_kafka as c; print(c.libversion()[0])"],
            capture_output=True, text=True, timeout=30).stdout.strip() or "?"
    except Exception:
        h.rdk_version = "?"
    print(f"bench: {'quick' if a.quick else 'full'} run of "
          f"{', '.join(s for s in SECTIONS if s in a.sections) or 'nothing'}; {a.reps} "
          f"repetition(s), cluster {a.cluster_reps}; budget {a.max_minutes:g} min; logs in "
          f"{os.path.relpath(h.logdir, os.getcwd())}", file=sys.stderr, flush=True)
    try:
        complete = h.run()
    except SystemExit as e:
        PROCS.stop_all()
        print(f"bench: interrupted (exit {e.code}); every process it started is stopped; "
              "no results written", file=sys.stderr)
        raise
    finally:
        PROCS.stop_all()
    wall = time.monotonic() - h.t_start
    rows = summarize(h)
    disk_summary(h, rows)
    os.makedirs(a.results_dir, exist_ok=True)
    write_markdown(h, rows, os.path.join(a.results_dir, "results.md"), wall, complete)
    with open(os.path.join(a.results_dir, "results.json"), "w") as f:
        json.dump(results_json(h, rows, wall, complete), f, indent=1)
    try:
        write_chart(h, rows, os.path.join(a.results_dir, "results.png"))
    except Exception as e:  # a chart problem must not lose the table
        h.failures.append(f"chart: {e}")
        print(f"bench: FAILED chart: {e}", file=sys.stderr)
    print(one_line(h, rows, wall, complete), flush=True)
    return 0 if (complete and not h.failures) else 1


if __name__ == "__main__":
    sys.exit(main())
