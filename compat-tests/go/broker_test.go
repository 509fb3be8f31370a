package compat

// A sluice process per test: `sluice serve --listen 127.0.0.1:0`, with the port read from the
// "serving Kafka on HOST:PORT" line it logs to stderr. Stopped with SIGTERM (SIGKILL after 15 s)
// by t.Cleanup; its log is printed when the test failed.

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

var servingRe = regexp.MustCompile(`serving Kafka on ([0-9.]+:[0-9]+)`)

type broker struct {
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error

	mu     sync.Mutex
	log    bytes.Buffer
	addrCh chan string
	sent   bool
}

// Write collects the broker's stderr and watches it for the "serving Kafka on" line.
func (b *broker) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.log.Write(p)
	if !b.sent {
		if m := servingRe.FindSubmatch(b.log.Bytes()); m != nil {
			b.sent = true
			b.addrCh <- string(m[1])
		}
	}
	return len(p), nil
}

func sluiceBin(t *testing.T) string {
	if b := os.Getenv("SLUICE_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatalf("SLUICE_BIN: %v", err)
		}
		return abs
	}
	abs, err := filepath.Abs("../../target/release/sluice")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// startBroker starts a broker with group.initial.rebalance.delay.ms=0 plus the given
// key=value settings.
func startBroker(t *testing.T, settings ...string) *broker {
	t.Helper()
	return launch(t, []string{"--listen", "127.0.0.1:0"}, settings)
}

// launchBroker starts a broker whose settings name its listeners; b.addr is the first one.
func launchBroker(t *testing.T, settings ...string) *broker {
	t.Helper()
	return launch(t, nil, settings)
}

func launch(t *testing.T, listen []string, settings []string) *broker {
	t.Helper()
	bin := sluiceBin(t)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("sluice binary not found at %s (build it or set SLUICE_BIN): %v", bin, err)
	}
	args := append([]string{"serve"}, listen...)
	args = append(args, "--data-dir", t.TempDir(), "--set", "group.initial.rebalance.delay.ms=0")
	for _, s := range settings {
		args = append(args, "--set", s)
	}
	b := &broker{cmd: exec.Command(bin, args...), exited: make(chan struct{}), addrCh: make(chan string, 1)}
	b.cmd.Stdout = io.Discard
	b.cmd.Stderr = b
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.exited)
	}()
	t.Cleanup(func() { b.stop(t) })

	select {
	case b.addr = <-b.addrCh:
	case <-b.exited:
		t.Fatalf("sluice exited (%v) before serving:\n%s", b.waitErr, b.logText())
	case <-time.After(15 * time.Second):
		t.Fatalf("sluice did not log 'serving Kafka on' within 15 s:\n%s", b.logText())
	}
	return b
}

func (b *broker) logText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

func (b *broker) stop(t *testing.T) {
	select {
	case <-b.exited:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
		if b.waitErr != nil {
			t.Errorf("sluice exited uncleanly after SIGTERM: %v", b.waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("sluice ignored SIGTERM for 15 s; killing it")
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
	if t.Failed() {
		t.Logf("sluice log:\n%s", b.logText())
	}
}
