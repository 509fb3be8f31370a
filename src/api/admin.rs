//! CreateTopics, DeleteTopics and CreatePartitions.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
use kafka_protocol::messages::delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::*;

use std::time::Duration;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::broker::CreateRequest;
use crate::error::{Error, Result};
use crate::metadata::image::TopicImage;

fn created(
    ctx: &Ctx<'_>,
    r: CreatableTopicResult,
    t: &TopicImage,
    describe: Result<Vec<crate::broker::ConfigEntry>>,
) -> CreatableTopicResult {
    let r = if ctx.version >= 7 { r.with_topic_id(t.id) } else { r };
    if ctx.version < 5 {
        return r;
    }
    let rf = t.partitions.first().map_or(0, |p| p.replicas.len() as i16);
    let r = r.with_num_partitions(t.partitions.len() as i32).with_replication_factor(rf);
    match describe {
        Ok(entries) => r.with_configs(Some(
            entries
                .into_iter()
                .map(|e| {
                    CreatableTopicConfigs::default()
                        .with_name(sb(e.name))
                        .with_value(e.value.map(sb))
                        .with_read_only(e.read_only)
                        .with_config_source(e.source as i8)
                        .with_is_sensitive(false)
                })
                .collect(),
        )),
        Err(e) => r.with_topic_config_error_code(e.code()),
    }
}

/// The request's controller mutation quota (KIP-599), strict from version `strict_since`.
fn mutation_quota<'a>(ctx: &'a Ctx<'_>, strict_since: i16) -> crate::broker::MutationQuota<'a> {
    ctx.broker.mutation_quota(&ctx.principal.name, &ctx.client_id, ctx.version >= strict_since)
}

/// Throttles the client for what its mutations earned; the response's throttle time.
fn throttled_for(ctx: &Ctx<'_>, quota: crate::broker::MutationQuota<'_>) -> i32 {
    ctx.throttle(quota.finish());
    ctx.throttle_ms()
}

/// The request's timeout, or the controller's when the client gave none.
fn timeout_of(ms: i32) -> Duration {
    Duration::from_millis(if ms > 0 { ms as u64 } else { 30_000 })
}

pub async fn create_topics(ctx: &Ctx<'_>, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let broker = ctx.broker;
    let mut seen = std::collections::HashSet::new();
    let duplicates: std::collections::HashSet<String> =
        req.topics.iter().map(|t| t.name.0.to_string()).filter(|n| !seen.insert(n.clone())).collect();
    // Kafka: CREATE on the cluster, or else on each topic.
    let cluster_create = ctx.cluster_allowed(Operation::Create);
    let denied: std::collections::HashSet<String> =
        req.topics.iter().map(|t| t.name.0.to_string()).filter(|n| !cluster_create && !ctx.topic_allowed(Operation::Create, n)).collect();
    // Each new topic's partitions count against the client's controller_mutation_rate,
    // in request order (Kafka: strict from v6). A topic that exists already is left to
    // the controller's TOPIC_ALREADY_EXISTS; a validation creates nothing, so counts nothing.
    let mut quota = mutation_quota(ctx, 6);
    let default_partitions = broker.settings().num_partitions;
    let throttled: std::collections::HashSet<String> = req
        .topics
        .iter()
        .filter(|t| !req.validate_only && !duplicates.contains(&*t.name.0) && !denied.contains(&*t.name.0))
        .filter(|t| broker.topic(&t.name.0).is_none())
        .filter(|t| {
            let partitions = match (t.assignments.len(), t.num_partitions) {
                (0, -1) => default_partitions,
                (0, n) => n,
                (n, _) => n as i32,
            };
            quota.record(partitions).is_err()
        })
        .map(|t| t.name.0.to_string())
        .collect();
    let asks: Vec<CreateRequest> = req
        .topics
        .iter()
        .filter(|t| !duplicates.contains(&*t.name.0) && !denied.contains(&*t.name.0) && !throttled.contains(&*t.name.0))
        .map(|t| CreateRequest {
            name: t.name.0.to_string(),
            partitions: t.num_partitions,
            replication_factor: t.replication_factor,
            assignments: t.assignments.iter().map(|a| (a.partition_index, a.broker_ids.iter().map(|b| b.0).collect())).collect(),
            configs: t.configs.iter().filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string()))).collect(),
        })
        .collect();
    let mut results =
        if asks.is_empty() { Vec::new() } else { broker.create_topics(asks, req.validate_only, timeout_of(req.timeout_ms)).await }
            .into_iter();
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let name = t.name.0.to_string();
            let r = CreatableTopicResult::default().with_name(t.name.clone());
            let result = if duplicates.contains(&name) {
                Err(Error::InvalidRequest(format!("topic '{name}' appears more than once in the request")))
            } else if denied.contains(&name) {
                Err(Error::TopicAuthorizationFailed(name.clone()))
            } else if throttled.contains(&name) {
                Err(crate::broker::quota_exceeded())
            } else {
                results.next().unwrap_or(Err(Error::OperationNotAttempted))
            };
            match result {
                Ok(img) => {
                    let describe = if req.validate_only {
                        Ok(Vec::new())
                    } else if !ctx.topic_allowed(Operation::DescribeConfigs, &name) {
                        Err(Error::TopicAuthorizationFailed(name.clone()))
                    } else {
                        broker.describe_topic_configs(&name, None)
                    };
                    created(ctx, r, &img, describe)
                }
                Err(e) => {
                    let r = r.with_error_code(e.code()).with_error_message(Some(sb(e.message())));
                    if ctx.version >= 5 {
                        r.with_num_partitions(-1).with_replication_factor(-1).with_configs(None)
                    } else {
                        r
                    }
                }
            }
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics).with_throttle_time_ms(throttled_for(ctx, quota))
}

