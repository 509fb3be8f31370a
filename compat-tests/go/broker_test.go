package compat

// A sluice process per test (gokit.BrokerFor): `sluice serve --listen 127.0.0.1:0`, stopped
// with SIGTERM when the test ends; its log is printed when the test failed.

import (
	"testing"

	"sluice/compat/gokit"
)

type broker = gokit.Broker

// startBroker starts a broker with group.initial.rebalance.delay.ms=0 plus the given
// key=value settings.
func startBroker(t *testing.T, settings ...string) *broker {
	t.Helper()
	return gokit.BrokerFor(t, []string{"--listen", "127.0.0.1:0"}, settings...)
}

// launchBroker starts a broker whose settings name its listeners; b.Addr is the first one.
func launchBroker(t *testing.T, settings ...string) *broker {
	t.Helper()
	return gokit.BrokerFor(t, nil, settings...)
}
