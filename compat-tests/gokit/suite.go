package gokit

import (
	"fmt"
	"os"
	"testing"
)

// Suite is one client suite: its name (matrix-<Name>.tsv), the client's label and Go module,
// the scenarios the client cannot run (with why), and the shared broker's settings.
type Suite struct {
	Name, Client, Module string
	NA                   map[string]string
	Settings             []string

	// Set by Main before any test runs.
	Broker *Broker
	Matrix *Matrix
}

// Main is the suite's TestMain: it opens the matrix, writes the n/a rows, starts the shared
// broker, runs the tests, stops the broker (printing its log if anything failed) and exits.
func (s *Suite) Main(m *testing.M) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var err error
	if s.Matrix, err = OpenMatrix(s.Name, ClientLabel(s.Client, s.Module)); err != nil {
		fail(err)
	}
	for scenario, why := range s.NA {
		if err := s.Matrix.NA(scenario, why); err != nil {
			fail(err)
		}
	}
	if s.Broker, err = StartBroker(s.Settings...); err != nil {
		fail(err)
	}
	code := m.Run()
	if err := s.Broker.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "sluice did not stop cleanly: %v\n", err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "sluice log:\n%s\n", s.Broker.Log())
	}
	os.Exit(code)
}

// DevClusterFor starts a dev-cluster for one test, stopped when the test ends, with its log
// printed if the test failed.
func DevClusterFor(t *testing.T, n int, extra ...string) *DevCluster {
	t.Helper()
	d, err := StartDevCluster(n, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev-cluster log:\n%s", d.Log())
		}
		if err := d.Stop(); err != nil {
			t.Logf("dev-cluster stop: %v", err)
		}
	})
	return d
}
