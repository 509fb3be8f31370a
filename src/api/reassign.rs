//! AlterPartitionReassignments and ListPartitionReassignments.

use std::time::Duration;

use kafka_protocol::messages::alter_partition_reassignments_response::{ReassignablePartitionResponse, ReassignableTopicResponse};
use kafka_protocol::messages::list_partition_reassignments_response::{OngoingPartitionReassignment, OngoingTopicReassignment};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::{Request, Response};
use crate::error::Error;

pub async fn alter(ctx: &Ctx<'_>, req: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse {
    // v1 lets the client forbid a change of replication factor.
    let allow_rf_change = ctx.version < 1 || req.allow_replication_factor_change;
    // Kafka: ALTER on the cluster.
    if let Err(e) = ctx.check_cluster(Operation::Alter) {
        let resp = AlterPartitionReassignmentsResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
        return if ctx.version >= 1 { resp.with_allow_replication_factor_change(allow_rf_change) } else { resp };
    }
    let mut items = Vec::new();
    let mut early: Vec<(String, i32, Error)> = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            let name = t.name.0.to_string();
            let target: Option<Vec<i32>> = p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect());
            if let (false, Some(target)) = (allow_rf_change, &target) {
                let current = ctx
                    .broker
                    .topic(&name)
                    .and_then(|t| t.states.get(p.partition_index as usize).map(|s| s.replicas.len() - s.adding.len()));
                if current.is_some_and(|n| n != target.len()) {
                    early.push((name, p.partition_index, Error::InvalidReplicationFactor("the replication factor would change".into())));
                    continue;
                }
            }
            items.push((name, p.partition_index, target));
        }
    }
    let timeout = Duration::from_millis(if req.timeout_ms > 0 { req.timeout_ms as u64 } else { 30_000 });
    let asked: Vec<(String, i32)> = items.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let results: Vec<Result<(), Error>> = if items.is_empty() {
        Vec::new()
    } else {
        match ctx.broker.submit(Request::AlterReassignments { items }, Some(timeout)).await {
            Ok(Response::Each { results, .. }) => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); asked.len()],
            Err(e) => vec![Err(e); asked.len()],
        }
    };
    let mut outcomes: Vec<(String, i32, Result<(), Error>)> = asked.into_iter().zip(results).map(|((t, p), r)| (t, p, r)).collect();
    outcomes.extend(early.into_iter().map(|(t, p, e)| (t, p, Err(e))));
    let mut responses: Vec<ReassignableTopicResponse> = Vec::new();
    for (topic, partition, r) in outcomes {
        let pr = match r {
            Ok(()) => ReassignablePartitionResponse::default().with_partition_index(partition),
            Err(e) => ReassignablePartitionResponse::default()
                .with_partition_index(partition)
                .with_error_code(e.code())
                .with_error_message(Some(sb(e.message()))),
        };
        match responses.iter_mut().find(|t| *t.name.0 == *topic) {
            Some(t) => t.partitions.push(pr),
            None => responses.push(ReassignableTopicResponse::default().with_name(sb(topic).into()).with_partitions(vec![pr])),
        }
    }
    let resp = AlterPartitionReassignmentsResponse::default().with_responses(responses);
    if ctx.version >= 1 {
        resp.with_allow_replication_factor_change(allow_rf_change)
    } else {
        resp
    }
}

pub async fn list(ctx: &Ctx<'_>, req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse {
    // Kafka: DESCRIBE on the cluster.
    if let Err(e) = ctx.check_cluster(Operation::Describe) {
        return ListPartitionReassignmentsResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    }
    let wanted: Option<Vec<(String, Vec<i32>)>> =
        req.topics.map(|ts| ts.into_iter().map(|t| (t.name.0.to_string(), t.partition_indexes)).collect());
    let img = ctx.broker.cluster.image();
    let ids = |v: &[i32]| v.iter().map(|b| (*b).into()).collect::<Vec<_>>();
    let topics = img
        .topics
        .values()
        .filter_map(|t| {
            let only: Option<&Vec<i32>> = match &wanted {
                Some(w) => Some(&w.iter().find(|(n, _)| *n == t.name)?.1),
                None => None,
            };
            let partitions: Vec<OngoingPartitionReassignment> = t
                .partitions
                .iter()
                .enumerate()
                .filter(|(i, s)| (!s.adding.is_empty() || !s.removing.is_empty()) && only.is_none_or(|o| o.contains(&(*i as i32))))
                .map(|(i, s)| {
                    OngoingPartitionReassignment::default()
                        .with_partition_index(i as i32)
                        .with_replicas(ids(&s.replicas))
                        .with_adding_replicas(ids(&s.adding))
                        .with_removing_replicas(ids(&s.removing))
                })
                .collect();
            (!partitions.is_empty())
                .then(|| OngoingTopicReassignment::default().with_name(sb(t.name.clone()).into()).with_partitions(partitions))
        })
        .collect();
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}
