"""Tails a topic with librdkafka (confluent-kafka) for ReplicationTest.

    python librdkafka_tail_consumer.py BOOTSTRAP TOPIC PARTITIONS

Assigns partitions 0..PARTITIONS-1 from the beginning (no group membership, no commits) and
prints one line per record to stdout, flushed at once:

    <partition> <offset> <value>

Errors reported by the client go to stderr. Runs until SIGTERM or SIGINT, then closes the
consumer and exits 0.
"""

import signal
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition


def main() -> int:
    bootstrap, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        # Required by the client; assign() never joins the group and nothing is committed.
        "group.id": "replication-test-tail",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_uncommitted",
        "topic.metadata.refresh.interval.ms": 1000,
        "reconnect.backoff.max.ms": 500,
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    print(f"assigned {topic} partitions 0..{partitions - 1} via {bootstrap}", file=sys.stderr, flush=True)

    out = sys.stdout
    while not stopping:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            print(f"consumer error: {msg.error()}", file=sys.stderr, flush=True)
            continue
        value = msg.value().decode("utf-8") if msg.value() is not None else ""
        out.write(f"{msg.partition()} {msg.offset()} {value}\n")
        out.flush()

    consumer.close()
    print("closed", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
