//! AdminClient: topics, configs, partitions, groups and their offsets.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use crate::{config, ctx, group, unique, Outcome};

pub const NOTE: &str = "AdminClient: create/delete topics, describe/alter configs, partitions; group list, committed offsets, delete group";

fn client(bootstrap: &str) -> Result<AdminClient<DefaultClientContext>, String> {
    ctx(config(bootstrap, &[]).create(), "admin client")
}

fn opts() -> AdminOptions {
    AdminOptions::new().operation_timeout(Some(Duration::from_secs(20)))
}

/// Creates a topic (replication factor 1) with configs and waits until it is in metadata.
pub async fn create_topic(bootstrap: &str, topic: &str, partitions: i32, configs: &[(&str, &str)]) -> Outcome {
    let adm = client(bootstrap)?;
    let mut t = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        t = t.set(k, v);
    }
    let res = ctx(adm.create_topics([&t], &opts()).await, "create_topics")?;
    if let Some(Err((name, code))) = res.into_iter().next() {
        return Err(format!("create topic {name}: {code}"));
    }
    wait_partitions(&adm, topic, partitions).await
}

async fn wait_partitions(adm: &AdminClient<DefaultClientContext>, topic: &str, n: i32) -> Outcome {
    for _ in 0..100 {
        if let Ok(md) = adm.inner().fetch_metadata(Some(topic), Duration::from_secs(5)) {
            if md.topics().first().is_some_and(|t| {
                t.error().is_none() && t.partitions().len() == n as usize && t.partitions().iter().all(|p| p.leader() >= 0)
            }) {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!("{topic} did not have {n} led partitions within 20 s"))
}

async fn config_value(adm: &AdminClient<DefaultClientContext>, topic: &str, name: &str) -> Result<Option<String>, String> {
    let res = ctx(adm.describe_configs([&ResourceSpecifier::Topic(topic)], &opts()).await, "describe_configs")?;
    let resource = res.into_iter().next().ok_or("no describe_configs result")?.map_err(|c| format!("describe_configs {topic}: {c}"))?;
    Ok(resource.get(name).and_then(|e| e.value.clone()))
}

pub async fn admin(bootstrap: String) -> Outcome {
    let adm = client(&bootstrap)?;
    let (topic, group) = (unique("admin"), unique("admin-group"));
    create_topic(&bootstrap, &topic, 2, &[("retention.ms", "3600000")]).await?;
    let again = ctx(adm.create_topics([&NewTopic::new(&topic, 1, TopicReplication::Fixed(1))], &opts()).await, "create_topics")?;
    if !matches!(again.first(), Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists)))) {
        return Err(format!("creating {topic} twice: {again:?}, want TOPIC_ALREADY_EXISTS"));
    }
    for (name, want) in [("retention.ms", "3600000"), ("cleanup.policy", "delete")] {
        let got = config_value(&adm, &topic, name).await?;
        if got.as_deref() != Some(want) {
            return Err(format!("{topic}: {name} = {got:?}, want {want}"));
        }
    }
    let alter = AlterConfig::new(ResourceSpecifier::Topic(&topic)).set("retention.ms", "7200000");
    let altered = ctx(adm.alter_configs([&alter], &opts()).await, "alter_configs")?;
    if let Some(Err((_, code))) = altered.first() {
        return Err(format!("alter_configs {topic}: {code}"));
    }
    let got = config_value(&adm, &topic, "retention.ms").await?;
    if got.as_deref() != Some("7200000") {
        return Err(format!("after alter_configs, retention.ms = {got:?}"));
    }
    let grown = ctx(adm.create_partitions([&NewPartitions::new(&topic, 3)], &opts()).await, "create_partitions")?;
    if let Some(Err((_, code))) = grown.first() {
        return Err(format!("create_partitions {topic}: {code}"));
    }
    wait_partitions(&adm, &topic, 3).await?;

    // A group with committed offsets: 10 records on each partition, a commit of their end.
    group::produce(&bootstrap, &topic, 3, "adm", 30).await?;
    let member: StreamConsumer = ctx(config(&bootstrap, &[("group.id", &group), ("enable.auto.commit", "false")]).create(), "member")?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        ctx(tpl.add_partition_offset(&topic, p, Offset::Offset(10)), "offset")?;
    }
    ctx(member.commit(&tpl, rdkafka::consumer::CommitMode::Sync), "commit")?;
    let groups = ctx(adm.inner().fetch_group_list(Some(&group), Duration::from_secs(10)), "fetch_group_list")?;
    let listed = groups.groups().iter().find(|g| g.name() == group).map(|g| (g.state().to_string(), g.protocol_type().to_string()));
    if listed.as_ref().map(|(s, _)| s.as_str()) != Some("Empty") {
        return Err(format!("fetch_group_list has {group} as {listed:?}, want Empty"));
    }
    let mut want = TopicPartitionList::new();
    for p in 0..3 {
        want.add_partition(&topic, p);
    }
    let got = ctx(member.committed_offsets(want, Duration::from_secs(10)), "committed offsets")?;
    if got.elements().iter().any(|e| e.offset() != Offset::Offset(10)) || got.count() != 3 {
        return Err(format!("committed offsets of {group}: {got:?}, want 10 on each of 3 partitions"));
    }
    drop(member);
    let deleted = ctx(adm.delete_groups(&[&group], &opts()).await, "delete_groups")?;
    if let Some(Err((_, code))) = deleted.first() {
        return Err(format!("delete_groups {group}: {code}"));
    }

    let gone = ctx(adm.delete_topics(&[&topic], &opts()).await, "delete_topics")?;
    if let Some(Err((_, code))) = gone.first() {
        return Err(format!("delete_topics {topic}: {code}"));
    }
    let twice = ctx(adm.delete_topics(&[&topic], &opts()).await, "delete_topics")?;
    if !matches!(twice.first(), Some(Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)))) {
        return Err(format!("deleting {topic} twice: {twice:?}, want UNKNOWN_TOPIC_OR_PARTITION"));
    }
    Ok(())
}
