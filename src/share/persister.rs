//! The share-partition leader's side of durability (Kafka's `Persister`): it reads a
//! share partition's state from its share coordinator on first use at a leader epoch,
//! initializing it when the coordinator has none, and writes the window after changes.
//! The coordinator is this broker's own [`StateCoordinator`] when it leads the state
//! partition, else another broker, called over the inter-broker transport. A coordinator
//! that is moving (NOT_COORDINATOR, loading, unreachable) is looked up again and retried
//! for a while, as Kafka's `PersisterStateManager` does.

use std::time::Duration;

use std::collections::BTreeMap;

use kafka_protocol::messages::{
    delete_share_group_state_request as del, initialize_share_group_state_request as init, read_share_group_state_request as read,
    read_share_group_state_summary_request as summary, write_share_group_state_request as write, DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest, ReadShareGroupStateRequest, ReadShareGroupStateSummaryRequest, WriteShareGroupStateRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::coordinator::{coordinator_key, StateCoordinator};
use super::group::Tp;
use super::partition::SharePartition;
use super::state::{PersistedBatch, ShareState, StateKey, Written};
use super::{Key, ShareCoordinator, ShareHost};
use crate::error::{Error, Result};

/// How long a call keeps looking for a coordinator that is moving.
const RETRY_FOR: Duration = Duration::from_secs(20);
const RETRY_BACKOFF: Duration = Duration::from_millis(200);
/// How long one call to another broker may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// A call to a share coordinator.
enum Call<'a> {
    Initialize { state_epoch: i32, start_offset: i64 },
    Read { leader_epoch: i32 },
    Write(&'a Written),
}

/// Reads the share partition in at `leader_epoch` unless it already is: the state its
/// coordinator holds, or, for a partition it has never seen, a new one at `start()`
/// that is initialized there first. Returns which reading-in is in memory, for [`flush`].
pub async fn load(
    host: &dyn ShareHost,
    shares: &ShareCoordinator,
    key: &Key,
    leader_epoch: i32,
    start: impl FnOnce() -> i64,
) -> Result<u64> {
    let tp = (key.1, key.2);
    let loaded = || shares.is_loaded(&key.0, tp, leader_epoch).then(|| shares.incarnation(key)).flatten();
    if let Some(inc) = loaded() {
        return Ok(inc);
    }
    let lock = shares.io_lock(key);
    let _turn = lock.lock().await;
    if let Some(inc) = loaded() {
        return Ok(inc);
    }
    let cfg = shares.share_config_for(&key.0);
    let sp = match call(host, key, Call::Read { leader_epoch }).await? {
        Some(s) if s.start_offset >= 0 => {
            let batches: Vec<_> = s.batches.iter().map(|b| (b.first, b.last, b.state, b.count)).collect();
            (s.state_epoch, SharePartition::restore(s.start_offset, &batches, &cfg))
        }
        _ => {
            let start_offset = start();
            call(host, key, Call::Initialize { state_epoch: 0, start_offset }).await?;
            (0, SharePartition::new(start_offset))
        }
    };
    shares.install(&key.0, tp, leader_epoch, sp.0, sp.1);
    shares.incarnation(key).ok_or(Error::CoordinatorNotAvailable)
}

/// Writes the share partition's changes, if it has any, and returns once its coordinator
/// has them durably. A write that fails drops the in-memory state, so nothing the
/// coordinator lacks is ever taken as done: the next use reads the durable state back.
/// With `changed` (the reading-in a caller changed), a partition that has been dropped
/// and read again since fails too: that change is gone.
pub async fn flush(host: &dyn ShareHost, shares: &ShareCoordinator, key: &Key, changed: Option<u64>) -> Result<()> {
    let lock = shares.io_lock(key);
    let _turn = lock.lock().await;
    if changed.is_some() && shares.incarnation(key) != changed {
        return Err(Error::CoordinatorNotAvailable);
    }
    let Some(pending) = shares.pending_write(key) else { return Ok(()) };
    match call(host, key, Call::Write(&pending.written)).await {
        Ok(_) => {
            shares.written(key, pending.version);
            Ok(())
        }
        Err(e) => {
            tracing::warn!(group = %key.0, topic = %key.1, partition = key.2, error = %e, "share-partition state not written; reading it again");
            shares.forget(key);
            Err(for_client(e))
        }
    }
}

/// Writes every share partition with changes (released and timed-out records).
pub async fn flush_dirty(host: &dyn ShareHost, shares: &ShareCoordinator) {
    for key in shares.dirty() {
        let _ = flush(host, shares, &key, None).await;
    }
}

/// Deletes the group's state of every share partition in `tps` (DeleteGroups of a share
/// group), one DeleteShareGroupState per share coordinator; a partition whose state was
/// never written needs nothing. Returns the first failure.
pub async fn delete_group(host: &dyn ShareHost, group: &str, tps: &[Tp]) -> Result<()> {
    let out = each_coordinator(host, group, tps, Batch::Delete).await;
    out.into_values().find_map(|r| r.err()).map_or(Ok(()), Err)
}

/// What [`each_coordinator`] asks of every share partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// ReadShareGroupStateSummary: the state, None when the partition has none.
    Summary,
    /// DeleteShareGroupState.
    Delete,
}

