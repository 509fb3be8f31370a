//! KIP-932's share-group offsets APIs on the group's coordinator:
//! DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets
//! ([`crate::share::offsets`]). Authorization as in Kafka's KafkaApis: DESCRIBE, READ or
//! DELETE on the group, DESCRIBE (describe) or READ (alter, delete) on each topic.

use kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition, DescribeShareGroupOffsetsResponseTopic,
};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::{Error, Result};
use crate::share::offsets::{self, Described};

/// The group's coordinator is here and the id is not a classic or consumer group's
/// (AlterShareGroupOffsets and DeleteShareGroupOffsets: GROUP_ID_NOT_FOUND otherwise).
fn check_share_group(ctx: &Ctx<'_>, group: &str) -> Result<()> {
    ctx.broker.groups.check_coordinator(&**ctx.broker, group)?;
    if !ctx.broker.shares.is_share_group(group) && ctx.broker.groups.list().iter().any(|(id, ..)| id == group) {
        return Err(Error::GroupIdNotFound(format!("Group {group} is not a share group.")));
    }
    Ok(())
}

fn partition(d: Described) -> DescribeShareGroupOffsetsResponsePartition {
    let r = DescribeShareGroupOffsetsResponsePartition::default()
        .with_partition_index(d.partition)
        .with_start_offset(d.start_offset)
        .with_leader_epoch(d.leader_epoch)
        .with_lag(d.lag);
    match d.error {
        Some(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
        None => r,
    }
}

async fn describe_group(
    ctx: &Ctx<'_>,
    g: describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup,
) -> DescribeShareGroupOffsetsResponseGroup {
    let out = DescribeShareGroupOffsetsResponseGroup::default().with_group_id(g.group_id.clone());
    // Any group id may be described, as in Kafka 4.4: a classic or consumer group's, like an
    // unknown one's, has no share-partition state, so it gets no offsets rather than an error.
    let coordinator = |()| ctx.broker.groups.check_coordinator(&**ctx.broker, &g.group_id.0);
    if let Err(e) = ctx.check_group(Operation::Describe, &g.group_id.0).and_then(coordinator) {
        return out.with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    }
    let (allowed, denied) = match g.topics {
        // Every topic the group has offsets in that the caller may describe.
        None => (None, Vec::new()),
        Some(ts) => {
            let (a, d): (Vec<_>, Vec<_>) = ts.into_iter().partition(|t| ctx.topic_allowed(Operation::Describe, &t.topic_name.0));
            (Some(a.into_iter().map(|t| (t.topic_name.0.to_string(), t.partitions)).collect::<Vec<_>>()), d)
        }
    };
    let all = allowed.is_none();
    let mut topics: Vec<DescribeShareGroupOffsetsResponseTopic> = offsets::describe(&**ctx.broker, &g.group_id.0, allowed)
        .await
        .into_iter()
        .filter(|t| !all || ctx.topic_allowed(Operation::Describe, &t.name))
        .map(|t| {
            DescribeShareGroupOffsetsResponseTopic::default()
                .with_topic_name(sb(t.name).into())
                .with_topic_id(t.id)
                .with_partitions(t.partitions.into_iter().map(partition).collect())
        })
        .collect();
    for t in denied {
        let refused = t.partitions.iter().map(|p| {
            let e = Error::TopicAuthorizationFailed(t.topic_name.0.to_string());
            partition(Described { partition: *p, start_offset: -1, leader_epoch: 0, lag: -1, error: Some(e) })
        });
        topics.push(
            DescribeShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name.clone()).with_partitions(refused.collect()),
        );
    }
    out.with_topics(topics)
}

pub async fn describe(ctx: &Ctx<'_>, req: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse {
    let mut groups = Vec::with_capacity(req.groups.len());
    for g in req.groups {
        groups.push(describe_group(ctx, g).await);
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

pub async fn alter(ctx: &Ctx<'_>, req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse {
    let group = req.group_id.0.to_string();
    let fail = |e: Error| AlterShareGroupOffsetsResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    if let Err(e) = ctx.check_group(Operation::Read, &group).and_then(|()| check_share_group(ctx, &group)) {
        return fail(e);
    }
    let (allowed, denied): (Vec<_>, Vec<_>) = req.topics.into_iter().partition(|t| ctx.topic_allowed(Operation::Read, &t.topic_name.0));
    let named = allowed
        .into_iter()
        .map(|t| (t.topic_name.0.to_string(), t.partitions.iter().map(|p| (p.partition_index, p.start_offset)).collect()))
        .collect();
    let result = match offsets::alter(&**ctx.broker, &ctx.broker.shares, &group, named).await {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let answer = |p: i32, e: Option<Error>| {
        let r = AlterShareGroupOffsetsResponsePartition::default().with_partition_index(p);
        match e {
            Some(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            None => r,
        }
    };
    let mut topics: Vec<AlterShareGroupOffsetsResponseTopic> = result
        .into_iter()
        .map(|t| {
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(sb(t.name).into())
                .with_topic_id(t.id)
                .with_partitions(t.partitions.into_iter().map(|(p, e)| answer(p, e)).collect())
        })
        .collect();
    for t in denied {
        let refused =
            t.partitions.iter().map(|p| answer(p.partition_index, Some(Error::TopicAuthorizationFailed(t.topic_name.0.to_string()))));
        topics
            .push(AlterShareGroupOffsetsResponseTopic::default().with_topic_name(t.topic_name.clone()).with_partitions(refused.collect()));
    }
    AlterShareGroupOffsetsResponse::default().with_responses(topics)
}

pub async fn delete(ctx: &Ctx<'_>, req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse {
    let group = req.group_id.0.to_string();
    let fail = |e: Error| DeleteShareGroupOffsetsResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    if let Err(e) = ctx.check_group(Operation::Delete, &group).and_then(|()| check_share_group(ctx, &group)) {
        return fail(e);
    }
    let (allowed, denied): (Vec<_>, Vec<_>) = req.topics.into_iter().partition(|t| ctx.topic_allowed(Operation::Read, &t.topic_name.0));
    let names = allowed.into_iter().map(|t| t.topic_name.0.to_string()).collect();
    let result = match offsets::delete(&**ctx.broker, &ctx.broker.shares, &group, names).await {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let mut topics: Vec<DeleteShareGroupOffsetsResponseTopic> = result
        .into_iter()
        .map(|t| {
            let r = DeleteShareGroupOffsetsResponseTopic::default().with_topic_name(sb(t.name).into()).with_topic_id(t.id);
            match t.error {
                Some((e, m)) => r.with_error_code(e.code()).with_error_message(Some(sb(m))),
                None => r,
            }
        })
        .collect();
    for t in denied {
        let e = Error::TopicAuthorizationFailed(t.topic_name.0.to_string());
        topics.push(
            DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(t.topic_name)
                .with_error_code(e.code())
                .with_error_message(Some(sb(e.message()))),
        );
    }
    DeleteShareGroupOffsetsResponse::default().with_responses(topics)
}
