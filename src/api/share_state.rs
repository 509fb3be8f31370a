//! KIP-932's share-coordinator state APIs, which share-partition leaders call on the
//! share coordinator of each share partition: InitializeShareGroupState,
//! ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
//! ReadShareGroupStateSummary. Like Kafka, only brokers (CLUSTER_ACTION) may call them;
//! each partition gets its own error code.

use kafka_protocol::messages::{
    delete_share_group_state_response as del, initialize_share_group_state_response as init, read_share_group_state_response as read,
    read_share_group_state_summary_response as summary, write_share_group_state_response as write, *,
};
use kafka_protocol::protocol::StrBytes;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::Result;
use crate::share::state::{PersistedBatch, ShareState, StateKey, Written};

/// The request's group and one of its partitions, as the coordinator keys them.
fn key(group: &StrBytes, topic: uuid::Uuid, partition: i32) -> StateKey {
    (group.to_string(), topic, partition)
}

/// For every partition of every topic in `$topics`: `$r` is `$call` (or the refusal when
/// the caller may not CLUSTER_ACTION), and `$answer` the partition's result; gives the
/// topics' results, each a `$result` with the topic id and its partitions.
macro_rules! each_partition {
    ($ctx:expr, $topics:expr, |$t:ident, $p:ident, $r:ident| $call:expr => $answer:expr, $result:ty) => {{
        let allowed = $ctx.check_cluster(Operation::ClusterAction);
        let mut results = Vec::with_capacity($topics.len());
        for $t in &$topics {
            let mut parts = Vec::with_capacity($t.partitions.len());
            for $p in &$t.partitions {
                let $r = match &allowed {
                    Ok(()) => $call,
                    Err(e) => Err(e.clone()),
                };
                parts.push($answer);
            }
            results.push(<$result>::default().with_topic_id($t.topic_id).with_partitions(parts));
        }
        results
    }};
}

/// (error code, message) of a partition's outcome.
fn outcome<T>(r: &Result<T>) -> (i16, Option<StrBytes>) {
    match r {
        Ok(_) => (0, None),
        Err(e) => (e.code(), Some(sb(e.message()))),
    }
}

pub async fn initialize(ctx: &Ctx<'_>, req: InitializeShareGroupStateRequest) -> InitializeShareGroupStateResponse {
    let b = &**ctx.broker;
    let results = each_partition!(ctx, req.topics, |t, p, r|
        b.share_state.initialize(b, &key(&req.group_id, t.topic_id, p.partition), p.state_epoch, p.start_offset).await
        => {
            let (code, message) = outcome(&r);
            init::PartitionResult::default().with_partition(p.partition).with_error_code(code).with_error_message(message)
        }, init::InitializeStateResult);
    InitializeShareGroupStateResponse::default().with_results(results)
}

pub async fn read_state(ctx: &Ctx<'_>, req: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse {
    let b = &**ctx.broker;
    let results = each_partition!(ctx, req.topics, |t, p, r|
        b.share_state.read(b, &key(&req.group_id, t.topic_id, p.partition), p.leader_epoch).await
        => {
            let (code, message) = outcome(&r);
            let d = read::PartitionResult::default().with_partition(p.partition).with_error_code(code).with_error_message(message);
            match r {
                Ok(Some(s)) => d.with_state_epoch(s.state_epoch).with_start_offset(s.start_offset).with_state_batches(
                    s.batches
                        .iter()
                        .map(|x| {
                            read::StateBatch::default()
                                .with_first_offset(x.first)
                                .with_last_offset(x.last)
                                .with_delivery_state(x.state)
                                .with_delivery_count(x.count)
                        })
                        .collect(),
                ),
                // Never initialized: Kafka's uninitialized start offset and first state epoch.
                Ok(None) => d.with_state_epoch(0).with_start_offset(-1),
                Err(_) => d.with_state_epoch(-1).with_start_offset(-1),
            }
        }, read::ReadStateResult);
    ReadShareGroupStateResponse::default().with_results(results)
}

pub async fn write_state(ctx: &Ctx<'_>, req: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse {
    let b = &**ctx.broker;
    let written = |p: &write_share_group_state_request::PartitionData| Written {
        state_epoch: p.state_epoch,
        leader_epoch: p.leader_epoch,
        start_offset: p.start_offset,
        delivery_complete_count: p.delivery_complete_count,
        batches: p
            .state_batches
            .iter()
            .map(|x| PersistedBatch { first: x.first_offset, last: x.last_offset, state: x.delivery_state, count: x.delivery_count })
            .collect(),
    };
    let results = each_partition!(ctx, req.topics, |t, p, r|
        b.share_state.write(b, &key(&req.group_id, t.topic_id, p.partition), &written(p)).await
        => {
            let (code, message) = outcome(&r);
            write::PartitionResult::default().with_partition(p.partition).with_error_code(code).with_error_message(message)
        }, write::WriteStateResult);
    WriteShareGroupStateResponse::default().with_results(results)
}

pub async fn delete_state(ctx: &Ctx<'_>, req: DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse {
    let b = &**ctx.broker;
    let results = each_partition!(ctx, req.topics, |t, p, r|
        b.share_state.delete(b, &key(&req.group_id, t.topic_id, p.partition)).await
        => {
            let (code, message) = outcome(&r);
            del::PartitionResult::default().with_partition(p.partition).with_error_code(code).with_error_message(message)
        }, del::DeleteStateResult);
    DeleteShareGroupStateResponse::default().with_results(results)
}

pub async fn read_summary(ctx: &Ctx<'_>, req: ReadShareGroupStateSummaryRequest) -> ReadShareGroupStateSummaryResponse {
    let b = &**ctx.broker;
    let results = each_partition!(ctx, req.topics, |t, p, r|
        b.share_state.summary(b, &key(&req.group_id, t.topic_id, p.partition)).await
        => {
            let r: Result<Option<ShareState>> = r;
            let (code, message) = outcome(&r);
            let d = summary::PartitionResult::default().with_partition(p.partition).with_error_code(code).with_error_message(message);
            let d = match r {
                Ok(Some(s)) => d
                    .with_state_epoch(s.state_epoch)
                    .with_leader_epoch(s.leader_epoch)
                    .with_start_offset(s.start_offset)
                    .with_delivery_complete_count(s.delivery_complete_count),
                Ok(None) => d.with_state_epoch(0).with_leader_epoch(-1).with_start_offset(-1),
                Err(_) => d.with_state_epoch(-1).with_leader_epoch(-1).with_start_offset(-1),
            };
            // v0 has no delivery count: it must stay at its default to encode.
            if ctx.version >= 1 { d } else { d.with_delivery_complete_count(-1) }
        }, summary::ReadStateSummaryResult);
    ReadShareGroupStateSummaryResponse::default().with_results(results)
}
