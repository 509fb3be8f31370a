package compat

// Consumer groups (classic protocol) with franz-go: a kgo.ConsumerGroup client consumes and
// commits; after it leaves, a second client in the group resumes exactly at the commits. Two live
// members split a topic's partitions between them.

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newAdmin(t *testing.T, b *broker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if r := resp[topic]; r.Err != nil {
		t.Fatalf("create topic %s: %v", topic, r.Err)
	}
}

// produce writes records n..m-1 (value "p<P>-<i>") to each partition and checks their offsets.
func produce(t *testing.T, b *broker, topic string, partitions int32, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
		var p int32
		var i int
		fmt.Sscanf(string(r.Record.Value), "p%d-%d", &p, &i)
		if r.Record.Partition != p || r.Record.Offset != int64(i) {
			t.Fatalf("record %s landed at partition %d offset %d", r.Record.Value, r.Record.Partition, r.Record.Offset)
		}
	}
}

func groupClient(t *testing.T, b *broker, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// pollUntil polls until `want` records arrived, then `settle` longer to catch any extra ones.
func pollUntil(t *testing.T, cl *kgo.Client, want int, settle time.Duration) []*kgo.Record {
	t.Helper()
	var got []*kgo.Record
	poll := func(deadline time.Time) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		fs := cl.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("fetch error on %s[%d]: %v", topic, p, err)
			}
		})
		got = append(got, fs.Records()...)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: got %d of %d records", len(got), want)
		}
		poll(deadline)
	}
	for end := time.Now().Add(settle); time.Now().Before(end); {
		poll(end)
	}
	return got
}

func offsetsByPartition(recs []*kgo.Record) map[int32][]int64 {
	out := map[int32][]int64{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r.Offset)
	}
	return out
}

func span(from, to int) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, int64(i))
	}
	return s
}

func sameOffsets(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGroupCommitAndResume(t *testing.T) {
	b := suite.Broker
	adm := newAdmin(t, b)
	const topic, group = "go-group-resume", "go-group-resume"
	const parts, perPart = 3, 10
	createTopic(t, adm, topic, parts)
	produce(t, b, topic, parts, 0, perPart)
	// Records processed (and committed) per partition by the first member; partition 2: none.
	processed := map[int32]int{0: 4, 1: 7, 2: 0}

	c1 := groupClient(t, b, group, topic)
	recs := pollUntil(t, c1, parts*perPart, 0)
	byPart := offsetsByPartition(recs)
	for p := int32(0); p < parts; p++ {
		if !sameOffsets(byPart[p], span(0, perPart)) {
			t.Fatalf("first member, partition %d: offsets %v, want 0..%d", p, byPart[p], perPart-1)
		}
	}
	if _, gen := c1.GroupMetadata(); gen < 1 {
		t.Errorf("first member's generation is %d after consuming, want >= 1", gen)
	}
	var toCommit []*kgo.Record
	for _, r := range recs {
		if int(r.Offset) < processed[r.Partition] {
			toCommit = append(toCommit, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c1.CommitRecords(ctx, toCommit...); err != nil {
		t.Fatalf("CommitRecords: %v", err)
	}

	// The live group: Stable, one member, owning all three partitions.
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	g := described[group]
	if g.Err != nil || g.State != "Stable" || len(g.Members) != 1 || g.ProtocolType != "consumer" {
		t.Errorf("described group: state %q, %d members, protocol type %q, err %v; want Stable, 1, consumer",
			g.State, len(g.Members), g.ProtocolType, g.Err)
	}
	if got := described.AssignedPartitions()[topic]; len(got) != parts {
		t.Errorf("described assignment of %s: %v, want all %d partitions", topic, got, parts)
	}
	c1.Close() // leaves the group

	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	for p := int32(0); p < parts; p++ {
		o, ok := fetched.Lookup(topic, p)
		if processed[p] == 0 {
			if ok && o.At >= 0 {
				t.Errorf("partition %d: committed offset %d, but nothing was committed", p, o.At)
			}
			continue
		}
		if !ok || o.Err != nil || o.At != int64(processed[p]) {
			t.Errorf("partition %d: committed offset %+v (found %v), want %d", p, o, ok, processed[p])
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if _, ok := listed[group]; !ok {
		t.Errorf("ListGroups does not show %s: %v", group, listed.Groups())
	}

	c2 := groupClient(t, b, group, topic)
	defer c2.Close()
	want := 0
	for p := int32(0); p < parts; p++ {
		want += perPart - processed[p]
	}
	recs = pollUntil(t, c2, want, time.Second)
	byPart = offsetsByPartition(recs)
	for p := int32(0); p < parts; p++ {
		if !sameOffsets(byPart[p], span(processed[p], perPart)) {
			t.Errorf("second member, partition %d: offsets %v, want exactly %d..%d", p, byPart[p], processed[p], perPart-1)
		}
	}
}

func TestGroupTwoMembersSplitPartitions(t *testing.T) {
	b := suite.Broker
	adm := newAdmin(t, b)
	const topic, group = "go-group-split", "go-group-split"
	const parts = 4
	createTopic(t, adm, topic, parts)

	cooperative := kgo.Balancers(kgo.CooperativeStickyBalancer())
	m1 := joinGroup(t, []string{b.Addr}, group, topic, nil, cooperative)
	m2 := joinGroup(t, []string{b.Addr}, group, topic, nil, cooperative)

	// Settled: each member owns 2 partitions, together all 4, and that held for a second.
	deadline := time.Now().Add(45 * time.Second)
	var last string
	stableSince := time.Now()
	for {
		a, b2 := m1.partitions(), m2.partitions()
		seen := map[int32]int{}
		for _, p := range append(append([]int32{}, a...), b2...) {
			seen[p]++
		}
		ok := len(a) == 2 && len(b2) == 2 && len(seen) == parts
		view := fmt.Sprint(a, b2)
		if !ok || view != last {
			stableSince = time.Now()
		} else if time.Since(stableSince) > time.Second {
			break
		}
		last = view
		if time.Now().After(deadline) {
			t.Fatalf("assignment did not settle to 2+2 disjoint partitions within 45 s: member1 %v, member2 %v", a, b2)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The coordinator's view agrees with the members'.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	g := described[group]
	if g.State != "Stable" || len(g.Members) != 2 || g.Protocol != "cooperative-sticky" {
		t.Fatalf("described group: state %q, %d members, protocol %q; want Stable, 2, cooperative-sticky", g.State, len(g.Members), g.Protocol)
	}
	var fromCoordinator [][]int32
	for _, mem := range g.Members {
		c, ok := mem.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s: assignment is not a consumer assignment", mem.MemberID)
		}
		var ps []int32
		for _, tp := range c.Topics {
			if tp.Topic == topic {
				ps = append(ps, tp.Partitions...)
			}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		fromCoordinator = append(fromCoordinator, ps)
	}
	fromMembers := []string{fmt.Sprint(m1.partitions()), fmt.Sprint(m2.partitions())}
	sort.Strings(fromMembers)
	fc := []string{fmt.Sprint(fromCoordinator[0]), fmt.Sprint(fromCoordinator[1])}
	sort.Strings(fc)
	if fc[0] != fromMembers[0] || fc[1] != fromMembers[1] {
		t.Errorf("DescribeGroups assignments %v differ from the members' own %v", fc, fromMembers)
	}
}
