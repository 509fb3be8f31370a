//! The group coordinator: classic groups and their committed offsets, kept in the
//! internal compacted topic `__consumer_offsets` and rebuilt from it on startup.
//!
//! The rebalance logic lives in [`classic`] and knows nothing of time or sockets;
//! this module feeds it requests and clock ticks, parks requests that must wait
//! (JoinGroup, SyncGroup) on one-shot channels, and persists what changed.

mod assignor;
pub mod classic;
pub mod consumer;
pub mod consumer_protocol;
mod modern;
mod persist;
pub mod store;
pub mod streams;
mod streams_coord;

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::log::records;
use crate::metadata::names::coordinator_partition;
use crate::partition::InternalPartitions;
use classic::{Group, GroupConfig, JoinRequest, JoinResponse, Reply, State, SyncResponse, Ticket};
use consumer::{ConsumerConfig, ConsumerGroup, Heartbeat, HeartbeatReply, Topics};
use store::{ConsumerGroupValue, GroupValue, Key, MemberValue, OffsetValue};

/// The internal topic holding group state.
pub use crate::metadata::names::OFFSETS_TOPIC;
/// Largest offset metadata string accepted (Kafka's `offset.metadata.max.bytes`).
pub const MAX_METADATA: usize = 4096;

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_ts: i64,
}

/// A group and its offsets.
struct Entry {
    group: Group,
    /// Set when this is a KIP-848 consumer group rather than a classic one.
    modern: Option<ConsumerGroup>,
    /// Set when this is a KIP-1071 streams group.
    streams: Option<streams::StreamsGroup>,
    offsets: BTreeMap<(String, i32), Committed>,
}

impl Entry {
    fn new(id: &str, now: i64) -> Entry {
        Entry { group: Group::new(id, now), modern: None, streams: None, offsets: BTreeMap::new() }
    }

    /// A consumer group with members, which classic requests must not touch.
    fn is_active_modern(&self) -> bool {
        self.modern.as_ref().is_some_and(|m| !m.members.is_empty()) || self.streams.as_ref().is_some_and(|s| !s.members.is_empty())
    }
}

/// Topic names to ids and partition counts, as consumer groups see them.
fn topics_view(host: &dyn InternalPartitions) -> Topics {
    host.replicas().all_topics().iter().map(|t| (t.record.name.clone(), (t.record.id, t.record.partitions))).collect()
}

#[derive(Default)]
struct Inner {
    groups: HashMap<String, Entry>,
    /// Offsets committed inside open transactions, by producer id.
    pending_txn: HashMap<i64, Vec<(String, String, i32, Committed)>>,
    waiters: HashMap<Ticket, oneshot::Sender<Reply>>,
    next_ticket: Ticket,
}

/// The coordinator for every group on this broker.
pub struct Coordinator {
    inner: Mutex<Inner>,
    /// The `__consumer_offsets` partitions this broker leads, whose groups it coordinates.
    owned: Mutex<std::collections::HashSet<i32>>,
    pub config: GroupConfig,
    /// The broker's defaults, for consumer groups without group configs.
    pub consumer_config: ConsumerConfig,
    /// Groups whose group configs differ from the broker's; never locked while waiting
    /// for `inner`'s lock.
    consumer_overrides: parking_lot::RwLock<HashMap<String, ConsumerConfig>>,
    offsets_partitions: i32,
    retention_ms: i64,
}

