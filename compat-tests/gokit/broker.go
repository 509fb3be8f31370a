package gokit

import (
	"os"
	"regexp"
	"time"
)

var servingRe = regexp.MustCompile(`serving Kafka on ([0-9.]+:[0-9]+)`)

// Broker is one `sluice serve` process on a loopback port, with its data in a temp dir.
type Broker struct {
	Addr string
	p    *proc
	dir  string
}

// StartBroker starts a broker with group.initial.rebalance.delay.ms=0 and the given
// key=value settings, and waits until it serves.
func StartBroker(settings ...string) (*Broker, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-gokit-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--set", "group.initial.rebalance.delay.ms=0"}
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

// Log is the broker's output so far.
func (b *Broker) Log() string { return b.p.Output() }

// Stop stops the broker (SIGTERM) and removes its data; the error says it did not exit cleanly.
func (b *Broker) Stop() error {
	err := b.p.stop()
	os.RemoveAll(b.dir)
	return err
}
