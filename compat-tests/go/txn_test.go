package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"sluice/compat/gokit"
)

// TestTransactions: a franz-go GroupTransactSession (consume-transform-produce with the group's
// offsets in the transaction, KIP-447) reads an input topic in batches of ten, writes each
// record transformed to an output topic, and ends the batches with commit, abort, commit,
// commit. The abort rewinds the session to the committed offset, so the aborted batch is read
// and written again. A read_committed consumer of the output sees each input record once, in
// order; read_uncommitted sees the aborted batch too; the group's offset is the input's end.
func TestTransactions(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Transactions, "GroupTransactSession: commit, abort, commit with the group's offsets in the txn; read_committed sees only committed")
	addrs := []string{suite.Broker.Addr}
	adm := adminOn(t, addrs)
	in, out, group := gokit.Name("txn-in"), gokit.Name("txn-out"), gokit.Name("txn-group")
	createTopicRF(t, adm, in, 1, 1, nil)
	createTopicRF(t, adm, out, 1, 1, nil)
	produceRoundRobin(t, addrs, in, 1, "in", 40)

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addrs...), kgo.TransactionalID(gokit.Name("franz-txn")),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.SessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	var committed, all []string
	batch := func(name string, commit bool) {
		t.Helper()
		ctx := gokit.Ctx(t, 30*time.Second)
		var recs []*kgo.Record
		for len(recs) < 10 {
			fs := sess.PollRecords(ctx, 10-len(recs))
			if err := fs.Err(); err != nil {
				t.Fatalf("poll for %s: %v", name, err)
			}
			recs = append(recs, fs.Records()...)
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin %s: %v", name, err)
		}
		for _, r := range recs {
			v := "out-" + string(r.Value)
			if err := sess.ProduceSync(ctx, &kgo.Record{Topic: out, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce in %s: %v", name, err)
			}
			all = append(all, v)
			if commit {
				committed = append(committed, v)
			}
		}
		ok, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil || ok != commit {
			t.Fatalf("end %s (commit %v): committed %v, %v", name, commit, ok, err)
		}
	}
	wantOffset := func(want int64) {
		t.Helper()
		fetched, err := adm.FetchOffsets(gokit.Ctx(t, 10*time.Second), group)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := fetched.Lookup(in, 0); !ok || o.Err != nil || o.At != want {
			t.Fatalf("group %s committed %+v (found %v), want %d", group, o, ok, want)
		}
	}
	batch("first", true)
	wantOffset(10)
	batch("aborted", false)
	wantOffset(10)
	batch("second", true)
	batch("third", true)
	wantOffset(30)

	var want []string
	for i := 0; i < 30; i++ {
		want = append(want, fmt.Sprintf("out-in-%d", i))
	}
	if !slices.Equal(committed, want) {
		t.Fatalf("the committed batches wrote %v, want %v (the aborted batch not re-read?)", committed, want)
	}
	if got := values(readPartition(t, addrs, out, 0, len(committed), 30*time.Second, kgo.FetchIsolationLevel(kgo.ReadCommitted()))); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %v, want %v", got, committed)
	}
	if got := values(readPartition(t, addrs, out, 0, len(all), 30*time.Second)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %v, want %v", got, all)
	}
}
