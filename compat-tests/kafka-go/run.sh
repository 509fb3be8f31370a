#!/usr/bin/env bash
# Runs the kafka-go (segmentio/kafka-go) compatibility suite against a sluice binary and writes
# its client matrix rows to target/test-logs/matrix-kafka-go.tsv.
#
#   compat-tests/kafka-go/run.sh [extra `go test` args, e.g. -run TestAdminClient]
#
# Prints "kafka-go: N passed, M failed" (see ../gokit/run.sh).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../gokit/run.sh" kafka-go "$here" "$@"
