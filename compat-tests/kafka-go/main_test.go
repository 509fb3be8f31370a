// Package kafkago runs segmentio/kafka-go, unchanged, against real sluice processes: one shared
// broker for most scenarios, a one-node SASL_SSL dev-cluster for sasl-tls and a three-node
// dev-cluster for leader-kill. Every scenario writes its matrix row (gokit.Matrix).
package kafkago

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"sluice/compat/gokit"
)

// kafka-go's Writer has neither an idempotent nor a transactional producer (its Client only
// wraps the raw InitProducerId/EndTxn requests).
const noProducerIDs = "kafka-go has no idempotent or transactional producer"

var suite = &gokit.Suite{Name: "kafka-go", Client: "kafka-go", Module: "github.com/segmentio/kafka-go",
	NA: map[string]string{gokit.Idempotent: noProducerIDs, gokit.Transactions: noProducerIDs}}

func TestMain(m *testing.M) { suite.Main(m) }

// transport is tr, or a plain one of the test's own: kafka-go's transports answer from
// metadata they cache for MetadataTTL (6 s by default), and the shared default one would
// still lack a topic another test's client has just created.
func transport(tr *kafka.Transport) *kafka.Transport {
	if tr == nil {
		tr = &kafka.Transport{}
	}
	if tr.MetadataTTL == 0 {
		tr.MetadataTTL = time.Second
	}
	return tr
}

// admin is a kafka-go Client on addrs with the transport (plain by default).
func admin(addrs []string, tr *kafka.Transport) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: 10 * time.Second, Transport: transport(tr)}
}

// createTopic makes a topic through Client.CreateTopics and waits until every partition is led.
func createTopic(t *testing.T, cl *kafka.Client, name string, partitions, rf int, cfg ...kafka.ConfigEntry) {
	t.Helper()
	resp, err := cl.CreateTopics(gokit.Ctx(t, 20*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: name, NumPartitions: partitions, ReplicationFactor: rf, ConfigEntries: cfg}}})
	if err != nil || resp.Errors[name] != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp)
	}
	gokit.WaitFor(t, 20*time.Second, "topic "+name+" led", func() bool {
		m, err := cl.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{name}})
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
			return false
		}
		for _, p := range m.Topics[0].Partitions {
			if p.Leader.ID < 0 || p.Error != nil {
				return false
			}
		}
		return true
	})
}

// writer is an acks=all Writer that sends every batch at once (no 1 s linger).
func writer(addrs []string, topic string, tr *kafka.Transport) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(addrs...), Topic: topic, RequiredAcks: kafka.RequireAll,
		Balancer: &kafka.RoundRobin{}, BatchTimeout: 5 * time.Millisecond, Transport: transport(tr)}
}

// readPartition reads n messages of one partition from its start.
func readPartition(t *testing.T, addrs []string, topic string, partition, n int, dialer *kafka.Dialer) []kafka.Message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: addrs, Topic: topic, Partition: partition,
		MaxWait: 200 * time.Millisecond, Dialer: dialer})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	ctx := gokit.Ctx(t, 60*time.Second)
	var got []kafka.Message
	for len(got) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s/%d after %d of %d: %v", topic, partition, len(got), n, err)
		}
		got = append(got, m)
	}
	return got
}