/// One offset to commit.
#[derive(Debug, Clone)]
pub struct CommitItem {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// What DescribeGroups shows of a group.
#[derive(Debug, Clone)]
pub struct Description {
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    /// (member id, instance id, client id, host, metadata, assignment)
    pub members: Vec<(String, Option<String>, String, String, Bytes, Bytes)>,
}

/// Offsets checked and turned into records. Returns each item's result, the records
/// to write, and the accepted offsets as (topic, partition, offset).
type OffsetRecords = (Vec<(CommitItem, Result<()>)>, Vec<(Vec<u8>, Option<Vec<u8>>)>, Vec<(String, i32, Committed)>);

fn offset_records(host: &dyn InternalPartitions, group_id: &str, items: Vec<CommitItem>, now: i64) -> OffsetRecords {
    let mut results = Vec::with_capacity(items.len());
    let mut recs = Vec::new();
    let mut accepted = Vec::new();
    for it in items {
        let check = if it.metadata.as_ref().is_some_and(|m| m.len() > MAX_METADATA) {
            Err(Error::OffsetMetadataTooLarge)
        } else if host.replicas().topic(&it.topic).is_none_or(|t| it.partition < 0 || it.partition >= t.record.partitions) {
            Err(Error::UnknownTopicOrPartition)
        } else {
            Ok(())
        };
        if check.is_ok() {
            let c = Committed {
                offset: it.offset,
                leader_epoch: it.leader_epoch,
                metadata: it.metadata.clone().unwrap_or_default(),
                commit_ts: now,
            };
            let v = OffsetValue { v: 0, offset: c.offset, leader_epoch: c.leader_epoch, metadata: c.metadata.clone(), commit_ts: now };
            recs.push((
                Key::Offset { group: group_id.into(), topic: it.topic.clone(), partition: it.partition }.encode(),
                Some(serde_json::to_vec(&v).expect("serializable")),
            ));
            accepted.push((it.topic.clone(), it.partition, c));
        }
        results.push((it, check));
    }
    (results, recs, accepted)
}

fn dispatch(inner: &mut Inner, replies: Vec<Reply>) {
    for r in replies {
        let t = match &r {
            Reply::Join(t, _) | Reply::Sync(t, _) => *t,
        };
        if let Some(tx) = inner.waiters.remove(&t) {
            let _ = tx.send(r);
        }
    }
}

impl Coordinator {
    pub fn new(config: GroupConfig, consumer_config: ConsumerConfig, offsets_partitions: i32, retention_ms: i64) -> Coordinator {
        Coordinator {
            inner: Mutex::new(Inner::default()),
            owned: Mutex::new(Default::default()),
            config,
            consumer_config,
            consumer_overrides: Default::default(),
            offsets_partitions,
            retention_ms,
        }
    }

    /// Replaces the settings of the consumer groups that have group configs. A changed
    /// session timeout or heartbeat interval applies from the next heartbeat and tick on.
    pub fn set_consumer_overrides(&self, overrides: HashMap<String, ConsumerConfig>) {
        *self.consumer_overrides.write() = overrides;
    }

    /// The settings consumer group `group_id` runs with.
    pub fn consumer_config_for(&self, group_id: &str) -> ConsumerConfig {
        self.consumer_overrides.read().get(group_id).cloned().unwrap_or_else(|| self.consumer_config.clone())
    }

    fn ticket(inner: &mut Inner) -> (Ticket, oneshot::Receiver<Reply>) {
        inner.next_ticket += 1;
        let (tx, rx) = oneshot::channel();
        inner.waiters.insert(inner.next_ticket, tx);
        (inner.next_ticket, rx)
    }

    /// Appends records for `group` to its `__consumer_offsets` partition.
    fn write(&self, host: &dyn InternalPartitions, group: &str, recs: &[(Vec<u8>, Option<Vec<u8>>)]) -> Result<()> {
        self.write_as(host, group, recs, None)
    }

