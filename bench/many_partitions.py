"""Measures a Sluice broker with many partitions: file handles, memory, restart time.

    python bench/many_partitions.py [--partitions 10000] [--bin target/release/sluice]

Creates topics totalling N partitions, writes one record to each, then reports the
broker's open file descriptors and RSS, restarts it and reports the time until it
answers again. Prints a markdown table.
"""
import argparse, os, signal, socket, subprocess, tempfile, time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, port, data):
    """Starts the broker; returns it and the seconds until it logged that it is ready."""
    t0 = time.monotonic()
    p = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "sluice ready" in line:
            elapsed = time.monotonic() - t0
            # Keep draining stderr so the broker never blocks on a full pipe.
            import threading
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, elapsed
    raise SystemExit("broker exited before it was ready")


def stats(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS"))
    return fds, rss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--bin", default="target/release/sluice")
    a = ap.parse_args()
    per_topic = 100
    topics = [f"mp-{i}" for i in range(a.partitions // per_topic)]
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        p, t_start = start(a.bin, port, data)
        try:
            bs = f"127.0.0.1:{port}"
            admin = AdminClient({"bootstrap.servers": bs})
            t0 = time.monotonic()
            for i in range(0, len(topics), 20):
                fs = admin.create_topics([NewTopic(t, per_topic, 1) for t in topics[i:i + 20]], operation_timeout=60)
                for f in fs.values():
                    f.result()
            t_create = time.monotonic() - t0
            prod = Producer({"bootstrap.servers": bs, "linger.ms": 50, "queue.buffering.max.messages": 1000000})
            for t in topics:
                for part in range(per_topic):
                    prod.produce(t, value=b"x" * 100, partition=part)
                prod.poll(0)
            prod.flush(120)
            fds_busy, rss_busy = stats(p.pid)
            time.sleep(75)  # idle file handles close after 60 s
            fds_idle, rss_idle = stats(p.pid)
            p.send_signal(signal.SIGTERM)
            p.wait(60)
            p, t_restart = start(a.bin, port, data)
            fds_restart, rss_restart = stats(p.pid)
        finally:
            p.kill()
            p.wait()
    print(f"| partitions | create all | fds after writing | RSS after writing | fds idle | RSS idle | restart to first answer | fds after restart | RSS after restart |")
    print(f"|---|---|---|---|---|---|---|---|---|")
    print(f"| {a.partitions} | {t_create:.1f} s | {fds_busy} | {rss_busy:.0f} MB | {fds_idle} | {rss_idle:.0f} MB | {t_restart*1000:.0f} ms | {fds_restart} | {rss_restart:.0f} MB |")


if __name__ == "__main__":
    main()
