//! OffsetCommit, OffsetFetch and OffsetDelete.
//!
//! Versions: OffsetCommit v10 and OffsetFetch v10 (KIP-848) name topics by id instead of
//! by name, in the request and in the response. Offsets stay stored by topic name, as in
//! Kafka: each id is resolved to its topic's name on arrival, and an id no topic has
//! answers UNKNOWN_TOPIC_ID for every partition asked about under it. Answers carry the
//! topic's id; a fetch of all of a group's offsets leaves out topics that no longer exist
//! (they have no id to name them by), as Kafka's coordinator does.

use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::offset_delete_response::{OffsetDeleteResponsePartition, OffsetDeleteResponseTopic};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions, OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
};
use kafka_protocol::messages::*;

use uuid::Uuid;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::Error;
use crate::group::{CommitItem, Committed};

/// The name of the topic with id `id`, for the versions that name topics by id.
pub(super) fn topic_name(ctx: &Ctx<'_>, id: Uuid) -> Option<String> {
    ctx.broker.topic_by_id(id).map(|t| t.record.name.clone())
}

/// The id of topic `name`, or the nil id once it is gone.
pub(super) fn topic_id(ctx: &Ctx<'_>, name: &str) -> Uuid {
    ctx.broker.topic(name).map_or(Uuid::nil(), |t| t.record.id)
}

/// A partition of an OffsetCommit or TxnOffsetCommit request: the two carry the same fields.
pub(super) trait CommitPartition {
    fn item(&self, topic: &str) -> CommitItem;
    fn index(&self) -> i32;
}

macro_rules! commit_partition {
    ($($t:ty),*) => { $( impl CommitPartition for $t {
        fn item(&self, topic: &str) -> CommitItem {
            CommitItem {
                topic: topic.to_string(),
                partition: self.partition_index,
                offset: self.committed_offset,
                leader_epoch: self.committed_leader_epoch,
                metadata: self.committed_metadata.as_ref().map(|m| m.to_string()),
            }
        }
        fn index(&self) -> i32 { self.partition_index }
    } )* };
}
commit_partition!(offset_commit_request::OffsetCommitRequestPartition, txn_offset_commit_request::TxnOffsetCommitRequestPartition);

/// One request topic's commits, added to `items`. From the versions that name topics by id
/// (`by_id`) the id is resolved to the name offsets are stored under; an id no topic has
/// gives back its partitions' indexes, each to be answered UNKNOWN_TOPIC_ID.
pub(super) fn add_commits<P: CommitPartition>(
    ctx: &Ctx<'_>,
    by_id: bool,
    id: Uuid,
    name: &str,
    partitions: &[P],
    items: &mut Vec<CommitItem>,
) -> Result<(), Vec<i32>> {
    let name = if by_id {
        match topic_name(ctx, id) {
            Some(n) => n,
            None => return Err(partitions.iter().map(P::index).collect()),
        }
    } else {
        name.to_string()
    };
    items.extend(partitions.iter().map(|p| p.item(&name)));
    Ok(())
}

pub async fn offset_commit(ctx: &Ctx<'_>, req: OffsetCommitRequest) -> OffsetCommitResponse {
    let by_id = ctx.version >= 10;
    let mut unknown_ids: Vec<OffsetCommitResponseTopic> = Vec::new();
    let mut items: Vec<CommitItem> = Vec::new();
    for t in &req.topics {
        if let Err(unknown) = add_commits(ctx, by_id, t.topic_id, &t.name.0, &t.partitions, &mut items) {
            let parts = unknown
                .into_iter()
                .map(|i| OffsetCommitResponsePartition::default().with_partition_index(i).with_error_code(Error::UnknownTopicId.code()));
            unknown_ids.push(OffsetCommitResponseTopic::default().with_topic_id(t.topic_id).with_partitions(parts.collect()));
        }
    }
    // Kafka: GROUP READ for the whole request, then TOPIC READ per topic.
    let (items, denied): (Vec<CommitItem>, Vec<CommitItem>) =
        items.into_iter().partition(|it| ctx.topic_allowed(Operation::Read, &it.topic));
    let results: Vec<(CommitItem, i16)> = match ctx
        .check_group(Operation::Read, &req.group_id.0)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
        .and_then(|_| {
            ctx.broker.groups.commit(
                &**ctx.broker,
                &req.group_id.0,
                &req.member_id,
                req.group_instance_id.as_deref(),
                req.generation_id_or_member_epoch,
                items.clone(),
            )
        }) {
        Ok(rs) => rs.into_iter().map(|(it, r)| (it, r.err().map_or(0, |e| e.code()))).collect(),
        Err(e) => items.into_iter().map(|it| (it, e.code())).collect(),
    };
    let durable = ctx.broker.groups.wait_durable(&**ctx.broker, &req.group_id.0).await;
    let results: Vec<(CommitItem, i16)> = match durable {
        Ok(()) => results,
        Err(e) => results.into_iter().map(|(it, code)| (it, if code == 0 { e.code() } else { code })).collect(),
    };
    let refused = Error::TopicAuthorizationFailed(String::new()).code();
    let results = results.into_iter().chain(denied.into_iter().map(|it| (it, refused)));
    let mut topics: Vec<OffsetCommitResponseTopic> = Vec::new();
    for (it, code) in results {
        let part = OffsetCommitResponsePartition::default().with_partition_index(it.partition).with_error_code(code);
        match topics.iter_mut().find(|t| *t.name.0 == *it.topic) {
            Some(t) => t.partitions.push(part),
            None => {
                let id = if by_id { topic_id(ctx, &it.topic) } else { Uuid::nil() };
                topics
                    .push(OffsetCommitResponseTopic::default().with_name(sb(it.topic).into()).with_topic_id(id).with_partitions(vec![part]))
            }
        }
    }
    topics.extend(unknown_ids);
    OffsetCommitResponse::default().with_topics(topics)
}

