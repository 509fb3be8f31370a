# Sourced by run.sh (needs its tool, pass, fail, $bootstrap, $out, $err, $tmp, $topic): Kafka
# 4.4's kafka-log-dirs (org.apache.kafka.tools.LogDirsCommand) describing the broker's log
# dirs (DescribeLogDirs): its one dir, $tmp/data, holds both partitions of $topic.
LOG_DIRS=org.apache.kafka.tools.LogDirsCommand

# The tool prints two status lines, then one JSON line:
#   {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"cli-compat-0","size":..,
#     "offsetLag":0,"isFuture":false},...],"error":null,"logDir":"/tmp/.../data"}]}],"version":1}
log_dirs_ok() {
    tool "$LOG_DIRS" --bootstrap-server "$bootstrap" --describe --broker-list 1 --topic-list "$topic" >"$out" 2>"$err" || return 1
    grep '^{' "$out" | python3 -c '
import json, sys
want_dir, topic = sys.argv[1], sys.argv[2]
doc = json.loads(sys.stdin.read())
[b] = doc["brokers"]
assert b["broker"] == 1, b
[d] = b["logDirs"]
assert d["logDir"] == want_dir and d["error"] is None, d
parts = {p["partition"]: p for p in d["partitions"]}
assert set(parts) == {topic + "-0", topic + "-1"}, parts
assert all(p["size"] >= 0 and p["offsetLag"] == 0 and p["isFuture"] is False for p in parts.values()), parts
assert sum(p["size"] for p in parts.values()) > 0, "the records produced earlier take room"
' "$tmp/data" "$topic"
}
if log_dirs_ok; then
    pass "LogDirsCommand --describe: the broker's log dir, with both partitions of $topic and their sizes"
else
    fail "LogDirsCommand --describe: the broker's log dir, with both partitions of $topic and their sizes" "$out" "$err"
fi

if tool "$LOG_DIRS" --bootstrap-server "$bootstrap" --describe --broker-list 1 --topic-list no-such-topic >"$out" 2>"$err" \
    && grep '^{' "$out" | python3 -c 'import json,sys; [b] = json.load(sys.stdin)["brokers"]; [d] = b["logDirs"]; assert d["partitions"] == [], d'; then
    pass "LogDirsCommand --describe --topic-list no-such-topic: the dir, with no partitions"
else
    fail "LogDirsCommand --describe --topic-list no-such-topic: the dir, with no partitions" "$out" "$err"
fi
