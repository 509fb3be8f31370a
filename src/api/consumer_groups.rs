//! KIP-848: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::consumer_group_describe_response::{self as cgd, DescribedGroup};
use kafka_protocol::messages::consumer_group_heartbeat_response::{self as cgh, Assignment};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::error::Error;
use crate::group::consumer::{describe_members, Heartbeat};
use crate::metadata::features;

type Tp = (uuid::Uuid, i32);

fn by_topic(set: &BTreeSet<Tp>) -> BTreeMap<uuid::Uuid, Vec<i32>> {
    let mut m: BTreeMap<uuid::Uuid, Vec<i32>> = BTreeMap::new();
    for (t, p) in set {
        m.entry(*t).or_default().push(*p);
    }
    m
}

/// Kafka serves the consumer protocol only while `group.version` is at least 1.
fn consumer_protocol_enabled(ctx: &Ctx<'_>) -> Result<(), Error> {
    let finalized = features::finalized(&ctx.broker.cluster.image().features);
    match finalized.get(features::GROUP_VERSION).copied().unwrap_or(0) {
        0 => Err(Error::Unsupported("The cluster's group.version is 0: the consumer group protocol (KIP-848) is disabled".into())),
        _ => Ok(()),
    }
}

pub async fn heartbeat(ctx: &Ctx<'_>, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
    let hb = Heartbeat {
        member_id: req.member_id.to_string(),
        epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(|s| s.to_string()),
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_names: req.subscribed_topic_names.as_ref().map(|v| v.iter().map(|t| t.0.to_string()).collect()),
        subscribed_regex: req.subscribed_topic_regex.as_ref().map(|s| s.to_string()).filter(|s| !s.is_empty()),
        server_assignor: req.server_assignor.as_ref().map(|s| s.to_string()),
        owned: req
            .topic_partitions
            .as_ref()
            .map(|tps| tps.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))).collect()),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
        client_member_id: ctx.version >= 1,
    };
    // Kafka: READ on the group, DESCRIBE on every topic subscribed to by name.
    let denied: Vec<String> =
        hb.subscribed_names.iter().flatten().filter(|t| !ctx.topic_allowed(Operation::Describe, t)).cloned().collect();
    let allowed = ctx.check_group(Operation::Read, &req.group_id.0).and_then(|()| {
        if denied.is_empty() {
            Ok(())
        } else {
            Err(Error::TopicAuthorizationFailed(denied.join(", ")))
        }
    });
    match allowed
        .and_then(|()| consumer_protocol_enabled(ctx))
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
        .and_then(|()| match ctx.broker.shares.is_share_group(&req.group_id.0) {
            true => Err(Error::GroupIdNotFound(format!("Group {} is not a consumer group.", &*req.group_id.0))),
            false => Ok(()),
        })
        .and_then(|_| ctx.broker.groups.consumer_heartbeat(&**ctx.broker, &req.group_id.0, hb))
    {
        Ok(r) => {
            let assignment = r.assignment.map(|set| {
                Assignment::default().with_topic_partitions(
                    by_topic(&set)
                        .into_iter()
                        .map(|(t, ps)| cgh::TopicPartitions::default().with_topic_id(t).with_partitions(ps))
                        .collect(),
                )
            });
            ConsumerGroupHeartbeatResponse::default()
                .with_member_id(Some(sb(r.member_id)))
                .with_member_epoch(r.epoch)
                .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
                .with_assignment(assignment)
        }
        Err(e) => ConsumerGroupHeartbeatResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}

pub async fn describe(ctx: &Ctx<'_>, req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let names: BTreeMap<uuid::Uuid, String> = ctx.broker.all_topics().iter().map(|t| (t.record.id, t.record.name.clone())).collect();
    let assignment = |set: &BTreeSet<Tp>| {
        cgd::Assignment::default().with_topic_partitions(
            by_topic(set)
                .into_iter()
                .map(|(t, ps)| {
                    cgd::TopicPartitions::default()
                        .with_topic_id(t)
                        .with_topic_name(sb(names.get(&t).cloned().unwrap_or_default()).into())
                        .with_partitions(ps)
                })
                .collect(),
        )
    };
    let groups = req
        .group_ids
        .into_iter()
        .map(|gid| {
            let ops = if req.include_authorized_operations { ctx.authorized_operations(ResourceType::Group, &gid.0) } else { i32::MIN };
            let d = DescribedGroup::default().with_group_id(gid.clone()).with_authorized_operations(ops);
            match ctx
                .check_group(Operation::Describe, &gid.0)
                .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid.0))
                .and_then(|_| ctx.broker.groups.consumer_describe(&gid.0))
            {
                Err(e) if e.code() == Error::GroupAuthorizationFailed(String::new()).code() => {
                    d.with_authorized_operations(i32::MIN).with_error_code(e.code()).with_error_message(Some(sb(e.message())))
                }
                Err(e) => d.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_group_state(sb("Dead")),
                Ok(g) => {
                    let members = describe_members(&g)
                        .into_iter()
                        .map(|(m, target)| {
                            let mm = cgd::Member::default()
                                .with_member_id(sb(m.id.clone()))
                                .with_instance_id(m.instance_id.clone().map(sb))
                                .with_rack_id(m.rack_id.clone().map(sb))
                                .with_member_epoch(m.epoch)
                                .with_client_id(sb(m.client_id.clone()))
                                .with_client_host(sb(m.client_host.clone()))
                                .with_subscribed_topic_names(m.subscribed_names.iter().map(|n| sb(n.clone()).into()).collect())
                                .with_subscribed_topic_regex(m.subscribed_regex.clone().map(sb))
                                .with_assignment(assignment(&m.assigned))
                                .with_target_assignment(assignment(&target));
                            if ctx.version >= 1 {
                                mm.with_member_type(1)
                            } else {
                                mm
                            }
                        })
                        .collect();
                    d.with_group_state(sb(g.state_name()))
                        .with_group_epoch(g.epoch)
                        .with_assignment_epoch(g.assignment_epoch)
                        .with_assignor_name(sb(g.assignor.clone()))
                        .with_members(members)
                }
            }
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}
