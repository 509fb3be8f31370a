#!/usr/bin/env bash
# Runs the Confluent JavaScript client (@confluentinc/kafka-javascript) compatibility scenarios
# against a sluice binary.
#
#   compat-tests/confluent-js/run.sh [scenario ...]     # e.g. run.sh admin transactions
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). The client is
# a native addon on librdkafka; its prebuilt binaries come from GitHub, so it is built from its
# npm tarball (the binding and its bundled librdkafka, whose version the binding needs), against
# the system's Node headers (/usr/include/node) and OpenSSL, zlib and zstd (Debian packages,
# installed if missing). The build (a few minutes) is cached in
# ${SLUICE_CACHE:-~/.cache/sluice}/confluent-js-<key>, keyed by package-lock.json and Node's
# ABI, and node_modules here links to it. Then ../node-common/suite.sh starts one broker (a
# PLAINTEXT listener and a SASL_SSL one with SCRAM users) and runs each scenario file in test/
# with node's test runner; leader-kill starts its own three-node dev-cluster. Each scenario
# writes its row to target/test-logs/matrix-confluent-js.tsv. Prints
# "confluent-js: N passed, M failed" and exits non-zero if any scenario failed.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
client=confluent-js
# The matrix's scenarios, in its column order.
scenarios=(produce-consume-codecs idempotent group-of-three transactions admin sasl-tls leader-kill)

# What node-gyp and librdkafka's configure need from Debian.
build_packages=(make g++ python3 pkg-config libssl-dev zlib1g-dev libzstd-dev)
ensure_packages() {
    local missing=() p
    for p in "${build_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    # Node's headers: nodesource's nodejs package has them, Debian's is libnode-dev.
    [ -f /usr/include/node/node.h ] || missing+=(libnode-dev)
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || { echo "$client: missing ${missing[*]} and no apt-get"; return 1; }
    echo "$client: installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# How the client is built (see install()); a cached build is reused only if made the same way.
build_env=(npm_config_build_from_source=true npm_config_nodedir=/usr CKJS_LINKING=dynamic JOBS=1)

install() {
    local abi key cache
    abi="$(node -p process.versions.modules)"
    key="$( (cat package-lock.json; echo "${build_env[*]}") | sha256sum | cut -c1-12)"
    cache="${SLUICE_CACHE:-$HOME/.cache/sluice}/confluent-js-node$abi-$key"
    # One build at a time: a second run waits for the first one's build, then uses it.
    mkdir -p "$(dirname "$cache")" && exec 9>"$cache.lock" && flock 9 || return 1
    if [ ! -f "$cache/.complete" ]; then
        ensure_packages || return 1
        rm -rf "$cache" && mkdir -p "$cache" && cp package.json package-lock.json "$cache/" || return 1
        echo "$client: building @confluentinc/kafka-javascript and its librdkafka into $cache (a few minutes)"
        local start=$SECONDS
        # build_from_source: node-pre-gyp would first try GitHub for a prebuilt binary.
        # nodedir: node-gyp takes the headers from /usr/include/node instead of downloading them.
        # CKJS_LINKING=dynamic: librdkafka's configure uses the system's OpenSSL, zlib and zstd;
        # its default (static) downloads their sources. JOBS=1: node-gyp's parallel make races
        # librdkafka's configure step (librdkafka's own make runs in parallel anyway).
        if ! (cd "$cache" && env "${build_env[@]}" \
            npm ci --no-audit --no-fund --foreground-scripts --cache "$cache/.npm-cache" >"$cache/build.log" 2>&1); then
            tail -30 "$cache/build.log"
            return 1
        fi
        node -e "require('$cache/node_modules/@confluentinc/kafka-javascript')" || return 1
        echo "$client: built in $((SECONDS - start)) s"
        rm -rf "$cache/.npm-cache"
        touch "$cache/.complete"
    fi
    # A node_modules left by a plain `npm install` here is replaced by the link to the cache.
    [ -L node_modules ] || rm -rf node_modules
    ln -sfn "$cache/node_modules" node_modules
    exec 9>&-
    # The matrix names the client with its version and its librdkafka's.
    label="$(node -p "const k = require('@confluentinc/kafka-javascript');
        'confluent-js ' + require('@confluentinc/kafka-javascript/package.json').version + ' (librdkafka ' + k.librdkafkaVersion + ')'")" || return 1
}

. "$here/../node-common/suite.sh"
