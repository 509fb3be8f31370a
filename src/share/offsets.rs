//! Share-group offsets (KIP-932's administration, as Kafka's group coordinator serves
//! DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets): the
//! share-partition start offsets of a group, read, reset and deleted through the share
//! coordinators that hold them ([`persister::each_coordinator`]).
//!
//! Kafka's group coordinator remembers which topics a share group has initialized; here
//! the share coordinators are asked instead, for every partition in question (for "all
//! topics", every partition of every topic, in one request per share coordinator).

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::ListOffsetsRequest;
use uuid::Uuid;

use super::group::Tp;
use super::persister::{self, Batch};
use super::{ShareCoordinator, ShareHost};
use crate::error::{Error, Result};
use crate::metadata::names::is_internal;

/// How long asking another broker for its partitions' high watermarks may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// ListOffsets' timestamp for the latest offset (the high watermark).
const LATEST: i64 = -1;

/// One partition as DescribeShareGroupOffsets reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    pub partition: i32,
    /// -1 when the group has no state for it.
    pub start_offset: i64,
    pub leader_epoch: i32,
    /// Records not yet delivered and acknowledged; -1 when not known.
    pub lag: i64,
    pub error: Option<Error>,
}

/// A topic's partitions in an answer; the id is nil for a topic that does not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicResult<T> {
    pub name: String,
    pub id: Uuid,
    pub partitions: Vec<T>,
}

/// The topic's id and partition count, if it exists.
fn topic(host: &dyn ShareHost, name: &str) -> Option<(Uuid, i32)> {
    host.replicas().topic(name).map(|t| (t.record.id, t.record.partitions))
}

/// DescribeShareGroupOffsets of `group`: the named topics' partitions (a topic that does
/// not exist is answered with start offset -1, as Kafka's OffsetFetch does), or with
/// None every partition the group has a state for. A partition whose state cannot be
/// read is reported without one, as Kafka does.
pub async fn describe(host: &dyn ShareHost, group: &str, topics: Option<Vec<(String, Vec<i32>)>>) -> Vec<TopicResult<Described>> {
    let all = topics.is_none();
    let named: Vec<(String, Vec<i32>)> = topics.unwrap_or_else(|| {
        let every = host.replicas().all_topics();
        every.iter().filter(|t| !is_internal(&t.record.name)).map(|t| (t.record.name.clone(), (0..t.record.partitions).collect())).collect()
    });
    let mut tps = Vec::new();
    for (name, parts) in &named {
        if let Some((id, _)) = topic(host, name) {
            tps.extend(parts.iter().map(|p| (id, *p)));
        }
    }
    let states = persister::each_coordinator(host, group, &tps, Batch::Summary).await;
    let with_lag: Vec<Tp> =
        states.iter().filter_map(|(tp, s)| s.as_ref().ok()?.as_ref().filter(|s| s.start_offset >= 0).map(|_| *tp)).collect();
    let latest = latest_offsets(host, &with_lag).await;
    let mut out = Vec::new();
    for (name, parts) in named {
        let Some((id, _)) = topic(host, &name) else {
            let none = parts.iter().map(|p| Described { partition: *p, start_offset: -1, leader_epoch: 0, lag: -1, error: None });
            out.push(TopicResult { name, id: Uuid::nil(), partitions: none.collect() });
            continue;
        };
        let mut described = Vec::new();
        for p in parts {
            let state = states.get(&(id, p)).and_then(|s| s.as_ref().ok()).and_then(|s| s.as_ref());
            let Some(s) = state.filter(|s| s.start_offset >= 0) else {
                if !all {
                    described.push(Described { partition: p, start_offset: -1, leader_epoch: 0, lag: -1, error: None });
                }
                continue;
            };
            let mut d = Described { partition: p, start_offset: s.start_offset, leader_epoch: s.leader_epoch, lag: -1, error: None };
            match latest.get(&(id, p)) {
                // Kafka's lag: the end offset less the start offset less the records past
                // the start that are done with.
                Some(Ok(end)) if s.delivery_complete_count >= 0 => {
                    d.lag = (end - s.start_offset - s.delivery_complete_count as i64).max(0);
                }
                Some(Err(e)) => d.error = Some(e.clone()),
                _ => {}
            }
            described.push(d);
        }
        if !(all && described.is_empty()) {
            out.push(TopicResult { name, id, partitions: described });
        }
    }
    out
}

/// The high watermark of every partition in `tps`: read here for the partitions led
/// here, else asked of their leaders with ListOffsets, one request per leader.
async fn latest_offsets(host: &dyn ShareHost, tps: &[Tp]) -> BTreeMap<Tp, Result<i64>> {
    let mut out = BTreeMap::new();
    let mut by_leader: BTreeMap<i32, Vec<(String, Tp)>> = BTreeMap::new();
    for tp in tps {
        let Some(t) = host.replicas().topic_by_id(tp.0) else {
            out.insert(*tp, Err(Error::UnknownTopicOrPartition));
            continue;
        };
        match t.partition(tp.1).filter(|p| p.is_leader()) {
            Some(p) => {
                out.insert(*tp, Ok(p.high_watermark()));
            }
            None => {
                let leader = usize::try_from(tp.1).ok().and_then(|i| t.states.get(i)).map_or(-1, |s| s.leader);
                by_leader.entry(leader).or_default().push((t.record.name.clone(), *tp));
            }
        }
    }
    for (leader, parts) in by_leader {
        match list_latest(host, leader, &parts).await {
            Ok(mut got) => {
                for (_, tp) in &parts {
                    out.insert(*tp, got.remove(tp).unwrap_or(Err(Error::LeaderNotAvailable)));
                }
            }
            Err(e) => out.extend(parts.iter().map(|(_, tp)| (*tp, Err(e.clone())))),
        }
    }
    out
}

