package sarama

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

// TestLeaderKill: on a three-node dev-cluster, an idempotent acks=all producer writes to a
// partition with replication factor 3 and min.insync.replicas=2 while the partition's leader
// is killed with SIGKILL. Every record the producer saw acknowledged is in the log exactly once,
// and no record is there twice.
func TestLeaderKill(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.LeaderKill, "3-node dev-cluster, RF=3, min.insync.replicas=2, kill -9 the leader mid-load; acked all read once")
	d := gokit.DevClusterFor(t, 3)
	topic := gokit.Name("leader-kill")
	minISR := "2"
	createTopic(t, d.Bootstrap, config(), topic, 1, 3, map[string]*string{"min.insync.replicas": &minISR})
	cl, err := sarama.NewClient(d.Bootstrap, config())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gokit.WaitFor(t, 30*time.Second, "ISR of 3", func() bool {
		isr, err := cl.InSyncReplicas(topic, 0)
		return cl.RefreshMetadata(topic) == nil && err == nil && len(isr) == 3
	})

	c := config()
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Retry.Max = 300
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Timeout = 5 * time.Second
	c.Metadata.Retry.Max = 100
	c.Producer.Flush.Messages = 20
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	prod, err := sarama.NewAsyncProducer(d.Bootstrap, c)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	const n, killAt = 3000, 1000
	go func() {
		// Paced, so that two thirds of the load is still to come when the leader dies.
		for i := 0; i < n; i++ {
			prod.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(i))}
			time.Sleep(time.Millisecond)
		}
	}()
	acked := map[string]bool{}
	var failed []error
	var victim int32 = -1
	deadline := time.After(120 * time.Second)
	for len(acked)+len(failed) < n {
		select {
		case m := <-prod.Successes():
			v, _ := m.Value.Encode()
			acked[string(v)] = true
			if len(acked) == killAt {
				leader, err := cl.Leader(topic, 0)
				if err != nil {
					t.Fatalf("leader of %s/0: %v", topic, err)
				}
				t.Logf("killing node %d, the leader, after %d acks", leader.ID(), killAt)
				victim = leader.ID()
				if err := d.Kill(victim); err != nil {
					t.Fatal(err)
				}
			}
		case e := <-prod.Errors():
			failed = append(failed, e.Err)
		case <-deadline:
			t.Fatalf("after 120 s: %d acked, %d failed of %d", len(acked), len(failed), n)
		}
	}
	if err := prod.Close(); err != nil {
		t.Logf("producer close: %v", err)
	}
	t.Logf("%d acknowledged, %d failed (first: %v)", len(acked), len(failed), gokit.FirstErr(failed))
	if victim < 0 {
		t.Fatalf("only %d records acknowledged: the leader was never killed", len(acked))
	}

	var end int64
	gokit.WaitFor(t, 30*time.Second, "a new leader's log end", func() bool {
		leader, err := cl.Leader(topic, 0)
		if cl.RefreshMetadata(topic) != nil || err != nil || leader.ID() == victim {
			return false
		}
		end, err = cl.GetOffset(topic, 0, sarama.OffsetNewest)
		return err == nil
	})
	gokit.CheckAcked(t, acked, values(consumeAll(t, d.Bootstrap, config(), topic, 0, int(end), 60*time.Second)), end)
}
