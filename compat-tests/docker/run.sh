#!/usr/bin/env bash
# The Docker suite: installs the engine (Debian's docker.io and docker-compose) if it is
# missing, starts dockerd if none runs (and stops it again at the end), builds the image
# from $SLUICE_BIN, and runs test_docker.py. Without an engine that can start, it says so
# and counts nothing.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
started=""
cleanup() {
    if [ -n "$started" ]; then
        kill "$started" 2>/dev/null
        wait "$started" 2>/dev/null
    fi
}
trap cleanup EXIT
if ! docker info >/dev/null 2>&1 && { ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null; }; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "docker: installing docker.io and docker-compose"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io docker-compose >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io docker-compose >/dev/null 2>&1; }
    fi
fi
if ! docker info >/dev/null 2>&1 && ! command -v dockerd >/dev/null; then
    echo "docker: no engine could be installed here: the Docker tests did not run"
    exit 0
fi
command -v docker-compose >/dev/null || { echo "docker: docker-compose is missing"; exit 1; }
if ! docker info >/dev/null 2>&1; then
    log="$root/target/test-logs/dockerd.log"
    mkdir -p "$(dirname "$log")"
    dockerd >"$log" 2>&1 &
    started=$!
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
    if ! docker info >/dev/null 2>&1; then
        echo "docker: the engine did not start (see $log): the Docker tests did not run"
        exit 0
    fi
fi
SLUICE_BIN="${SLUICE_BIN:-$root/target/release/sluice}" docker/build "${SLUICE_IMAGE:-sluice:dev}" || exit 1
venv="$root/compat-tests/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || exit 1
"$venv/bin/pip" install -q -r compat-tests/python/requirements.txt -r compat-tests/docker/requirements.txt || exit 1
"$venv/bin/python" -m pytest -q -p no:cacheprovider -s --timeout 600 compat-tests/docker