    /// Like `write`, optionally as part of producer `txn`'s transaction.
    fn write_as(
        &self,
        host: &dyn InternalPartitions,
        group: &str,
        recs: &[(Vec<u8>, Option<Vec<u8>>)],
        txn: Option<(i64, i16)>,
    ) -> Result<()> {
        if recs.is_empty() {
            return Ok(());
        }
        // Never created here: callers hold the group lock, and creating the topic waits on
        // metadata that takes the same lock. FindCoordinator creates it first, as in Kafka.
        let topic = host.replicas().topic(OFFSETS_TOPIC).ok_or(Error::CoordinatorNotAvailable)?;
        let p = coordinator_partition(group, topic.record.partitions);
        let part = topic.partition(p).ok_or(Error::CoordinatorNotAvailable)?;
        let refs: Vec<(Option<&[u8]>, Option<&[u8]>)> = recs.iter().map(|(k, v)| (Some(k.as_slice()), v.as_deref())).collect();
        let mut b = records::build(&refs, now_ms());
        if let Some((pid, epoch)) = txn {
            crate::log::control::set_producer(&mut b, pid, epoch, crate::log::batch::ATTR_TRANSACTIONAL);
        }
        part.append_internal(&b, now_ms())?;
        Ok(())
    }

    fn group_record(group: &Group) -> (Vec<u8>, Option<Vec<u8>>) {
        let key = Key::Group { group: group.id.clone() }.encode();
        if group.state == State::Dead {
            return (key, None);
        }
        let proto = group.protocol.clone().unwrap_or_default();
        let value = GroupValue {
            v: 0,
            protocol_type: group.protocol_type.clone(),
            generation: group.generation,
            protocol: group.protocol.clone(),
            leader: group.leader.clone(),
            state_ts: group.state_since,
            members: group
                .members
                .values()
                .map(|m| MemberValue {
                    id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscription: store::hex(&m.metadata(&proto)),
                    assignment: store::hex(&m.assignment),
                })
                .collect(),
        };
        (key, Some(serde_json::to_vec(&value).expect("serializable")))
    }

    /// Writes the group's metadata if it changed and is at rest (Stable, Empty or Dead).
    fn persist_group(&self, host: &dyn InternalPartitions, entry: &mut Entry) {
        let g = &mut entry.group;
        if !g.dirty || !matches!(g.state, State::Stable | State::Empty | State::Dead) {
            return;
        }
        g.dirty = false;
        if let Err(e) = self.write(host, &g.id.clone(), &[Self::group_record(g)]) {
            tracing::warn!(group = %g.id, error = %e, "could not persist group metadata");
        }
    }

    fn persist_modern(&self, host: &dyn InternalPartitions, group_id: &str, entry: &mut Entry) {
        let Some(m) = entry.modern.as_mut().filter(|m| m.dirty) else { return };
        m.dirty = false;
        let value = serde_json::to_vec(&ConsumerGroupValue { v: 0, group: m.clone() }).expect("serializable");
        if let Err(e) = self.write(host, group_id, &[(Key::ConsumerGroup { group: group_id.into() }.encode(), Some(value))]) {
            tracing::warn!(group = %group_id, error = %e, "could not persist consumer group");
        }
    }

    /// ConsumerGroupHeartbeat (KIP-848).
    pub fn consumer_heartbeat(&self, host: &dyn InternalPartitions, group_id: &str, hb: Heartbeat) -> Result<HeartbeatReply> {
        if group_id.is_empty() {
            return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
        }
        let topics = topics_view(host);
        let now = now_ms();
        let cfg = self.consumer_config_for(group_id);
        let mut inner = self.inner.lock();
        let entry = inner.groups.entry(group_id.to_string()).or_insert_with(|| Entry::new(group_id, now));
        if entry.streams.is_some() {
            return Err(Error::GroupIdNotFound(format!("Group {group_id} is not a consumer group.")));
        }
        if entry.modern.is_none() {
            if !matches!(entry.group.state, State::Empty | State::Dead) {
                return Err(Error::GroupIdNotFound(format!("{group_id} is a classic group")));
            }
            entry.modern = Some(ConsumerGroup::new(group_id));
        }
        let reply = entry.modern.as_mut().expect("set").heartbeat(hb, &topics, &cfg, now);
        self.persist_modern(host, group_id, entry);
        reply
    }

