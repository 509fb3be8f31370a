package sarama

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

// TestIdempotentProducer produces with sarama's idempotent producer (InitProducerId, sequence
// numbers, one request in flight) to three partitions and reads every record back exactly once,
// in the order sent to its partition.
func TestIdempotentProducer(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Idempotent, "Producer.Idempotent, 3 partitions, each record once in order")
	c := config()
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Retry.Max = 10
	c.Producer.Flush.Messages = 20
	c.Producer.Flush.Frequency = 20 * time.Millisecond
	topic := gokit.Name("idempotent")
	createTopic(t, []string{suite.Broker.Addr}, c, topic, 3, 1, nil)
	prod, err := sarama.NewAsyncProducer([]string{suite.Broker.Addr}, c)
	if err != nil {
		t.Fatalf("idempotent producer: %v", err)
	}
	const n = 600
	for i := 0; i < n; i++ {
		prod.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: int32(i % 3), Value: sarama.StringEncoder(fmt.Sprint(i))}
	}
	for i := 0; i < n; i++ {
		select {
		case <-prod.Successes():
		case e := <-prod.Errors():
			t.Fatalf("produce: %v", e.Err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d acknowledged within 30 s", i, n)
		}
	}
	if err := prod.Close(); err != nil {
		t.Fatal(err)
	}
	cl, err := sarama.NewClient([]string{suite.Broker.Addr}, config())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := int32(0); p < 3; p++ {
		// The log end says how many records the partition holds: a duplicate shows there.
		end, err := cl.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		got := consumeAll(t, []string{suite.Broker.Addr}, config(), topic, p, n/3, 30*time.Second)
		if end != n/3 || len(got) != n/3 {
			t.Fatalf("partition %d ends at %d, read %d records; want %d", p, end, len(got), n/3)
		}
		for i, m := range got {
			if want := fmt.Sprint(int(p) + 3*i); string(m.Value) != want {
				t.Fatalf("partition %d offset %d: %q, want %q", p, m.Offset, m.Value, want)
			}
		}
	}
}