async fn list_latest(host: &dyn ShareHost, leader: i32, parts: &[(String, Tp)]) -> Result<BTreeMap<Tp, Result<i64>>> {
    let addr = host.broker_address(leader).ok_or(Error::LeaderNotAvailable)?;
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (name, tp) in parts {
        topics.entry(name).or_default().push(tp.1);
    }
    let ids: BTreeMap<&str, Uuid> = parts.iter().map(|(n, tp)| (n.as_str(), tp.0)).collect();
    let req = ListOffsetsRequest::default().with_replica_id((-1).into()).with_topics(
        topics
            .into_iter()
            .map(|(name, ps)| {
                let ps = ps
                    .into_iter()
                    .map(|p| ListOffsetsPartition::default().with_partition_index(p).with_current_leader_epoch(-1).with_timestamp(LATEST));
                ListOffsetsTopic::default()
                    .with_name(kafka_protocol::protocol::StrBytes::from_string(name.to_string()).into())
                    .with_partitions(ps.collect())
            })
            .collect(),
    );
    let resp = host.peers().call(leader, &addr, host.node_id(), 6, &req, LIST_TIMEOUT).await?;
    let mut out = BTreeMap::new();
    for t in resp.topics {
        let Some(id) = ids.get(t.name.as_str()) else { continue };
        for p in t.partitions {
            out.insert((*id, p.partition_index), Error::from_code(p.error_code).map_or(Ok(p.offset), Err));
        }
    }
    Ok(out)
}

/// AlterShareGroupOffsets: every named partition of an existing topic starts over at its
/// new start offset, under a state epoch newer than its state's (the leader's next write
/// of the old epoch is fenced). The group is created when it does not exist and must
/// have no members. Per partition: UNKNOWN_TOPIC_OR_PARTITION for one that does not
/// exist, INVALID_REQUEST for a negative offset, or the share coordinator's error.
pub async fn alter(
    host: &dyn ShareHost,
    shares: &ShareCoordinator,
    group: &str,
    topics: Vec<(String, Vec<(i32, i64)>)>,
) -> Result<Vec<TopicResult<(i32, Option<Error>)>>> {
    shares.ensure_empty_group(group)?;
    let mut out = Vec::new();
    for (name, parts) in topics {
        let Some((id, count)) = topic(host, &name) else {
            let refused = parts.iter().map(|(p, _)| (*p, Some(Error::UnknownTopicOrPartition)));
            out.push(TopicResult { name, id: Uuid::nil(), partitions: refused.collect() });
            continue;
        };
        let valid: Vec<Tp> = parts.iter().filter(|(p, o)| (0..count).contains(p) && *o >= 0).map(|(p, _)| (id, *p)).collect();
        let states = persister::each_coordinator(host, group, &valid, Batch::Summary).await;
        let mut results = Vec::new();
        for (p, offset) in parts {
            let r = if !(0..count).contains(&p) {
                Err(Error::UnknownTopicOrPartition)
            } else if offset < 0 {
                Err(Error::InvalidRequest(format!("start offset {offset} of partition {p} is negative")))
            } else {
                match states.get(&(id, p)) {
                    Some(Ok(state)) => {
                        let epoch = state.as_ref().map_or(0, |s| s.state_epoch).saturating_add(1);
                        persister::initialize(host, &(group.to_string(), id, p), epoch, offset).await
                    }
                    Some(Err(e)) => Err(e.clone()),
                    None => Err(Error::CoordinatorNotAvailable),
                }
            };
            results.push((p, r.err()));
        }
        out.push(TopicResult { name, id, partitions: results });
    }
    Ok(out)
}

/// A topic's outcome of DeleteShareGroupOffsets: its error and the message to give.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub name: String,
    pub id: Uuid,
    pub error: Option<(Error, String)>,
}

/// DeleteShareGroupOffsets: the group's state of every partition of each named topic.
/// GROUP_ID_NOT_FOUND for a group that is not a share group here, NON_EMPTY_GROUP for one
/// with members; per topic UNKNOWN_TOPIC_OR_PARTITION when it does not exist or the group
/// has no state for it, else the first share coordinator error.
pub async fn delete(host: &dyn ShareHost, shares: &ShareCoordinator, group: &str, topics: Vec<String>) -> Result<Vec<Deleted>> {
    let g = shares.describe(group).map_err(|_| Error::GroupIdNotFound(format!("Share group {group} not found.")))?;
    if !g.members.is_empty() {
        return Err(Error::NonEmptyGroup(format!("share group {group} has members")));
    }
    let failed = |e: Error| {
        let m = e.message();
        Some((e, m))
    };
    let mut out = Vec::new();
    for name in topics {
        let Some((id, count)) = topic(host, &name) else {
            out.push(Deleted { name, id: Uuid::nil(), error: failed(Error::UnknownTopicOrPartition) });
            continue;
        };
        let tps: Vec<Tp> = (0..count).map(|p| (id, p)).collect();
        let states = persister::each_coordinator(host, group, &tps, Batch::Summary).await;
        let held: Vec<Tp> = states.iter().filter(|(_, s)| matches!(s, Ok(Some(_)))).map(|(tp, _)| *tp).collect();
        let error = match states.values().find_map(|s| s.as_ref().err()) {
            Some(e) => failed(e.clone()),
            None if held.is_empty() => Some((Error::UnknownTopicOrPartition, "There is no offset information to delete.".into())),
            None => {
                persister::each_coordinator(host, group, &held, Batch::Delete).await.into_values().find_map(|r| r.err()).and_then(failed)
            }
        };
        out.push(Deleted { name, id, error });
    }
    Ok(out)
}