    /// ConsumerGroupDescribe: the group, or GROUP_ID_NOT_FOUND.
    pub fn consumer_describe(&self, group_id: &str) -> Result<ConsumerGroup> {
        let inner = self.inner.lock();
        inner
            .groups
            .get(group_id)
            .and_then(|e| e.modern.clone())
            .ok_or_else(|| Error::GroupIdNotFound(format!("{group_id} is not a consumer group")))
    }

    /// JoinGroup. Waits, when the protocol says so, until the rebalance completes.
    pub async fn join(&self, host: &dyn InternalPartitions, group_id: &str, req: JoinRequest) -> JoinResponse {
        let member = req.member_id.clone();
        let rx = {
            let mut inner = self.inner.lock();
            let now = now_ms();
            let (ticket, rx) = Self::ticket(&mut inner);
            let entry = inner.groups.entry(group_id.to_string()).or_insert_with(|| Entry::new(group_id, now));
            if entry.group.state == State::Dead {
                entry.group = Group::new(group_id, now);
            }
            if entry.is_active_modern() {
                inner.waiters.remove(&ticket);
                return JoinResponse::error(Error::InconsistentGroupProtocol, &member);
            }
            let (immediate, replies) = entry.group.join(req, ticket, &self.config, now);
            self.persist_group(host, entry);
            dispatch(&mut inner, replies);
            if let Some(r) = immediate {
                inner.waiters.remove(&ticket);
                return r;
            }
            rx
        };
        match rx.await {
            Ok(Reply::Join(_, r)) => r,
            _ => JoinResponse::error(Error::UnknownMemberId(member.clone()), &member),
        }
    }

    /// SyncGroup. Followers wait for the leader's assignment.
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        host: &dyn InternalPartitions,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol: Option<&str>,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncResponse {
        let rx = {
            let mut inner = self.inner.lock();
            let (ticket, rx) = Self::ticket(&mut inner);
            let Some(entry) = inner.groups.get_mut(group_id) else {
                inner.waiters.remove(&ticket);
                return SyncResponse {
                    error: Some(Error::UnknownMemberId(member_id.into())),
                    protocol_type: None,
                    protocol: None,
                    assignment: Bytes::new(),
                };
            };
            let (immediate, replies) =
                entry.group.sync(member_id, instance_id, generation, protocol_type, protocol, assignments, ticket, now_ms());
            self.persist_group(host, entry);
            dispatch(&mut inner, replies);
            if let Some(r) = immediate {
                inner.waiters.remove(&ticket);
                return r;
            }
            rx
        };
        match rx.await {
            Ok(Reply::Sync(_, r)) => r,
            _ => SyncResponse { error: Some(Error::RebalanceInProgress), protocol_type: None, protocol: None, assignment: Bytes::new() },
        }
    }

    /// Heartbeat.
    pub fn heartbeat(&self, group_id: &str, member_id: &str, instance_id: Option<&str>, generation: i32) -> Result<()> {
        let mut inner = self.inner.lock();
        let entry = inner.groups.get_mut(group_id).ok_or_else(|| Error::UnknownMemberId(member_id.into()))?;
        entry.group.heartbeat(member_id, instance_id, generation, now_ms())
    }

    /// LeaveGroup for one member.
    pub fn leave(&self, host: &dyn InternalPartitions, group_id: &str, member_id: &str, instance_id: Option<&str>) -> Result<()> {
        let mut inner = self.inner.lock();
        let entry = inner.groups.get_mut(group_id).ok_or_else(|| Error::UnknownMemberId(member_id.into()))?;
        let result = entry.group.leave(member_id, instance_id, &self.config, now_ms());
        self.persist_group(host, entry);
        let replies = result?;
        dispatch(&mut inner, replies);
        Ok(())
    }

