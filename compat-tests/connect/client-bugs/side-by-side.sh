#!/usr/bin/env bash
# Shows the FileStreamSource habit the README names (its stored position counts characters, its
# resume skips that many bytes) against a one-node sluice and then a one-node Apache Kafka 4.4
# (KRaft, combined mode), so that it is seen to be the client's:
#
#   compat-tests/connect/client-bugs/side-by-side.sh
#
# On each broker: ConnectStandalone (as connect/run.sh runs it: its jars, the connect-file plugin)
# with a FileStreamSource on a file of N lines with multi-byte UTF-8 characters; once the topic
# holds N records the worker is stopped cleanly (it stores its offset), M lines are appended, the
# worker starts again, and the topic is read back: records, lines sent twice, fragments. On sluice
# an ASCII file is the control (no duplicates expected). Exits 0 when both brokers show the same
# counts and the control none; 1 otherwise; 2 when something could not be set up.
#
# Kafka's jars come from Maven Central through bench/pom.xml into bench/.cache, as bench/run
# fetches them (KAFKA_LIB overrides the directory). SLUICE_BIN as for run.sh; N, M the line
# counts (default 100, 50); KEEP_TMP=1 keeps the temp dir. Not part of the suite: it takes a few
# minutes, most of it JVMs starting.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
connect="$(cd "$here/.." && pwd)"
root="$(cd "$connect/../.." && pwd)"
SLUICE_BIN="${SLUICE_BIN:-$root/target/release/sluice}"
lib="${KAFKA_LIB:-$root/bench/.cache/kafka-4.4.0-lib}"
N="${N:-100}" M="${M:-50}"
work="$(mktemp -d "${TMPDIR:-/tmp}/sluice-connect-sbs.XXXXXX")"
broker_pid="" worker_pid="" bootstrap=""

