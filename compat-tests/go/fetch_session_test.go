package compat

// KIP-227 with franz-go: a direct (no group) consumer of two topics opens a fetch session and
// fetches incrementally, as the broker's metrics show; every record arrives once; after one
// topic's partitions are removed from consumption it leaves the session and the other topic
// goes on being consumed.

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var metricsRe = regexp.MustCompile(`metrics on (http://[0-9.:]+/metrics)`)

// metric reads one unlabelled sample from the broker's metrics page (0 if it is absent).
func metric(t *testing.T, url, name string) int64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + ` (\d+)`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return v
}

// waitMetric polls the page until name satisfies ok, failing after 10 s.
func waitMetric(t *testing.T, url, name string, ok func(int64) bool, what string) {
	t.Helper()
	var v int64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if v = metric(t, url, name); ok(v) {
			return
		}
	}
	t.Fatalf("%s: %s is %d", what, name, v)
}

func TestFetchSessionIncrementalFetches(t *testing.T) {
	b := startBroker(t, "metrics.listener=127.0.0.1:0")
	m := metricsRe.FindStringSubmatch(b.Log())
	if m == nil {
		t.Fatalf("no metrics address in the broker's log")
	}
	url := m[1]
	adm := newAdmin(t, b)
	createTopic(t, adm, "fs-go-a", 3)
	createTopic(t, adm, "fs-go-b", 2)
	produce(t, b, "fs-go-a", 3, 0, 50)
	produce(t, b, "fs-go-b", 2, 0, 50)

	start := map[int32]kgo.Offset{}
	for p := int32(0); p < 3; p++ {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fs-go-a": start, "fs-go-b": start}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	seen := map[string]int{}
	for _, r := range pollUntil(t, cl, 250, 500*time.Millisecond) {
		seen[fmt.Sprintf("%s/%s", r.Topic, r.Value)]++
	}
	if len(seen) != 250 {
		t.Fatalf("got %d distinct records, want 250", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s received %d times", k, n)
		}
	}
	waitMetric(t, url, "sluice_incremental_fetch_sessions", func(v int64) bool { return v >= 1 }, "a session is open")
	waitMetric(t, url, "sluice_incremental_fetch_session_partitions", func(v int64) bool { return v == 5 }, "it holds five partitions")
	before := metric(t, url, "sluice_incremental_fetch_requests_total")
	waitMetric(t, url, "sluice_incremental_fetch_requests_total", func(v int64) bool { return v > before }, "fetches are incremental")

	cl.RemoveConsumePartitions(map[string][]int32{"fs-go-a": {0, 1, 2}})
	waitMetric(t, url, "sluice_incremental_fetch_session_partitions", func(v int64) bool { return v == 2 }, "fs-go-a was forgotten")
	produce(t, b, "fs-go-a", 3, 50, 60)
	produce(t, b, "fs-go-b", 2, 50, 60)
	more := pollUntil(t, cl, 20, 500*time.Millisecond)
	if len(more) != 20 {
		t.Fatalf("after the removal got %d records, want fs-go-b's 20", len(more))
	}
	for _, r := range more {
		if r.Topic != "fs-go-b" || r.Offset < 50 {
			t.Fatalf("after the removal got %s[%d]@%d", r.Topic, r.Partition, r.Offset)
		}
		seen[fmt.Sprintf("%s/%s", r.Topic, r.Value)]++
	}
	if len(seen) != 270 {
		t.Fatalf("got %d distinct records in all, want 270", len(seen))
	}
}