    /// Runs timeouts for every group; called a few times a second.
    pub fn tick(&self, host: &dyn InternalPartitions) {
        let now = now_ms();
        let mut topics: Option<Topics> = None;
        let mut counts: Option<streams::TopicCounts> = None;
        let mut inner = self.inner.lock();
        let mut replies = Vec::new();
        for (id, entry) in inner.groups.iter_mut() {
            replies.extend(entry.group.tick(&self.config, now));
            self.persist_group(host, entry);
            if let Some(m) = entry.modern.as_mut() {
                m.tick(topics.get_or_insert_with(|| topics_view(host)), &self.consumer_config_for(id), now);
                self.persist_modern(host, id, entry);
            }
            if let Some(s) = entry.streams.as_mut() {
                s.tick(counts.get_or_insert_with(|| streams_coord::topic_counts(host)), &self.consumer_config_for(id).streams, now);
                self.persist_streams(host, id, entry);
            }
        }
        dispatch(&mut inner, replies);
    }

    /// `__consumer_offsets`, created on first use as Kafka does.
    pub fn ensure_offsets_topic(&self, host: &dyn InternalPartitions) -> Result<std::sync::Arc<crate::partition::Topic>> {
        host.ensure_internal_topic(OFFSETS_TOPIC, self.offsets_partitions)
    }

    /// The `__consumer_offsets` partition that holds `group`.
    pub fn offsets_partition(&self, group: &str) -> i32 {
        coordinator_partition(group, self.offsets_partitions)
    }

    /// OffsetCommit: validates the member, then stores each offset. The outer error
    /// applies to every partition.
    pub fn commit(
        &self,
        host: &dyn InternalPartitions,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        items: Vec<CommitItem>,
    ) -> Result<Vec<(CommitItem, Result<()>)>> {
        if group_id.is_empty() {
            return Err(Error::InvalidGroupId);
        }
        let now = now_ms();
        let mut inner = self.inner.lock();
        match inner.groups.get_mut(group_id) {
            None if generation >= 0 => return Err(Error::IllegalGeneration(generation)),
            None => {
                inner.groups.insert(group_id.to_string(), Entry::new(group_id, now));
            }
            Some(e) if e.streams.is_some() => {
                let g = e.streams.as_ref().expect("streams");
                if !(generation < 0 && member_id.is_empty() && g.members.is_empty()) {
                    g.validate_member_epoch(member_id, generation)?;
                }
            }
            Some(e) if e.modern.is_some() => {
                let m = e.modern.as_ref().expect("modern");
                let simple = generation < 0 && member_id.is_empty() && m.members.is_empty();
                if !simple {
                    m.validate_member_epoch(member_id, generation)?;
                }
            }
            Some(e) => {
                let g = &mut e.group;
                let simple = generation < 0 && member_id.is_empty() && g.state == State::Empty;
                if !simple {
                    match g.state {
                        State::Dead => return Err(Error::CoordinatorNotAvailable),
                        State::Empty => return Err(Error::UnknownMemberId(member_id.into())),
                        State::CompletingRebalance => {
                            g.validate_member(member_id, instance_id, generation)?;
                            return Err(Error::RebalanceInProgress);
                        }
                        _ => {
                            g.validate_member(member_id, instance_id, generation)?;
                            // A commit counts as a sign of life, as in Kafka.
                            let _ = g.heartbeat(member_id, instance_id, generation, now);
                        }
                    }
                }
            }
        }
        let (results, recs, accepted) = offset_records(host, group_id, items, now);
        if let Err(e) = self.write(host, group_id, &recs) {
            return Ok(results.into_iter().map(|(it, r)| (it, r.and(Err(e.clone())))).collect());
        }
        let entry = inner.groups.get_mut(group_id).expect("present");
        entry.offsets.extend(accepted.into_iter().map(|(t, p, c)| ((t, p), c)));
        Ok(results)
    }

