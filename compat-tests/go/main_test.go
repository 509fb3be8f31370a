// Package compat runs franz-go (kgo, kadm), unchanged, against real sluice processes: one shared
// broker for most matrix scenarios, a one-node SASL_SSL dev-cluster for sasl-tls and a
// three-node dev-cluster for leader-kill. Every matrix scenario writes its row (gokit.Matrix);
// the other tests (fetch sessions, SASL mechanisms) start brokers of their own.
package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/compat/gokit"
)

// The shared broker tells KIP-848 members to heartbeat every 500 ms (Kafka's default is 5 s): a
// partition moves between members over two heartbeats (the owner's revocation, then the new
// owner's), and the scenario moves several.
var suite = &gokit.Suite{Name: "go", Client: "franz-go", Module: "github.com/twmb/franz-go",
	Settings: []string{"group.consumer.heartbeat.interval.ms=500"}}

func TestMain(m *testing.M) { suite.Main(m) }

// client is a kgo client on addrs with the options, closed when the test ends.
func client(t *testing.T, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// adminOn is a kadm client on addrs.
func adminOn(t *testing.T, addrs []string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	return kadm.NewClient(client(t, addrs, opts...))
}

// createTopicRF makes a topic with a replication factor and configs, and waits until metadata
// leads every partition.
func createTopicRF(t *testing.T, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopics(gokit.Ctx(t, 30*time.Second), partitions, rf, configs, topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	gokit.WaitFor(t, 20*time.Second, "topic "+topic+" led", func() bool {
		m, err := adm.Metadata(gokit.Ctx(t, 5*time.Second), topic)
		if err != nil || m.Topics[topic].Err != nil || len(m.Topics[topic].Partitions) != int(partitions) {
			return false
		}
		for _, p := range m.Topics[topic].Partitions {
			if p.Leader < 0 || p.Err != nil {
				return false
			}
		}
		return true
	})
}

// readPartition reads one partition from its start until n records arrived or timeout passed,
// with the isolation level given.
func readPartition(t *testing.T, addrs []string, topic string, partition int32, n int, timeout time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := client(t, addrs, append([]kgo.Opt{kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}})}, opts...)...)
	defer cl.Close()
	ctx := gokit.Ctx(t, timeout)
	var got []*kgo.Record
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
		})
		got = append(got, fs.Records()...)
	}
	return got
}

// values are the records' values as strings.
func values(rs []*kgo.Record) []string {
	var vs []string
	for _, r := range rs {
		vs = append(vs, string(r.Value))
	}
	return vs
}
