//! KIP-932: ShareGroupHeartbeat and ShareGroupDescribe.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::share_group_describe_response::{self as sgd, DescribedGroup};
use kafka_protocol::messages::share_group_heartbeat_response::{self as sgh, Assignment};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::error::Error;
use crate::share::group::{Heartbeat, Tp};

fn by_topic(set: &BTreeSet<Tp>) -> BTreeMap<uuid::Uuid, Vec<i32>> {
    let mut m: BTreeMap<uuid::Uuid, Vec<i32>> = BTreeMap::new();
    for (t, p) in set {
        m.entry(*t).or_default().push(*p);
    }
    m
}

pub async fn heartbeat(ctx: &Ctx<'_>, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
    let group_id = req.group_id.0.to_string();
    let hb = Heartbeat {
        member_id: req.member_id.to_string(),
        epoch: req.member_epoch,
        rack_id: req.rack_id.as_ref().map(|s| s.to_string()),
        subscribed: req.subscribed_topic_names.as_ref().map(|v| v.iter().map(|t| t.0.to_string()).collect()),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
    };
    // Kafka: READ on the group, DESCRIBE on every subscribed topic.
    let denied: Vec<String> = hb.subscribed.iter().flatten().filter(|t| !ctx.topic_allowed(Operation::Describe, t)).cloned().collect();
    let result = ctx
        .check_group(Operation::Read, &group_id)
        .and_then(|()| if denied.is_empty() { Ok(()) } else { Err(Error::TopicAuthorizationFailed(denied.join(", "))) })
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &group_id))
        .and_then(|()| ctx.broker.share_heartbeat(&group_id, hb));
    // As Kafka answers once the group's records are committed: a member's epoch survives
    // the coordinator's failover.
    let result = match result {
        Ok(r) => ctx.broker.groups.wait_durable(&**ctx.broker, &group_id).await.map(|()| r),
        Err(e) => Err(e),
    };
    match result {
        Ok(r) => {
            let assignment = r.assignment.map(|set| {
                Assignment::default().with_topic_partitions(
                    by_topic(&set)
                        .into_iter()
                        .map(|(t, ps)| sgh::TopicPartitions::default().with_topic_id(t).with_partitions(ps))
                        .collect(),
                )
            });
            ShareGroupHeartbeatResponse::default()
                .with_member_id(Some(sb(r.member_id)))
                .with_member_epoch(r.epoch)
                .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
                .with_assignment(assignment)
        }
        Err(e) => ShareGroupHeartbeatResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}

pub async fn describe(ctx: &Ctx<'_>, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let names: BTreeMap<uuid::Uuid, String> = ctx.broker.all_topics().iter().map(|t| (t.record.id, t.record.name.clone())).collect();
    let groups = req
        .group_ids
        .into_iter()
        .map(|gid| {
            let ops = if req.include_authorized_operations { ctx.authorized_operations(ResourceType::Group, &gid.0) } else { i32::MIN };
            let d = DescribedGroup::default().with_group_id(gid.clone()).with_authorized_operations(ops);
            match ctx
                .check_group(Operation::Describe, &gid.0)
                .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid.0))
                .and_then(|()| ctx.broker.shares.describe(&gid.0))
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
                            let parts = by_topic(&m.assigned)
                                .into_iter()
                                .map(|(t, ps)| {
                                    sgd::TopicPartitions::default()
                                        .with_topic_id(t)
                                        .with_topic_name(sb(names.get(&t).cloned().unwrap_or_default()).into())
                                        .with_partitions(ps)
                                })
                                .collect();
                            sgd::Member::default()
                                .with_member_id(sb(m.id.clone()))
                                .with_rack_id(m.rack_id.clone().map(sb))
                                .with_member_epoch(m.epoch)
                                .with_client_id(sb(m.client_id.clone()))
                                .with_client_host(sb(m.client_host.clone()))
                                .with_subscribed_topic_names(m.subscribed.iter().map(|n| sb(n.clone()).into()).collect())
                                .with_assignment(sgd::Assignment::default().with_topic_partitions(parts))
                        })
                        .collect();
                    d.with_group_state(sb(g.state_name()))
                        .with_group_epoch(g.epoch)
                        .with_assignment_epoch(g.assignment_epoch)
                        .with_assignor_name(sb("simple"))
                        .with_members(members)
                }
            }
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}
