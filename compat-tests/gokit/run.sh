#!/usr/bin/env bash
# Runs one Go compatibility suite (a Go module under compat-tests/) against a sluice binary.
#
#   compat-tests/gokit/run.sh NAME DIR [extra `go test` args, e.g. -run TestX]
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). Prints
# "NAME: N passed, M failed" (from the --- PASS / --- FAIL lines of `go test -v`, subtests
# included) and exits with go test's exit code.
set -u
name=$1 dir=$2
shift 2
if [ -n "${SLUICE_BIN:-}" ]; then
    case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
    export SLUICE_BIN
fi
if ! command -v go >/dev/null 2>&1; then
    echo "$name: the Go toolchain is not installed"
    echo "$name: 0 passed, 1 failed"
    exit 1
fi
cd "$dir"
out="$(mktemp "${TMPDIR:-/tmp}/sluice-$name-compat.XXXXXX")"
trap 'rm -f "$out"' EXIT
go test -count=1 -v -timeout 10m "$@" ./... 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^\s*--- PASS' "$out")
failed=$(grep -cE '^\s*--- FAIL' "$out")
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "$name: go test exited $rc without a failing test (build error?)"
    failed=1
fi
echo "$name: ${passed} passed, ${failed} failed"
exit "$rc"
