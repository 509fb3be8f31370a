#!/usr/bin/env bash
# Runs the sarama (IBM/sarama) compatibility suite against a sluice binary and writes its client
# matrix rows to target/test-logs/matrix-sarama.tsv.
#
#   compat-tests/sarama/run.sh [extra `go test` args, e.g. -run TestAdmin]
#
# Prints "sarama: N passed, M failed" (see ../gokit/run.sh).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$here/../gokit/run.sh" sarama "$here" "$@"
