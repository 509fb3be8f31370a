#!/usr/bin/env bash
# Runs retry-skips-answered-broker.js against a three-node `sluice dev-cluster` and then a
# three-node Apache Kafka 4.4 (KRaft, combined mode), with the same settings, so that the
# kafkajs bug it shows is seen to be the client's:
#
#   compat-tests/kafkajs/client-bugs/side-by-side.sh
#
# Kafka's jars come from Maven Central through bench/pom.xml into bench/.cache, as bench/run
# fetches them (KAFKA_LIB overrides the directory). SLUICE_BIN as for run.sh. Not part of the
# suite: it takes about two minutes, most of it the JVMs starting.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
SLUICE_BIN="${SLUICE_BIN:-$root/target/release/sluice}"
lib="${KAFKA_LIB:-$root/bench/.cache/kafka-4.4.0-lib}"
script="$here/retry-skips-answered-broker.js"
work="$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafkajs-sbs.XXXXXX")"
cluster_pids=()
stop() {
    for p in "${cluster_pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${cluster_pids[@]}"; do wait "$p" 2>/dev/null; done
    cluster_pids=()
}
trap 'stop; rm -rf "$work"' EXIT
# The same timing on both: a killed node is fenced after 3 s.
settings=(min.insync.replicas=2 broker.session.timeout.ms=3000 broker.heartbeat.interval.ms=500
    group.initial.rebalance.delay.ms=0)
base=$((20000 + RANDOM % 9000))

(cd "$here/.." && { [ -d node_modules/kafkajs ] || npm ci --prefer-offline --no-audit --no-fund >/dev/null; })

echo "== sluice dev-cluster"
sets=()
for s in "${settings[@]}"; do sets+=(--set "$s"); done
"$SLUICE_BIN" dev-cluster --base-port "$base" --data-dir "$work/sluice" "${sets[@]}" >"$work/sluice.out" 2>&1 &
cluster_pids=($!)
for _ in $(seq 100); do [ "$(grep -c '^node .* pid' "$work/sluice.out")" -eq 3 ] && break; sleep 0.2; done
pids="$(awk '/^node .* pid/{printf "%s%s=%s", sep, $2, $4; sep=","}' "$work/sluice.out")"
node "$script" "127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))" "$pids"
sluice_rc=$?
stop

echo "== Apache Kafka 4.4"
if [ ! -f "$lib/kafka_2.13-4.4.0.jar" ]; then
    timeout 900 mvn -B -q -f "$root/bench/pom.xml" dependency:copy-dependencies -Dbench.lib.dir="$lib" >"$work/mvn.log" 2>&1 \
        || { tail -20 "$work/mvn.log"; exit 2; }
fi
java=(java -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$root/bench/log4j2.properties"
    -cp "$lib/*")
kbase=$((base + 300))
voters="1@127.0.0.1:$((kbase + 100)),2@127.0.0.1:$((kbase + 101)),3@127.0.0.1:$((kbase + 102))"
id="$("${java[@]}" kafka.tools.StorageTool random-uuid)"
pids=""
for n in 1 2 3; do
    port=$((kbase + n - 1)) cport=$((kbase + 100 + n - 1))
    {
        echo "process.roles=broker,controller"
        echo "node.id=$n"
        echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
        echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
        echo "controller.listener.names=CONTROLLER"
        echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
        echo "inter.broker.listener.name=PLAINTEXT"
        echo "controller.quorum.voters=$voters"
        echo "log.dirs=$work/kafka-$n"
        printf '%s\n' "${settings[@]}"
    } >"$work/kafka-$n.properties"
    "${java[@]}" kafka.tools.StorageTool format -t "$id" -c "$work/kafka-$n.properties" >"$work/format-$n.log" 2>&1 \
        || { cat "$work/format-$n.log"; exit 2; }
    "${java[@]}" kafka.Kafka "$work/kafka-$n.properties" >"$work/kafka-$n.log" 2>&1 &
    cluster_pids+=($!)
    pids="$pids${pids:+,}$n=$!"
done
node "$script" "127.0.0.1:$kbase,127.0.0.1:$((kbase + 1)),127.0.0.1:$((kbase + 2))" "$pids"
kafka_rc=$?
stop
echo "== exit: sluice $sluice_rc, kafka $kafka_rc (1: acknowledged records lost)"
