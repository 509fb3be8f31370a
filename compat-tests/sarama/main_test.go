// Package sarama runs IBM/sarama, unchanged, against real sluice processes: one shared broker
// for most scenarios, a one-node SASL_SSL dev-cluster for sasl-tls and a three-node dev-cluster
// for leader-kill. Every scenario writes its matrix row (gokit.Matrix).
package sarama

import (
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

var suite = &gokit.Suite{Name: "sarama", Client: "sarama", Module: "github.com/IBM/sarama"}

func TestMain(m *testing.M) { suite.Main(m) }

// config is sarama's configuration as an application on current Kafka would set it: the newest
// protocol version sarama knows (it narrows each request to what ApiVersions advertises) and
// acks=all.
func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.MaxVersion
	c.ClientID = "sluice-sarama-compat"
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	// Tests name each record's partition.
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	return c
}

// createTopic makes a topic through sarama's ClusterAdmin and waits until metadata leads every
// partition.
func createTopic(t *testing.T, addrs []string, c *sarama.Config, name string, partitions int32, rf int16, cfg map[string]*string) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin(addrs, c)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf, ConfigEntries: cfg}, false); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	cl, err := sarama.NewClient(addrs, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gokit.WaitFor(t, 20*time.Second, "topic "+name+" led", func() bool {
		if cl.RefreshMetadata(name) != nil {
			return false
		}
		ps, err := cl.Partitions(name)
		if err != nil || len(ps) != int(partitions) {
			return false
		}
		for _, p := range ps {
			if _, err := cl.Leader(name, p); err != nil {
				return false
			}
		}
		return true
	})
}

// consumeAll reads a partition from its start until n messages have arrived or timeout passes.
func consumeAll(t *testing.T, addrs []string, c *sarama.Config, topic string, partition int32, n int, timeout time.Duration) []*sarama.ConsumerMessage {
	t.Helper()
	cons, err := sarama.NewConsumer(addrs, c)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume %s/%d: %v", topic, partition, err)
	}
	defer pc.Close()
	var got []*sarama.ConsumerMessage
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, m)
		case err := <-pc.Errors():
			t.Fatalf("consume %s/%d: %v", topic, partition, err)
		case <-deadline:
			return got
		}
	}
	return got
}