/// One partition's outcome of a [`Batch`].
pub type Outcome = Result<Option<ShareState>>;

/// `op` on the group's state of every partition in `tps`, one request per share
/// coordinator (the group coordinator's side of the persister: describing, resetting and
/// deleting offsets). Partitions whose coordinator is moving are looked up and tried
/// again for a while. With no `__share_group_state` yet, no partition has a state.
pub async fn each_coordinator(host: &dyn ShareHost, group: &str, tps: &[Tp], op: Batch) -> BTreeMap<Tp, Outcome> {
    let mut out = BTreeMap::new();
    if host.replicas().topic(crate::metadata::names::SHARE_STATE_TOPIC).is_none() {
        return tps.iter().map(|tp| (*tp, Ok(None))).collect();
    }
    let deadline = tokio::time::Instant::now() + RETRY_FOR;
    let mut todo: Vec<Tp> = tps.to_vec();
    loop {
        let sc = host.share_state();
        let mut by_node: BTreeMap<i32, Vec<Tp>> = BTreeMap::new();
        for tp in &todo {
            match sc.coordinator_of(host, &coordinator_key(&(group.to_string(), tp.0, tp.1))) {
                Ok((node, _, _)) => by_node.entry(node).or_default().push(*tp),
                Err(e) => {
                    out.insert(*tp, Err(e));
                }
            }
        }
        for (node, tps) in by_node {
            let mut got = on_node(host, node, group, &tps, op).await;
            for tp in tps {
                out.insert(tp, got.remove(&tp).unwrap_or(Err(Error::CoordinatorNotAvailable)));
            }
        }
        todo = out.iter().filter(|(_, r)| r.as_ref().is_err_and(|e| retriable(e.code()))).map(|(tp, _)| *tp).collect();
        if todo.is_empty() || tokio::time::Instant::now() + RETRY_BACKOFF >= deadline {
            return out;
        }
        tokio::time::sleep(RETRY_BACKOFF).await;
    }
}

/// One [`Batch`] on share coordinator `node`: this broker's own, or one request to another.
async fn on_node(host: &dyn ShareHost, node: i32, group: &str, tps: &[Tp], op: Batch) -> BTreeMap<Tp, Outcome> {
    let sc = host.share_state();
    if node == host.node_id() {
        let mut out = BTreeMap::new();
        for tp in tps {
            let key = (group.to_string(), tp.0, tp.1);
            let r = match op {
                Batch::Summary => sc.summary(host, &key).await,
                Batch::Delete => sc.delete(host, &key).await.map(|()| None),
            };
            out.insert(*tp, r);
        }
        return out;
    }
    match remote(host, node, group, tps, op).await {
        Ok(out) => out,
        Err(e) => tps.iter().map(|tp| (*tp, Err(e.clone()))).collect(),
    }
}

