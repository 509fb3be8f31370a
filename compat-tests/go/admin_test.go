package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"sluice/compat/gokit"
)

// TestAdmin drives kadm: create a topic with a config (twice: TOPIC_ALREADY_EXISTS), list it,
// describe and incrementally alter its configs, describe the broker's, add partitions; a group
// with committed offsets is listed, described, its offsets and lag fetched, its offsets
// rewritten, and it is deleted; the topic is deleted (twice: UNKNOWN_TOPIC_OR_PARTITION).
func TestAdmin(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Admin, "kadm: create/list/delete topics, describe/alter configs, partitions, groups, offsets and lag")
	addrs := []string{suite.Broker.Addr}
	adm := adminOn(t, addrs)
	topic, group := gokit.Name("admin"), gokit.Name("admin-group")
	retention := "3600000"
	createTopicRF(t, adm, topic, 2, 1, map[string]*string{"retention.ms": &retention})
	again, err := adm.CreateTopic(gokit.Ctx(t, 10*time.Second), 1, 1, nil, topic)
	if err == nil {
		err = again.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating %s twice: %v, want TOPIC_ALREADY_EXISTS", topic, err)
	}

	topics, err := adm.ListTopics(gokit.Ctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics[topic]; !ok || len(d.Partitions) != 2 || d.Partitions.NumReplicas() != 1 || d.IsInternal {
		t.Fatalf("ListTopics has %s as %+v (listed: %v)", topic, d, ok)
	}

	wantConfig(t, adm, topic, "retention.ms", retention)
	wantConfig(t, adm, topic, "cleanup.policy", "delete")
	newRetention := "7200000"
	altered, err := adm.AlterTopicConfigs(gokit.Ctx(t, 10*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &newRetention}}, topic)
	if err == nil {
		_, err = altered.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("AlterTopicConfigs: %v", err)
	}
	wantConfig(t, adm, topic, "retention.ms", newRetention)
	brokers, err := adm.DescribeBrokerConfigs(gokit.Ctx(t, 10*time.Second))
	if err != nil || len(brokers) != 1 || brokers[0].Err != nil || len(brokers[0].Configs) == 0 {
		t.Fatalf("DescribeBrokerConfigs: %v %+v", err, brokers)
	}

	grown, err := adm.CreatePartitions(gokit.Ctx(t, 10*time.Second), 1, topic)
	if err == nil {
		err = grown[topic].Err
	}
	if err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	gokit.WaitFor(t, 20*time.Second, "3 partitions", func() bool {
		m, err := adm.Metadata(gokit.Ctx(t, 5*time.Second), topic)
		return err == nil && len(m.Topics[topic].Partitions) == 3
	})

	// A group with committed offsets: one member consumes every record, then leaves.
	produceRoundRobin(t, addrs, topic, 3, "adm", 30)
	l := gokit.NewLedger()
	m := joinGroup(t, addrs, group, topic, l)
	gokit.WaitFor(t, 30*time.Second, "30 records consumed", func() bool { return l.Count() == 30 })
	m.stop()
	listed, err := adm.ListGroups(gokit.Ctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.ProtocolType != "consumer" || g.State != "Empty" {
		t.Fatalf("ListGroups has %s as %+v (listed: %v)", group, g, ok)
	}
	described, err := adm.DescribeGroups(gokit.Ctx(t, 10*time.Second), group)
	if err != nil || described[group].Err != nil || described[group].State != "Empty" || len(described[group].Members) != 0 {
		t.Fatalf("DescribeGroups: %v %+v", err, described[group])
	}
	wantCommitted(t, adm, group, topic, map[int32]int64{0: 10, 1: 10, 2: 10})
	lags, err := adm.Lag(gokit.Ctx(t, 10*time.Second), group)
	if lag := lags[group]; err != nil || lag.Error() != nil || lag.Lag.Total() != 0 {
		t.Fatalf("Lag: %v %+v", err, lag)
	}

	// Rewind the group (the group is empty, so the coordinator accepts a plain commit).
	var rewind kadm.Offsets
	rewind.AddOffset(topic, 1, 4, -1)
	if err := adm.CommitAllOffsets(gokit.Ctx(t, 10*time.Second), group, rewind); err != nil {
		t.Fatalf("CommitAllOffsets: %v", err)
	}
	wantCommitted(t, adm, group, topic, map[int32]int64{0: 10, 1: 4, 2: 10})
	if lags, err = adm.Lag(gokit.Ctx(t, 10*time.Second), group); err != nil || lags[group].Lag.Total() != 6 {
		t.Fatalf("Lag after the rewind: %v, total %d, want 6", err, lags[group].Lag.Total())
	}

	deleted, err := adm.DeleteGroup(gokit.Ctx(t, 10*time.Second), group)
	if err == nil {
		err = deleted.Err
	}
	if err != nil {
		t.Fatalf("DeleteGroup: %v", err)
	}
	if listed, err = adm.ListGroups(gokit.Ctx(t, 10*time.Second)); err != nil || listed[group].Group != "" {
		t.Fatalf("after DeleteGroup, ListGroups: %v %v", err, listed[group])
	}

	gone, err := adm.DeleteTopic(gokit.Ctx(t, 10*time.Second), topic)
	if err == nil {
		err = gone.Err
	}
	if err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	gokit.WaitFor(t, 20*time.Second, topic+" gone", func() bool {
		topics, err := adm.ListTopics(gokit.Ctx(t, 5*time.Second))
		return err == nil && !topics.Has(topic)
	})
	if gone, err = adm.DeleteTopic(gokit.Ctx(t, 10*time.Second), topic); err == nil {
		err = gone.Err
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting %s twice: %v, want UNKNOWN_TOPIC_OR_PARTITION", topic, err)
	}
}

// wantConfig asserts one topic config's value through DescribeTopicConfigs.
func wantConfig(t *testing.T, adm *kadm.Client, topic, name, want string) {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(gokit.Ctx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, err)
	}
	r, err := rc.On(topic, nil)
	if err != nil || r.Err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v %v", topic, err, r.Err)
	}
	for _, c := range r.Configs {
		if c.Key == name {
			if c.Value == nil || *c.Value != want {
				t.Fatalf("DescribeTopicConfigs %s: %s = %v, want %q", topic, name, c.MaybeValue(), want)
			}
			return
		}
	}
	t.Fatalf("DescribeTopicConfigs %s: no %s among %d entries", topic, name, len(r.Configs))
}

// wantCommitted asserts the group's committed offsets of topic through FetchOffsets.
func wantCommitted(t *testing.T, adm *kadm.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	fetched, err := adm.FetchOffsets(gokit.Ctx(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	for p, at := range want {
		if o, ok := fetched.Lookup(topic, p); !ok || o.Err != nil || o.At != at {
			t.Fatalf("group %s, partition %d: committed %+v (found %v), want %d", group, p, o, ok, at)
		}
	}
}