    /// TxnOffsetCommit: offsets written now, visible when the transaction commits.
    #[allow(clippy::too_many_arguments)]
    pub fn txn_commit(
        &self,
        host: &dyn InternalPartitions,
        group_id: &str,
        pid: i64,
        epoch: i16,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        items: Vec<CommitItem>,
    ) -> Result<Vec<(CommitItem, Result<()>)>> {
        if group_id.is_empty() {
            return Err(Error::InvalidGroupId);
        }
        let now = now_ms();
        let mut inner = self.inner.lock();
        if let Some(e) = inner.groups.get(group_id) {
            if !member_id.is_empty() && generation >= 0 {
                match (&e.modern, &e.streams) {
                    (_, Some(s)) => s.validate_member_epoch(member_id, generation)?,
                    (Some(m), None) => m.validate_member_epoch(member_id, generation)?,
                    (None, None) => e.group.validate_member(member_id, instance_id, generation)?,
                }
            }
        }
        let (results, recs, accepted) = offset_records(host, group_id, items, now);
        if !recs.is_empty() {
            self.write_as(host, group_id, &recs, Some((pid, epoch)))?;
        }
        inner.pending_txn.entry(pid).or_default().extend(accepted.into_iter().map(|(t, p, c)| (group_id.to_string(), t, p, c)));
        Ok(results)
    }

    /// Applies (commit) or drops (abort) a producer's transactional offsets.
    pub fn complete_txn(&self, pid: i64, commit: bool) {
        let mut inner = self.inner.lock();
        let Some(pending) = inner.pending_txn.remove(&pid) else { return };
        if !commit {
            return;
        }
        let now = now_ms();
        for (g, t, p, c) in pending {
            inner.groups.entry(g.clone()).or_insert_with(|| Entry::new(&g, now)).offsets.insert((t, p), c);
        }
    }

    /// Is this partition's offset for `group` waiting on an open transaction?
    pub fn has_pending_txn(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.inner.lock().pending_txn.values().flatten().any(|(g, t, p, _)| g == group && t == topic && *p == partition)
    }

    /// OffsetFetch: the committed offset of each asked partition, or of all of them.
    pub fn fetch_offsets(&self, group_id: &str, wanted: Option<Vec<(String, Vec<i32>)>>) -> Vec<(String, Vec<(i32, Option<Committed>)>)> {
        let inner = self.inner.lock();
        let offsets = inner.groups.get(group_id).map(|e| &e.offsets);
        match wanted {
            Some(topics) => topics
                .into_iter()
                .map(|(t, parts)| {
                    let ps = parts.into_iter().map(|p| (p, offsets.and_then(|o| o.get(&(t.clone(), p)).cloned()))).collect();
                    (t, ps)
                })
                .collect(),
            None => {
                let mut by_topic: BTreeMap<String, Vec<(i32, Option<Committed>)>> = BTreeMap::new();
                for ((t, p), c) in offsets.into_iter().flatten() {
                    by_topic.entry(t.clone()).or_default().push((*p, Some(c.clone())));
                }
                by_topic.into_iter().collect()
            }
        }
    }

    /// OffsetDelete: refuses topics the group is still subscribed to.
    pub fn delete_offsets(
        &self,
        host: &dyn InternalPartitions,
        group_id: &str,
        topics: Vec<(String, Vec<i32>)>,
    ) -> Result<Vec<(String, Vec<(i32, Result<()>)>)>> {
        let mut inner = self.inner.lock();
        let entry = inner.groups.get_mut(group_id).ok_or_else(|| Error::GroupIdNotFound(group_id.into()))?;
        if entry.group.state == State::Dead {
            return Err(Error::GroupIdNotFound(group_id.into()));
        }
        let subscribed = match &entry.modern {
            _ if entry.streams.is_some() => entry.streams.as_ref().map(|s| s.source_topics().into_iter().collect()),
            Some(m) => Some(m.subscribed_names(&topics_view(host)).into_iter().collect()),
            None if entry.group.state == State::Empty => Some(Default::default()),
            None => entry.group.subscribed_topics(),
        };
        if entry.modern.is_none() && entry.group.state != State::Empty && entry.group.protocol_type.as_deref() != Some("consumer") {
            return Err(Error::NonEmptyGroup(group_id.into()));
        }
        let subscribed = subscribed.unwrap_or_default();
        let mut recs = Vec::new();
        let mut out = Vec::new();
        for (t, parts) in topics {
            let mut rs = Vec::new();
            for p in parts {
                if subscribed.contains(&t) {
                    rs.push((p, Err(Error::GroupSubscribedToTopic)));
                } else {
                    if entry.offsets.remove(&(t.clone(), p)).is_some() {
                        recs.push((Key::Offset { group: group_id.into(), topic: t.clone(), partition: p }.encode(), None));
                    }
                    rs.push((p, Ok(())));
                }
            }
            out.push((t, rs));
        }
        self.write(host, group_id, &recs)?;
        Ok(out)
    }