. "$connect/../cli/stop_pid.sh"
. "$connect/worker-props.sh"
cleanup() {
    stop_pid "$worker_pid" 30
    stop_pid "$broker_pid" 30
    if [ -n "${KEEP_TMP:-}" ]; then echo "note: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
die() { echo "error: $1" >&2; shift; for f in "$@"; do [ -s "$f" ] && tail -n 30 "$f" | sed 's/^/  | /' >&2; done; exit 2; }

"$connect/../cli/fetch-lib.sh" "$connect" && "$connect/../cli/fetch-lib.sh" "$connect/plugin" \
    || die "fetch Kafka Connect 4.4.0 and connect-file"
if [ ! -f "$lib/kafka_2.13-4.4.0.jar" ]; then
    timeout 900 mvn -B -q -f "$root/bench/pom.xml" dependency:copy-dependencies -Dbench.lib.dir="$lib" >"$work/mvn.log" 2>&1 \
        || die "fetch Apache Kafka 4.4.0" "$work/mvn.log"
fi

# One of Kafka's tools (kafka-tools 4.4.0, in connect/lib) against $bootstrap.
tool() {
    local cls=$1
    shift
    timeout --kill-after=10 60 java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err \
        -cp "$connect/lib/*" "org.apache.kafka.tools.$cls" --bootstrap-server "$bootstrap" "$@"
}
# Partition 0's end offset: the records the topic holds.
records() { tool GetOffsetShell --topic "$1" --time -1 2>/dev/null | sed -n "s/^$1:0://p"; }
# Waits (up to 120 s) until TOPIC holds at least WANT records, then until its count stays the
# same over two polls (a re-read past WANT is counted too); echoes the count.
settled_records() { # topic, want
    local r=0 last=-1
    for _ in $(seq 60); do
        r="$(records "$1")"
        [ "${r:-0}" -ge "$2" ] && break
        sleep 2
    done
    while [ "${r:-0}" != "$last" ]; do
        last=$r
        sleep 3
        r="$(records "$1")"
    done
    echo "${r:-0}"
}

# ConnectStandalone with one FileStreamSource (FILE -> TOPIC), its offsets in OFFSETS, logging to
# $work/worker.log; returns once its REST server listens. The worker settings are connect/run.sh's.
start_worker() { # file, topic, offsets
    { connect_worker_props "$bootstrap"; echo "offset.storage.file.filename=$3"; } >"$work/worker.properties"
    cat >"$work/source.properties" <<EOF
name=file-source
connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector
tasks.max=1
file=$1
topic=$2
EOF
    local log="$work/worker.log" from
    echo "===== ConnectStandalone $2 ($(date -u +%T))" >>"$log"
    from=$(wc -l <"$log")
    java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.logFile=System.out \
        -cp "$connect/lib/*" org.apache.kafka.connect.cli.ConnectStandalone \
        "$work/worker.properties" "$work/source.properties" >>"$log" 2>&1 &
    worker_pid=$!
    for _ in $(seq 600); do
        tail -n +"$from" "$log" | grep -q 'REST server listening at' && return 0
        kill -0 "$worker_pid" 2>/dev/null || break
        sleep 0.1
    done
    die "ConnectStandalone did not start" "$log"
}
stop_worker() { stop_pid "$worker_pid" 30; worker_pid=""; }

# Appends lines FROM..TO to FILE: KIND utf8 has 2-, 3- and 4-byte characters (the emoji is two
# Java chars), ascii none.
append_lines() { # file, from, to, kind
    local i
    for i in $(seq "$2" "$3"); do
        if [ "$4" = utf8 ]; then printf 'line %04d é 日本 🙂\n' "$i"; else printf 'line %04d e nihon :)\n' "$i"; fi
    done >>"$1"
}

# One run on the current broker, its files under $work/DIR (a fresh file and offset store per
# run); prints one summary line and sets total, twice, fragments.
run_case() { # label, dir, topic, kind
    local label=$1 dir="$work/$2" topic=$3 kind=$4
    local in="$dir/$3.txt" offsets="$dir/$3.offsets" values="$dir/$3.values"
    mkdir -p "$dir"
    tool TopicCommand --create --topic "$topic" --partitions 1 --replication-factor 1 >/dev/null 2>"$work/tool.err" \
        || die "create topic $topic on $label" "$work/tool.err"
    : >"$in"
    append_lines "$in" 1 "$N" "$kind"
    start_worker "$in" "$topic" "$offsets"
    first="$(settled_records "$topic" "$N")"
    stop_worker
    [ -s "$offsets" ] || die "the worker stored no offset in $offsets" "$work/worker.log"
    append_lines "$in" $((N + 1)) $((N + M)) "$kind"
    start_worker "$in" "$topic" "$offsets"
    total="$(settled_records "$topic" $((N + M)))"
    stop_worker
    tool consumer.ConsoleConsumer --topic "$topic" --partition 0 --offset earliest --timeout-ms 10000 \
        >"$values" 2>"$work/tool.err"
    [ "$(wc -l <"$values")" -eq "$total" ] \
        || die "read $total records back from $topic, got $(wc -l <"$values")" "$work/tool.err"
    # Lines of the file that are in the topic more than once; records that are no line of the file.
    twice="$(LC_ALL=C sort "$values" | LC_ALL=C uniq -d | LC_ALL=C grep -cxFf "$in")"
    fragments="$(LC_ALL=C grep -cvxFf "$in" "$values")"
    printf '  %-22s %s before the restart, %s records for %s lines: %s lines sent twice, %s fragments\n' \
        "$label:" "$first" "$total" $((N + M)) "$twice" "$fragments"
    if [ "$fragments" -gt 0 ]; then LC_ALL=C grep -vxFf "$in" "$values" | head -3 | sed 's/^/    fragment: /'; fi
}

echo "FileStreamSource (connect-file 4.3.1 on Connect 4.4.0), $N lines, stop, $M more lines, start"
# ------------------------------------------------------------------ sluice
"$SLUICE_BIN" serve --listen 127.0.0.1:0 --data-dir "$work/sluice" >"$work/sluice.log" 2>&1 &
broker_pid=$!
for _ in $(seq 200); do
    bootstrap="$(sed -n 's/.*serving Kafka on \([0-9.]*:[0-9]*\).*/\1/p' "$work/sluice.log" | head -1)"
    [ -n "$bootstrap" ] || ! kill -0 "$broker_pid" 2>/dev/null && break
    sleep 0.1
done
[ -n "$bootstrap" ] || die "sluice serves" "$work/sluice.log"
run_case "Sluice (UTF-8)" sluice-run sbs-utf8 utf8
sluice_total=$total sluice_twice=$twice sluice_fragments=$fragments
run_case "Sluice (ASCII control)" sluice-run sbs-ascii ascii
ascii_total=$total ascii_twice=$twice
stop_pid "$broker_pid" 30
broker_pid=""

# ------------------------------------------------------------------ Apache Kafka 4.4
port=$((20000 + RANDOM % 9000))
cat >"$work/kafka.properties" <<EOF
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.quorum.voters=1@127.0.0.1:$((port + 1))
log.dirs=$work/kafka
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
java=(java -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$root/bench/log4j2.properties"
    -cp "$lib/*")
"${java[@]}" kafka.tools.StorageTool format -t "$("${java[@]}" kafka.tools.StorageTool random-uuid)" \
    -c "$work/kafka.properties" >"$work/format.log" 2>&1 || die "format Kafka's log dir" "$work/format.log"
"${java[@]}" -Dbench.log.level=INFO kafka.Kafka "$work/kafka.properties" >"$work/kafka.log" 2>&1 &
broker_pid=$!
for _ in $(seq 1200); do
    grep -q 'Kafka Server started' "$work/kafka.log" && break
    kill -0 "$broker_pid" 2>/dev/null || break
    sleep 0.1
done
grep -q 'Kafka Server started' "$work/kafka.log" || die "Kafka 4.4 starts" "$work/kafka.log"
bootstrap="127.0.0.1:$port"
run_case "Kafka 4.4 (UTF-8)" kafka-run sbs-utf8 utf8
kafka_total=$total kafka_twice=$twice kafka_fragments=$fragments
stop_pid "$broker_pid" 30
broker_pid=""

echo "== side by side ($N + $M = $((N + M)) UTF-8 lines)"
echo "  Sluice:    $sluice_twice lines sent twice, $sluice_fragments fragments, $sluice_total records"
echo "  Kafka 4.4: $kafka_twice lines sent twice, $kafka_fragments fragments, $kafka_total records"
echo "  control (ASCII, Sluice): $ascii_twice lines sent twice, $ascii_total records"
if [ "$sluice_total/$sluice_twice/$sluice_fragments" != "$kafka_total/$kafka_twice/$kafka_fragments" ]; then
    echo "== DIFFERENT: the brokers disagree, so this is not (only) the client's habit"
    exit 1
fi
if [ "$ascii_twice" -ne 0 ] || [ "$ascii_total" -ne $((N + M)) ]; then
    echo "== the ASCII control is not exact: something besides the UTF-8 habit"
    exit 1
fi
echo "== same on both brokers: the duplicates are the client's"
