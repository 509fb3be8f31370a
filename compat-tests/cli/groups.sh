#!/usr/bin/env bash
# Drives a sluice broker's consumer-group support with Kafka's own kafka-consumer-groups tool
# (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand from kafka-tools 4.4.0, the same
# ./lib jars that run.sh fetches). A small Java client, compiled here against lib/, produces,
# commits offsets for part of a topic, holds a live membership and reads the group back.
# Then kafka-share-groups (ShareGroupCommand) resets, describes and deletes a share group's offsets
# under a KafkaShareConsumer, kafka-console-share-consumer reads the topic through a share group,
# and kafka-configs --entity-type groups sets, describes and deletes group configs.
#
#   compat-tests/cli/groups.sh
#
# Env:
#   SLUICE_BIN           broker binary (default: <repo>/target/release/sluice)
#   SLUICE_START_TIMEOUT seconds to wait for the broker's port (default 10)
#   TOOL_TIMEOUT         seconds any one tool may run (default 60)
#   KEEP_TMP=1           keep the temp dir (broker data + log + tool output) for inspection
#
# Prints PASS:/FAIL: lines and finally "cli-groups: N passed, M failed"; exits 1 if anything failed.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
lib="$here/lib"
kafka_version=4.4.0

SLUICE_BIN="${SLUICE_BIN:-$repo/target/release/sluice}"
case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
start_timeout="${SLUICE_START_TIMEOUT:-10}"
tool_timeout="${TOOL_TIMEOUT:-60}"

passed=0
failed=0
pid=""
hold_pid=""
tmp=""

pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL: $1"
    failed=$((failed + 1))
    shift
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "  --- $(basename "$f") ---"
        head -n 30 "$f" | sed 's/^/  | /'
    done
}
finish() {
    echo "cli-groups: ${passed} passed, ${failed} failed"
    [ "$failed" -eq 0 ]
    exit $?
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS.
. "$here/stop_pid.sh"
cleanup() {
    stop_pid "$hold_pid" 10
    hold_pid=""
    stop_pid "$pid" 20
    pid=""
    if [ -n "$tmp" ] && [ -d "$tmp" ]; then
        if [ -n "${KEEP_TMP:-}" ]; then
            echo "note: kept $tmp" >&2
        else
            rm -rf "$tmp"
        fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ Kafka tool classes
# Same fetch as run.sh: kafka-tools + its runtime dependencies into ./lib, refetched when pom.xml changes.
stamp="$(sha256sum "$here/pom.xml" | cut -d' ' -f1)"
if [ ! -f "$lib/kafka-tools-$kafka_version.jar" ] || [ "$(cat "$lib/.pom-sha256" 2>/dev/null)" != "$stamp" ]; then
    echo "fetching kafka-tools $kafka_version and dependencies into $lib ..."
    rm -rf "$lib"
    if ! mvn -q -B -ntp -f "$here/pom.xml" dependency:copy-dependencies; then
        fail "resolve org.apache.kafka:kafka-tools:$kafka_version with mvn"
        finish
    fi
    echo "$stamp" > "$lib/.pom-sha256"
fi
if command -v unzip >/dev/null 2>&1; then
    listing="$(unzip -Z1 "$lib/kafka-tools-$kafka_version.jar")"
else
    listing="$(jar tf "$lib/kafka-tools-$kafka_version.jar")"
fi
if ! grep -qx "org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.class" <<<"$listing"; then
    fail "kafka-tools-$kafka_version.jar has no ConsumerGroupCommand (the tests need updating for this version)"
    finish
fi

JAVA_OPTS=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
           -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err)
GROUPS_CMD=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
tool() {
    timeout --kill-after=10 "$tool_timeout" java "${JAVA_OPTS[@]}" -cp "$lib/*" "$@"
}
groups_cmd() { tool "$GROUPS_CMD" --bootstrap-server "$bootstrap" "$@"; }
client() { tool -cp "$lib/*:$tmp/classes" GroupClient "$bootstrap" "$@"; }

# ------------------------------------------------------------------ the helper client
tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli-groups.XXXXXX")"
mkdir -p "$tmp/src" "$tmp/classes"
cat >"$tmp/src/GroupClient.java" <<'JAVA'
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/**
 * GroupClient BOOTSTRAP create TOPIC PARTITIONS
 * GroupClient BOOTSTRAP produce TOPIC PARTITIONS PER_PARTITION   values "p<P>-<i>", explicit partitions
 * GroupClient BOOTSTRAP commit TOPIC GROUP P:OFFSET,...           subscribe, read up to the offsets, commitSync them
 * GroupClient BOOTSTRAP hold TOPIC GROUP STOPFILE                 stay a member (prints "joined") until STOPFILE exists
 * GroupClient BOOTSTRAP read TOPIC GROUP COUNT                     subscribe, print "P O" per record, no commit
 * GroupClient BOOTSTRAP share-read TOPIC GROUP COUNT               a share consumer: accept and print "P O V" per record
 * GroupClient BOOTSTRAP share-hold TOPIC GROUP STOPFILE            a share consumer stays a member until STOPFILE exists
 */
public class GroupClient {
    public static void main(String[] a) throws Exception {
        String boot = a[0], mode = a[1], topic = a[2];
        switch (mode) {
            case "create" -> {
                try (Admin admin = Admin.create(Map.of("bootstrap.servers", boot))) {
                    admin.createTopics(List.of(new NewTopic(topic, Integer.parseInt(a[3]), (short) 1))).all().get();
                }
            }
            case "produce" -> {
                Properties p = new Properties();
                p.put("bootstrap.servers", boot);
                try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                    int parts = Integer.parseInt(a[3]), per = Integer.parseInt(a[4]);
                    for (int part = 0; part < parts; part++) {
                        for (int i = 0; i < per; i++) {
                            RecordMetadata md = pr.send(new ProducerRecord<>(topic, part, null, "p" + part + "-" + i)).get();
                            if (md.partition() != part || md.offset() != i) {
                                throw new IllegalStateException("record p" + part + "-" + i + " landed at " + md);
                            }
                        }
                    }
                }
            }
            case "commit" -> {
                Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                for (String s : a[4].split(",")) {
                    String[] kv = s.split(":");
                    commit.put(new TopicPartition(topic, Integer.parseInt(kv[0])), new OffsetAndMetadata(Long.parseLong(kv[1])));
                }
                try (KafkaConsumer<String, String> c = consumer(boot, a[3])) {
                    c.subscribe(List.of(topic));
                    Map<TopicPartition, Long> next = new HashMap<>();
                    long deadline = System.nanoTime() + 30_000_000_000L;
                    while (!commit.keySet().stream().allMatch(tp -> next.getOrDefault(tp, 0L) >= commit.get(tp).offset())) {
                        if (System.nanoTime() > deadline) throw new IllegalStateException("did not read up to " + commit + ": " + next);
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            next.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                        }
                    }
                    c.commitSync(commit);
                    System.out.println("committed " + commit);
                }
            }
            case "hold" -> {
                try (KafkaConsumer<String, String> c = consumer(boot, a[3])) {
                    c.subscribe(List.of(topic));
                    boolean announced = false;
                    long deadline = System.nanoTime() + 120_000_000_000L;
                    while (!Files.exists(Path.of(a[4])) && System.nanoTime() < deadline) {
                        c.poll(Duration.ofMillis(100));
                        if (!announced && !c.assignment().isEmpty()) {
                            System.out.println("joined " + c.assignment());
                            System.out.flush();
                            announced = true;
                        }
                    }
                }
            }
            case "read" -> {
                int want = Integer.parseInt(a[4]);
                try (KafkaConsumer<String, String> c = consumer(boot, a[3])) {
                    c.subscribe(List.of(topic));
                    int n = 0;
                    long deadline = System.nanoTime() + 30_000_000_000L;
                    long settleEnd = Long.MAX_VALUE;
                    while (System.nanoTime() < Math.min(deadline, settleEnd)) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            System.out.println(r.partition() + " " + r.offset() + " " + r.value());
                            n++;
                        }
                        if (n >= want && settleEnd == Long.MAX_VALUE) settleEnd = System.nanoTime() + 1_000_000_000L;
                    }
                }
            }
            case "share-read" -> {
                int want = Integer.parseInt(a[4]);
                try (KafkaShareConsumer<String, String> c = shareConsumer(boot, a[3])) {
                    c.subscribe(List.of(topic));
                    int n = 0;
                    long deadline = System.nanoTime() + 30_000_000_000L;
                    long settleEnd = Long.MAX_VALUE;
                    while (System.nanoTime() < Math.min(deadline, settleEnd)) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            System.out.println(r.partition() + " " + r.offset() + " " + r.value());
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            n++;
                        }
                        c.commitSync(Duration.ofSeconds(10));
                        if (n >= want && settleEnd == Long.MAX_VALUE) settleEnd = System.nanoTime() + 1_000_000_000L;
                    }
                }
            }
            case "share-hold" -> {
                try (KafkaShareConsumer<String, String> c = shareConsumer(boot, a[3])) {
                    c.subscribe(List.of(topic));
                    long deadline = System.nanoTime() + 120_000_000_000L;
                    boolean announced = false;
                    while (!Files.exists(Path.of(a[4])) && System.nanoTime() < deadline) {
                        c.poll(Duration.ofMillis(100));
                        if (!announced) {
                            System.out.println("joined");
                            System.out.flush();
                            announced = true;
                        }
                    }
                }
            }
            default -> throw new IllegalArgumentException(mode);
        }
    }

    static KafkaShareConsumer<String, String> shareConsumer(String boot, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("group.id", group);
        p.put("client.id", "cli-groups-share");
        p.put("share.acknowledgement.mode", "explicit");
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static KafkaConsumer<String, String> consumer(String boot, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("group.id", group);
        p.put("client.id", "cli-groups-client");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }
}
JAVA
if ! javac -nowarn -cp "$lib/*" -d "$tmp/classes" "$tmp/src/GroupClient.java" >"$tmp/javac.out" 2>&1; then
    fail "compile the GroupClient helper" "$tmp/javac.out"
    finish
