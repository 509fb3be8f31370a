#!/usr/bin/env bash
# Runs Kafka Connect 4.4.0 (connect-runtime from Maven Central, run as plain classes) against a
# sluice broker, with the FileStream source and sink connectors: lines go file -> topic -> file.
#
#   compat-tests/connect/run.sh
#
# standalone: ConnectStandalone with a FileStreamSource and a FileStreamSink; the sink file is
#   the source file exactly; Connect is stopped, more lines are appended, Connect starts again
#   and the sink gets each new line once (the source resumes at the offset it stored, the sink's
#   group at its committed offset).
# distributed: ConnectDistributed creates its three internal topics (configs, offsets, status:
#   compacted, as describe configs shows); the connectors are created through the REST API; the
#   same file check, across a restart of the worker (connector configs, source offsets and
#   statuses are read back from those topics); the connectors are deleted.
#
# Writes its client matrix rows to target/test-logs/matrix-connect.tsv (see compat-tests/matrix.sh).
# Env: SLUICE_BIN (default <repo>/target/release/sluice), KEEP_TMP=1 keeps the temp dir (broker
# data, worker and tool logs). Prints PASS:/FAIL: lines and "connect: N passed, M failed".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
SLUICE_BIN="${SLUICE_BIN:-$repo/target/release/sluice}"
case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
client="Kafka Connect 4.4.0"
matrix_dir="${SLUICE_MATRIX_DIR:-$repo/target/test-logs}"
mkdir -p "$matrix_dir"
matrix="$matrix_dir/matrix-connect.tsv"
: >"$matrix"

passed=0 failed=0 broker_pid="" worker_pid="" tmp=""
declare -A scenario_failed=()

