#!/usr/bin/env bash
# The web console suite: installs Debian's chromium if it is missing (as root, with
# apt-get, as the docker suite installs its engine) and playwright-core (pinned in
# package-lock.json) with `npm ci`, then runs test.mjs against $SLUICE_BIN.
# Screenshots go to target/test-logs/console/.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "console: installing chromium"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1; }
    fi
fi
command -v chromium >/dev/null || { echo "console: chromium is missing and could not be installed"; echo "console: 0 passed, 1 failed"; exit 1; }
cd "$here"
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error || { echo "console: 0 passed, 1 failed"; exit 1; }
fi
SLUICE_BIN="${SLUICE_BIN:-$root/target/release/sluice}" CHROMIUM="$(command -v chromium)" node test.mjs