fi

# ------------------------------------------------------------------ broker
if [ ! -x "$SLUICE_BIN" ]; then
    fail "sluice binary not found or not executable: $SLUICE_BIN (build it, or set SLUICE_BIN)"
    finish
fi
free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
        return
    fi
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

port="$(free_port)"
bootstrap="127.0.0.1:$port"
log="$tmp/sluice.log"
"$SLUICE_BIN" serve --listen "$bootstrap" --advertise "$bootstrap" --data-dir "$tmp/data" --node-id 1 \
    --set group.initial.rebalance.delay.ms=0 </dev/null >"$log" 2>&1 &
pid=$!
ready=0
for _ in $(seq 1 $((start_timeout * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    if port_open "$port"; then ready=1; break; fi
    sleep 0.1
done
if [ "$ready" -ne 1 ]; then
    fail "sluice did not start serving on $bootstrap within ${start_timeout}s" "$log"
    finish
fi
echo "sluice pid $pid listening on $bootstrap (log: $log)"

out="$tmp/out"
err="$tmp/err"
topic="cli-groups"
group="cli-group"
per=10

# ------------------------------------------------------------------ setup: 3 partitions x 10 records, commits 4 / 10 / none
if client create "$topic" 3 >"$out" 2>"$err" && client produce "$topic" 3 "$per" >"$out" 2>"$err"; then
    pass "setup: topic $topic with 3 partitions x $per records"
else
    fail "setup: topic $topic with 3 partitions x $per records" "$out" "$err"
    finish
fi
if client commit "$topic" "$group" "0:4,1:10" >"$out" 2>"$err"; then
    pass "setup: a member of $group read and committed partition 0 at 4 and partition 1 at 10, then closed"
else
    fail "setup: a member of $group committed partition 0 at 4 and partition 1 at 10" "$out" "$err"
    finish
fi

# Rows of the --describe / --reset-offsets table for our topic, as "PARTITION COL1 COL2 ..." with
# the columns picked by header name (so their order in the tool's output does not matter).
table() { # file, column names...
    local file="$1"
    shift
    awk -v want="$*" -v topic="$topic" '
        /^GROUP[[:space:]]/ { for (i = 1; i <= NF; i++) col[$i] = i; n = split(want, w, " "); next }
        n && $2 == topic {
            line = $3
            for (j = 1; j <= n; j++) line = line " " (w[j] in col ? $(col[w[j]]) : "?")
            print line
        }' "$file" | sort -n
}

# ------------------------------------------------------------------ --list
if groups_cmd --list >"$out" 2>"$err" && grep -qx "$group" "$out"; then
    pass "--list shows $group"
else
    fail "--list shows $group" "$out" "$err"
fi

# ------------------------------------------------------------------ --describe (inactive group)
# Partition 2 has no committed offset: the tool lists only committed partitions of a group
# without members (Kafka does the same).
expected="0 4 10 6
1 10 10 0"
if groups_cmd --describe --group "$group" >"$out" 2>"$err"; then
    got="$(table "$out" CURRENT-OFFSET LOG-END-OFFSET LAG | grep -v '^2 - ')"
    if [ "$got" = "$expected" ]; then
        pass "--describe: CURRENT-OFFSET/LOG-END-OFFSET/LAG = 4/10/6 (partition 0), 10/10/0 (partition 1)"
    else
        printf 'expected (PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG):\n%s\ngot:\n%s\n' "$expected" "$got" >"$tmp/diff"
        fail "--describe: CURRENT-OFFSET/LOG-END-OFFSET/LAG per partition" "$tmp/diff" "$out" "$err"
    fi
    if grep -q "Consumer group '$group' has no active members." "$out" "$err"; then
        pass "--describe says the group has no active members"
    else
        fail "--describe says the group has no active members" "$out" "$err"
    fi
else
    fail "--describe --group $group (tool exited non-zero)" "$out" "$err"
fi

if groups_cmd --describe --group "$group" --state >"$out" 2>"$err" \
    && awk -v g="$group" '$1 == g' "$out" | grep -qw Empty; then
    pass "--describe --state: $group is Empty"
else
    fail "--describe --state: $group is Empty" "$out" "$err"
fi

# ------------------------------------------------------------------ an active member
stopfile="$tmp/stop-hold"
client hold "$topic" "$group" "$stopfile" >"$tmp/hold.out" 2>"$tmp/hold.err" &
hold_pid=$!
joined=0
for _ in $(seq 1 300); do
    if grep -q '^joined' "$tmp/hold.out"; then joined=1; break; fi
    kill -0 "$hold_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$joined" -eq 1 ] && grep -q "$topic-0" "$tmp/hold.out" && grep -q "$topic-1" "$tmp/hold.out" \
    && grep -q "$topic-2" "$tmp/hold.out"; then
    pass "a consumer joined $group and got all 3 partitions"
    # With a member, every assigned partition is listed; partition 2 has no commit ("-").
    if groups_cmd --describe --group "$group" >"$out" 2>"$err"; then
        got="$(table "$out" CURRENT-OFFSET LOG-END-OFFSET LAG CLIENT-ID)"
        expected="0 4 10 6 cli-groups-client
1 10 10 0 cli-groups-client
2 - 10 - cli-groups-client"
        if [ "$got" = "$expected" ]; then
            pass "--describe of the active group: its member (client cli-groups-client) on all 3 partitions, partition 2 uncommitted"
        else
            printf 'expected (PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CLIENT-ID):\n%s\ngot:\n%s\n' "$expected" "$got" >"$tmp/diff"
            fail "--describe of the active group" "$tmp/diff" "$out" "$err"
        fi
    else
        fail "--describe of the active group (tool exited non-zero)" "$out" "$err"
    fi
    # Kafka refuses to reset the offsets of a group that has members.
    groups_cmd --reset-offsets --to-earliest --execute --topic "$topic" --group "$group" >"$out" 2>"$err"
    if grep -q "can only be reset if the group '$group' is inactive" "$out" "$err"; then
        pass "--reset-offsets is refused while the group has a member"
    else
        fail "--reset-offsets is refused while the group has a member" "$out" "$err"
    fi
else
    fail "a consumer joined $group (hold helper)" "$tmp/hold.out" "$tmp/hold.err"
fi
touch "$stopfile"
for _ in $(seq 1 200); do kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.1; done
stop_pid "$hold_pid" 5
hold_pid=""

if groups_cmd --describe --group "$group" >"$out" 2>"$err" \
    && [ "$(table "$out" CURRENT-OFFSET | grep -v '^2 - ')" = "$(printf '0 4\n1 10')" ]; then
    pass "the refused reset changed nothing (still 4 and 10)"
else
    fail "the refused reset changed nothing (still 4 and 10)" "$out" "$err"
fi

# ------------------------------------------------------------------ --reset-offsets --to-earliest
if groups_cmd --reset-offsets --to-earliest --execute --topic "$topic" --group "$group" >"$out" 2>"$err"; then
    got="$(table "$out" NEW-OFFSET)"
    if [ "$got" = "$(printf '0 0\n1 0\n2 0')" ]; then
        pass "--reset-offsets --to-earliest --execute: NEW-OFFSET 0 on partitions 0, 1, 2"
    else
        fail "--reset-offsets --to-earliest --execute: NEW-OFFSET 0 on partitions 0, 1, 2" "$out" "$err"
    fi
else
    fail "--reset-offsets --to-earliest --execute (tool exited non-zero)" "$out" "$err"
fi

expected="0 0 10 10
1 0 10 10
2 0 10 10"
if groups_cmd --describe --group "$group" >"$out" 2>"$err" \
    && [ "$(table "$out" CURRENT-OFFSET LOG-END-OFFSET LAG)" = "$expected" ]; then
    pass "--describe after the reset: CURRENT-OFFSET 0, LAG 10 on every partition"
else
    fail "--describe after the reset: CURRENT-OFFSET 0, LAG 10 on every partition" "$out" "$err"
fi

# A new member of the group starts from offset 0 on every partition and reads everything once.
if client read "$topic" "$group" $((3 * per)) >"$out" 2>"$err"; then
    expected="$(for p in 0 1 2; do for i in $(seq 0 $((per - 1))); do echo "$p $i p$p-$i"; done; done)"
    got="$(sort -k1,1n -k2,2n "$out")"
    firsts="$(awk '!($1 in f) { f[$1] = $2 } END { for (p in f) print p ":" f[p] }' "$out" | sort | tr '\n' ' ')"
    if [ "$got" = "$expected" ]; then
        pass "a new consumer in $group read from offset 0: all $((3 * per)) records once (first offsets: $firsts)"
    else
        diff <(echo "$expected") <(echo "$got") >"$tmp/diff"
        fail "a new consumer in $group read from offset 0 (first offsets: $firsts)" "$tmp/diff" "$err"
    fi
else
    fail "a new consumer in $group read from offset 0 (helper exited non-zero)" "$out" "$err"
fi

# ------------------------------------------------------------------ --delete
if groups_cmd --delete --group "$group" >"$out" 2>"$err" \
    && grep -q "Deletion of requested consumer groups ('$group') was successful" "$out"; then
    pass "--delete --group $group"
else
    fail "--delete --group $group" "$out" "$err"
fi
if groups_cmd --list >"$out" 2>"$err" && ! grep -qx "$group" "$out"; then
    pass "--list no longer shows $group"
else
    fail "--list no longer shows $group" "$out" "$err"
fi

# ------------------------------------------------------------------ kafka-share-groups: share-group offsets
# org.apache.kafka.tools.consumer.group.ShareGroupCommand (kafka-share-groups.sh) on a share group:
# offsets set before first use (the group is created, as in Kafka 4.4), described with their lag,
# seen by a KafkaShareConsumer that joins afterwards, refused while the group has a member,
# reset to an offset, a date and the end, deleted, and the group deleted.
SHARE_CMD=org.apache.kafka.tools.consumer.group.ShareGroupCommand
share_cmd() { tool "$SHARE_CMD" --bootstrap-server "$bootstrap" "$@"; }
sgroup="cli-share"
share_reset() { # expected NEW-OFFSET rows, tool args...
    local want="$1"
    shift
    if share_cmd --reset-offsets --execute --group "$sgroup" "$@" >"$out" 2>"$err" && [ "$(table "$out" NEW-OFFSET)" = "$want" ]; then
        pass "kafka-share-groups --reset-offsets $*: NEW-OFFSET $(echo "$want" | awk '{print $2}' | tr '\n' ' ')"
    else
        fail "kafka-share-groups --reset-offsets $*" "$out" "$err"
    fi
}
share_describe() { # expected "PARTITION START-OFFSET LAG" rows, what it shows
    if share_cmd --describe --group "$sgroup" >"$out" 2>"$err" && [ "$(table "$out" START-OFFSET LAG)" = "$1" ]; then
        pass "kafka-share-groups --describe: $2"
    else
        printf 'expected (PARTITION START-OFFSET LAG):\n%s\n' "$1" >"$tmp/diff"
        fail "kafka-share-groups --describe: $2" "$tmp/diff" "$out" "$err"
    fi
}
share_read() { # count, expected "P O V" lines, what it shows
    if client share-read "$topic" "$sgroup" "$1" >"$out" 2>"$err" && [ "$(sort -k1,1n -k2,2n "$out")" = "$2" ]; then
        pass "a KafkaShareConsumer in $sgroup: $3"
    else
        diff <(echo "$2") <(sort -k1,1n -k2,2n "$out") >"$tmp/diff"
        fail "a KafkaShareConsumer in $sgroup: $3" "$tmp/diff" "$err"
    fi
}
share_reset "$(printf '0 0\n1 0\n2 0')" --to-earliest --topic "$topic"
share_describe "$(printf '0 0 10\n1 0 10\n2 0 10')" "START-OFFSET 0, LAG 10 on every partition of the new group"
share_read $((3 * per)) "$(for p in 0 1 2; do for i in $(seq 0 $((per - 1))); do echo "$p $i p$p-$i"; done; done)" \
    "read every record once from the reset offsets"
share_describe "$(printf '0 10 0\n1 10 0\n2 10 0')" "START-OFFSET 10, LAG 0 once every record is accepted"

stopfile="$tmp/stop-share-hold"
client share-hold "$topic" "$sgroup" "$stopfile" >"$tmp/hold.out" 2>"$tmp/hold.err" &
hold_pid=$!
joined=0
for _ in $(seq 1 300); do
    if share_cmd --describe --group "$sgroup" --members >"$out" 2>/dev/null && grep -q cli-groups-share "$out"; then joined=1; break; fi
    kill -0 "$hold_pid" 2>/dev/null || break
    sleep 0.2
done
if [ "$joined" -eq 1 ]; then
    share_cmd --reset-offsets --to-earliest --execute --topic "$topic" --group "$sgroup" >"$out" 2>"$err"
    if grep -q "Share group '$sgroup' is not empty" "$out" "$err"; then
        pass "kafka-share-groups --reset-offsets is refused while the share group has a member"
    else
        fail "kafka-share-groups --reset-offsets is refused while the share group has a member" "$out" "$err"
    fi
else
    fail "a KafkaShareConsumer joined $sgroup (share-hold helper)" "$out" "$tmp/hold.out" "$tmp/hold.err"
fi
touch "$stopfile"
for _ in $(seq 1 200); do kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.1; done
stop_pid "$hold_pid" 5
hold_pid=""

share_reset "1 5" --to-offset 5 --topic "$topic:1"
share_read 5 "$(for i in $(seq 5 $((per - 1))); do echo "1 $i p1-$i"; done)" "read partition 1 again from offset 5, nothing else"
share_reset "$(printf '0 0\n1 0\n2 0')" --to-datetime 2000-01-01T00:00:00.000 --topic "$topic"
share_reset "$(printf '0 10\n1 10\n2 10')" --to-latest --topic "$topic"
if share_cmd --delete-offsets --topic "$topic" --group "$sgroup" >"$out" 2>"$err" && grep -Eq "^$topic +Successful" "$out" \
    && share_cmd --describe --group "$sgroup" >"$out" 2>"$err" && grep -q "Share group '$sgroup' has no offset information." "$out"; then
    pass "kafka-share-groups --delete-offsets: then the group has no offset information"
else
    fail "kafka-share-groups --delete-offsets: then the group has no offset information" "$out" "$err"
fi
if share_cmd --delete --group "$sgroup" >"$out" 2>"$err" \
    && grep -q "Deletion of requested share groups ('$sgroup') was successful." "$out" \
    && share_cmd --list >"$out" 2>"$err" && ! grep -qx "$sgroup" "$out"; then
    pass "kafka-share-groups --delete --group $sgroup; --list no longer shows it"
else
    fail "kafka-share-groups --delete --group $sgroup; --list no longer shows it" "$out" "$err"
fi

# ------------------------------------------------------------------ kafka-console-share-consumer
# org.apache.kafka.tools.consumer.ConsoleShareConsumer (kafka-console-share-consumer.sh) reads the
# topic through a share group set to start at the earliest offsets: every record once.
cgroup="cli-share-console"
want="$(for p in 0 1 2; do for i in $(seq 0 $((per - 1))); do echo "p$p-$i"; done; done | sort)"
if share_cmd --reset-offsets --to-earliest --execute --topic "$topic" --group "$cgroup" >"$out" 2>"$err" \
    && tool org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server "$bootstrap" --topic "$topic" \
        --group "$cgroup" --max-messages $((3 * per)) --timeout-ms 30000 >"$out" 2>"$err" \
    && [ "$(sort "$out")" = "$want" ]; then
    pass "kafka-console-share-consumer reads all $((3 * per)) records of $topic once"
else
    printf '%s\n' "$want" >"$tmp/want"
    fail "kafka-console-share-consumer reads all $((3 * per)) records of $topic once" "$tmp/want" "$out" "$err"
fi
share_cmd --delete --group "$cgroup" >/dev/null 2>&1

# ------------------------------------------------------------------ kafka-configs --entity-type groups
# Group configs (ConfigResource GROUP): set, described with their sources, refused when out of
# the broker's bounds (INVALID_CONFIG, as Kafka), and deleted.
CONFIGS=org.apache.kafka.tools.ConfigCommand
configs_cmd() { tool "$CONFIGS" --bootstrap-server "$bootstrap" --entity-type groups --entity-name cli-group-config "$@"; }
if configs_cmd --alter --add-config share.auto.offset.reset=earliest,consumer.session.timeout.ms=50000 >"$out" 2>"$err" \
    && grep -q "Completed updating config for group cli-group-config." "$out" \
    && configs_cmd --describe >"$out" 2>"$err" \
    && grep -q "^  consumer.session.timeout.ms=50000 .*DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000" "$out" \
    && grep -q "^  share.auto.offset.reset=earliest .*DEFAULT_CONFIG:share.auto.offset.reset=latest" "$out"; then
    pass "kafka-configs --entity-type groups --alter --add-config, then --describe shows DYNAMIC_GROUP_CONFIG"
else
    fail "kafka-configs --entity-type groups --alter --add-config, then --describe shows DYNAMIC_GROUP_CONFIG" "$out" "$err"
fi
if ! configs_cmd --alter --add-config consumer.heartbeat.interval.ms=1 >"$out" 2>"$err" \
    && grep -q "InvalidConfigurationException: .*consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive." "$err" \
    && ! configs_cmd --alter --add-config no.such.config=1 >"$out" 2>"$err" \
    && grep -q "InvalidConfigurationException: .*Unknown group config name: no.such.config" "$err"; then
    pass "kafka-configs --entity-type groups refuses an out-of-bounds value and an unknown key (INVALID_CONFIG)"
else
    fail "kafka-configs --entity-type groups refuses an out-of-bounds value and an unknown key (INVALID_CONFIG)" "$out" "$err"
fi
if configs_cmd --alter --delete-config consumer.session.timeout.ms >"$out" 2>"$err" \
    && configs_cmd --describe --all >"$out" 2>"$err" \
    && grep -q "^  consumer.session.timeout.ms=45000 .*synonyms={DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" "$out" \
    && grep -q "^  share.isolation.level=read_uncommitted " "$out"; then
    pass "kafka-configs --entity-type groups --delete-config, then --describe --all shows the default"
else
    fail "kafka-configs --entity-type groups --delete-config, then --describe --all shows the default" "$out" "$err"
fi

if kill -0 "$pid" 2>/dev/null; then
    pass "sluice still running after the tool runs"
else
    wait "$pid"; rc=$?
    pid=""
    fail "sluice still running after the tool runs (it exited with code $rc)" "$log"
fi

finish