async fn remote(host: &dyn ShareHost, node: i32, group: &str, tps: &[Tp], op: Batch) -> Result<BTreeMap<Tp, Outcome>> {
    let addr = host.broker_address(node).ok_or(Error::CoordinatorNotAvailable)?;
    let mut topics: BTreeMap<uuid::Uuid, Vec<i32>> = BTreeMap::new();
    for (t, p) in tps {
        topics.entry(*t).or_default().push(*p);
    }
    let group = StrBytes::from_string(group.to_string());
    let (me, peers) = (host.node_id(), host.peers());
    let mut out = BTreeMap::new();
    match op {
        Batch::Summary => {
            let data = topics.into_iter().map(|(t, ps)| {
                let parts = ps.into_iter().map(|p| summary::PartitionData::default().with_partition(p).with_leader_epoch(-1));
                summary::ReadStateSummaryData::default().with_topic_id(t).with_partitions(parts.collect())
            });
            let req = ReadShareGroupStateSummaryRequest::default().with_group_id(group).with_topics(data.collect());
            let resp = peers.call(node, &addr, me, 1, &req, CALL_TIMEOUT).await?;
            for t in resp.results {
                for p in t.partitions {
                    let r = match Error::from_code(p.error_code) {
                        Some(e) => Err(e),
                        // The answer for a partition without a state.
                        None if p.start_offset < 0 && p.state_epoch == 0 => Ok(None),
                        None => Ok(Some(ShareState {
                            snapshot_epoch: -1,
                            state_epoch: p.state_epoch,
                            leader_epoch: p.leader_epoch,
                            start_offset: p.start_offset,
                            delivery_complete_count: p.delivery_complete_count,
                            batches: Vec::new(),
                        })),
                    };
                    out.insert((t.topic_id, p.partition), r);
                }
            }
        }
        Batch::Delete => {
            let data = topics.into_iter().map(|(t, ps)| {
                let parts = ps.into_iter().map(|p| del::PartitionData::default().with_partition(p));
                del::DeleteStateData::default().with_topic_id(t).with_partitions(parts.collect())
            });
            let req = DeleteShareGroupStateRequest::default().with_group_id(group).with_topics(data.collect());
            let resp = peers.call(node, &addr, me, 0, &req, CALL_TIMEOUT).await?;
            for t in resp.results {
                for p in t.partitions {
                    out.insert((t.topic_id, p.partition), Error::from_code(p.error_code).map_or(Ok(None), Err));
                }
            }
        }
    }
    Ok(out)
}

/// InitializeShareGroupState for AlterShareGroupOffsets: the share partition starts over
/// at `start_offset` under `state_epoch`, which must be newer than its state's.
pub async fn initialize(host: &dyn ShareHost, key: &Key, state_epoch: i32, start_offset: i64) -> Result<()> {
    call(host, key, Call::Initialize { state_epoch, start_offset }).await.map(|_| ())
}

/// What the share client is told when its state could not be read or written: a leader
/// that was fenced is no longer the leader; a coordinator that could not be reached is
/// not available.
fn for_client(e: Error) -> Error {
    match e.code() {
        74 => Error::NotLeaderOrFollower, // FENCED_LEADER_EPOCH
        c if retriable(c) => Error::CoordinatorNotAvailable,
        _ => e,
    }
}

/// NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, BROKER_NOT_AVAILABLE, NETWORK_EXCEPTION,
/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
/// NOT_ENOUGH_REPLICAS(_AFTER_APPEND): the coordinator is moving or catching up.
fn retriable(code: i16) -> bool {
    matches!(code, 6 | 7 | 8 | 13 | 14 | 15 | 16 | 19 | 20)
}

/// One call, retried while the coordinator moves.
async fn call(host: &dyn ShareHost, key: &Key, c: Call<'_>) -> Result<Option<ShareState>> {
    let deadline = tokio::time::Instant::now() + RETRY_FOR;
    loop {
        match attempt(host, key, &c).await {
            Err(e) if retriable(e.code()) && tokio::time::Instant::now() + RETRY_BACKOFF < deadline => {
                tracing::debug!(group = %key.0, partition = key.2, error = %e, "share coordinator busy or moving; retrying");
                tokio::time::sleep(RETRY_BACKOFF).await;
            }
            r => return r,
        }
    }
}

