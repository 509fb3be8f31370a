//! KIP-1071: StreamsGroupHeartbeat, StreamsGroupDescribe and
//! StreamsGroupTopologyDescriptionUpdate. As in Kafka's KafkaApis, the heartbeat creates
//! the internal topics the coordinator found missing, after answering nothing about them
//! but a MISSING_INTERNAL_TOPICS status.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_protocol::messages::streams_group_describe_response as sgd;
use kafka_protocol::messages::streams_group_heartbeat_request as req_t;
use kafka_protocol::messages::streams_group_heartbeat_response as sgh;
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::controller::rpc::CreateRequest;
use crate::error::Error;
use crate::group::streams::assignor::TaskId;
use crate::group::streams::task_offsets::Offsets;
use crate::group::streams::topology::{CopartitionGroup, Subtopology, TopicInfo, Topology};
use crate::group::streams::{Heartbeat, Tasks};

/// Kafka's topology-description status when the client did not ask for it, and when the
/// broker has none (it stores descriptions only through a plugin, which Sluice has not).
const DESCRIPTION_NOT_REQUESTED: i8 = 0;
const DESCRIPTION_NOT_STORED: i8 = 1;

fn topic_info(t: &req_t::TopicInfo) -> TopicInfo {
    TopicInfo {
        name: t.name.0.to_string(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        configs: t.topic_configs.iter().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect(),
    }
}

fn topology(t: &req_t::Topology) -> Topology {
    Topology {
        epoch: t.epoch,
        subtopologies: t
            .subtopologies
            .iter()
            .map(|s| Subtopology {
                id: s.subtopology_id.to_string(),
                source_topics: s.source_topics.iter().map(|n| n.0.to_string()).collect(),
                repartition_sink_topics: s.repartition_sink_topics.iter().map(|n| n.0.to_string()).collect(),
                repartition_source_topics: s.repartition_source_topics.iter().map(topic_info).collect(),
                state_changelog_topics: s.state_changelog_topics.iter().map(topic_info).collect(),
                copartition_groups: s
                    .copartition_groups
                    .iter()
                    .map(|g| CopartitionGroup {
                        source_topics: g.source_topics.clone(),
                        repartition_source_topics: g.repartition_source_topics.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn task_set(ids: &[req_t::TaskIds]) -> BTreeSet<TaskId> {
    ids.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.subtopology_id.to_string(), *p))).collect()
}

/// Tasks grouped by subtopology, in the shape both responses use.
fn by_subtopology(set: &BTreeSet<TaskId>) -> BTreeMap<String, Vec<i32>> {
    let mut m: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (s, p) in set {
        m.entry(s.clone()).or_default().push(*p);
    }
    m
}

fn heartbeat_tasks(set: &BTreeSet<TaskId>) -> Vec<sgh::TaskIds> {
    by_subtopology(set).into_iter().map(|(s, ps)| sgh::TaskIds::default().with_subtopology_id(sb(s)).with_partitions(ps)).collect()
}

fn offsets_sent(list: &[req_t::TaskOffset]) -> Vec<(TaskId, i64)> {
    list.iter().map(|o| ((o.subtopology_id.to_string(), o.partition), o.offset)).collect()
}

fn describe_offsets(offsets: &Offsets) -> Vec<sgd::TaskOffset> {
    offsets
        .iter()
        .map(|((s, p), o)| sgd::TaskOffset::default().with_subtopology_id(sb(s.clone())).with_partition(*p).with_offset(*o))
        .collect()
}

fn decode(ctx: &Ctx<'_>, req: &StreamsGroupHeartbeatRequest) -> Result<Heartbeat, Error> {
    let owned = match (&req.active_tasks, &req.standby_tasks, &req.warmup_tasks) {
        (None, None, None) => None,
        (Some(a), Some(s), Some(w)) => Some(Tasks { active: task_set(a), standby: task_set(s), warmup: task_set(w) }),
        _ => return Err(Error::InvalidRequest("If one task-type is non-null, all must be non-null.".into())),
    };
    if let Some(t) = &req.topology {
        if t.subtopologies.iter().any(|s| !s.source_topic_regex.is_empty()) {
            return Err(Error::InvalidRequest("Regular expressions for source topics are not supported yet.".into()));
        }
    }
    Ok(Heartbeat {
        member_id: req.member_id.to_string(),
        epoch: req.member_epoch,
        endpoint_information_epoch: req.endpoint_information_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        topology: req.topology.as_ref().map(topology),
        owned,
        process_id: req.process_id.as_ref().map(|s| s.to_string()),
        user_endpoint: req.user_endpoint.as_ref().map(|e| (e.host.to_string(), e.port)),
        client_tags: req.client_tags.as_ref().map(|kv| kv.iter().map(|k| (k.key.to_string(), k.value.to_string())).collect()),
        task_offsets: req.task_offsets.as_deref().map(offsets_sent),
        task_end_offsets: req.task_end_offsets.as_deref().map(offsets_sent),
        shutdown_application: req.shutdown_application,
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
        version: ctx.version,
    })
}

/// Creates the internal topics the coordinator asked for; one that appeared meanwhile is fine.
async fn create_internal_topics(ctx: &Ctx<'_>, topics: Vec<TopicInfo>) {
    let reqs: Vec<CreateRequest> = topics
        .into_iter()
        .map(|t| CreateRequest {
            name: t.name,
            partitions: t.partitions,
            replication_factor: if t.replication_factor > 0 { t.replication_factor } else { -1 },
            configs: t.configs,
            ..Default::default()
        })
        .collect();
    let names: Vec<String> = reqs.iter().map(|r| r.name.clone()).collect();
    for (name, r) in names.iter().zip(ctx.broker.create_topics(reqs, false, Duration::from_secs(30)).await) {
        match r {
            Ok(_) => tracing::info!(topic = %name, "created streams internal topic"),
            Err(Error::TopicAlreadyExists(_)) => {}
            Err(e) => tracing::warn!(topic = %name, error = %e, "could not create streams internal topic"),
        }
    }
}

pub async fn heartbeat(ctx: &Ctx<'_>, req: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse {
    let gid = req.group_id.0.to_string();
    let result = ctx
        .check_group(Operation::Read, &gid)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid))
        .and_then(|()| match ctx.broker.shares.is_share_group(&gid) {
            true => Err(Error::GroupIdNotFound(format!("Group {gid} is not a streams group."))),
            false => Ok(()),
        })
        .and_then(|()| decode(ctx, &req))
        .and_then(|hb| ctx.broker.groups.streams_heartbeat(&**ctx.broker, &gid, hb));
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            return StreamsGroupHeartbeatResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
        }
    };
    if !r.to_create.is_empty() {
        create_internal_topics(ctx, r.to_create.clone()).await;
    }
    let cfg = ctx.broker.groups.consumer_config_for(&gid).streams;
    let status = r.status.iter().map(|(c, d)| sgh::Status::default().with_status_code(*c).with_status_detail(sb(d.clone()))).collect();
    let partitions = |m: &BTreeMap<String, Vec<i32>>| -> Vec<sgh::TopicPartition> {
        m.iter().map(|(t, ps)| sgh::TopicPartition::default().with_topic(sb(t.clone()).into()).with_partitions(ps.clone())).collect()
    };
    let endpoints = r.endpoints.map(|es| {
        es.iter()
            .map(|e| {
                sgh::EndpointToPartitions::default()
                    .with_user_endpoint(sgh::Endpoint::default().with_host(sb(e.endpoint.0.clone())).with_port(e.endpoint.1))
                    .with_active_partitions(partitions(&e.active))
                    .with_standby_partitions(partitions(&e.standby))
            })
            .collect()
    });
    let resp = StreamsGroupHeartbeatResponse::default()
        .with_member_id(sb(r.member_id))
        .with_member_epoch(r.epoch)
        .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
        .with_task_offset_interval_ms(cfg.task_offset_interval_ms)
        .with_status(Some(status))
        .with_active_tasks(r.tasks.as_ref().map(|t| heartbeat_tasks(&t.active)))
        .with_standby_tasks(r.tasks.as_ref().map(|t| heartbeat_tasks(&t.standby)))
        .with_warmup_tasks(r.tasks.as_ref().map(|t| heartbeat_tasks(&t.warmup)))
        .with_endpoint_information_epoch(r.endpoint_epoch)
        .with_partitions_by_user_endpoint(endpoints);
    if ctx.version >= 1 {
        resp.with_acceptable_recovery_lag(cfg.acceptable_recovery_lag)
    } else {
        resp.with_acceptable_recovery_lag_legacy(cfg.acceptable_recovery_lag.clamp(0, i32::MAX as i64) as i32)
    }
}

