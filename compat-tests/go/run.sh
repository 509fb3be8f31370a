#!/usr/bin/env bash
# Runs the franz-go compatibility suite against a sluice binary and writes its client matrix
# rows to target/test-logs/matrix-go.tsv.
#
#   compat-tests/go/run.sh [extra `go test` args, e.g. -run TestGroupCommitAndResume]
#
# SLUICE_BIN overrides the broker binary (default: <repo>/target/release/sluice). The matrix
# scenarios share one broker (or start a dev-cluster); the fetch-session and SASL-mechanism tests
# start brokers of their own. Prints "go: N passed, M failed" (see ../gokit/run.sh).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../gokit/run.sh" go "$here" "$@"
