package compat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/compat/gokit"
)

// TestLeaderKill: on a three-node dev-cluster, franz-go's idempotent acks=all producer writes
// to a partition with replication factor 3 and min.insync.replicas=2 while the partition's
// leader is killed with SIGKILL. Every record the producer saw acknowledged is in the log
// exactly once, and no record is there twice.
func TestLeaderKill(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.LeaderKill, "3-node dev-cluster, RF=3, min.insync.replicas=2, kill -9 the leader mid-load; acked all read once")
	d := gokit.DevClusterFor(t, 3)
	adm := adminOn(t, d.Bootstrap)
	topic := gokit.Name("leader-kill")
	minISR := "2"
	createTopicRF(t, adm, topic, 1, 3, map[string]*string{"min.insync.replicas": &minISR})
	leader := func() (int32, int) {
		m, err := adm.Metadata(gokit.Ctx(t, 5*time.Second), topic)
		if err != nil {
			return -1, 0
		}
		p := m.Topics[topic].Partitions[0]
		return p.Leader, len(p.ISR)
	}
	gokit.WaitFor(t, 30*time.Second, "ISR of 3", func() bool { _, isr := leader(); return isr == 3 })

	prod := client(t, d.Bootstrap, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(300),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(90*time.Second))
	const n, killAt = 3000, 1000
	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		failed []error
		wg     sync.WaitGroup
		victim int32 = -1
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		prod.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked[string(r.Value)] = true
			if len(acked) == killAt {
				// Killed from a goroutine: the callback must not block the producer.
				go func() {
					l, _ := leader()
					t.Logf("killing node %d, the leader, after %d acks", l, killAt)
					mu.Lock()
					victim = l
					mu.Unlock()
					if err := d.Kill(l); err != nil {
						t.Error(err)
					}
				}()
			}
		})
		// Paced, so that two thirds of the load is still to come when the leader dies.
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d acknowledged, %d failed (first: %v)", len(acked), len(failed), gokit.FirstErr(failed))
	if victim < 0 {
		t.Fatalf("only %d records acknowledged: the leader was never killed", len(acked))
	}

	var end int64
	gokit.WaitFor(t, 30*time.Second, "a new leader's log end", func() bool {
		if l, _ := leader(); l < 0 || l == victim {
			return false
		}
		ends, err := adm.ListEndOffsets(gokit.Ctx(t, 5*time.Second), topic)
		if err != nil || ends.Error() != nil {
			return false
		}
		o, _ := ends.Lookup(topic, 0)
		end = o.Offset
		return true
	})
	gokit.CheckAcked(t, acked, values(readPartition(t, d.Bootstrap, topic, 0, int(end), 60*time.Second)), end)
}