fn describe_tasks(set: &Tasks) -> sgd::Assignment {
    let ids = |s: &BTreeSet<TaskId>| -> Vec<sgd::TaskIds> {
        by_subtopology(s).into_iter().map(|(id, ps)| sgd::TaskIds::default().with_subtopology_id(sb(id)).with_partitions(ps)).collect()
    };
    sgd::Assignment::default().with_active_tasks(ids(&set.active)).with_standby_tasks(ids(&set.standby)).with_warmup_tasks(ids(&set.warmup))
}

fn describe_topic(t: &TopicInfo) -> sgd::TopicInfo {
    sgd::TopicInfo::default()
        .with_name(sb(t.name.clone()).into())
        .with_partitions(t.partitions)
        .with_replication_factor(t.replication_factor)
        .with_topic_configs(
            t.configs.iter().map(|(k, v)| sgd::KeyValue::default().with_key(sb(k.clone())).with_value(sb(v.clone()))).collect(),
        )
}

fn describe_topology(t: &Topology) -> sgd::Topology {
    let subs = t
        .subtopologies
        .iter()
        .map(|s| {
            sgd::Subtopology::default()
                .with_subtopology_id(sb(s.id.clone()))
                .with_source_topics(s.source_topics.iter().map(|n| sb(n.clone()).into()).collect())
                .with_repartition_sink_topics(s.repartition_sink_topics.iter().map(|n| sb(n.clone()).into()).collect())
                .with_state_changelog_topics(s.state_changelog_topics.iter().map(describe_topic).collect())
                .with_repartition_source_topics(s.repartition_source_topics.iter().map(describe_topic).collect())
        })
        .collect();
    sgd::Topology::default().with_epoch(t.epoch).with_subtopologies(Some(subs))
}

