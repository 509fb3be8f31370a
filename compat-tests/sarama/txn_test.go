package sarama

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

// TestTransactions: sarama's transactional producer commits one transaction, aborts one and
// commits another, each carrying a consumer-group offset (AddMessageToTxn). A read_committed
// consumer sees only the committed records; read_uncommitted sees the aborted ones too; the
// group's offset is the one of the last committed transaction, not the aborted one's.
func TestTransactions(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Transactions, "commit, abort, commit with offsets in the txn; read_committed sees only committed")
	addrs := []string{suite.Broker.Addr}
	topic, group := gokit.Name("txn"), gokit.Name("txn-group")
	createTopic(t, addrs, config(), topic, 1, 1, nil)
	c := config()
	c.Producer.Idempotent = true
	c.Producer.Transaction.ID = gokit.Name("sarama-txn")
	c.Net.MaxOpenRequests = 1
	c.Producer.Retry.Max = 10
	prod, err := sarama.NewSyncProducer(addrs, c)
	if err != nil {
		t.Fatalf("transactional producer: %v", err)
	}
	defer prod.Close()

	var committed, all []string
	txn := func(name string, commit bool, groupOffset int64) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("begin %s: %v", name, err)
		}
		for i := 0; i < 10; i++ {
			v := fmt.Sprintf("%s-%d", name, i)
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("send in %s: %v", name, err)
			}
			all = append(all, v)
			if commit {
				committed = append(committed, v)
			}
		}
		// As a consume-transform-produce loop does: the input's offset commits with the output.
		if err := prod.AddMessageToTxn(&sarama.ConsumerMessage{Topic: topic, Partition: 0, Offset: groupOffset - 1}, group, nil); err != nil {
			t.Fatalf("offsets in %s: %v", name, err)
		}
		end := prod.CommitTxn
		if !commit {
			end = prod.AbortTxn
		}
		if err := end(); err != nil {
			t.Fatalf("end %s: %v", name, err)
		}
	}
	txn("first", true, 5)
	txn("aborted", false, 15)
	txn("second", true, 25)

	rc := config()
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	if got := values(consumeAll(t, addrs, rc, topic, 0, len(committed), 30*time.Second)); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %v, want %v", got, committed)
	}
	if got := values(consumeAll(t, addrs, config(), topic, 0, len(all), 30*time.Second)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted read %v, want %v", got, all)
	}
	checkCommitted(t, addrs, group, topic, 1, map[int32]int64{0: 25})
}

func values(msgs []*sarama.ConsumerMessage) []string {
	var vs []string
	for _, m := range msgs {
		vs = append(vs, string(m.Value))
	}
	return vs
}
