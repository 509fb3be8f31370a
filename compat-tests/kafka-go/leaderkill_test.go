package kafkago

import (
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"sluice/compat/gokit"
)

// leader is the partition's leader per metadata (-1 while there is none).
func leader(t *testing.T, cl *kafka.Client, topic string) int {
	m, err := cl.Metadata(gokit.Ctx(t, 5*time.Second), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
		return -1
	}
	return m.Topics[0].Partitions[0].Leader.ID
}

// TestLeaderKill: on a three-node dev-cluster, an acks=all Writer writes to a partition with
// replication factor 3 and min.insync.replicas=2 while its leader is killed with SIGKILL. Every
// record the Writer saw acknowledged is in the log. kafka-go has no idempotent producer, so a
// batch it retried after a lost response may be there twice: those are counted, not failed.
func TestLeaderKill(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.LeaderKill, "3-node dev-cluster, RF=3, min.insync.replicas=2, kill -9 the leader mid-load; no acked record lost (no idempotence: retried duplicates allowed)")
	d := gokit.DevClusterFor(t, 3)
	cl := admin(d.Bootstrap, nil)
	topic := gokit.Name("leader-kill")
	createTopic(t, cl, topic, 1, 3, kafka.ConfigEntry{ConfigName: "min.insync.replicas", ConfigValue: "2"})
	w := writer(d.Bootstrap, topic, nil)
	w.MaxAttempts = 100
	w.WriteBackoffMin = 100 * time.Millisecond
	w.WriteBackoffMax = 500 * time.Millisecond
	defer w.Close()
	// The Writer fails a topic its transport's cached metadata does not have yet without
	// retrying: one record first, until the transport knows the topic.
	gokit.WaitFor(t, 20*time.Second, "the Writer to know "+topic, func() bool {
		return w.WriteMessages(gokit.Ctx(t, 10*time.Second), kafka.Message{Value: []byte("warm-up")}) == nil
	})
	const n, batch, killAt = 3000, 20, 1000
	acked := map[string]bool{}
	failed, victim := 0, -1
	for i := 0; i < n; i += batch {
		var msgs []kafka.Message
		for j := i; j < i+batch; j++ {
			msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprint(j))})
		}
		if err := w.WriteMessages(gokit.Ctx(t, 60*time.Second), msgs...); err != nil {
			failed += batch
			t.Logf("batch at %d: %v", i, err)
			continue
		}
		for _, m := range msgs {
			acked[string(m.Value)] = true
		}
		if victim < 0 && len(acked) >= killAt {
			if victim = leader(t, cl, topic); victim < 0 {
				t.Fatalf("no leader of %s/0", topic)
			}
			t.Logf("killing node %d, the leader, after %d acks", victim, killAt)
			if err := d.Kill(int32(victim)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d acknowledged, %d failed", len(acked), failed)
	if victim < 0 {
		t.Fatalf("the leader was never killed")
	}
	var end int64
	gokit.WaitFor(t, 30*time.Second, "a new leader's log end", func() bool {
		if l := leader(t, cl, topic); l < 0 || l == victim {
			return false
		}
		resp, err := cl.ListOffsets(gokit.Ctx(t, 5*time.Second), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}})
		if err != nil || len(resp.Topics[topic]) != 1 || resp.Topics[topic][0].Error != nil {
			return false
		}
		end = resp.Topics[topic][0].LastOffset
		return true
	})
	seen := map[string]int{}
	twice := 0
	for _, m := range readPartition(t, d.Bootstrap, topic, 0, int(end), nil) {
		if seen[string(m.Value)]++; seen[string(m.Value)] == 2 {
			twice++
		}
	}
	lost := 0
	for v := range acked {
		if seen[v] == 0 {
			lost++
		}
	}
	t.Logf("%d records in the log, %d of them written twice by retries", end, twice)
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost", lost)
	}
}