pub async fn describe(ctx: &Ctx<'_>, req: StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse {
    let groups = req
        .group_ids
        .into_iter()
        .map(|gid| {
            let ops = if req.include_authorized_operations { ctx.authorized_operations(ResourceType::Group, &gid) } else { i32::MIN };
            let d = sgd::DescribedGroup::default().with_group_id(sb(gid.to_string()).into()).with_authorized_operations(ops);
            let d = if ctx.version >= 1 {
                let status = if req.include_topology_description { DESCRIPTION_NOT_STORED } else { DESCRIPTION_NOT_REQUESTED };
                d.with_topology_description_status(status)
            } else {
                d
            };
            match ctx
                .check_group(Operation::Describe, &gid)
                .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid))
                .and_then(|()| ctx.broker.groups.streams_describe(&gid))
            {
                Err(e) if e.code() == Error::GroupAuthorizationFailed(String::new()).code() => {
                    d.with_authorized_operations(i32::MIN).with_error_code(e.code()).with_error_message(Some(sb(e.message())))
                }
                Err(e) => d.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_group_state(sb("Dead")),
                Ok(g) => {
                    let members = g
                        .members
                        .values()
                        .map(|m| {
                            let target = g.target.get(&m.id).cloned().unwrap_or_default();
                            sgd::Member::default()
                                .with_member_id(sb(m.id.clone()))
                                .with_member_epoch(m.epoch)
                                .with_instance_id(m.instance_id.clone().map(sb))
                                .with_rack_id(m.rack_id.clone().map(sb))
                                .with_client_id(sb(m.client_id.clone()))
                                .with_client_host(sb(m.client_host.clone()))
                                .with_topology_epoch(m.topology_epoch)
                                .with_process_id(sb(m.process_id.clone()))
                                .with_user_endpoint(
                                    m.user_endpoint.as_ref().map(|(h, p)| sgd::Endpoint::default().with_host(sb(h.clone())).with_port(*p)),
                                )
                                .with_client_tags(
                                    m.client_tags
                                        .iter()
                                        .map(|(k, v)| sgd::KeyValue::default().with_key(sb(k.clone())).with_value(sb(v.clone())))
                                        .collect(),
                                )
                                .with_task_offsets(describe_offsets(&m.task_offsets.offsets))
                                .with_task_end_offsets(describe_offsets(&m.task_offsets.end_offsets))
                                .with_assignment(describe_tasks(&m.assigned))
                                .with_target_assignment(describe_tasks(&target))
                        })
                        .collect();
                    let d = d
                        .with_group_state(sb(g.state_name()))
                        .with_group_epoch(g.epoch)
                        .with_assignment_epoch(g.assignment_epoch)
                        .with_topology(g.topology.as_ref().map(describe_topology))
                        .with_members(members);
                    if ctx.version >= 1 {
                        d.with_assignor_name(Some(sb("sticky")))
                    } else {
                        d
                    }
                }
            }
        })
        .collect();
    StreamsGroupDescribeResponse::default().with_groups(groups)
}

/// Kafka stores topology descriptions only through `group.streams.topology.description.plugin.class`;
/// without one (Sluice loads no Java plugins) it answers UNSUPPORTED_VERSION, after the
/// same authorization and coordinator checks.
pub async fn topology_description_update(
    ctx: &Ctx<'_>,
    req: StreamsGroupTopologyDescriptionUpdateRequest,
) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let gid = req.group_id.0.to_string();
    let e = ctx
        .check_group(Operation::Read, &gid)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid))
        .err()
        .unwrap_or_else(|| Error::Unsupported("The broker has no streams group topology description plugin configured.".into()));
    StreamsGroupTopologyDescriptionUpdateResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())))
}
