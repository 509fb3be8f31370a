package sarama

import (
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"sluice/compat/gokit"
)

// TestClusterAdmin drives sarama's ClusterAdmin: create a topic with a config, list and
// describe it, describe and alter its configs, add partitions, list and describe a group with
// its committed offsets, delete the group and the topic.
func TestClusterAdmin(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Admin, "ClusterAdmin: create/list/delete topics, describe/alter configs, partitions, groups and offsets")
	addrs := []string{suite.Broker.Addr}
	adm, err := sarama.NewClusterAdmin(addrs, config())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	topic, group := gokit.Name("admin"), gokit.Name("admin-group")
	retention := "3600000"
	createTopic(t, addrs, config(), topic, 2, 1, map[string]*string{"retention.ms": &retention})
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err == nil {
		t.Fatalf("creating %s twice succeeded", topic)
	} else if !isKError(err, sarama.ErrTopicAlreadyExists) {
		t.Fatalf("creating %s twice: %v, want TOPIC_ALREADY_EXISTS", topic, err)
	}

	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 2 || d.ReplicationFactor != 1 {
		t.Fatalf("ListTopics has %s as %+v (listed: %v)", topic, d, ok)
	}
	meta, err := adm.DescribeTopics([]string{topic})
	if err != nil || len(meta) != 1 || len(meta[0].Partitions) != 2 || meta[0].Err != sarama.ErrNoError {
		t.Fatalf("DescribeTopics: %v %+v", err, meta)
	}

	wantConfig(t, adm, topic, "retention.ms", retention)
	wantConfig(t, adm, topic, "cleanup.policy", "delete")
	newRetention := "7200000"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &newRetention},
	}, false); err != nil {
		t.Fatalf("IncrementalAlterConfig: %v", err)
	}
	wantConfig(t, adm, topic, "retention.ms", newRetention)

	if err := adm.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	gokit.WaitFor(t, 20*time.Second, "3 partitions", func() bool {
		meta, err := adm.DescribeTopics([]string{topic})
		return err == nil && len(meta) == 1 && len(meta[0].Partitions) == 3
	})

	// A group with committed offsets: one member consumes partition 0..2's records and leaves.
	produceValues(t, addrs, topic, 3, "adm", 30)
	l := gokit.NewLedger()
	m := joinGroup(t, addrs, group, topic, l)
	gokit.WaitFor(t, 30*time.Second, "30 records consumed", func() bool { return l.Count() == 30 })
	m.stop(t)
	groups, err := adm.ListConsumerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if groups[group] != "consumer" {
		t.Fatalf("ListConsumerGroups has %s as %q: %v", group, groups[group], groups)
	}
	descs, err := adm.DescribeConsumerGroups([]string{group})
	if err != nil || len(descs) != 1 || descs[0].State != "Empty" || descs[0].ProtocolType != "consumer" {
		t.Fatalf("DescribeConsumerGroups: %v %+v", err, descs)
	}
	checkCommitted(t, addrs, group, topic, 3, map[int32]int64{0: 10, 1: 10, 2: 10})
	if err := adm.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("DeleteConsumerGroup: %v", err)
	}
	groups, err = adm.ListConsumerGroups()
	if _, still := groups[group]; err != nil || still {
		t.Fatalf("after DeleteConsumerGroup, ListConsumerGroups: %v %v", err, groups)
	}

	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	gokit.WaitFor(t, 20*time.Second, topic+" gone", func() bool {
		topics, err := adm.ListTopics()
		_, still := topics[topic]
		return err == nil && !still
	})
	if err := adm.DeleteTopic(topic); !isKError(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("deleting %s twice: %v, want UNKNOWN_TOPIC_OR_PARTITION", topic, err)
	}
}

// wantConfig asserts one topic config's value through DescribeConfig.
func wantConfig(t *testing.T, adm sarama.ClusterAdmin, topic, name, want string) {
	t.Helper()
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig %s: %v", topic, err)
	}
	i := slices.IndexFunc(entries, func(e sarama.ConfigEntry) bool { return e.Name == name })
	if i < 0 {
		t.Fatalf("DescribeConfig %s: no %s among %d entries", topic, name, len(entries))
	}
	if entries[i].Value != want {
		t.Fatalf("DescribeConfig %s: %s = %q, want %q", topic, name, entries[i].Value, want)
	}
}

// isKError says whether err is (or wraps, as sarama's TopicError does) the Kafka error code.
func isKError(err error, code sarama.KError) bool {
	if err == nil {
		return false
	}
	if te, ok := err.(*sarama.TopicError); ok {
		return te.Err == code
	}
	return err == code || err.Error() == code.Error()
}
