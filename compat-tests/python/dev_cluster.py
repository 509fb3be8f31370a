"""`sluice dev-cluster` for process-level tests: a `DevCluster` runs the command, parses
the nodes it reports and stops them all (moved out of cluster.py, which it shares
helpers with)."""

import os
import random
import re
import signal
import subprocess
import time
from pathlib import Path

from cluster import pid_alive, pid_cmdline, port_is_free, sluice_bin, tail_lines

BOOTSTRAP_LINE = re.compile(r"bootstrap servers:\s*(\S+)")
NODE_LINE = re.compile(r"node (\d+) pid (\d+) listening (\S+)")
# The same line's optional suffix: " http <host:port>", the node's HTTP listener.
HTTP_LINE = re.compile(r"node (\d+) pid \d+ listening \S+ http (\S+)")


def ephemeral_low(default=32768):
    """The lowest port the kernel hands out to outgoing connections and `:0` binds."""
    try:
        return int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def free_base_port(offsets=(0, 1, 2, 100, 101, 102, 200, 201, 202), lo=20000, hi=None, tries=500):
    """A base port P such that P+o is free for every offset o, all below the ephemeral range:
    a node killed and restarted must find its ports still free, and a port in that range may
    meanwhile be taken by any outgoing connection on the machine (a CI run lost node 3 of
    test_scenarios so: its controller port was in use when it restarted)."""
    if hi is None:
        hi = max(lo + 1, ephemeral_low() - max(offsets) - 1)
    rng = random.Random()
    for _ in range(tries):
        base = rng.randrange(lo, hi)
        if all(port_is_free(base + o) for o in offsets):
            return base
    raise AssertionError(f"no free base port with offsets {offsets} found")


class DevCluster:
    """`sluice dev-cluster --brokers N --base-port P --data-dir DIR`, output (stdout and
    stderr) to DIR/../dev-cluster.log (client ports P.., controller ports P+100.., HTTP P+200..). `shutdown()` SIGTERMs it (SIGKILL after a grace
    period) and then SIGKILLs any child it reported (`node <id> pid <pid> ...`) that
    is still alive, checked by pid and by its command line naming our data dir."""

    def __init__(self, base_dir, brokers=3, base_port=None):
        self.base_dir = Path(base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.base_dir / "data"
        self.log_path = self.base_dir / "dev-cluster.log"
        self.brokers = brokers
        self.base_port = base_port or free_base_port()
        self.proc = None
        self.bootstrap = None
        self.children = {}  # node id -> (pid, "host:port")
        self.http = {}  # node id -> "host:port" of its HTTP listener

    def command(self):
        return [sluice_bin(), "dev-cluster", "--brokers", str(self.brokers),
                "--base-port", str(self.base_port), "--data-dir", str(self.data_dir)]

    def start(self):
        binary = sluice_bin()
        if not os.path.exists(binary):
            raise AssertionError(f"sluice binary not found at {binary} (set SLUICE_BIN)")
        with open(self.log_path, "ab") as log:
            log.write(f"===== {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        return self

    def output(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def parse(self):
        out = self.output()
        m = BOOTSTRAP_LINE.search(out)
        self.bootstrap = m.group(1) if m else None
        self.children = {int(i): (int(pid), addr) for i, pid, addr in NODE_LINE.findall(out)}
        self.http = {int(i): addr for i, addr in HTTP_LINE.findall(out)}
        return self.bootstrap, self.children

    def wait_output(self, timeout=30.0):
        """Waits for the bootstrap line and one node line per broker."""
        deadline = time.monotonic() + timeout
        while True:
            self.parse()
            if self.bootstrap and len(self.children) >= self.brokers:
                return self.bootstrap, self.children
            if self.proc.poll() is not None:
                raise AssertionError(f"dev-cluster exited with code {self.proc.returncode} "
                                     f"before printing its nodes:\n{tail_lines(self.log_path)}")
            if time.monotonic() > deadline:
                raise AssertionError(f"dev-cluster did not print a bootstrap line and "
                                     f"{self.brokers} node lines within {timeout}s:\n"
                                     f"{tail_lines(self.log_path)}")
            time.sleep(0.1)

    def is_ours(self, pid):
        return pid_alive(pid) and str(self.data_dir) in pid_cmdline(pid)

    def shutdown(self, timeout=10.0):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        self.parse()
        deadline = time.monotonic() + 5
        for pid, _ in self.children.values():
            while self.is_ours(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.is_ours(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                end = time.monotonic() + 5
                while pid_alive(pid) and time.monotonic() < end:
                    time.sleep(0.05)

    def report_sections(self):
        return [(f"sluice dev-cluster output ({self.log_path})", tail_lines(self.log_path, 150))]