pub async fn delete_topics(ctx: &Ctx<'_>, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let broker = ctx.broker;
    // v6 names topics by name or id; older versions by name only.
    let wanted: Vec<(Option<String>, uuid::Uuid)> = if ctx.version >= 6 {
        req.topics.iter().map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id)).collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.0.to_string()), uuid::Uuid::nil())).collect()
    };
    let resolved: Vec<Result<(String, uuid::Uuid)>> = wanted
        .iter()
        .map(|(name, id)| {
            let (n, tid) = match name {
                Some(n) => {
                    ctx.check_topic(Operation::Delete, n)?;
                    broker.topic(n).map(|t| (n.clone(), t.record.id)).ok_or(Error::UnknownTopicOrPartition)?
                }
                None => broker.topic_by_id(*id).map(|t| (t.record.name.clone(), *id)).ok_or(Error::UnknownTopicId)?,
            };
            ctx.check_topic(Operation::Delete, &n)?;
            Ok((n, tid))
        })
        .collect();
    // Each deleted topic's partitions count against the controller_mutation_rate (strict
    // from v5), in request order.
    let mut quota = mutation_quota(ctx, 5);
    let resolved: Vec<Result<(String, uuid::Uuid)>> = resolved
        .into_iter()
        .map(|r| {
            let (n, tid) = r?;
            quota.record(broker.topic(&n).map_or(0, |t| t.states.len() as i32))?;
            Ok((n, tid))
        })
        .collect();
    let names: Vec<String> = resolved.iter().flatten().map(|(n, _)| n.clone()).collect();
    let mut outcomes =
        if names.is_empty() { Vec::new() } else { broker.delete_topics(names, timeout_of(req.timeout_ms)).await }.into_iter();
    let responses = wanted
        .into_iter()
        .zip(resolved)
        .map(|((name, id), res)| {
            let result = res.and_then(|(n, tid)| outcomes.next().unwrap_or(Err(Error::OperationNotAttempted)).map(|_| (n, tid)));
            let shown_name = result.as_ref().ok().map(|(n, _)| n.clone()).or(name);
            let r = DeletableTopicResult::default().with_name(shown_name.map(|n| sb(n).into()));
            let r = match &result {
                Ok((_, tid)) if ctx.version >= 6 => r.with_topic_id(*tid),
                _ if ctx.version >= 6 => r.with_topic_id(id),
                _ => r,
            };
            match result {
                Ok(_) => r,
                Err(e) => {
                    let r = r.with_error_code(e.code());
                    if ctx.version >= 5 {
                        r.with_error_message(Some(sb(e.message())))
                    } else {
                        r
                    }
                }
            }
        })
        .collect();
    DeleteTopicsResponse::default().with_responses(responses).with_throttle_time_ms(throttled_for(ctx, quota))
}

pub async fn create_partitions(ctx: &Ctx<'_>, req: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut results = Vec::with_capacity(req.topics.len());
    // The partitions added count against the controller_mutation_rate (strict from v3).
    let mut quota = mutation_quota(ctx, 3);
    for t in req.topics {
        let assignments: Option<Vec<Vec<i32>>> =
            t.assignments.as_ref().map(|a| a.iter().map(|x| x.broker_ids.iter().map(|b| b.0).collect()).collect());
        let added = ctx.broker.topic(&t.name.0).map_or(0, |topic| t.count - topic.states.len() as i32);
        let checked =
            ctx.check_topic(Operation::Alter, &t.name.0).and_then(|()| if req.validate_only { Ok(()) } else { quota.record(added) });
        let result = match checked {
            Ok(()) => ctx.broker.create_partitions(&t.name.0, t.count, assignments, req.validate_only, timeout_of(req.timeout_ms)).await,
            Err(e) => Err(e),
        };
        let r = CreatePartitionsTopicResult::default().with_name(t.name);
        results.push(match result {
            Ok(()) => r,
            Err(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
        });
    }
    CreatePartitionsResponse::default().with_results(results).with_throttle_time_ms(throttled_for(ctx, quota))
}

pub async fn delete_records(ctx: &Ctx<'_>, req: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let topic = ctx
                .check_topic(Operation::Delete, &t.name.0)
                .and_then(|()| ctx.broker.topic(&t.name.0).ok_or(Error::UnknownTopicOrPartition));
            let partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let r = DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
                    let result = topic
                        .as_ref()
                        .map_err(Clone::clone)
                        .and_then(|tp| tp.get(p.partition_index))
                        .and_then(|part| part.delete_records(p.offset));
                    match result {
                        Ok(low) => r.with_low_watermark(low),
                        Err(e) => r.with_error_code(e.code()).with_low_watermark(-1),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default().with_name(t.name).with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}
