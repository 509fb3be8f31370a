package sarama

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

// member is one sarama ConsumerGroup member that records each message, then marks it; sarama's
// auto-commit commits the marks every second and, with a final flush, whenever the member gives
// up its partitions (rebalance, Close), so a record's mark is committed before anyone else
// could be handed it.
type member struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	ledger *gokit.Ledger

	mu     sync.Mutex
	claims []int32 // the partitions of the current generation
	gens   int     // generations (Setup calls) seen
	err    error
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens++
	m.claims = nil
	for _, ps := range s.Claims() {
		m.claims = append(m.claims, ps...)
	}
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.claims = nil
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			m.ledger.Add(string(msg.Value))
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// state is the member's current partitions and its generation count.
func (m *member) state() ([]int32, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.claims), m.gens
}

func groupConfig() *sarama.Config {
	c := config()
	// A commit waits behind the connection's long-polling fetch (responses go in request
	// order, on Kafka too): a short poll keeps each rebalance's final commit quick.
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	c.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	return c
}

// joinGroup starts a member consuming topic in group until stop.
func joinGroup(t *testing.T, addrs []string, group, topic string, l *gokit.Ledger) *member {
	t.Helper()
	cg, err := sarama.NewConsumerGroup(addrs, group, groupConfig())
	if err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{group: cg, cancel: cancel, done: make(chan struct{}), ledger: l}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, m); err != nil && ctx.Err() == nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop leaves the group (sarama's Close sends LeaveGroup).
func (m *member) stop(t *testing.T) {
	select {
	case <-m.done:
		if m.group == nil {
			return
		}
	default:
		m.cancel()
		<-m.done
	}
	if m.group != nil {
		if err := m.group.Close(); err != nil {
			t.Errorf("close consumer group member: %v", err)
		}
		m.group = nil
	}
	if m.err != nil {
		t.Errorf("consumer group member: %v", m.err)
	}
}

// waitAssigned waits until the members between them hold every partition of the topic, each
// of them at least one.
func waitAssigned(t *testing.T, partitions int, members ...*member) {
	t.Helper()
	gokit.WaitFor(t, 60*time.Second, fmt.Sprintf("%d members to share %d partitions", len(members), partitions), func() bool {
		all := map[int32]bool{}
		for _, m := range members {
			claims, _ := m.state()
			if len(claims) == 0 {
				return false
			}
			for _, p := range claims {
				all[p] = true
			}
		}
		return len(all) == partitions
	})
}

// produceValues sends values prefix-0.. round-robin over the partitions and waits for every ack.
func produceValues(t *testing.T, addrs []string, topic string, partitions int32, prefix string, n int) {
	t.Helper()
	prod, err := sarama.NewSyncProducer(addrs, config())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
}

// TestConsumerGroupOfThree: three sarama ConsumerGroup members share six partitions; one leaves
// and the other two take its partitions over; after every member has gone, a new one resumes at
// the committed offsets. Every record is delivered, none twice, and the group's committed
// offsets end at the log end.
func TestConsumerGroupOfThree(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.GroupOfThree, "ConsumerGroup: 3 join, 1 leaves, rebalance, resume after restart; none missed or twice")
	addrs := []string{suite.Broker.Addr}
	const parts = 6
	topic, group := gokit.Name("group3"), gokit.Name("g3")
	createTopic(t, addrs, config(), topic, parts, 1, nil)
	produceValues(t, addrs, topic, parts, "a", 300)
	l := gokit.NewLedger()

	m1, m2, m3 := joinGroup(t, addrs, group, topic, l), joinGroup(t, addrs, group, topic, l), joinGroup(t, addrs, group, topic, l)
	waitAssigned(t, parts, m1, m2, m3)
	gokit.WaitFor(t, 30*time.Second, "300 records consumed by three members", func() bool { return l.Count() == 300 })

	_, g1 := m1.state()
	_, g2 := m2.state()
	m3.stop(t)
	gokit.WaitFor(t, 30*time.Second, "a rebalance after a member left", func() bool {
		_, n1 := m1.state()
		_, n2 := m2.state()
		return n1 > g1 && n2 > g2
	})
	waitAssigned(t, parts, m1, m2)
	produceValues(t, addrs, topic, parts, "b", 300)
	gokit.WaitFor(t, 30*time.Second, "600 records consumed by two members", func() bool { return l.Count() == 600 })
	m1.stop(t)
	m2.stop(t)

	produceValues(t, addrs, topic, parts, "c", 120)
	m4 := joinGroup(t, addrs, group, topic, l)
	gokit.WaitFor(t, 30*time.Second, "720 records consumed after the restart", func() bool { return l.Count() == 720 })
	m4.stop(t)
	if dup := l.Twice(); len(dup) > 0 {
		t.Fatalf("%d records delivered twice, e.g. %v", len(dup), dup[:min(5, len(dup))])
	}
	checkCommitted(t, addrs, group, topic, parts, map[int32]int64{0: 120, 1: 120, 2: 120, 3: 120, 4: 120, 5: 120})
}

// checkCommitted asserts the group's committed offsets through ClusterAdmin.
func checkCommitted(t *testing.T, addrs []string, group, topic string, parts int32, want map[int32]int64) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin(addrs, config())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var ps []int32
	for p := int32(0); p < parts; p++ {
		ps = append(ps, p)
	}
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		t.Fatalf("list offsets of %s: %v", group, err)
	}
	got := map[int32]int64{}
	for _, p := range ps {
		if b := resp.GetBlock(topic, p); b != nil && b.Offset >= 0 {
			got[p] = b.Offset
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("group %s committed %v, want %v", group, got, want)
	}
}
