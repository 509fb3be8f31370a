"""The harness's child processes: started in their own session with a parent-death signal,
stopped by PID (SIGTERM, then SIGKILL to the process group) on every exit path, reaped with
their CPU time; the tail of their logs; RSS and CPU time from /proc; and the data dirs and
processes an earlier, SIGKILLed run left behind."""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

from common import StepError


# ----------------------------------------------------------------------------- child processes
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _child_setup():
    # Runs in the child between fork and exec: die with the harness, whatever kills it.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def send_signal(pid, sig, group):
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except ProcessLookupError:
        pass


class Procs:
    """Every process the harness starts, so all of them are stopped on any exit."""

    def __init__(self):
        self.live = []

    def start(self, argv, log_path, cwd=None, env=None, stdin=subprocess.DEVNULL, capture=False,
              term_group=True):
        """term_group=False: SIGTERM goes to the process alone (a supervisor that stops its own
        children); SIGKILL always goes to its whole process group."""
        logf = open(log_path, "ab")
        try:
            p = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=stdin,
                stdout=subprocess.PIPE if capture else logf, stderr=logf,
                start_new_session=True, preexec_fn=_child_setup, close_fds=True,
            )
        except OSError as e:
            logf.close()
            raise StepError(f"cannot start {argv[0]}: {e}")
        p._bench_log = logf
        p._bench_term_group = term_group
        self.live.append(p)
        return p

    def stop(self, *procs, grace=30.0):
        """SIGTERM to each child (to its process group: it leads its own session), SIGKILL to the
        group of any still running `grace` s later. Returns the seconds it took."""
        t0 = time.monotonic()
        for p in procs:
            if p.poll() is None:
                send_signal(p.pid, signal.SIGTERM, p._bench_term_group)
        for p in procs:
            try:
                p.wait(max(0.0, t0 + grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"bench: pid {p.pid} ignored SIGTERM for {grace:.0f}s; SIGKILL", file=sys.stderr)
                send_signal(p.pid, signal.SIGKILL, True)
                p.wait()
            if p in self.live:
                self.live.remove(p)
            try:
                p._bench_log.close()
            except Exception:
                pass
        return time.monotonic() - t0

    def stop_all(self):
        for p in list(reversed(self.live)):
            self.stop(p, grace=20.0)


PROCS = Procs()


def reap(p):
    """Non-blocking wait4(): once the child has exited, records its exit status (so Popen knows)
    and its CPU time, utime + stime of all its threads: the counters /proc/PID/stat shows while
    it runs, which are gone once it is reaped. Returns the exit status or None."""
    if p.returncode is None:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere
            return p.poll()
        if pid == 0:
            return None
        p.returncode = os.waitstatus_to_exitcode(status)
        p._bench_cpu_s = ru.ru_utime + ru.ru_stime
        p._bench_exit_t = time.monotonic()
    return p.returncode


def tail(path, n=25):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 16384))
            lines = f.read().decode("utf-8", "replace").splitlines()
        return "\n".join("    | " + l for l in lines[-n:])
    except OSError:
        return "    | (no log)"


# ---------------------------------------------------------------------------------- /proc
def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    """Fields of /proc/PID/stat after the command name (field 3, the state, first)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid):
    fields = _proc_stat(pid)
    try:
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK  # utime + stime
    except (TypeError, IndexError, ValueError):
        return None


def pid_running(pid):
    fields = _proc_stat(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def _sum_or_none(values):
    values = list(values)
    return None if (not values or None in values) else sum(values)


def rss_sum(pids):
    return _sum_or_none(rss_kib(p) for p in pids)


def cpu_sum(pids):
    return _sum_or_none(cpu_seconds(p) for p in pids)


# ------------------------------------------------------------------- an earlier run's leftovers
def remove_stale_tmp(parent):
    """Data dirs of an earlier run that was SIGKILLed (its brokers died with it, through the
    parent-death signal, but nothing could delete the data). Only dirs whose owner is gone.
    The nodes of a `sluice dev-cluster` are its children, not the harness's, so they have no
    parent-death signal: any process still running from such a dir is killed first."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        d = os.path.join(parent, name)
        if not name.startswith("sluice-bench.") or not os.path.isdir(d):
            continue
        try:
            with open(os.path.join(d, "owner.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if not os.path.exists(f"/proc/{pid}"):
            print(f"bench: removing {d} left by an earlier run (pid {pid} is gone)", file=sys.stderr)
            for orphan in pids_running_from(d):
                print(f"bench: killing pid {orphan}, left running from {d}", file=sys.stderr)
                send_signal(orphan, signal.SIGKILL, False)
            shutil.rmtree(d, ignore_errors=True)


def pids_running_from(d):
    """Processes whose executable or command line lies in directory d."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(a == d or a.startswith(d + "/") for a in argv):
            found.append(int(entry))
    return found


def _cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # all, idle + iowait


# Where this VM's balloon driver counts the free memory it has handed back to the host.
PAGE_REPORTING_KIB = "/sys/module/page_reporting/parameters/reported_kib"


def _reported_kib():
    try:
        with open(PAGE_REPORTING_KIB) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def settle_page_reporting(window=2.5, small_kib=384 << 10, max_wait=45.0, step=0.25):
    """Waits (at most `max_wait` s) until free page reporting has handed back most of what the
    previous session freed. Memory freed and not yet reported is still backed by the host and
    costs a page-cache write nothing, memory reported is faulted in again at ~420 MiB/s; a
    session started right after the one before, with gigabytes still unreported, writes its
    first ones several times faster than one started later. The driver reports in passes about
    2 s apart, ~1.1 GiB each while much is left, then a few hundred MiB each for the last
    ~1 GiB, and keeps ~1 GiB back: the wait ends at the first `window` in which the counter
    moved less than `small_kib`, which puts every session within a few hundred MiB of the same
    point without waiting out the slow tail. Returns the seconds waited (0.0 where the machine
    has no such counter)."""
    first = _reported_kib()
    if first is None:
        return 0.0
    t0 = time.monotonic()
    history = [(t0, first)]
    while time.monotonic() - t0 < max_wait:
        time.sleep(step)
        now, kib = time.monotonic(), _reported_kib()
        if kib is None:
            break
        history.append((now, kib))
        old = [v for t, v in history if now - t >= window]
        if old and kib - old[-1] < small_kib:
            break
    return time.monotonic() - t0


def settle(idle_fraction=0.9, window=0.1, quiet_windows=3, max_wait=5.0, reporting=True):
    """Waits until the machine is quiet before a broker starts. Returns the seconds spent
    waiting for free page reporting (see settle_page_reporting; skipped with
    reporting=False).

    First it writes back every dirty page (the earlier runs leave up to gigabytes of them,
    flushed later in the background, and counted as idle time while they are): a broker's
    first fsyncs queue behind that writeback otherwise. Then it waits for free page reporting.
    Last it waits (at most `max_wait` s) until the machine has been idle for `quiet_windows`
    windows in a row: the previous broker's exit, its freed memory and deleted data dirs are
    work the kernel finishes in the background, and a start-up timed during it measures that
    instead."""
    os.sync()
    reporting_s = settle_page_reporting() if reporting else None
    deadline = time.monotonic() + max_wait
    quiet = 0
    prev = _cpu_times()
    while quiet < quiet_windows and time.monotonic() < deadline:
        time.sleep(window)
        cur = _cpu_times()
        total, idle = cur[0] - prev[0], cur[1] - prev[1]
        prev = cur
        quiet = quiet + 1 if total and idle / total >= idle_fraction else 0
    return reporting_s
