"""Constants and exceptions every module of the benchmark harness shares: versions, heaps and
JVM flags, the sections of a run, the cluster's shape, thresholds; and the two ways a step can
end early; reading a tool's JSON result."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KAFKA_VERSION = "4.4.0"
KAFKA_HEAP = "-Xmx1g -Xms1g"
CLUSTER_HEAP = "-Xmx512m -Xms512m"  # each of the three Kafka nodes of the cluster section
TOOL_HEAP = "-Xmx512m"
# The GC flags kafka-run-class.sh uses (KAFKA_JVM_PERFORMANCE_OPTS), for the broker and tools.
JVM_PERF_OPTS = ("-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
                 " -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true")
MIB = 1024 * 1024
SECTIONS = ("disk", "single", "rdkperf", "cluster", "security", "share")
# Sections a run leaves out unless --only names them.
OPT_IN = ("security", "share")
CLUSTER_NODES = 3
CLUSTER_PARTITIONS = 3
CLUSTER_TOPIC_CONFIG = ["min.insync.replicas=2"]
# A side whose process(es) used at least this many CPU seconds per wall second saturated a core.
SATURATED = 0.9
# rdkafka_performance sets linger.ms=1000 itself: the last partial batches of a count-limited run
# would wait that long. The harness gives it librdkafka's default instead (as rdkload.py uses).
RDKPERF_PRODUCER_CONF = ["-X", "linger.ms=5"]
DISK_TARGET_PCT = 70


class StepError(Exception):
    """A measurement that failed; the run goes on with the next one."""


class BudgetExceeded(Exception):
    """The overall time budget ran out."""


def last_json(out, what, context=""):
    """The result of a tool that prints one JSON object per line on stdout: the last one."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise StepError(f"{what}: printed no result{context}")
    return json.loads(lines[-1])
