//! OffsetForLeaderEpoch (where an epoch ends) and ElectLeaders (preferred or unclean).

use std::time::Duration;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::{Request, Response};
use crate::error::Error;

pub async fn offset_for_leader_epoch(ctx: &Ctx<'_>, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    // Kafka: a follower (replica id set, v3+) needs CLUSTER_ACTION; a client DESCRIBE on each topic.
    let follower_allowed = ctx.version < 3 || req.replica_id.0 < 0 || ctx.cluster_allowed(Operation::ClusterAction);
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let allowed = if follower_allowed && (req.replica_id.0 >= 0 && ctx.version >= 3) {
                Ok(())
            } else if follower_allowed {
                ctx.check_topic(Operation::Describe, &t.topic.0)
            } else {
                Err(Error::TopicAuthorizationFailed(t.topic.0.to_string()))
            };
            let topic = allowed.and_then(|()| ctx.broker.topic(&t.topic.0).ok_or(Error::UnknownTopicOrPartition));
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let r = EpochEndOffset::default().with_partition(p.partition);
                    let result = topic.as_ref().map_err(Clone::clone).and_then(|tp| tp.get(p.partition)).and_then(|part| {
                        part.check_current_epoch(p.current_leader_epoch)?;
                        Ok(part.end_offset_for_epoch(p.leader_epoch))
                    });
                    match result {
                        Ok((epoch, end)) => r.with_leader_epoch(epoch).with_end_offset(end),
                        Err(e) => r.with_error_code(e.code()).with_leader_epoch(-1).with_end_offset(-1),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default().with_topic(t.topic).with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

pub async fn elect_leaders(ctx: &Ctx<'_>, req: ElectLeadersRequest) -> ElectLeadersResponse {
    const PREFERRED: i8 = 0;
    const UNCLEAN: i8 = 1;
    let preferred = match req.election_type {
        PREFERRED => true,
        UNCLEAN => false,
        other => {
            let e = Error::InvalidRequest(format!("unknown election type {other}"));
            return ElectLeadersResponse::default().with_error_code(if ctx.version >= 1 { e.code() } else { 0 });
        }
    };
    let wanted: Option<Vec<(String, i32)>> = req
        .topic_partitions
        .map(|tps| tps.into_iter().flat_map(|t| t.partitions.into_iter().map(move |p| (t.topic.0.to_string(), p))).collect());
    let timeout = Duration::from_millis(if req.timeout_ms > 0 { req.timeout_ms as u64 } else { 30_000 });
    // Kafka: ALTER on the cluster.
    let outcome = match ctx.check_cluster(Operation::Alter) {
        Ok(()) => ctx.broker.submit(Request::ElectLeaders { preferred, partitions: wanted.clone() }, Some(timeout)).await,
        Err(e) => Err(e),
    };
    let results: Vec<(String, i32, Result<(), Error>)> = match outcome {
        Ok(Response::Elected { results, .. }) => results,
        Ok(other) => {
            let e = Error::InvalidRequest(format!("unexpected controller answer {other:?}"));
            wanted.unwrap_or_default().into_iter().map(|(t, p)| (t, p, Err(e.clone()))).collect()
        }
        Err(e) => {
            if wanted.is_none() {
                return ElectLeadersResponse::default().with_error_code(if ctx.version >= 1 { e.code() } else { 0 });
            }
            wanted.unwrap_or_default().into_iter().map(|(t, p)| (t, p, Err(e.clone()))).collect()
        }
    };
    let mut by_topic: Vec<ReplicaElectionResult> = Vec::new();
    for (topic, partition, r) in results {
        let pr = match r {
            Ok(()) => PartitionResult::default().with_partition_id(partition),
            Err(e) => {
                PartitionResult::default().with_partition_id(partition).with_error_code(e.code()).with_error_message(Some(sb(e.message())))
            }
        };
        match by_topic.iter_mut().find(|t| *t.topic.0 == *topic) {
            Some(t) => t.partition_result.push(pr),
            None => by_topic.push(ReplicaElectionResult::default().with_topic(sb(topic).into()).with_partition_result(vec![pr])),
        }
    }
    ElectLeadersResponse::default().with_replica_election_results(by_topic)
}
