package gokit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// The matrix's scenario names, as compat-tests/matrix.sh orders its columns.
const (
	Codecs       = "produce-consume-codecs"
	Idempotent   = "idempotent"
	GroupOfThree = "group-of-three"
	Transactions = "transactions"
	Admin        = "admin"
	SaslTLS      = "sasl-tls"
	LeaderKill   = "leader-kill"
)

// Matrix appends one suite's rows, `client<TAB>scenario<TAB>pass|fail|n/a<TAB>note`, to
// $SLUICE_MATRIX_DIR (default <repo>/target/test-logs)/matrix-<suite>.tsv. Each row is written
// as soon as its test ends, so a suite that dies half-way still leaves the rows it finished.
type Matrix struct {
	client, path string
	mu           sync.Mutex
}

// OpenMatrix starts (truncates) the suite's file; client names the client in every row.
func OpenMatrix(suite, client string) (*Matrix, error) {
	dir := os.Getenv("SLUICE_MATRIX_DIR")
	if dir == "" {
		dir = "../../target/test-logs"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "matrix-"+suite+".tsv")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, err
	}
	return &Matrix{client: client, path: path}, nil
}

// Scenario makes t's outcome the scenario's cell: pass, or fail once t has failed.
func (m *Matrix) Scenario(t *testing.T, scenario, note string) {
	t.Cleanup(func() {
		result := "pass"
		if t.Failed() {
			result = "fail"
		}
		if err := m.row(scenario, result, note); err != nil {
			t.Errorf("matrix row: %v", err)
		}
	})
}

// NA records a scenario the client cannot run, and why.
func (m *Matrix) NA(scenario, note string) error { return m.row(scenario, "n/a", note) }

func (m *Matrix) row(scenario, result, note string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, err := os.OpenFile(m.path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	clean := strings.NewReplacer("\t", " ", "\n", " ").Replace(note)
	_, err = fmt.Fprintf(f, "%s\t%s\t%s\t%s\n", m.client, scenario, result, clean)
	return err
}

// ClientLabel is "name version" for the client module the suite pins, e.g. "sarama v1.61.1":
// from the binary's build info, else from the go.mod of the directory the test runs in (go
// test leaves dependencies out of a test binary's build info).
func ClientLabel(name, module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return name + " " + dep.Version
			}
		}
	}
	if mod, err := os.ReadFile("go.mod"); err == nil {
		for _, line := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
				return name + " " + f[1]
			}
		}
	}
	return name
}
