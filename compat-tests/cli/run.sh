#!/usr/bin/env bash
# Drives a sluice broker with Apache Kafka's own command-line tools (kafka-tools 4.4.0 from Maven
# Central, run as plain classes: `java -cp 'lib/*' org.apache.kafka.tools.TopicCommand ...`).
#
#   compat-tests/cli/run.sh
#
# Env:
#   SLUICE_BIN           broker binary (default: <repo>/target/release/sluice)
#   SLUICE_START_TIMEOUT seconds to wait for the broker's port (default 10)
#   TOOL_TIMEOUT         seconds any one tool may run (default 60)
#   KEEP_TMP=1           keep the temp dir (broker data + log + tool output) for inspection
#
# kafka-features describe/upgrade/downgrade (features.sh), kafka-client-metrics
# (client_metrics.sh), kafka-log-dirs (log_dirs.sh) and kafka-configs client quotas (clients, users, defaults) run against
# the same broker. Then, against a SASL_SSL broker with ACLs (security.sh), kafka-configs
# SCRAM users and kafka-acls.
#
# Prints PASS:/FAIL: lines and finally "cli: N passed, M failed"; exits 1 if anything failed.
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
tmp=""

pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL: $1"
    failed=$((failed + 1))
    # Optional: files whose contents explain the failure.
    shift
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "  --- $(basename "$f") ---"
        head -n 30 "$f" | sed 's/^/  | /'
    done
}
finish() {
    echo "cli: ${passed} passed, ${failed} failed"
    [ "$failed" -eq 0 ]
    exit $?
}