async fn attempt(host: &dyn ShareHost, key: &StateKey, c: &Call<'_>) -> Result<Option<ShareState>> {
    let sc: &StateCoordinator = host.share_state();
    let (leader, _, _) = sc.coordinator_of(host, &coordinator_key(key))?;
    if leader == host.node_id() {
        return match c {
            Call::Initialize { state_epoch, start_offset } => sc.initialize(host, key, *state_epoch, *start_offset).await.map(|_| None),
            Call::Read { leader_epoch } => sc.read(host, key, *leader_epoch).await,
            Call::Write(w) => sc.write(host, key, w).await.map(|_| None),
        };
    }
    let addr = host.broker_address(leader).ok_or(Error::CoordinatorNotAvailable)?;
    let group = StrBytes::from_string(key.0.clone());
    let (me, peers) = (host.node_id(), host.peers());
    match c {
        Call::Initialize { state_epoch, start_offset } => {
            let p = init::PartitionData::default().with_partition(key.2).with_state_epoch(*state_epoch).with_start_offset(*start_offset);
            let req = InitializeShareGroupStateRequest::default()
                .with_group_id(group)
                .with_topics(vec![init::InitializeStateData::default().with_topic_id(key.1).with_partitions(vec![p])]);
            let resp = peers.call(leader, &addr, me, 0, &req, CALL_TIMEOUT).await?;
            let r = resp.results.iter().flat_map(|t| &t.partitions).next().ok_or(Error::CoordinatorNotAvailable)?;
            Error::from_code(r.error_code).map_or(Ok(None), Err)
        }
        Call::Read { leader_epoch } => {
            let p = read::PartitionData::default().with_partition(key.2).with_leader_epoch(*leader_epoch);
            let req = ReadShareGroupStateRequest::default()
                .with_group_id(group)
                .with_topics(vec![read::ReadStateData::default().with_topic_id(key.1).with_partitions(vec![p])]);
            let resp = peers.call(leader, &addr, me, 0, &req, CALL_TIMEOUT).await?;
            let r = resp.results.iter().flat_map(|t| &t.partitions).next().ok_or(Error::CoordinatorNotAvailable)?;
            if let Some(e) = Error::from_code(r.error_code) {
                return Err(e);
            }
            let batches = r.state_batches.iter().map(|b| PersistedBatch {
                first: b.first_offset,
                last: b.last_offset,
                state: b.delivery_state,
                count: b.delivery_count,
            });
            Ok(Some(ShareState {
                snapshot_epoch: -1,
                state_epoch: r.state_epoch,
                leader_epoch: *leader_epoch,
                start_offset: r.start_offset,
                delivery_complete_count: -1,
                batches: batches.collect(),
            }))
        }
        Call::Write(w) => {
            let batches = w
                .batches
                .iter()
                .map(|b| {
                    write::StateBatch::default()
                        .with_first_offset(b.first)
                        .with_last_offset(b.last)
                        .with_delivery_state(b.state)
                        .with_delivery_count(b.count)
                })
                .collect();
            let p = write::PartitionData::default()
                .with_partition(key.2)
                .with_state_epoch(w.state_epoch)
                .with_leader_epoch(w.leader_epoch)
                .with_start_offset(w.start_offset)
                .with_delivery_complete_count(w.delivery_complete_count)
                .with_state_batches(batches);
            let req = WriteShareGroupStateRequest::default()
                .with_group_id(group)
                .with_topics(vec![write::WriteStateData::default().with_topic_id(key.1).with_partitions(vec![p])]);
            let resp = peers.call(leader, &addr, me, 1, &req, CALL_TIMEOUT).await?;
            let r = resp.results.iter().flat_map(|t| &t.partitions).next().ok_or(Error::CoordinatorNotAvailable)?;
            Error::from_code(r.error_code).map_or(Ok(None), Err)
        }
    }
}
