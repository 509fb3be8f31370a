package gokit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Bin is the broker binary: $SLUICE_BIN, else <repo>/target/release/sluice (suites run from
// compat-tests/<suite>).
func Bin() (string, error) {
	b := os.Getenv("SLUICE_BIN")
	if b == "" {
		b = "../../target/release/sluice"
	}
	abs, err := filepath.Abs(b)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("sluice binary not found at %s (build it or set SLUICE_BIN): %w", abs, err)
	}
	return abs, nil
}

// proc is a child process whose combined output is kept, and watched for a pattern.
type proc struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	mu    sync.Mutex
	out   bytes.Buffer
	watch *regexp.Regexp
	found chan []string
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Write(b)
	if p.watch != nil {
		if m := p.watch.FindStringSubmatch(p.out.String()); m != nil {
			p.watch = nil
			p.found <- m
		}
	}
	return len(b), nil
}

// Output is everything the process has written so far.
func (p *proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs bin args and waits until its output matches watch (the submatches are returned).
func start(watch *regexp.Regexp, timeout time.Duration, bin string, args ...string) (*proc, []string, error) {
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan struct{}), watch: watch, found: make(chan []string, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case m := <-p.found:
		return p, m, nil
	case <-p.exited:
		return nil, nil, fmt.Errorf("%s exited (%v) before %q:\n%s", bin, p.waitErr, watch, p.Output())
	case <-time.After(timeout):
		p.stop()
		return nil, nil, fmt.Errorf("%s printed no %q within %s:\n%s", bin, watch, timeout, p.Output())
	}
}

// stop sends SIGTERM, then SIGKILL after 20 s; it returns the exit error of a process that did
// not stop cleanly.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.waitErr
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("ignored SIGTERM for 20 s; killed")
	}
}

// proc collects the child's stdout and stderr itself.
var _ io.Writer = (*proc)(nil)
