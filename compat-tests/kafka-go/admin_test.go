package kafkago

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"sluice/compat/gokit"
)

// TestAdminClient drives kafka-go's Client: create a topic with a config (and again: an error),
// describe and alter its configs, add partitions, list and describe a group with its committed
// offsets, delete the group and the topic.
func TestAdminClient(t *testing.T) {
	suite.Matrix.Scenario(t, gokit.Admin, "Client: create/delete topics, describe/alter configs, partitions, list/describe/delete groups, offsets")
	addrs := []string{suite.Broker.Addr}
	cl := admin(addrs, nil)
	topic, group := gokit.Name("admin"), gokit.Name("admin-group")
	createTopic(t, cl, topic, 2, 1, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: "3600000"})
	again, err := cl.CreateTopics(gokit.Ctx(t, 10*time.Second), &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil || !errors.Is(again.Errors[topic], kafka.TopicAlreadyExists) {
		t.Fatalf("creating %s twice: %v %v, want TOPIC_ALREADY_EXISTS", topic, err, again.Errors)
	}
	wantConfig(t, cl, topic, "retention.ms", "3600000")
	wantConfig(t, cl, topic, "cleanup.policy", "delete")
	alt, err := cl.IncrementalAlterConfigs(gokit.Ctx(t, 10*time.Second), &kafka.IncrementalAlterConfigsRequest{
		Resources: []kafka.IncrementalAlterConfigsRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "7200000", ConfigOperation: kafka.ConfigOperationSet}}}}})
	if err != nil || len(alt.Resources) != 1 || alt.Resources[0].Error != nil {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, alt)
	}
	wantConfig(t, cl, topic, "retention.ms", "7200000")
	cp, err := cl.CreatePartitions(gokit.Ctx(t, 10*time.Second), &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 3}}})
	if err != nil || cp.Errors[topic] != nil {
		t.Fatalf("CreatePartitions: %v %v", err, cp)
	}
	gokit.WaitFor(t, 20*time.Second, "3 partitions", func() bool {
		m, err := cl.Metadata(gokit.Ctx(t, 5*time.Second), &kafka.MetadataRequest{Topics: []string{topic}})
		return err == nil && len(m.Topics) == 1 && len(m.Topics[0].Partitions) == 3
	})

	produce(t, addrs, topic, "adm", 30)
	l := gokit.NewLedger()
	m := joinGroup(t, addrs, group, topic, l)
	gokit.WaitFor(t, 30*time.Second, "30 records consumed", func() bool { return l.Count() == 30 })
	m.stop(t)
	lg, err := cl.ListGroups(gokit.Ctx(t, 10*time.Second), &kafka.ListGroupsRequest{})
	if err != nil || lg.Error != nil {
		t.Fatalf("ListGroups: %v %v", err, lg)
	}
	found := false
	for _, g := range lg.Groups {
		found = found || (g.GroupID == group && g.ProtocolType == "consumer")
	}
	if !found {
		t.Fatalf("ListGroups has no consumer group %s: %+v", group, lg.Groups)
	}
	dg, err := cl.DescribeGroups(gokit.Ctx(t, 10*time.Second), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(dg.Groups) != 1 || dg.Groups[0].GroupState != "Empty" {
		t.Fatalf("DescribeGroups: %v %+v", err, dg)
	}
	checkCommitted(t, cl, group, topic, map[int]int64{0: 10, 1: 10, 2: 10})
	del, err := cl.DeleteGroups(gokit.Ctx(t, 10*time.Second), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil || del.Errors[group] != nil {
		t.Fatalf("DeleteGroups: %v %v", err, del)
	}

	dt, err := cl.DeleteTopics(gokit.Ctx(t, 10*time.Second), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || dt.Errors[topic] != nil {
		t.Fatalf("DeleteTopics: %v %v", err, dt)
	}
	dt, err = cl.DeleteTopics(gokit.Ctx(t, 10*time.Second), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || !errors.Is(dt.Errors[topic], kafka.UnknownTopicOrPartition) {
		t.Fatalf("deleting %s twice: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", topic, err, dt.Errors)
	}
}

// wantConfig asserts one topic config's value through DescribeConfigs.
func wantConfig(t *testing.T, cl *kafka.Client, topic, name, want string) {
	t.Helper()
	resp, err := cl.DescribeConfigs(gokit.Ctx(t, 10*time.Second), &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{name}}}})
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].Error != nil {
		t.Fatalf("DescribeConfigs %s: %v %+v", topic, err, resp)
	}
	for _, e := range resp.Resources[0].ConfigEntries {
		if e.ConfigName == name {
			if e.ConfigValue != want {
				t.Fatalf("DescribeConfigs %s: %s = %q, want %q", topic, name, e.ConfigValue, want)
			}
			return
		}
	}
	t.Fatalf("DescribeConfigs %s: no %s", topic, name)
}
