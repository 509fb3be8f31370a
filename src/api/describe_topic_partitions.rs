//! DescribeTopicPartitions (KIP-966): Metadata's view of topics and their partitions,
//! paged, so that a topic with many partitions is described over several requests.
//!
//! Kafka's rules, kept here: topics are answered in name order; a page holds at most
//! `min(max.request.partition.size.limit, response_partition_limit)` partitions; when a
//! topic does not fit, `next_cursor` names the first partition left out (or the next topic,
//! at index 0, when the page filled up exactly at a topic's end). A cursor picks up at its
//! topic and partition; with named topics the cursor's topic must be among them. As in
//! Metadata, topics the client may not DESCRIBE are left out of "all topics" and answer
//! TOPIC_AUTHORIZATION_FAILED (without their id) when named; unknown named topics answer
//! UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an illegal name. Sluice has
//! no eligible leader replicas (KIP-966's ELR), so those lists are empty.

use std::collections::BTreeSet;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
use uuid::Uuid;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::broker::Topic;
use crate::error::Error;
use crate::metadata::names;

pub async fn handle(ctx: &Ctx<'_>, req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    let broker = ctx.broker;
    let all = req.topics.is_empty();
    let cursor_topic = req.cursor.as_ref().map_or(String::new(), |c| c.topic_name.0.to_string());
    let wanted: BTreeSet<String> = if all {
        broker.all_topics().iter().map(|t| t.record.name.clone()).collect()
    } else {
        req.topics.iter().map(|t| t.name.0.to_string()).collect()
    };
    let wanted: BTreeSet<String> = wanted.into_iter().filter(|n| *n >= cursor_topic).collect();
    if !all && req.cursor.is_some() && !wanted.contains(&cursor_topic) {
        // Kafka refuses the request as a whole: every named topic carries the error.
        let e = Error::InvalidRequest(format!("the topic list must contain the cursor topic {cursor_topic}"));
        let topics = req.topics.iter().map(|t| error_entry(&t.name.0, Uuid::nil(), &e)).collect();
        return DescribeTopicPartitionsResponse::default().with_topics(topics);
    }
    let (allowed, denied): (Vec<String>, Vec<String>) = wanted.into_iter().partition(|n| ctx.topic_allowed(Operation::Describe, n));
    // A cursor on a topic the client may not see starts nowhere in particular.
    let first_partition = match &req.cursor {
        Some(c) if ctx.topic_allowed(Operation::Describe, &cursor_topic) => c.partition_index,
        _ => 0,
    };
    let limit = broker.settings().max_request_partition_size_limit.min(req.response_partition_limit);
    let mut remaining = limit;
    let mut topics = Vec::new();
    let mut next_cursor = None;
    for name in allowed {
        if remaining == 0 {
            // The page filled up at the previous topic's end: the next page starts here.
            next_cursor = Some(Cursor::default().with_topic_name(sb(name).into()).with_partition_index(0));
            break;
        }
        if remaining < 0 {
            break;
        }
        let Some(topic) = broker.topic(&name) else {
            if !all {
                let e = match names::validate(&name) {
                    Ok(()) => Error::UnknownTopicOrPartition,
                    Err(why) => Error::InvalidTopic(why),
                };
                topics.push(error_entry(&name, Uuid::nil(), &e));
            }
            continue;
        };
        let start = if name == cursor_topic { first_partition } else { 0 };
        let count = topic.record.partitions;
        let upper = count.min(start.saturating_add(remaining));
        let partitions: Vec<_> = (start.max(0)..upper).map(|i| partition_entry(ctx, &topic, i)).collect();
        remaining -= partitions.len() as i32;
        let done = upper >= count;
        let ops = ctx.authorized_operations(ResourceType::Topic, &name);
        topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(sb(name.clone()).into()))
                .with_topic_id(topic.record.id)
                .with_is_internal(names::is_internal(&name))
                .with_partitions(partitions)
                .with_topic_authorized_operations(ops),
        );
        if !done {
            next_cursor = Some(Cursor::default().with_topic_name(sb(name).into()).with_partition_index(upper));
            break;
        }
    }
    for name in denied.into_iter().filter(|_| !all) {
        topics.push(error_entry(&name, Uuid::nil(), &Error::TopicAuthorizationFailed(name.clone())));
    }
    DescribeTopicPartitionsResponse::default().with_topics(topics).with_next_cursor(next_cursor)
}

fn error_entry(name: &str, id: Uuid, e: &Error) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(e.code())
        .with_name(Some(sb(name).into()))
        .with_topic_id(id)
        .with_is_internal(names::is_internal(name))
}

/// Partition `i` of `topic` as a client on this listener sees it: the leader only if it is
/// live and reachable there (else -1, with no error, as Kafka), replicas and ISR as they
/// are, and the replicas that are fenced, gone or unreachable as offline.
fn partition_entry(ctx: &Ctx<'_>, topic: &Topic, i: i32) -> DescribeTopicPartitionsResponsePartition {
    let img = ctx.broker.cluster.image();
    let reachable = |b: i32| img.live_broker(b).is_some_and(|info| info.endpoint(&ctx.listener).is_some());
    let ids = |v: &[i32]| v.iter().map(|b| (*b).into()).collect::<Vec<_>>();
    let r = DescribeTopicPartitionsResponsePartition::default().with_partition_index(i);
    let Some(st) = usize::try_from(i).ok().and_then(|i| topic.states.get(i)) else {
        return r.with_leader_id((-1).into()).with_leader_epoch(-1);
    };
    let offline: Vec<i32> = st.replicas.iter().copied().filter(|b| !reachable(*b)).collect();
    let leader = if st.leader >= 0 && reachable(st.leader) { st.leader } else { -1 };
    r.with_leader_id(leader.into())
        .with_leader_epoch(st.leader_epoch)
        .with_replica_nodes(ids(&st.replicas))
        .with_isr_nodes(ids(&st.isr))
        .with_eligible_leader_replicas(Some(Vec::new()))
        .with_last_known_elr(Some(Vec::new()))
        .with_offline_replicas(ids(&offline))
}

impl super::response_errors::ErrorCodes for DescribeTopicPartitionsResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        self.topics.iter().for_each(|t| f(t.error_code));
    }
}