# A scenario's cell: pass unless one of its checks failed.
row() { printf '%s\t%s\t%s\t%s\n' "$client" "$1" "$2" "$3" >>"$matrix"; }
pass() { echo "PASS: $2"; passed=$((passed + 1)); }
fail() { # scenario, what, files that explain it...
    echo "FAIL: $2"
    failed=$((failed + 1))
    scenario_failed[$1]=1
    shift 2
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "  --- $f (last 30 lines) ---"
        tail -n 30 "$f" | sed 's/^/  | /'
    done
}
check() { # scenario, what, command...: pass or fail by the command's exit code
    local s=$1 what=$2
    shift 2
    if "$@"; then pass "$s" "$what"; else fail "$s" "$what" "$tmp/worker.log" "$tmp/tool.out" "$tmp/tool.err"; fi
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS.
. "$here/../cli/stop_pid.sh"
cleanup() {
    stop_pid "$worker_pid" 30
    stop_pid "$broker_pid" 20
    if [ -n "$tmp" ] && [ -d "$tmp" ]; then
        if [ -n "${KEEP_TMP:-}" ]; then echo "note: kept $tmp" >&2; else rm -rf "$tmp"; fi
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The scenarios Connect has no cell of its own for: it is a framework on kafka-clients 4.4.0,
# whose producer, consumer, groups, transactions and admin the java suite covers.
framework="Kafka Connect runs on kafka-clients 4.4.0 (the java suite); its own scenarios are connect-standalone and connect-distributed"
for s in produce-consume-codecs idempotent group-of-three transactions admin sasl-tls leader-kill; do
    row "$s" n/a "$framework"
done
finish() {
    local s
    for s in connect-standalone connect-distributed; do
        if [ -n "${scenario_failed[$s]:-}" ]; then
            row "$s" fail "a check failed: see the connect suite's log"
        elif [ -n "${scenario_ran[$s]:-}" ]; then
            row "$s" pass "${scenario_note[$s]}"
        fi
    done
    echo "connect: ${passed} passed, ${failed} failed"
    [ "$failed" -eq 0 ]
    exit $?
}
declare -A scenario_ran=() scenario_note=(
    [connect-standalone]="FileStreamSource -> topic -> FileStreamSink, exact; source and sink offsets survive a restart"
    [connect-distributed]="3 compacted internal topics; connectors via REST; exact file -> topic -> file across a worker restart"
)

# ------------------------------------------------------------------ jars, broker
if ! "$here/../cli/fetch-lib.sh" "$here" || ! "$here/../cli/fetch-lib.sh" "$here/plugin"; then
    fail connect-standalone "fetch Kafka Connect 4.4.0 and connect-file from Maven Central"
    finish
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-connect.XXXXXX")"
"$SLUICE_BIN" serve --listen 127.0.0.1:0 --data-dir "$tmp/data" --set group.initial.rebalance.delay.ms=0 \
    >"$tmp/sluice.log" 2>&1 &
broker_pid=$!
bootstrap=""
for _ in $(seq 1 200); do
    bootstrap="$(sed -n 's/.*serving Kafka on \([0-9.]*:[0-9]*\).*/\1/p' "$tmp/sluice.log" | head -1)"
    [ -n "$bootstrap" ] || ! kill -0 "$broker_pid" 2>/dev/null && break
    sleep 0.1
done
if [ -z "$bootstrap" ]; then
    fail connect-standalone "sluice serves" "$tmp/sluice.log"
    finish
fi
echo "sluice pid $broker_pid on $bootstrap (log: $tmp/sluice.log)"

# One of Kafka's tools (kafka-tools 4.4.0, in lib/): stdout to $tmp/tool.out, stderr to tool.err.
tool() {
    local cls=$1
    shift
    timeout --kill-after=10 60 java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err \
        -cp "$here/lib/*" "org.apache.kafka.tools.$cls" --bootstrap-server "$bootstrap" "$@" \
        >"$tmp/tool.out" 2>"$tmp/tool.err"
}

# Starts a worker (ConnectStandalone or ConnectDistributed with its arguments), its log appended
# to $tmp/worker.log, and waits until its REST server listens; rest is that URL.
start_worker() {
    local cls=$1 log="$tmp/worker.log"
    shift
    echo "===== $cls $* ($(date -u +%T))" >>"$log"
    local from
    from=$(wc -l <"$log")
    java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.logFile=System.out \
        -cp "$here/lib/*" "org.apache.kafka.connect.cli.$cls" "$@" >>"$log" 2>&1 &
    worker_pid=$!
    rest=""
    for _ in $(seq 1 600); do
        rest="$(tail -n +"$from" "$log" | sed -n 's/.*REST server listening at \(http:[^ ,]*\/\).*/\1/p' | head -1)"
        [ -n "$rest" ] || ! kill -0 "$worker_pid" 2>/dev/null && break
        sleep 0.1
    done
    [ -n "$rest" ]
}

stop_worker() {
    stop_pid "$worker_pid" 30
    worker_pid=""
}

# The worker settings both modes share (worker-props.sh).
. "$here/worker-props.sh"
common_worker_props() { connect_worker_props "$bootstrap"; }

# Appends lines FROM..TO to FILE: ASCII with spaces and a tab. ASCII because FileStreamSource
# (connect-file 4.3.1) counts its stored position in characters but skips bytes when it resumes:
# after a restart, a file with multi-byte UTF-8 characters is re-read from too early and its
# lines are sent again, whatever the broker (in standalone mode the offset is a local file;
# client-bugs/side-by-side.sh shows it on sluice and on Kafka 4.4).
append_lines() {
    local i
    for i in $(seq "$2" "$3"); do printf 'line %04d\tsome text, %d\n' "$i" "$i"; done >>"$1"
}

# Waits (up to 60 s) until the sink file is the source file, byte for byte.
same_file() {
    for _ in $(seq 1 600); do
        cmp -s "$1" "$2" && return 0
        sleep 0.1
    done
    echo "sink $2 ($(wc -l <"$2" 2>/dev/null) lines) is not source $1 ($(wc -l <"$1") lines)" >"$tmp/tool.err"
    diff "$1" "$2" | head -20 >>"$tmp/tool.err"
    return 1
}

# The topic's records (partition 0's end offset) equal the file's lines: each line sent once.
topic_holds_lines() {
    local want
    want=$(wc -l <"$2")
    tool GetOffsetShell --topic "$1" --time -1 && grep -qx "$1:0:$want" "$tmp/tool.out"
}

# The sink's consumer group (connect-NAME) commits the topic's end, within 30 s.
sink_committed() {
    local want
    want=$(wc -l <"$3")
    for _ in $(seq 1 30); do
        tool consumer.group.ConsumerGroupCommand --describe --group "connect-$1" \
            && awk -v t="$2" -v w="$want" '$2 == t && $3 == 0 && $4 == w {ok = 1} END {exit !ok}' "$tmp/tool.out" \
            && return 0
        sleep 1
    done
    return 1
}

create_topic() { tool TopicCommand --create --topic "$1" --partitions 1 --replication-factor 1; }

# ------------------------------------------------------------------ standalone
s=connect-standalone
scenario_ran[$s]=1
in="$tmp/standalone-in.txt" out="$tmp/standalone-out.txt" topic=connect-standalone-lines
: >"$in"
append_lines "$in" 1 200
common_worker_props >"$tmp/standalone.properties"
echo "offset.storage.file.filename=$tmp/standalone.offsets" >>"$tmp/standalone.properties"
cat >"$tmp/source.properties" <<EOF
name=file-source
connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector
tasks.max=1
file=$in
topic=$topic
EOF
cat >"$tmp/sink.properties" <<EOF
name=file-sink
connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector
tasks.max=1
file=$out
topics=$topic
EOF
standalone() { start_worker ConnectStandalone "$tmp/standalone.properties" "$tmp/source.properties" "$tmp/sink.properties"; }
check $s "create topic $topic" create_topic "$topic"
if standalone; then
    pass $s "ConnectStandalone with FileStreamSource and FileStreamSink starts (REST at $rest)"
    check $s "200 lines file -> topic -> file, byte for byte" same_file "$in" "$out"
    check $s "$topic holds 200 records" topic_holds_lines "$topic" "$in"
    stop_worker
    append_lines "$in" 201 300
    if standalone; then
        check $s "after a restart and 100 more lines, the sink file is the source file (each line once)" same_file "$in" "$out"
        check $s "$topic holds 300 records: the source resumed at its stored offset" topic_holds_lines "$topic" "$in"
        check $s "the sink's group connect-file-sink committed offset 300" sink_committed file-sink "$topic" "$in"
    else
        fail $s "ConnectStandalone starts again" "$tmp/worker.log"
    fi
    stop_worker
else
    fail $s "ConnectStandalone starts" "$tmp/worker.log"
fi

# ------------------------------------------------------------------ distributed
s=connect-distributed
scenario_ran[$s]=1
in="$tmp/distributed-in.txt" out="$tmp/distributed-out.txt" topic=connect-distributed-lines
: >"$in"
append_lines "$in" 1 200
common_worker_props >"$tmp/distributed.properties"
# Replication factor -1: the broker's default (CreateTopics v4+), as on a one-broker cluster.
cat >>"$tmp/distributed.properties" <<EOF
group.id=sluice-connect
config.storage.topic=connect-configs
offset.storage.topic=connect-offsets
status.storage.topic=connect-status
config.storage.replication.factor=-1
offset.storage.replication.factor=-1
status.storage.replication.factor=-1
EOF
distributed() { start_worker ConnectDistributed "$tmp/distributed.properties"; }

# curl's body to $tmp/tool.out; succeeds when the HTTP status is the one expected.
http() { # expected status, method, path, [json body]
    local code
    code=$(curl -s -o "$tmp/tool.out" -w '%{http_code}' -X "$2" -H 'Content-Type: application/json' \
        ${4:+--data "$4"} "${rest}${3#/}")
    [ "$code" = "$1" ] || { echo "$2 $3: HTTP $code, want $1: $(cat "$tmp/tool.out")" >"$tmp/tool.err"; return 1; }
}
# The worker creates its internal topics once its herder starts, which may be after its REST
# server listens (the config topic comes last): a topic is waited for, up to 30 s.
compacted() { # topic, partitions
    for _ in $(seq 1 30); do
        tool TopicCommand --describe --topic "$1" && grep -q "PartitionCount: $2\b" "$tmp/tool.out" && break
        sleep 1
    done
    grep -q "PartitionCount: $2\b" "$tmp/tool.out" \
        && tool ConfigCommand --describe --entity-type topics --entity-name "$1" \
        && grep -q "cleanup.policy=compact" "$tmp/tool.out"
}
running() { # connector: it and its one task RUNNING, within 60 s
    for _ in $(seq 1 120); do
        http 200 GET "connectors/$1/status" 2>/dev/null \
            && jq -e '.connector.state == "RUNNING" and (.tasks | length) == 1 and .tasks[0].state == "RUNNING"' \
                "$tmp/tool.out" >/dev/null && return 0
        sleep 0.5
    done
    return 1
}
both_running() { running dist-source && running dist-sink; }
delete_both() { http 204 DELETE connectors/dist-source && http 204 DELETE connectors/dist-sink; }
gone() { # GET /connectors is [], within 30 s
    for _ in $(seq 1 60); do
        http 200 GET connectors && [ "$(cat "$tmp/tool.out")" = "[]" ] && return 0
        sleep 0.5
    done
    return 1
}
connector_json() { # name, class, key=value...
    local name=$1 cls=$2
    shift 2
    jq -cn --arg name "$name" --arg cls "$cls" --args '{name: $name, config: ({"connector.class": $cls,
        "tasks.max": "1"} + ($ARGS.positional | map(split("=") | {(.[0]): (.[1:] | join("="))}) | add))}' "$@"
}