    /// DeleteGroups for one group.
    pub fn delete_group(&self, host: &dyn InternalPartitions, group_id: &str) -> Result<()> {
        let mut inner = self.inner.lock();
        // Sessions that ran out since the last tick end first, as Kafka's per-member timers
        // would have ended them: a group whose last member just expired is empty.
        if let Some(entry) = inner.groups.get_mut(group_id) {
            let replies = entry.group.tick(&self.config, now_ms());
            self.persist_group(host, entry);
            dispatch(&mut inner, replies);
        }
        let entry = inner.groups.get_mut(group_id).ok_or_else(|| Error::GroupIdNotFound(group_id.into()))?;
        if entry.is_active_modern() {
            return Err(Error::NonEmptyGroup(group_id.into()));
        }
        match entry.group.state {
            State::Dead => return Err(Error::GroupIdNotFound(group_id.into())),
            State::Empty => {}
            _ => return Err(Error::NonEmptyGroup(group_id.into())),
        }
        let mut recs: Vec<(Vec<u8>, Option<Vec<u8>>)> = entry
            .offsets
            .keys()
            .map(|(t, p)| (Key::Offset { group: group_id.into(), topic: t.clone(), partition: *p }.encode(), None))
            .collect();
        recs.push((Key::Group { group: group_id.into() }.encode(), None));
        recs.push((Key::ConsumerGroup { group: group_id.into() }.encode(), None));
        if entry.streams.is_some() {
            recs.push((Key::StreamsGroup { group: group_id.into() }.encode(), None));
        }
        self.write(host, group_id, &recs)?;
        inner.groups.remove(group_id);
        Ok(())
    }

    /// ListGroups: (group id, protocol type, state, group type).
    pub fn list(&self) -> Vec<(String, String, &'static str, &'static str)> {
        let inner = self.inner.lock();
        let mut v: Vec<_> = inner
            .groups
            .values()
            .filter(|e| e.group.state != State::Dead)
            .map(|e| match &e.modern {
                _ if e.streams.is_some() => {
                    (e.group.id.clone(), "streams".to_string(), e.streams.as_ref().expect("streams").state_name(), "streams")
                }
                Some(m) => (e.group.id.clone(), "consumer".to_string(), m.state_name(), "consumer"),
                None => (e.group.id.clone(), e.group.protocol_type.clone().unwrap_or_default(), e.group.state.name(), "classic"),
            })
            .collect();
        v.sort();
        v
    }

    /// DescribeGroups for one group; None if it doesn't exist as a classic group.
    pub fn describe(&self, group_id: &str) -> Option<Description> {
        let inner = self.inner.lock();
        let e = inner.groups.get(group_id)?;
        if e.modern.is_some() || e.streams.is_some() {
            return None;
        }
        let g = &e.group;
        let proto = g.protocol.clone().unwrap_or_default();
        let show_assign = g.state == State::Stable;
        Some(Description {
            state: g.state.name(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol: if g.state == State::Stable || g.state == State::CompletingRebalance { proto.clone() } else { String::new() },
            members: g
                .members
                .values()
                .map(|m| {
                    let assignment = if show_assign { m.assignment.clone() } else { Bytes::new() };
                    (m.id.clone(), m.instance_id.clone(), m.client_id.clone(), m.client_host.clone(), m.metadata(&proto), assignment)
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod consumer_tests;