fn committed_fields(c: Option<Committed>) -> (i64, i32, String) {
    match c {
        Some(c) => (c.offset, c.leader_epoch, c.metadata),
        None => (-1, -1, String::new()),
    }
}

/// With `require_stable`, a partition whose offset waits on an open transaction
/// answers UNSTABLE_OFFSET_COMMIT instead of a possibly stale offset.
fn stable_or_error(ctx: &Ctx<'_>, require_stable: bool, group: &str, topic: &str, p: i32, c: Option<Committed>) -> (i64, i32, String, i16) {
    if require_stable && ctx.broker.groups.has_pending_txn(group, topic, p) {
        return (-1, -1, String::new(), Error::UnstableOffsetCommit.code());
    }
    let (o, e, m) = committed_fields(c);
    (o, e, m, 0)
}

pub async fn offset_fetch(ctx: &Ctx<'_>, req: OffsetFetchRequest) -> OffsetFetchResponse {
    let v = ctx.version;
    let groups = &ctx.broker.groups;
    if v >= 8 {
        let out = req
            .groups
            .into_iter()
            .map(|g| {
                if let Err(e) = ctx
                    .check_group(Operation::Describe, &g.group_id.0)
                    .and_then(|()| groups.check_coordinator(&**ctx.broker, &g.group_id.0))
                {
                    return OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_error_code(e.code());
                }
                let by_id = v >= 10;
                let mut unknown_ids: Vec<OffsetFetchResponseTopics> = Vec::new();
                let wanted: Option<Vec<(String, Vec<i32>)>> = g.topics.map(|ts| {
                    ts.into_iter()
                        .filter_map(|t| {
                            if !by_id {
                                return Some((t.name.0.to_string(), t.partition_indexes));
                            }
                            let name = topic_name(ctx, t.topic_id);
                            if name.is_none() {
                                let parts = t.partition_indexes.iter().map(|p| {
                                    OffsetFetchResponsePartitions::default()
                                        .with_partition_index(*p)
                                        .with_committed_offset(-1)
                                        .with_metadata(Some(sb(String::new())))
                                        .with_error_code(Error::UnknownTopicId.code())
                                });
                                unknown_ids
                                    .push(OffsetFetchResponseTopics::default().with_topic_id(t.topic_id).with_partitions(parts.collect()));
                            }
                            name.map(|n| (n, t.partition_indexes))
                        })
                        .collect()
                });
                let found = authorized_offsets(ctx, wanted.is_some(), groups.fetch_offsets(&g.group_id.0, wanted));
                let mut topics: Vec<OffsetFetchResponseTopics> = found
                    .into_iter()
                    .filter_map(|(t, ps)| {
                        let id = if by_id { topic_id(ctx, &t) } else { Uuid::nil() };
                        (!by_id || !id.is_nil()).then_some((t, id, ps))
                    })
                    .map(|(t, id, ps)| {
                        let partitions = ps
                            .into_iter()
                            .map(|(p, c)| {
                                let (off, epoch, meta, err) = match c {
                                    Err(e) => (-1, -1, String::new(), e.code()),
                                    Ok(c) => stable_or_error(ctx, req.require_stable, &g.group_id.0, &t, p, c),
                                };
                                OffsetFetchResponsePartitions::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(off)
                                    .with_committed_leader_epoch(epoch)
                                    .with_metadata(Some(sb(meta)))
                                    .with_error_code(err)
                            })
                            .collect();
                        OffsetFetchResponseTopics::default().with_name(sb(t).into()).with_topic_id(id).with_partitions(partitions)
                    })
                    .collect();
                topics.extend(unknown_ids);
                let err = if g.group_id.0.is_empty() { Error::InvalidGroupId.code() } else { 0 };
                OffsetFetchResponseGroup::default().with_group_id(g.group_id).with_topics(topics).with_error_code(err)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(out);
    }
    if let Err(e) =
        ctx.check_group(Operation::Describe, &req.group_id.0).and_then(|()| groups.check_coordinator(&**ctx.broker, &req.group_id.0))
    {
        if v >= 2 {
            return OffsetFetchResponse::default().with_error_code(e.code());
        }
        // v0-1 have no top-level error: each partition asked for carries it.
        let topics = req
            .topics
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let ps = t.partition_indexes.iter().map(|p| {
                    OffsetFetchResponsePartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(-1)
                        .with_metadata(Some(sb(String::new())))
                        .with_error_code(e.code())
                });
                OffsetFetchResponseTopic::default().with_name(t.name).with_partitions(ps.collect())
            })
            .collect();
        return OffsetFetchResponse::default().with_topics(topics);
    }
    let wanted: Option<Vec<(String, Vec<i32>)>> =
        req.topics.map(|ts| ts.into_iter().map(|t| (t.name.0.to_string(), t.partition_indexes)).collect());
    let topics = authorized_offsets(ctx, wanted.is_some(), groups.fetch_offsets(&req.group_id.0, wanted))
        .into_iter()
        .map(|(t, ps)| {
            let partitions = ps
                .into_iter()
                .map(|(p, c)| {
                    let (off, epoch, meta, err) = match c {
                        Err(e) => (-1, -1, String::new(), e.code()),
                        Ok(c) => stable_or_error(ctx, v >= 7 && req.require_stable, &req.group_id.0, &t, p, c),
                    };
                    let r = OffsetFetchResponsePartition::default()
                        .with_partition_index(p)
                        .with_committed_offset(off)
                        .with_metadata(Some(sb(meta)))
                        .with_error_code(err);
                    if v >= 5 {
                        r.with_committed_leader_epoch(epoch)
                    } else {
                        r
                    }
                })
                .collect();
            OffsetFetchResponseTopic::default().with_name(sb(t).into()).with_partitions(partitions)
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

/// Committed offsets by topic, as the group coordinator answers them.
type Offsets = Vec<(String, Vec<(i32, Option<Committed>)>)>;
/// [`Offsets`] with a per-partition refusal.
type CheckedOffsets = Vec<(String, Vec<(i32, crate::error::Result<Option<Committed>>)>)>;

/// Kafka's OffsetFetch: partitions of topics the client may not DESCRIBE carry
/// TOPIC_AUTHORIZATION_FAILED when asked for by name, and are left out of "all topics".
fn authorized_offsets(ctx: &Ctx<'_>, named: bool, found: Offsets) -> CheckedOffsets {
    found
        .into_iter()
        .filter_map(|(t, ps)| {
            if ctx.topic_allowed(Operation::Describe, &t) {
                Some((t, ps.into_iter().map(|(p, c)| (p, Ok(c))).collect()))
            } else if named {
                let e = Error::TopicAuthorizationFailed(t.clone());
                Some((t, ps.into_iter().map(|(p, _)| (p, Err(e.clone()))).collect()))
            } else {
                None
            }
        })
        .collect()
}

pub async fn offset_delete(ctx: &Ctx<'_>, req: OffsetDeleteRequest) -> OffsetDeleteResponse {
    // Kafka: GROUP DELETE, then TOPIC READ per topic.
    let (topics, denied): (Vec<_>, Vec<_>) = req
        .topics
        .iter()
        .map(|t| (t.name.0.to_string(), t.partitions.iter().map(|p| p.partition_index).collect::<Vec<i32>>()))
        .partition(|(t, _)| ctx.topic_allowed(Operation::Read, t));
    match ctx
        .check_group(Operation::Delete, &req.group_id.0)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
        .and_then(|_| ctx.broker.groups.delete_offsets(&**ctx.broker, &req.group_id.0, topics))
    {
        Err(e) => OffsetDeleteResponse::default().with_error_code(e.code()),
        Ok(rs) => OffsetDeleteResponse::default().with_topics(
            rs.into_iter()
                .chain(denied.into_iter().map(|(t, ps)| {
                    let e = Error::TopicAuthorizationFailed(t.clone());
                    (t, ps.into_iter().map(|p| (p, Err(e.clone()))).collect())
                }))
                .map(|(t, ps)| {
                    OffsetDeleteResponseTopic::default().with_name(sb(t).into()).with_partitions(
                        ps.into_iter()
                            .map(|(p, r)| {
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(r.err().map_or(0, |e| e.code()))
                            })
                            .collect(),
                    )
                })
                .collect(),
        ),
    }
}