check $s "create topic $topic" create_topic "$topic"
if distributed; then
    pass $s "ConnectDistributed starts (REST at $rest)"
    check $s "config topic connect-configs: cleanup.policy=compact, 1 partition" compacted connect-configs 1
    check $s "offset topic connect-offsets: cleanup.policy=compact, 25 partitions" compacted connect-offsets 25
    check $s "status topic connect-status: cleanup.policy=compact, 5 partitions" compacted connect-status 5
    check $s "POST /connectors dist-source (201)" http 201 POST connectors \
        "$(connector_json dist-source org.apache.kafka.connect.file.FileStreamSourceConnector "file=$in" "topic=$topic")"
    check $s "POST /connectors dist-sink (201)" http 201 POST connectors \
        "$(connector_json dist-sink org.apache.kafka.connect.file.FileStreamSinkConnector "file=$out" "topics=$topic")"
    check $s "dist-source and its task RUNNING" running dist-source
    check $s "dist-sink and its task RUNNING" running dist-sink
    check $s "200 lines file -> topic -> file, byte for byte" same_file "$in" "$out"
    stop_worker
    append_lines "$in" 201 300
    if distributed; then
        check $s "after a restart, the connectors come back from connect-configs, RUNNING" both_running
        check $s "after the restart and 100 more lines, the sink file is the source file (each line once)" same_file "$in" "$out"
        check $s "$topic holds 300 records: the source resumed at the offset in connect-offsets" topic_holds_lines "$topic" "$in"
        check $s "the sink's group connect-dist-sink committed offset 300" sink_committed dist-sink "$topic" "$in"
        check $s "DELETE /connectors/dist-source and dist-sink (204)" delete_both
        check $s "GET /connectors is [] after the deletes" gone
    else
        fail $s "ConnectDistributed starts again" "$tmp/worker.log"
    fi
    stop_worker
else
    fail $s "ConnectDistributed starts" "$tmp/worker.log"
fi

if kill -0 "$broker_pid" 2>/dev/null; then
    pass $s "sluice still running after the workers"
else
    fail $s "sluice still running after the workers" "$tmp/sluice.log"
fi
finish
