package gokit

import (
	"os"
	"regexp"
	"testing"
	"time"
)

var servingRe = regexp.MustCompile(`serving Kafka on ([0-9.]+:[0-9]+)`)

// Broker is one `sluice serve` process on a loopback port, with its data in a temp dir.
type Broker struct {
	Addr string
	p    *proc
	dir  string
}

// StartBroker starts a broker on a free loopback port with group.initial.rebalance.delay.ms=0
// and the given key=value settings, and waits until it serves.
func StartBroker(settings ...string) (*Broker, error) {
	return Launch([]string{"--listen", "127.0.0.1:0"}, settings...)
}

// Launch is StartBroker with the listener flags given (none: the settings name the
// listeners, and Addr is the first one).
func Launch(listen []string, settings ...string) (*Broker, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-gokit-")
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"serve"}, listen...), "--data-dir", dir, "--set", "group.initial.rebalance.delay.ms=0")
	for _, s := range settings {
		args = append(args, "--set", s)
	}
	p, m, err := start(servingRe, 20*time.Second, bin, args...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Broker{Addr: m[1], p: p, dir: dir}, nil
}

// BrokerFor launches a broker for one test: stopped when the test ends (an unclean exit fails
// it), its log printed if the test failed.
func BrokerFor(t *testing.T, listen []string, settings ...string) *Broker {
	t.Helper()
	b, err := Launch(listen, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("sluice did not stop cleanly: %v", err)
		}
		if t.Failed() {
			t.Logf("sluice log:\n%s", b.Log())
		}
	})
	return b
}

// Log is the broker's output so far.
func (b *Broker) Log() string { return b.p.Output() }

// Stop stops the broker (SIGTERM) and removes its data; the error says it did not exit cleanly.
func (b *Broker) Stop() error {
	err := b.p.stop()
	os.RemoveAll(b.dir)
	return err
}
