package compat

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/compat/gokit"
)

// groupMember is one kgo group consumer polling in its own goroutine. It uses franz-go's
// default commits: autocommit of what it polled, and a final commit whenever partitions are
// revoked (a rebalance, or Close leaving the group), so a record is committed before another
// member can be handed its partition. Every polled record goes into the ledger, and the
// member's partitions are tracked through the assign/revoke/lost callbacks.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	owned map[int32]bool
}

// own adds (or removes) partitions from the member's set.
func (m *groupMember) own(ps []int32, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		if add {
			m.owned[p] = true
		} else {
			delete(m.owned, p)
		}
	}
}

// partitions is the member's partitions, sorted.
func (m *groupMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.owned))
}

// joinGroup starts a member of group consuming topic; extra picks the protocol's options.
func joinGroup(t *testing.T, addrs []string, group, topic string, l *gokit.Ledger, extra ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{done: make(chan struct{}), owned: map[int32]bool{}}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.AutoCommitInterval(time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.own(a[topic], true) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			// What the default revoke does: commit what was polled, before giving it up.
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Errorf("commit on revoke: %v", err)
			}
			m.own(r[topic], false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.own(l[topic], false) }),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			// Records polled are counted even if the poll ended with the context: the
			// client counts them as polled, and commits them on revoke.
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if l != nil {
					l.Add(string(r.Value))
				}
			})
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends the poll loop and closes the client, which commits and leaves the group.
func (m *groupMember) stop() {
	if m.cl == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cl.Close()
	m.cl = nil
}

// waitShared waits until the members between them hold every partition, each at least one,
// none twice.
func waitShared(t *testing.T, partitions int, members ...*groupMember) {
	t.Helper()
	gokit.WaitFor(t, 60*time.Second, fmt.Sprintf("%d members to share %d partitions", len(members), partitions), func() bool {
		all := map[int32]int{}
		for _, m := range members {
			owned := m.partitions()
			if len(owned) == 0 {
				return false
			}
			for _, p := range owned {
				all[p]++
			}
		}
		for _, n := range all {
			if n > 1 {
				return false
			}
		}
		return len(all) == partitions
	})
}

// produceRoundRobin sends values prefix-0.. round-robin over the partitions, acks=all.
func produceRoundRobin(t *testing.T, addrs []string, topic string, partitions int, prefix string, n int) {
	t.Helper()
	cl := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	if err := cl.ProduceSync(gokit.Ctx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
}

// TestConsumerGroupOfThree runs the scenario with each group protocol franz-go speaks: the
// classic one (JoinGroup/SyncGroup, the client's cooperative-sticky assignor) and KIP-848's
// consumer protocol (ConsumerGroupHeartbeat, the coordinator assigns). Three members share six
// partitions; one leaves and the other two take its partitions over; after every member has
// gone, a new one resumes at the committed offsets. Every record is delivered, none twice, and
// the committed offsets end at the log end.
func TestConsumerGroupOfThree(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.GroupOfThree, "classic (cooperative-sticky) and KIP-848 consumer protocol: 3 join, 1 leaves, rebalance, resume after restart; none missed or twice")
	t.Run("classic", func(t *testing.T) { groupOfThree(t, "classic", kgo.Balancers(kgo.CooperativeStickyBalancer())) })
	t.Run("consumer", func(t *testing.T) {
		groupOfThree(t, "consumer", kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	})
}

func groupOfThree(t *testing.T, groupType string, protocol ...kgo.Opt) {
	addrs := []string{suite.Broker.Addr}
	adm := adminOn(t, addrs)
	const parts = 6
	topic, group := gokit.Name("group3-"+groupType), gokit.Name("g3-"+groupType)
	createTopicRF(t, adm, topic, parts, 1, nil)
	produceRoundRobin(t, addrs, topic, parts, "a", 300)
	l := gokit.NewLedger()

	m1 := joinGroup(t, addrs, group, topic, l, protocol...)
	m2 := joinGroup(t, addrs, group, topic, l, protocol...)
	m3 := joinGroup(t, addrs, group, topic, l, protocol...)
	waitShared(t, parts, m1, m2, m3)
	gokit.WaitFor(t, 30*time.Second, "300 records consumed by three members", func() bool { return l.Count() == 300 })
	// The coordinator runs the group with the protocol asked for.
	listed, err := adm.ListGroups(gokit.Ctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g := listed[group]; g.GroupType != groupType || g.ProtocolType != "consumer" {
		t.Fatalf("ListGroups has %s as type %q protocol type %q, want %q, consumer", group, g.GroupType, g.ProtocolType, groupType)
	}
	if groupType == "consumer" {
		described, err := adm.DescribeConsumerGroups(gokit.Ctx(t, 10*time.Second), group)
		if err != nil {
			t.Fatalf("DescribeConsumerGroups: %v", err)
		}
		d := described[group]
		if d.Err != nil || len(d.Members) != 3 || len(d.AssignedPartitions()[topic]) != parts {
			t.Fatalf("ConsumerGroupDescribe: %d members, assigned %v, err %v", len(d.Members), d.AssignedPartitions(), d.Err)
		}
	}

	m3.stop()
	waitShared(t, parts, m1, m2)
	produceRoundRobin(t, addrs, topic, parts, "b", 300)
	gokit.WaitFor(t, 30*time.Second, "600 records consumed by two members", func() bool { return l.Count() == 600 })
	m1.stop()
	m2.stop()

	produceRoundRobin(t, addrs, topic, parts, "c", 120)
	m4 := joinGroup(t, addrs, group, topic, l, protocol...)
	gokit.WaitFor(t, 30*time.Second, "720 records consumed after the restart", func() bool { return l.Count() == 720 })
	m4.stop()
	if dup := l.Twice(); len(dup) > 0 {
		t.Fatalf("%d records delivered twice, e.g. %v", len(dup), dup[:min(5, len(dup))])
	}
	fetched, err := adm.FetchOffsets(gokit.Ctx(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	for p := int32(0); p < parts; p++ {
		if o, ok := fetched.Lookup(topic, p); !ok || o.Err != nil || o.At != 120 {
			t.Errorf("partition %d: committed %+v (found %v), want 120", p, o, ok)
		}
	}
}
