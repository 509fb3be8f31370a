# The body of a Node.js client suite's run.sh (kafkajs, confluent-js), sourced after it sets:
#   client       the matrix's name for the client, e.g. kafkajs
#   here, root   the suite's directory and the repo
#   scenarios    the scenario names in the matrix's column order (each a test/<name>.test.js)
#   install      a function that installs the client into $here/node_modules (called in $here);
#                it may set `label`, the client's name in the matrix rows (default: $client)
#
# Starts one broker for the suite (a PLAINTEXT listener, and a SASL_SSL one with SCRAM users and
# a CA made here with openssl) and runs each scenario file with node's built-in test runner,
# two at a time. The files get the broker and their paths through SUITE_* variables (read by
# harness.js); each writes its row to target/test-logs/matrix-$client.tsv. Prints
# "$client: N passed, M failed" and exits non-zero if any scenario failed.

SLUICE_BIN="${SLUICE_BIN:-$root/target/release/sluice}"
case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
export SLUICE_BIN
[ $# -gt 0 ] && scenarios=("$@")

logs="$root/target/test-logs"
mkdir -p "$logs"
matrix="$logs/matrix-$client.tsv"
: >"$matrix"
label="$client"
# The suite could not run: every scenario's cell says why.
fail() {
    echo "$client: $*"
    for s in "${scenarios[@]}"; do printf '%s\t%s\tfail\tsuite not run: %s\n' "$label" "$s" "$*"; done >"$matrix"
    echo "$client: 0 passed, 1 failed"
    exit 1
}
command -v node >/dev/null 2>&1 || fail "node is not installed"
# --test-concurrency came in Node 20.10.
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1)' \
    || fail "node $(node --version) is too old: the suite needs 20.10 or newer"
[ -x "$SLUICE_BIN" ] || fail "no broker binary at $SLUICE_BIN"
for s in "${scenarios[@]}"; do [ -f "$here/test/$s.test.js" ] || fail "no scenario '$s'"; done

cd "$here" || fail "no directory $here"
install || fail "installing $client failed"

work="$(mktemp -d "${TMPDIR:-/tmp}/sluice-$client.XXXXXX")"
broker_pid=""
cleanup() {
    [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# A CA and a broker certificate for 127.0.0.1, for the SASL_SSL listener.
ssl() { openssl "$@" >/dev/null 2>&1 || fail "openssl $1 failed"; }
ssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj "/CN=sluice $client CA"
ssl req -newkey rsa:2048 -nodes -keyout "$work/broker.key" -out "$work/broker.csr" -subj "/CN=localhost"
echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >"$work/broker.ext"
ssl x509 -req -in "$work/broker.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/broker.pem" -days 2 -extfile "$work/broker.ext"
cat "$work/broker.key" "$work/broker.pem" >"$work/broker-keystore.pem"

"$SLUICE_BIN" serve --data-dir "$work/data" --node-id 1 \
    --set 'listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0' \
    --set security.inter.broker.protocol=PLAINTEXT \
    --set sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512 \
    --set ssl.keystore.type=PEM --set "ssl.keystore.location=$work/broker-keystore.pem" \
    --set num.partitions=3 --set group.initial.rebalance.delay.ms=0 --set group.min.session.timeout.ms=1000 \
    --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]' \
    --add-scram 'SCRAM-SHA-256=[name=bob,password=bob-secret]' \
    >"$work/broker.log" 2>&1 </dev/null &
broker_pid=$!
for _ in $(seq 200); do
    grep -q "sluice ready:" "$work/broker.log" 2>/dev/null && break
    kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; fail "the broker exited at startup"; }
    sleep 0.1
done
grep -q "sluice ready:" "$work/broker.log" || { tail -20 "$work/broker.log"; fail "the broker was not ready in 20 s"; }
# Port 0 lets the broker pick free ports (no race with other tests); its ready line says which.
advertised="$(grep -o 'advertised [^)]*' "$work/broker.log" | head -1)"
address() { echo "$advertised" | sed -nE "s|.*[ ,]$1://([0-9.]+:[0-9]+).*|\1|p"; }
plain="$(address PLAINTEXT)"
sasl="$(address SASL_SSL)"
[ -n "$plain" ] && [ -n "$sasl" ] || fail "no listener addresses in the ready line: $advertised"

export SUITE_CLIENT="$label" SUITE_BROKERS="$plain" SUITE_SASL_BROKERS="$sasl" SUITE_CA="$work/ca.pem"
export SUITE_MATRIX="$matrix" SUITE_WORK="$work"

files=()
for s in "${scenarios[@]}"; do files+=("test/$s.test.js"); done
tap="$work/results.tap"
# Two files at a time: the machine's cores are shared, and the scenarios mostly wait on the broker.
# The outer timeout is a backstop (a suite takes well under a minute), so that a hang cannot
# stall run-all.
timeout -k 10 300 node --test --test-concurrency=2 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
rc=$?

# A scenario whose process died before writing its row still gets one, so the matrix has
# every cell; the rows are rewritten in the matrix's column order.
rows="$(cat "$matrix")"
: >"$matrix"
for s in "${scenarios[@]}"; do
    row="$(printf '%s\n' "$rows" | awk -F'\t' -v s="$s" '$2 == s' | tail -1)"
    [ -n "$row" ] || row="$(printf '%s\t%s\tfail\ttimed out or crashed before writing its result' "$label" "$s")"
    printf '%s\n' "$row" >>"$matrix"
done

# A test that timed out is "cancelled" in node's count: a failure here.
passed=$(awk '/^# pass /{print $3}' "$tap")
failed=$(awk '/^# (fail|cancelled) /{s += $3} END {print s + 0}' "$tap")
passed=${passed:-0}
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "$client: node --test exited $rc without a failing test"
    failed=1
fi
if [ "$rc" -ne 0 ]; then
    echo "--- broker log (last 40 lines)"
    tail -40 "$work/broker.log"
fi
echo "$client: ${passed} passed, ${failed} failed"
exit "$rc"
