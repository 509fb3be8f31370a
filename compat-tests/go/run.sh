#!/usr/bin/env bash
# Runs the Go (franz-go) compatibility tests against a sluice binary.
#
#   compat-tests/go/run.sh [extra `go test` args, e.g. -run TestGroupCommitAndResume]
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). Each test starts
# and stops its own broker. Prints "go: N passed, M failed" (see ../gokit/run.sh).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../gokit/run.sh" go "$here" "$@"
