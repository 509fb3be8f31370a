#!/usr/bin/env bash
# Runs the Go (franz-go) compatibility tests against a sluice binary.
#
#   compat-tests/go/run.sh [extra `go test` args, e.g. -run TestGroupCommitAndResume]
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). Each test starts
# and stops its own broker. Prints "go: N passed, M failed" (from the --- PASS / --- FAIL lines of
# `go test -v`) and exits with go test's exit code.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -n "${SLUICE_BIN:-}" ]; then
    case "$SLUICE_BIN" in /*) ;; *) SLUICE_BIN="$PWD/$SLUICE_BIN" ;; esac
    export SLUICE_BIN
fi
if ! command -v go >/dev/null 2>&1; then
    echo "go: the Go toolchain is not installed"
    echo "go: 0 passed, 1 failed"
    exit 1
fi
cd "$here"
out="$(mktemp "${TMPDIR:-/tmp}/sluice-go-compat.XXXXXX")"
trap 'rm -f "$out"' EXIT
go test -count=1 -v -timeout 10m "$@" ./... 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^\s*--- PASS' "$out")
failed=$(grep -cE '^\s*--- FAIL' "$out")
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "go: go test exited $rc without a failing test (build error?)"
    failed=1
fi
echo "go: ${passed} passed, ${failed} failed"
exit "$rc"
