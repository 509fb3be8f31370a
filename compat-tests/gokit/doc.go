// Package gokit is what the Go client suites (franz-go, sarama, kafka-go) share: a `sluice serve`
// process, a `sluice dev-cluster` with its nodes' pids, and the rows each suite writes for the
// client matrix (compat-tests/matrix.sh).
package gokit
