package gokit

import (
	"sync"
	"testing"
	"time"
)

// Ledger counts how often each value was delivered, by any consumer of a test.
type Ledger struct {
	mu   sync.Mutex
	seen map[string]int
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger { return &Ledger{seen: map[string]int{}} }

// Add counts one delivery of v.
func (l *Ledger) Add(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[v]++
}

// Count is the number of distinct values delivered.
func (l *Ledger) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// Twice lists the values delivered more than once.
func (l *Ledger) Twice() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var dup []string
	for v, n := range l.seen {
		if n > 1 {
			dup = append(dup, v)
		}
	}
	return dup
}

// WaitFor polls cond until it holds, failing the test after timeout.
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CheckAcked is the leader-kill verdict: log holds a partition's values in offset order, up to
// its end offset; every acknowledged value must be there, none twice.
func CheckAcked(t *testing.T, acked map[string]bool, log []string, end int64) {
	t.Helper()
	seen := map[string]int{}
	for i, v := range log {
		seen[v]++
		if seen[v] == 2 {
			t.Errorf("record %s is in the log twice (again at offset %d)", v, i)
		}
	}
	lost := 0
	for v := range acked {
		if seen[v] == 0 {
			lost++
		}
	}
	if lost > 0 || int64(len(log)) != end {
		t.Fatalf("%d acknowledged records lost; read %d records of %d", lost, len(log), end)
	}
}

// FirstErr is errs[0], or nil.
func FirstErr(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
