package kafkago

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"sluice/compat/gokit"
)

// member is a group Reader whose every message is recorded, then committed synchronously
// (ReadMessage with CommitInterval 0), so a delivered record is committed before the next read.
type member struct {
	r    *kafka.Reader
	done chan error
}

func joinGroup(t *testing.T, addrs []string, group, topic string, l *gokit.Ledger) *member {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: addrs, GroupID: group, Topic: topic,
		MaxWait: 100 * time.Millisecond, HeartbeatInterval: 300 * time.Millisecond,
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 5 * time.Second, StartOffset: kafka.FirstOffset})
	m := &member{r: r, done: make(chan error, 1)}
	go func() {
		for {
			msg, err := r.ReadMessage(context.Background())
			if err != nil {
				m.done <- err
				return
			}
			l.Add(string(msg.Value))
		}
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// stop closes the Reader, which leaves the group.
func (m *member) stop(t *testing.T) {
	if m.r == nil {
		return
	}
	if err := m.r.Close(); err != nil {
		t.Errorf("close reader: %v", err)
	}
	if err := <-m.done; !errors.Is(err, io.EOF) {
		t.Errorf("reader ended with %v", err)
	}
	m.r = nil
}

// assignments is the group's members' partition counts, as DescribeGroups tells them.
func assignments(cl *kafka.Client, group string) (members, partitions []int) {
	resp, err := cl.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].GroupState != "Stable" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, m := range resp.Groups[0].Members {
		n := 0
		for _, tp := range m.MemberAssignments.Topics {
			n += len(tp.Partitions)
			for _, p := range tp.Partitions {
				seen[p] = true
			}
		}
		members = append(members, n)
	}
	for p := range seen {
		partitions = append(partitions, p)
	}
	return members, partitions
}

func waitShared(t *testing.T, cl *kafka.Client, group string, nMembers, nParts int) {
	t.Helper()
	gokit.WaitFor(t, 60*time.Second, fmt.Sprintf("%d members sharing %d partitions", nMembers, nParts), func() bool {
		members, parts := assignments(cl, group)
		for _, n := range members {
			if n == 0 {
				return false
			}
		}
		return len(members) == nMembers && len(parts) == nParts
	})
}

func produce(t *testing.T, addrs []string, topic, prefix string, n int) {
	t.Helper()
	w := writer(addrs, topic, nil)
	defer w.Close()
	var msgs []kafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, kafka.Message{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	if err := w.WriteMessages(gokit.Ctx(t, 30*time.Second), msgs...); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
}

// TestConsumerGroupOfThree: three group Readers share six partitions; one leaves and the two
// others take its partitions over; after all have gone, a new one resumes at the committed
// offsets. Every record is delivered, none twice, and the committed offsets end at the log end.
func TestConsumerGroupOfThree(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.GroupOfThree, "Reader with GroupID: 3 join, 1 leaves, rebalance, resume after restart; none missed or twice")
	addrs := []string{suite.Broker.Addr}
	cl := admin(addrs, nil)
	topic, group := gokit.Name("group3"), gokit.Name("g3")
	createTopic(t, cl, topic, 6, 1)
	produce(t, addrs, topic, "a", 300)
	l := gokit.NewLedger()
	m1, m2, m3 := joinGroup(t, addrs, group, topic, l), joinGroup(t, addrs, group, topic, l), joinGroup(t, addrs, group, topic, l)
	waitShared(t, cl, group, 3, 6)
	gokit.WaitFor(t, 30*time.Second, "300 records consumed", func() bool { return l.Count() == 300 })
	m3.stop(t)
	waitShared(t, cl, group, 2, 6)
	produce(t, addrs, topic, "b", 300)
	gokit.WaitFor(t, 30*time.Second, "600 records consumed by two members", func() bool { return l.Count() == 600 })
	m1.stop(t)
	m2.stop(t)
	produce(t, addrs, topic, "c", 120)
	m4 := joinGroup(t, addrs, group, topic, l)
	gokit.WaitFor(t, 30*time.Second, "720 records consumed after the restart", func() bool { return l.Count() == 720 })
	m4.stop(t)
	if dup := l.Twice(); len(dup) > 0 {
		t.Fatalf("%d records delivered twice, e.g. %v", len(dup), dup[:min(5, len(dup))])
	}
	checkCommitted(t, cl, group, topic, map[int]int64{0: 120, 1: 120, 2: 120, 3: 120, 4: 120, 5: 120})
}

// checkCommitted asserts the group's committed offsets through Client.OffsetFetch.
func checkCommitted(t *testing.T, cl *kafka.Client, group, topic string, want map[int]int64) {
	t.Helper()
	var ps []int
	for p := range want {
		ps = append(ps, p)
	}
	resp, err := cl.OffsetFetch(gokit.Ctx(t, 10*time.Second), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil || resp.Error != nil {
		t.Fatalf("offset fetch %s: %v %v", group, err, resp)
	}
	got := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		got[p.Partition] = p.CommittedOffset
	}
	for p, off := range want {
		if got[p] != off {
			t.Fatalf("group %s committed %v, want %v", group, got, want)
		}
	}
}