stop_broker() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 1 200); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "note: sluice (pid $pid) ignored SIGTERM for 20 s; sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
    fi
    pid=""
}
cleanup() {
    stop_broker
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
# Fetched once into ./lib (kafka-tools + its runtime dependencies); refetched when pom.xml changes.
if ! "$here/fetch-lib.sh"; then
    fail "resolve org.apache.kafka:kafka-tools:$kafka_version with mvn"
    finish
fi

list_jar() {
    if command -v unzip >/dev/null 2>&1; then unzip -Z1 "$1"; else jar tf "$1"; fi
}
jar_listing="$(list_jar "$lib/kafka-tools-$kafka_version.jar")"
for cls in org/apache/kafka/tools/TopicCommand.class \
           org/apache/kafka/tools/ConsoleProducer.class \
           org/apache/kafka/tools/consumer/ConsoleConsumer.class \
           org/apache/kafka/tools/GetOffsetShell.class; do
    if ! grep -qx "$cls" <<<"$jar_listing"; then
        fail "kafka-tools-$kafka_version.jar has no $cls (the tests need updating for this version)"
        finish
    fi
done

# Runs one Kafka tool class with a time limit. stdout/stderr go where the caller redirects them.
tool() {
    local cls="$1"
    shift
    timeout --kill-after=10 "$tool_timeout" \
        java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
            -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err \
            -cp "$lib/*" "$cls" "$@"
}
TOPIC_CMD=org.apache.kafka.tools.TopicCommand
PRODUCER=org.apache.kafka.tools.ConsoleProducer
CONSUMER=org.apache.kafka.tools.consumer.ConsoleConsumer
OFFSETS=org.apache.kafka.tools.GetOffsetShell

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

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli-compat.XXXXXX")"
port="$(free_port)"
bootstrap="127.0.0.1:$port"
log="$tmp/sluice.log"
"$SLUICE_BIN" serve --listen "$bootstrap" --advertise "$bootstrap" --data-dir "$tmp/data" --node-id 1 \
    </dev/null >"$log" 2>&1 &
pid=$!

ready=0
for _ in $(seq 1 $((start_timeout * 10))); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if port_open "$port"; then ready=1; break; fi
    sleep 0.1
done
if [ "$ready" -ne 1 ]; then
    if kill -0 "$pid" 2>/dev/null; then
        fail "sluice did not accept connections on $bootstrap within ${start_timeout}s" "$log"
    else
        wait "$pid"; rc=$?
        pid=""
        fail "sluice exited (code $rc) before accepting connections on $bootstrap" "$log"
    fi
    finish
fi
echo "sluice pid $pid listening on $bootstrap (log: $log)"

out="$tmp/out"
err="$tmp/err"
topic="cli-compat"

# ------------------------------------------------------------------ TopicCommand
if tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --create --topic "$topic" --partitions 2 \
        --replication-factor 1 --config retention.ms=3600000 >"$out" 2>"$err" \
    && grep -qx "Created topic $topic." "$out"; then
    pass "TopicCommand --create $topic (2 partitions)"
else
    fail "TopicCommand --create $topic (2 partitions)" "$out" "$err"
fi

if tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --list >"$out" 2>"$err" && grep -qx "$topic" "$out"; then
    pass "TopicCommand --list shows $topic"
else
    fail "TopicCommand --list shows $topic" "$out" "$err"
fi

# Expected shape:
#   Topic: cli-compat<TAB>TopicId: ...<TAB>PartitionCount: 2<TAB>ReplicationFactor: 1<TAB>Configs: ...retention.ms=3600000...
#   <TAB>Topic: cli-compat<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1<TAB>Isr: 1 ...
describe_ok() {
    local want_partitions="$1"
    tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --describe --topic "$topic" >"$out" 2>"$err" || return 1
    local header
    header="$(grep -E "^Topic: $topic[[:space:]]" "$out")" || return 1
    grep -qE "(^|[[:space:]])PartitionCount: $want_partitions([[:space:]]|$)" <<<"$header" || return 1
    grep -qE "(^|[[:space:]])ReplicationFactor: 1([[:space:]]|$)" <<<"$header" || return 1
    grep -qE "Configs: .*retention\.ms=3600000" <<<"$header" || return 1
    local p
    for p in $(seq 0 $((want_partitions - 1))); do
        grep -qE "Topic: $topic[[:space:]]+Partition: $p[[:space:]]+Leader: 1[[:space:]]+Replicas: 1[[:space:]]+Isr: 1([[:space:]]|$)" "$out" \
            || return 1
    done
    [ "$(grep -cE "Topic: $topic[[:space:]]+Partition: " "$out")" -eq "$want_partitions" ]
}
if describe_ok 2; then
    pass "TopicCommand --describe: PartitionCount 2, leader 1, retention.ms=3600000"
else
    fail "TopicCommand --describe: PartitionCount 2, leader 1, retention.ms=3600000" "$out" "$err"
fi

# ------------------------------------------------------------------ ConsoleProducer
# Unkeyed lines: the client's sticky partitioner puts them on partition 0 or 1 (usually all on one),
# so GetOffsetShell says where they went and each partition is read back on its own below.
sent="$tmp/sent"
for i in $(seq 1 10); do echo "cli-line-$i $(date +%s%N)"; done >"$sent"
# (--reader-property is the 4.x name of the deprecated --property option.)
if tool "$PRODUCER" --bootstrap-server "$bootstrap" --topic "$topic" --reader-property parse.key=false \
        <"$sent" >"$out" 2>"$err" \
    && ! grep -qE "ERROR|Exception" "$out" "$err"; then
    pass "ConsoleProducer sent 10 lines without reporting an error"
else
    fail "ConsoleProducer sent 10 lines without reporting an error" "$out" "$err"
fi

# ------------------------------------------------------------------ GetOffsetShell (ListOffsets)
declare -A latest=()
offsets_known=0
if tool "$OFFSETS" --bootstrap-server "$bootstrap" --topic "$topic" --time -1 >"$out" 2>"$err"; then
    while IFS=: read -r t p o; do
        [ "$t" = "$topic" ] && latest[$p]="$o"
    done <"$out"
fi
if [ "${#latest[@]}" -eq 2 ] && [[ "${latest[0]:-}" =~ ^[0-9]+$ ]] && [[ "${latest[1]:-}" =~ ^[0-9]+$ ]] \
    && [ $((latest[0] + latest[1])) -eq 10 ]; then
    offsets_known=1
    pass "GetOffsetShell --time -1: partition 0 -> ${latest[0]}, partition 1 -> ${latest[1]} (sum 10)"
else
    fail "GetOffsetShell --time -1: two partitions whose latest offsets sum to 10" "$out" "$err"
fi

if tool "$OFFSETS" --bootstrap-server "$bootstrap" --topic "$topic" --time -2 >"$out" 2>"$err" \
    && [ "$(grep -cxE "$topic:[01]:0" "$out")" -eq 2 ] && [ "$(grep -c . "$out")" -eq 2 ]; then
    pass "GetOffsetShell --time -2: earliest offset 0 on both partitions"
else
    fail "GetOffsetShell --time -2: earliest offset 0 on both partitions" "$out" "$err"
fi

# ------------------------------------------------------------------ ConsoleConsumer (assign, no group)
# --partition makes the console consumer use assign(): it never joins a consumer group (the tool
# does put a random group.id in its config, with auto-commit off, but assign() does not use it).
consumed_all="$tmp/consumed-all"
: >"$consumed_all"
for p in 0 1; do
    got="$tmp/consumed-$p"
    args=(--bootstrap-server "$bootstrap" --topic "$topic" --partition "$p" --offset earliest
          --formatter-property print.partition=true --formatter-property print.offset=true)
    if [ "$offsets_known" -eq 1 ] && [ "${latest[$p]}" -gt 0 ]; then
        n="${latest[$p]}"
        args+=(--max-messages "$n" --timeout-ms 20000)
        what="ConsoleConsumer --partition $p --offset earliest --max-messages $n"
    elif [ "$offsets_known" -eq 1 ]; then
        n=0
        args+=(--timeout-ms 3000)
        what="ConsoleConsumer --partition $p --offset earliest on an empty partition"
    else
        n=""   # ListOffsets gave nothing usable: read whatever is there until 5 s pass without data
        args+=(--timeout-ms 5000)
        what="ConsoleConsumer --partition $p --offset earliest (count unknown)"
    fi
    if ! tool "$CONSUMER" "${args[@]}" >"$got" 2>"$err"; then
        fail "$what (tool exited non-zero)" "$got" "$err"
        continue
    fi
    count="$(grep -c '' "$got")"
    [ -z "$n" ] && n="$count"
    # Lines look like: Partition:P<TAB>Offset:O<TAB>value
    expected_prefixes=""
    if [ "$n" -gt 0 ]; then
        expected_prefixes="$(for o in $(seq 0 $((n - 1))); do printf 'Partition:%s\tOffset:%s\n' "$p" "$o"; done)"
    fi
    actual_prefixes="$(cut -f1,2 "$got")"
    if [ "$n" -gt 0 ]; then expect="$n records at offsets 0..$((n - 1))"; else expect="no records"; fi
    if [ "$count" -eq "$n" ] && [ "$actual_prefixes" = "$expected_prefixes" ]; then
        pass "$what: $expect"
    else
        fail "$what: expected $expect, got $count record(s)" "$got" "$err"
    fi
    cut -f3- "$got" >"$tmp/values-$p"
    cat "$tmp/values-$p" >>"$consumed_all"
    # Within a partition the lines must keep the order they were sent in.
    if [ "$count" -gt 0 ]; then
        if grep -Fxf "$tmp/values-$p" "$sent" | cmp -s - "$tmp/values-$p"; then
            pass "partition $p keeps the send order"
        else
            fail "partition $p keeps the send order" "$tmp/values-$p" "$sent"
        fi
    fi
done

if [ "$(sort "$consumed_all")" = "$(sort "$sent")" ]; then
    pass "consumed lines (both partitions) equal the 10 sent lines"
else
    sort "$consumed_all" >"$tmp/consumed-sorted"; sort "$sent" >"$tmp/sent-sorted"
    diff "$tmp/sent-sorted" "$tmp/consumed-sorted" >"$tmp/diff"
    fail "consumed lines (both partitions) equal the 10 sent lines" "$tmp/diff"
fi

# ------------------------------------------------------------------ LogDirsCommand (log_dirs.sh)
. "$here/log_dirs.sh"

# ------------------------------------------------------------------ TopicCommand --alter / --delete
if tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --alter --topic "$topic" --partitions 3 >"$out" 2>"$err" \
    && describe_ok 3; then
    pass "TopicCommand --alter --partitions 3, then --describe shows PartitionCount 3"
else
    fail "TopicCommand --alter --partitions 3, then --describe shows PartitionCount 3" "$out" "$err"
fi

if tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --delete --topic "$topic" >"$out" 2>"$err"; then
    gone=0
    for _ in $(seq 1 20); do
        tool "$TOPIC_CMD" --bootstrap-server "$bootstrap" --list >"$out" 2>"$err" || break
        if ! grep -qx "$topic" "$out"; then gone=1; break; fi
        sleep 0.5
    done
    if [ "$gone" -eq 1 ]; then
        pass "TopicCommand --delete, then --list no longer shows $topic"
    else
        fail "TopicCommand --delete, then --list no longer shows $topic" "$out" "$err"
    fi
else
    fail "TopicCommand --delete $topic" "$out" "$err"
fi

# ------------------------------------------------------------------ ConfigCommand: SCRAM users
# Kafka 4.4's controller (ScramControlManager) takes one change per user and request: both
# mechanisms in one --add-config is DUPLICATE_RESOURCE there, and here; one per run works.
CONFIGS=org.apache.kafka.tools.ConfigCommand
if ! tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name alice \
        --add-config 'SCRAM-SHA-512=[password=secret],SCRAM-SHA-256=[iterations=8192,password=alice-secret]' >"$out" 2>"$err" \
    && grep -q "DuplicateResourceException: A user credential cannot be altered twice in the same request" "$err"; then
    pass "ConfigCommand --add-config with two SCRAM mechanisms for one user: DUPLICATE_RESOURCE, as Kafka's controller"
else
    fail "ConfigCommand --add-config with two SCRAM mechanisms for one user: DUPLICATE_RESOURCE, as Kafka's controller" "$out" "$err"
fi

if tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name alice \
        --add-config 'SCRAM-SHA-512=[password=secret]' >"$out" 2>"$err" \
    && grep -q "Completed updating config for user alice." "$out" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name alice \
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' >"$out" 2>"$err" \
    && grep -q "Completed updating config for user alice." "$out"; then
    pass "ConfigCommand --alter --add-config SCRAM-SHA-512, then SCRAM-SHA-256 (8192 iterations), for user alice"
else
    fail "ConfigCommand --alter --add-config SCRAM-SHA-512, then SCRAM-SHA-256 (8192 iterations), for user alice" "$out" "$err"
fi

scram_line() { grep -E "^SCRAM credential configs for user-principal 'alice' are " "$out"; }
if tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type users >"$out" 2>"$err" \
    && scram_line | grep -q "SCRAM-SHA-256=iterations=8192" && scram_line | grep -q "SCRAM-SHA-512=iterations=4096"; then
    pass "ConfigCommand --describe --entity-type users shows alice's two SCRAM credentials"
else
    fail "ConfigCommand --describe --entity-type users shows alice's two SCRAM credentials" "$out" "$err"
fi

if tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name alice \
        --delete-config 'SCRAM-SHA-512' >"$out" 2>"$err" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type users --entity-name alice >"$out" 2>"$err" \
    && scram_line | grep -q "SCRAM-SHA-256=iterations=8192" && ! scram_line | grep -q "SCRAM-SHA-512"; then
    pass "ConfigCommand --delete-config SCRAM-SHA-512, then alice has SCRAM-SHA-256 only"
else
    fail "ConfigCommand --delete-config SCRAM-SHA-512, then alice has SCRAM-SHA-256 only" "$out" "$err"
fi

# The tool itself refuses fewer than 4096 iterations; more than 16384 is the broker's to refuse.
if ! tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name bob \
        --add-config 'SCRAM-SHA-256=[iterations=20000,password=bob]' >"$out" 2>"$err" \
    && grep -q "UnacceptableCredentialException: Too many iterations" "$err"; then
    pass "ConfigCommand: 20000 SCRAM iterations refused with UNACCEPTABLE_CREDENTIAL"
else
    fail "ConfigCommand: 20000 SCRAM iterations refused with UNACCEPTABLE_CREDENTIAL" "$out" "$err"
fi

# ------------------------------------------------------------------ FeatureCommand (features.sh)
. "$here/features.sh"

# ------------------------------------------------------------------ ClientMetricsCommand (client_metrics.sh)
. "$here/client_metrics.sh"
# ------------------------------------------------------------------ ConfigCommand: client quotas
# Client quotas (AlterClientQuotas, DescribeClientQuotas): clients, users, both, defaults.
if tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type clients --entity-name cli-quota-client \
        --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152' >"$out" 2>"$err" \
    && grep -q "Completed updating config for client cli-quota-client." "$out" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type clients --entity-name cli-quota-client >"$out" 2>"$err" \
    && grep "^Quota configs for client-id 'cli-quota-client' are " "$out" | grep -q "producer_byte_rate=1048576.0" \
    && grep "^Quota configs for client-id 'cli-quota-client' are " "$out" | grep -q "consumer_byte_rate=2097152.0"; then
    pass "ConfigCommand --alter --add-config producer_byte_rate,consumer_byte_rate --entity-type clients, then --describe"
else
    fail "ConfigCommand --alter --add-config producer_byte_rate,consumer_byte_rate --entity-type clients, then --describe" "$out" "$err"
fi

if tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name carol \
        --add-config 'producer_byte_rate=4096' >"$out" 2>"$err" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-default \
        --entity-type clients --entity-default --add-config 'request_percentage=50' >"$out" 2>"$err" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type users >"$out" 2>"$err" \
    && grep -q "^Quota configs for user-principal 'carol' are producer_byte_rate=4096.0" "$out" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type users --entity-default \
        --entity-type clients --entity-default >"$out" 2>"$err" \
    && grep -q "^Quota configs for the default user-principal, the default client-id are request_percentage=50.0" "$out"; then
    pass "ConfigCommand quotas for --entity-type users, and for the default user with the default client-id, then --describe"
else
    fail "ConfigCommand quotas for --entity-type users, and for the default user with the default client-id, then --describe" "$out" "$err"
fi

if tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type users --entity-name carol \
        --delete-config 'producer_byte_rate' >"$out" 2>"$err" \
    && tool "$CONFIGS" --bootstrap-server "$bootstrap" --describe --entity-type users --entity-name carol >"$out" 2>"$err" \
    && ! grep -q "producer_byte_rate" "$out"; then
    pass "ConfigCommand --delete-config producer_byte_rate removes carol's quota"
else
    fail "ConfigCommand --delete-config producer_byte_rate removes carol's quota" "$out" "$err"
fi

if ! tool "$CONFIGS" --bootstrap-server "$bootstrap" --alter --entity-type ips --entity-name 10.0.0.1 \
        --add-config 'producer_byte_rate=100' >"$out" 2>"$err" \
    && grep -qi "producer_byte_rate" "$err"; then
    pass "ConfigCommand refuses producer_byte_rate on an ip entity"
else
    fail "ConfigCommand refuses producer_byte_rate on an ip entity" "$out" "$err"
fi

# ------------------------------------------------------------------ broker still healthy
if kill -0 "$pid" 2>/dev/null; then
    pass "sluice still running after the tool runs"
else
    wait "$pid"; rc=$?
    pid=""
    fail "sluice still running after the tool runs (it exited with code $rc)" "$log"
fi

# ------------------------------------------------------------------ SASL_SSL: SCRAM users and ACLs
# (security.sh: a second broker, with TLS, SASL and StandardAuthorizer)
. "$here/security.sh"

# ------------------------------------------------------------------ DelegationTokenCommand
# Tokens need an authenticated connection: a second broker with one SASL_PLAINTEXT listener
# (admin by PLAIN, alice by SCRAM-SHA-512) and delegation.token.secret.key set. The first
# broker stops here: its checks are done.
stop_broker
TOKENS=org.apache.kafka.tools.DelegationTokenCommand
sasl_port="$(free_port)"
sasl_bootstrap="127.0.0.1:$sasl_port"
sasl_log="$tmp/sluice-sasl.log"
"$SLUICE_BIN" serve --data-dir "$tmp/data-sasl" --node-id 1 \
    --set "listeners=SASL_PLAINTEXT://$sasl_bootstrap" --set "advertised.listeners=SASL_PLAINTEXT://$sasl_bootstrap" \
    --set security.inter.broker.protocol=SASL_PLAINTEXT \
    --set sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512 \
    --set 'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";' \
    --set delegation.token.secret.key=cli-token-secret \
    </dev/null >"$sasl_log" 2>&1 &
pid=$!
ready=0
for _ in $(seq 1 $((start_timeout * 10))); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if port_open "$sasl_port"; then ready=1; break; fi
    sleep 0.1
done
admin_conf="$tmp/admin.properties"
alice_conf="$tmp/alice.properties"
printf '%s\n' 'security.protocol=SASL_PLAINTEXT' 'sasl.mechanism=PLAIN' \
    'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";' >"$admin_conf"
printf '%s\n' 'security.protocol=SASL_PLAINTEXT' 'sasl.mechanism=SCRAM-SHA-512' \
    'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";' >"$alice_conf"
token_id=""
token_hmac=""
if [ "$ready" -ne 1 ]; then
    fail "SASL broker for DelegationTokenCommand did not accept connections on $sasl_bootstrap" "$sasl_log"
elif tool "$CONFIGS" --bootstrap-server "$sasl_bootstrap" --command-config "$admin_conf" --alter --entity-type users \
        --entity-name alice --add-config 'SCRAM-SHA-512=[password=alice-secret]' >"$out" 2>"$err" \
    && tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$alice_conf" --create \
        --max-life-time-period -1 --renewer-principal User:bob >"$out" 2>"$err" \
    && token_id="$(sed -n 's/^Created delegation token with tokenId : //p' "$out")" \
    && [ -n "$token_id" ]; then
    # The table row: TOKENID HMAC OWNER REQUESTER RENEWERS ISSUEDATE EXPIRYDATE MAXDATE.
    row="$(awk -v id="$token_id" '$1 == id' "$out")"
    token_hmac="$(awk '{print $2}' <<<"$row")"
    if [ "$(awk '{print $3, $4}' <<<"$row")" = "User:alice User:alice" ] && grep -q "User:bob" <<<"$row" \
        && [ "$(printf '%s' "$token_hmac" | base64 -d 2>/dev/null | wc -c)" -eq 64 ]; then
        pass "DelegationTokenCommand --create --max-life-time-period -1 --renewer-principal User:bob (as alice, over SCRAM)"
    else
        fail "DelegationTokenCommand --create prints alice as owner and requester, bob as renewer, a 64-byte HMAC" "$out" "$err"
    fi
else
    fail "DelegationTokenCommand --create --max-life-time-period -1 --renewer-principal User:bob (as alice, over SCRAM)" "$out" "$err"
fi

if [ -n "$token_hmac" ] \
    && tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$alice_conf" --describe \
        --owner-principal User:alice >"$out" 2>"$err" \
    && grep -q "Total number of tokens : 1" "$out" && awk -v id="$token_id" '$1 == id' "$out" | grep -q -- "$token_hmac"; then
    pass "DelegationTokenCommand --describe --owner-principal User:alice lists the token with its HMAC"
else
    fail "DelegationTokenCommand --describe --owner-principal User:alice lists the token with its HMAC" "$out" "$err"
fi

if [ -n "$token_hmac" ] \
    && tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$alice_conf" --renew \
        --hmac "$token_hmac" --renew-time-period -1 >"$out" 2>"$err" \
    && grep -q "Completed renew operation. New expiry date : " "$out"; then
    pass "DelegationTokenCommand --renew --renew-time-period -1"
else
    fail "DelegationTokenCommand --renew --renew-time-period -1" "$out" "$err"
fi

# A connection that logged in with a token may not manage tokens.
token_conf="$tmp/token.properties"
printf '%s\n' 'security.protocol=SASL_PLAINTEXT' 'sasl.mechanism=SCRAM-SHA-512' \
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$token_id\" password=\"$token_hmac\" tokenauth=true;" >"$token_conf"
if [ -n "$token_hmac" ] \
    && ! tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$token_conf" --create \
        --max-life-time-period -1 >"$out" 2>"$err" \
    && grep -q "UnsupportedByAuthenticationException" "$out" "$err"; then
    pass "DelegationTokenCommand --create over a token-authenticated connection: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
else
    fail "DelegationTokenCommand --create over a token-authenticated connection: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED" "$out" "$err"
fi

if [ -n "$token_hmac" ] \
    && tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$alice_conf" --expire \
        --hmac "$token_hmac" --expiry-time-period -1 >"$out" 2>"$err" \
    && grep -q "Completed expire operation." "$out" \
    && tool "$TOKENS" --bootstrap-server "$sasl_bootstrap" --command-config "$alice_conf" --describe \
        --owner-principal User:alice >"$out" 2>"$err" \
    && grep -q "Total number of tokens : 0" "$out"; then
    pass "DelegationTokenCommand --expire --expiry-time-period -1, then --describe lists no token"
else
    fail "DelegationTokenCommand --expire --expiry-time-period -1, then --describe lists no token" "$out" "$err"
fi

finish
