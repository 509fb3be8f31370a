//! Metadata and DescribeCluster: what this one-broker cluster looks like.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::broker::{Broker, Topic};
use crate::error::Error;
use crate::metadata::names;

/// The Metadata entry for an existing topic.
pub(crate) fn topic_entry(broker: &Broker, t: &Topic) -> MetadataResponseTopic {
    let node = broker.identity.node_id;
    let partitions = t
        .partitions
        .iter()
        .map(|p| {
            MetadataResponsePartition::default()
                .with_partition_index(p.index)
                .with_leader_id(node.into())
                .with_leader_epoch(p.leader_epoch())
                .with_replica_nodes(vec![node.into()])
                .with_isr_nodes(vec![node.into()])
                .with_offline_replicas(vec![])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(sb(t.record.name.clone()).into()))
        .with_topic_id(t.record.id)
        .with_is_internal(names::is_internal(&t.record.name))
        .with_partitions(partitions)
}

fn error_entry(name: Option<String>, id: uuid::Uuid, e: &Error) -> MetadataResponseTopic {
    MetadataResponseTopic::default().with_error_code(e.code()).with_name(name.map(|n| sb(n).into())).with_topic_id(id)
}

pub async fn handle(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
    let broker = ctx.broker;
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && ctx.version == 0,
    };
    let allow_auto = ctx.version < 4 || req.allow_auto_topic_creation;
    let topics = if all {
        broker.all_topics().iter().map(|t| topic_entry(broker, t)).collect()
    } else {
        req.topics
            .unwrap_or_default()
            .into_iter()
            .map(|rt| match rt.name {
                Some(name) => {
                    let name = name.0.to_string();
                    if let Err(e) = names::validate(&name) {
                        return error_entry(Some(name), uuid::Uuid::nil(), &Error::InvalidTopic(e));
                    }
                    let found =
                        if allow_auto { broker.auto_create(&name) } else { broker.topic(&name).ok_or(Error::UnknownTopicOrPartition) };
                    match found {
                        Ok(t) => topic_entry(broker, &t),
                        Err(e) => error_entry(Some(name), uuid::Uuid::nil(), &e),
                    }
                }
                None => match broker.topic_by_id(rt.topic_id) {
                    Some(t) => topic_entry(broker, &t),
                    None => error_entry(None, rt.topic_id, &Error::UnknownTopicId),
                },
            })
            .collect()
    };
    let id = &broker.identity;
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(id.node_id.into())
            .with_host(sb(id.host.clone()))
            .with_port(id.port)])
        .with_cluster_id(Some(sb(broker.cluster_id.clone())))
        .with_controller_id(id.node_id.into())
        .with_topics(topics)
}

pub async fn describe_cluster(ctx: &Ctx<'_>, req: DescribeClusterRequest) -> DescribeClusterResponse {
    let id = &ctx.broker.identity;
    let resp = DescribeClusterResponse::default().with_cluster_id(sb(ctx.broker.cluster_id.clone()));
    // Endpoint type 1 is brokers; 2 (controllers) only exists on the controller listener.
    if ctx.version >= 1 && req.endpoint_type != 1 {
        return resp
            .with_error_code(Error::UnsupportedEndpointType(req.endpoint_type).code())
            .with_error_message(Some(sb("this listener only describes brokers")))
            .with_endpoint_type(req.endpoint_type)
            .with_controller_id((-1).into());
    }
    resp.with_endpoint_type(1).with_controller_id(id.node_id.into()).with_brokers(vec![DescribeClusterBroker::default()
        .with_broker_id(id.node_id.into())
        .with_host(sb(id.host.clone()))
        .with_port(id.port)])
}
