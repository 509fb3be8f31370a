#!/usr/bin/env bash
# Runs the kafkajs (Node.js) compatibility scenarios against a sluice binary.
#
#   compat-tests/kafkajs/run.sh [scenario ...]     # e.g. run.sh admin transactions
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). Installs
# kafkajs from package-lock.json with `npm ci`, then ../node-common/suite.sh starts one broker
# for the suite (a PLAINTEXT listener, and a SASL_SSL one with SCRAM users) and runs each
# scenario file in test/ with node's built-in test runner; leader-kill starts its own
# three-node dev-cluster. Each scenario writes its row to target/test-logs/matrix-kafkajs.tsv.
# Prints "kafkajs: N passed, M failed" and exits non-zero if any scenario failed.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
client=kafkajs
# The matrix's scenarios, in its column order.
scenarios=(produce-consume-codecs idempotent group-of-three transactions admin sasl-tls leader-kill)
export KAFKAJS_NO_PARTITIONER_WARNING=1

# npm ci wipes node_modules, so it runs only when the lock file is newer than the install.
install() {
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
        npm ci --prefer-offline --no-audit --no-fund --cache "$here/.npm-cache" >/dev/null
    fi
    # The matrix names the client with the version the lock file installed.
    label="kafkajs $(node -p "require('kafkajs/package.json').version")" || return 1
}

. "$here/../node-common/suite.sh"
