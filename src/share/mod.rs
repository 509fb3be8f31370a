//! Share groups (KIP-932, queues): the share group coordinator (membership and the
//! server-side assignment, [`group`]), and on each partition leader the share
//! partitions ([`partition`]) and share sessions ([`session`]).
//!
//! Share-partition state is durable, as in Kafka: the share coordinator
//! ([`coordinator`], over the pure [`state`]) keeps it in `__share_group_state`, and the
//! partition leader reads it on first use after a restart or a leadership change and
//! writes it through the state APIs ([`persister`]). An acquisition or acknowledgement is
//! answered only once written; a write that fails drops the in-memory copy, so the last
//! durable state is read back and the client is told its acknowledgement failed.
//!
//! Membership is durable too: the share group coordinator writes a group to
//! `__consumer_offsets` (next to the other groups, keyed as `group::store` says) when a
//! member joins or leaves, an epoch moves or the group is deleted (a tombstone), and the
//! next coordinator of the group reads it back; members keep their ids and epochs.

pub mod coordinator;
pub mod group;
pub mod offsets;
pub mod partition;
pub mod persister;
pub mod session;
pub mod state;

use std::collections::{HashMap, HashSet};

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::cluster::peer::Peers;
use crate::error::{Error, Result};
use crate::partition::{InternalPartitions, Topic};
use group::{GroupConfig, Heartbeat, HeartbeatReply, ShareGroup, Topics, Tp};
use partition::{AbortedTxn, AcquireMode, Acquired, LogBatch, ShareConfig, SharePartition};
use session::{SessionCache, Step};
use state::{PersistedBatch, Written};

/// A share partition's key: the group and the topic partition.
pub type Key = (String, Uuid, i32);

/// The broker as share groups see it: its internal partitions, the share coordinator
/// it runs, and the other brokers, where the other share coordinators are.
pub trait ShareHost: InternalPartitions {
    /// This broker's id.
    fn node_id(&self) -> i32;
    /// (node id, host, port) of the live leader of `topic`'s partition `p`.
    fn leader_endpoint(&self, topic: &Topic, p: i32) -> Result<(i32, String, i32)>;
    /// `host:port` of live broker `id`.
    fn broker_address(&self, id: i32) -> Option<String>;
    /// Connections to the other brokers.
    fn peers(&self) -> &Peers;
    /// The share coordinator of this broker.
    fn share_state(&self) -> &coordinator::StateCoordinator;
    /// Does the topic with id `topic` have a partition `p`?
    fn has_partition(&self, topic: Uuid, p: i32) -> bool;
}

/// A share partition led here, and how much of it the share coordinator has.
struct Led {
    sp: SharePartition,
    /// The leader epoch it was read at: at any other, it is read again.
    leader_epoch: i32,
    state_epoch: i32,
    /// Changes made here, and how many of them are durable.
    version: u64,
    durable: u64,
    /// Which reading-in this is: a change made to an earlier one was dropped with it.
    incarnation: u64,
}

impl Led {
    fn changed(&mut self, yes: bool) {
        if yes {
            self.version += 1;
        }
    }
}

/// What a share partition's next WriteShareGroupState carries: its whole window.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub version: u64,
    pub written: Written,
}

struct Inner {
    groups: HashMap<String, ShareGroup>,
    /// Groups changed since they were last written (gone ones get a tombstone).
    unwritten: HashSet<String>,
    partitions: HashMap<Key, Led>,
    sessions: SessionCache,
}

/// A group's own settings, where its group configs differ from the broker's.
type Overrides = HashMap<String, (GroupConfig, ShareConfig)>;

/// The share groups coordinated here and the share partitions led here.
pub struct ShareCoordinator {
    inner: Mutex<Inner>,
    /// The broker's defaults, for groups without group configs.
    pub group_config: GroupConfig,
    pub share_config: ShareConfig,
    /// Never locked while waiting for `inner`'s lock, so either may be taken inside it.
    overrides: RwLock<Overrides>,
    /// One at a time per share partition: reading its state in, writing it out.
    io: Mutex<HashMap<Key, std::sync::Arc<tokio::sync::Mutex<()>>>>,
}

/// What ShareGroupDescribe and ListGroups show of a group.
pub type Description = ShareGroup;

impl ShareCoordinator {
    /// A coordinator with no groups, keeping at most `max_sessions` share sessions.
    pub fn new(group_config: GroupConfig, share_config: ShareConfig, max_sessions: usize) -> ShareCoordinator {
        ShareCoordinator {
            inner: Mutex::new(Inner {
                groups: HashMap::new(),
                unwritten: HashSet::new(),
                partitions: HashMap::new(),
                sessions: SessionCache::new(max_sessions),
            }),
            group_config,
            share_config,
            overrides: RwLock::new(HashMap::new()),
            io: Mutex::new(HashMap::new()),
        }
    }

    /// Replaces the settings of the groups that have group configs; the others use the
    /// broker's. A changed value applies from the next heartbeat, fetch or acquisition on.
    pub fn set_overrides(&self, overrides: Overrides) {
        *self.overrides.write() = overrides;
    }

    /// The membership settings `group_id` runs with.
    pub fn group_config_for(&self, group_id: &str) -> GroupConfig {
        self.overrides.read().get(group_id).map_or_else(|| self.group_config.clone(), |o| o.0.clone())
    }

    /// The share-partition settings `group_id` runs with.
    pub fn share_config_for(&self, group_id: &str) -> ShareConfig {
        self.overrides.read().get(group_id).map_or_else(|| self.share_config.clone(), |o| o.1.clone())
    }

    /// Is `group_id` a share group here?
    pub fn is_share_group(&self, group_id: &str) -> bool {
        self.inner.lock().groups.contains_key(group_id)
    }

    /// ShareGroupHeartbeat. A member that leaves gives back what it holds on this broker.
    pub fn heartbeat(&self, group_id: &str, hb: Heartbeat, topics: &Topics, now: i64) -> Result<HeartbeatReply> {
        if group_id.is_empty() {
            return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
        }
        let leaving = (hb.epoch == group::LEAVE_EPOCH).then(|| hb.member_id.clone());
        let cfg = self.group_config_for(group_id);
        let mut inner = self.inner.lock();
        let g = inner.groups.entry(group_id.to_string()).or_insert_with(|| ShareGroup::new(group_id));
        let before = g.stored_view(&hb.member_id);
        let member = hb.member_id.clone();
        let reply = g.heartbeat(hb, topics, &cfg, now);
        let after = g.stored_view(reply.as_ref().map_or(&member, |r| &r.member_id));
        if g.members.is_empty() && g.epoch == 0 {
            // A first heartbeat that failed leaves no group behind.
            inner.groups.remove(group_id);
        } else if before != after {
            inner.unwritten.insert(group_id.to_string());
        }
        if let (Ok(_), Some(m)) = (&reply, leaving) {
            self.release_member(&mut inner, group_id, &m);
        }
        reply
    }

    fn release_member(&self, inner: &mut Inner, group_id: &str, member: &str) {
        inner.sessions.remove_member(group_id, member);
        let cfg = self.share_config_for(group_id);
        for ((g, _, _), led) in inner.partitions.iter_mut() {
            if g == group_id {
                let n = led.sp.release_member(member, &cfg);
                led.changed(n > 0);
            }
        }
        drop_if_idle(inner, group_id);
    }

    /// AlterShareGroupOffsets' group: created empty when it does not exist, as Kafka does
    /// (offsets may be set before a group is first used); NON_EMPTY_GROUP when it has
    /// members, whose share partitions would not see the change.
    pub fn ensure_empty_group(&self, group_id: &str) -> Result<()> {
        if group_id.is_empty() {
            return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
        }
        let mut inner = self.inner.lock();
        if !inner.groups.contains_key(group_id) {
            inner.unwritten.insert(group_id.to_string());
        }
        let g = inner.groups.entry(group_id.to_string()).or_insert_with(|| {
            // Epoch 1: a group that exists (a failed first heartbeat drops epoch-0 groups).
            let mut g = ShareGroup::new(group_id);
            (g.epoch, g.assignment_epoch) = (1, 1);
            g
        });
        if !g.members.is_empty() {
            return Err(Error::NonEmptyGroup(format!("share group {group_id} has members")));
        }
        Ok(())
    }

    /// Session timeouts and lock timeouts. Returns how many records came back.
    pub fn tick(&self, topics: &Topics, now: i64) -> usize {
        let mut inner = self.inner.lock();
        let (mut gone, mut moved) = (Vec::new(), Vec::new());
        for (id, g) in inner.groups.iter_mut() {
            let epoch = g.epoch;
            gone.extend(g.tick(topics, &self.group_config_for(id), now).into_iter().map(|m| (id.clone(), m)));
            if g.epoch != epoch {
                moved.push(id.clone());
            }
        }
        inner.unwritten.extend(moved);
        for (g, m) in gone {
            tracing::info!(group = %g, member = %m, "share group member's session timed out");
            self.release_member(&mut inner, &g, &m);
        }
        let mut released = 0;
        for ((g, _, _), led) in inner.partitions.iter_mut() {
            let n = led.sp.expire_locks(now, &self.share_config_for(g));
            led.changed(n > 0);
            released += n;
        }
        released
    }

    /// ShareGroupDescribe: the group, or GROUP_ID_NOT_FOUND.
    pub fn describe(&self, group_id: &str) -> Result<Description> {
        self.inner.lock().groups.get(group_id).cloned().ok_or_else(|| Error::GroupIdNotFound(format!("{group_id} is not a share group")))
    }

    /// ListGroups: (group id, state) of every share group.
    pub fn list(&self) -> Vec<(String, &'static str)> {
        let mut v: Vec<_> = self.inner.lock().groups.values().map(|g| (g.id.clone(), g.state_name())).collect();
        v.sort();
        v
    }

    /// DeleteGroups for a share group: only an empty one, with its share partitions.
    pub fn delete_group(&self, group_id: &str) -> Result<()> {
        let mut inner = self.inner.lock();
        let g = inner.groups.get(group_id).ok_or_else(|| Error::GroupIdNotFound(group_id.into()))?;
        if !g.members.is_empty() {
            return Err(Error::NonEmptyGroup(group_id.into()));
        }
        inner.groups.remove(group_id);
        inner.unwritten.insert(group_id.to_string());
        inner.partitions.retain(|(g, _, _), _| g != group_id);
        Ok(())
    }

    /// Writes every group changed since its last write through `write` (group id, the
    /// stored value or None for a tombstone), in the order the changes were made: the
    /// lock is held throughout. A group whose write fails stays to be written again.
    pub fn persist_groups(&self, write: impl Fn(&str, Option<Vec<u8>>) -> Result<()>) {
        let mut inner = self.inner.lock();
        let ids: Vec<String> = inner.unwritten.drain().collect();
        for id in ids {
            if let Err(e) = write(&id, inner.groups.get(&id).map(ShareGroup::encode)) {
                tracing::warn!(group = %id, error = %e, "could not persist share group");
                inner.unwritten.insert(id);
            }
        }
    }

    /// Follows the groups' coordinator partitions: groups `keep` rejects are dropped
    /// (coordinated elsewhere now, or about to be read back), then the stored groups
    /// read from the partitions gained are taken as they were written.
    pub fn restore_groups(&self, keep: &dyn Fn(&str) -> bool, loaded: Vec<(String, Vec<u8>)>, now: i64) {
        let mut inner = self.inner.lock();
        inner.groups.retain(|id, _| keep(id));
        inner.unwritten.retain(|id| keep(id));
        for (id, value) in loaded {
            match ShareGroup::decode(&value, now) {
                Some(g) => {
                    inner.groups.insert(id, g);
                }
                None => tracing::warn!(group = %id, "unreadable stored share group skipped"),
            }
        }
    }

    /// Is the share partition in memory, read at `leader_epoch`?
    pub fn is_loaded(&self, group_id: &str, tp: Tp, leader_epoch: i32) -> bool {
        self.inner.lock().partitions.get(&(group_id.to_string(), tp.0, tp.1)).is_some_and(|l| l.leader_epoch == leader_epoch)
    }

    /// Takes `sp`, as the share coordinator holds it, as the share partition led here at
    /// `leader_epoch`.
    pub fn install(&self, group_id: &str, tp: Tp, leader_epoch: i32, state_epoch: i32, sp: SharePartition) {
        static INCARNATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let incarnation = INCARNATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let led = Led { sp, leader_epoch, state_epoch, version: 0, durable: 0, incarnation };
        self.inner.lock().partitions.insert((group_id.to_string(), tp.0, tp.1), led);
    }

    /// Which reading-in of the share partition is in memory, if any: a caller that
    /// changes it checks before writing that it is still the same one.
    pub fn incarnation(&self, key: &Key) -> Option<u64> {
        self.inner.lock().partitions.get(key).map(|l| l.incarnation)
    }

    /// Drops the in-memory share partition (a write failed, or another broker leads it):
    /// its next use reads the durable state again.
    pub fn forget(&self, key: &Key) {
        self.inner.lock().partitions.remove(key);
    }

    /// The lock that serializes reading in and writing out one share partition.
    pub fn io_lock(&self, key: &Key) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        self.io.lock().entry(key.clone()).or_default().clone()
    }

    /// The share partitions with changes the share coordinator does not have yet.
    pub fn dirty(&self) -> Vec<Key> {
        self.inner.lock().partitions.iter().filter(|(_, l)| l.version > l.durable).map(|(k, _)| k.clone()).collect()
    }

    /// What a write of the share partition would carry now, if it has unwritten changes.
    /// Acquired records are written as available with their delivery count: after a
    /// failover they are delivered again, counted.
    pub fn pending_write(&self, key: &Key) -> Option<PendingWrite> {
        let inner = self.inner.lock();
        let led = inner.partitions.get(key).filter(|l| l.version > l.durable)?;
        let batches: Vec<PersistedBatch> = led
            .sp
            .state_batches()
            .into_iter()
            .map(|b| {
                let state = if b.state == partition::RecordState::Acquired { partition::RecordState::Available } else { b.state };
                PersistedBatch { first: b.first, last: b.last, state: state.code(), count: b.delivery_count }
            })
            .collect();
        let done = batches.iter().filter(|b| b.state == 2 || b.state == 4).map(|b| b.last - b.first + 1).sum::<i64>();
        let written = Written {
            state_epoch: led.state_epoch,
            leader_epoch: led.leader_epoch,
            start_offset: led.sp.start_offset(),
            delivery_complete_count: done.clamp(0, i32::MAX as i64) as i32,
            batches: state::combine(&[], &batches, led.sp.start_offset()),
        };
        Some(PendingWrite { version: led.version, written })
    }

    /// The share coordinator has the share partition's changes up to `version`.
    pub fn written(&self, key: &Key, version: u64) {
        if let Some(l) = self.inner.lock().partitions.get_mut(key) {
            l.durable = l.durable.max(version);
        }
    }

    /// Moves `member`'s share session on (see [`SessionCache::step`]); a closed session
    /// gives back what the member holds in its partitions.
    pub fn session_step(&self, group_id: &str, member: &str, epoch: i32, add: &[Tp], forget: &[Tp]) -> Result<Step> {
        let mut inner = self.inner.lock();
        let step = inner.sessions.step(group_id, member, epoch, add, forget)?;
        if let Step::Closed(parts) = &step {
            let cfg = self.share_config_for(group_id);
            for tp in parts {
                if let Some(led) = inner.partitions.get_mut(&(group_id.to_string(), tp.0, tp.1)) {
                    let n = led.sp.release_member(member, &cfg);
                    led.changed(n > 0);
                }
            }
            drop_if_idle(&mut inner, group_id);
        }
        Ok(step)
    }

    /// Every partition assigned to some member of the group.
    pub fn assigned_partitions(&self, group_id: &str) -> std::collections::BTreeSet<Tp> {
        let inner = self.inner.lock();
        inner.groups.get(group_id).map(|g| g.members.values().flat_map(|m| m.assigned.iter().copied()).collect()).unwrap_or_default()
    }

    /// Does `member` have a share session here?
    pub fn has_session(&self, group_id: &str, member: &str) -> bool {
        self.inner.lock().sessions.get(group_id, member).is_some()
    }

    /// The partitions of `member`'s share session.
    pub fn session_partitions(&self, group_id: &str, member: &str) -> Vec<Tp> {
        self.inner.lock().sessions.get(group_id, member).map(|s| s.partitions.iter().copied().collect()).unwrap_or_default()
    }

    /// Applies acknowledgement batches (first, last, types) of `member` to one partition
    /// at `now`, stopping at the first that fails.
    pub fn acknowledge(&self, group_id: &str, member: &str, tp: Tp, batches: &[(i64, i64, Vec<i8>)], now: i64) -> Result<()> {
        let mut inner = self.inner.lock();
        let led = inner
            .partitions
            .get_mut(&(group_id.to_string(), tp.0, tp.1))
            .ok_or_else(|| Error::InvalidRecordState(format!("no records of partition {} were acquired", tp.1)))?;
        let cfg = self.share_config_for(group_id);
        for (first, last, types) in batches {
            let r = led.sp.acknowledge(member, *first, *last, types, &cfg, now);
            led.changed(r.is_ok());
            r?;
        }
        Ok(())
    }

    /// Where the next fetch of the (loaded) share partition reads from, after catching
    /// the window up with the log's start; None when there is nothing to read.
    pub fn fetch_offset(&self, group_id: &str, tp: Tp, log_start: i64) -> Option<i64> {
        let mut inner = self.inner.lock();
        let led = inner.partitions.get_mut(&(group_id.to_string(), tp.0, tp.1))?;
        let before = led.sp.start_offset();
        led.sp.advance_to_log_start(log_start);
        let moved = led.sp.start_offset() != before;
        led.changed(moved);
        led.sp.next_fetch_offset(&self.share_config_for(group_id))
    }

    /// Acquires for `member` what the batches read at [`Self::fetch_offset`] make available.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        group_id: &str,
        member: &str,
        tp: Tp,
        batches: &[LogBatch],
        aborted: &[AbortedTxn],
        max_records: usize,
        mode: AcquireMode,
        now: i64,
    ) -> Vec<Acquired> {
        let mut inner = self.inner.lock();
        match inner.partitions.get_mut(&(group_id.to_string(), tp.0, tp.1)) {
            Some(led) => {
                let before = (led.sp.start_offset(), led.sp.end_offset());
                let got = led.sp.acquire(member, batches, aborted, max_records, mode, &self.share_config_for(group_id), now);
                let moved = (led.sp.start_offset(), led.sp.end_offset()) != before;
                led.changed(moved || !got.is_empty());
                got
            }
            None => Vec::new(),
        }
    }

    /// (start offset, state batches) of a share partition, for describing and persisting.
    pub fn partition_state(&self, group_id: &str, tp: Tp) -> Option<(i64, Vec<partition::StateBatch>)> {
        let inner = self.inner.lock();
        inner.partitions.get(&(group_id.to_string(), tp.0, tp.1)).map(|l| (l.sp.start_offset(), l.sp.state_batches()))
    }
}

/// Forgets the share partitions of `group_id` once no member has a share session here,
/// as Kafka's SharePartitionManager drops a group's share partitions when it empties on
/// a broker: the next member reads them again, so offsets reset or deleted meanwhile
/// (only an empty group's may be) take effect. Nothing durable is lost: what changed
/// since the last write is records given back, which the durable state already holds as
/// available.
fn drop_if_idle(inner: &mut Inner, group_id: &str) {
    if !inner.sessions.has_group(group_id) {
        inner.partitions.retain(|(g, _, _), _| g != group_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topics() -> Topics {
        [("t".to_string(), (Uuid::from_u128(1), 1))].into_iter().collect()
    }

    fn join(id: &str) -> Heartbeat {
        Heartbeat { member_id: id.into(), epoch: 0, subscribed: Some(vec!["t".into()]), ..Default::default() }
    }

    fn batch(first: i64, last: i64) -> LogBatch {
        LogBatch { first, last, producer_id: -1, transactional: false, control: false }
    }

    #[test]
    fn a_member_that_leaves_or_closes_its_session_gives_records_back() {
        let c = ShareCoordinator::new(GroupConfig::default(), ShareConfig::default(), 10);
        let tp = (Uuid::from_u128(1), 0);
        c.heartbeat("g", join("a"), &topics(), 0).unwrap();
        assert_eq!(c.fetch_offset("g", tp, 0), None);
        c.install("g", tp, 0, 0, SharePartition::new(0));
        assert_eq!(c.fetch_offset("g", tp, 0), Some(0));
        c.session_step("g", "a", 0, &[tp], &[]).unwrap();
        assert_eq!(c.acquire("g", "a", tp, &[batch(0, 1)], &[], 10, AcquireMode::RecordLimit, 0).len(), 1);
        c.session_step("g", "a", -1, &[], &[]).unwrap();
        // The group's last session here closed: its share partitions are read again next time.
        assert!(c.partition_state("g", tp).is_none());
        c.install("g", tp, 0, 0, SharePartition::new(0));
        c.session_step("g", "a", 0, &[tp], &[]).unwrap();
        c.acquire("g", "a", tp, &[batch(0, 1)], &[], 10, AcquireMode::RecordLimit, 0);
        c.session_step("g", "b", 0, &[tp], &[]).unwrap();
        c.heartbeat("g", Heartbeat { member_id: "a".into(), epoch: -1, ..Default::default() }, &topics(), 0).unwrap();
        assert_eq!(c.partition_state("g", tp).unwrap().1[0].state, partition::RecordState::Available);
        assert_eq!(c.list(), vec![("g".to_string(), "Empty")]);
        c.delete_group("g").unwrap();
        assert!(c.partition_state("g", tp).is_none());
        assert!(matches!(c.describe("g"), Err(Error::GroupIdNotFound(_))));
    }

    /// Writes `c`'s changed groups: (group, present) each.
    fn persisted(c: &ShareCoordinator, store: &Mutex<HashMap<String, Vec<u8>>>) -> Vec<(String, bool)> {
        let out = Mutex::new(Vec::new());
        c.persist_groups(|id, v| {
            out.lock().push((id.to_string(), v.is_some()));
            match v {
                Some(v) => store.lock().insert(id.to_string(), v),
                None => store.lock().remove(id),
            };
            Ok(())
        });
        out.into_inner()
    }

    #[test]
    fn groups_are_written_when_they_change_and_read_back_by_the_next_coordinator() {
        let gc = GroupConfig { session_timeout_ms: 100, ..Default::default() };
        let c = ShareCoordinator::new(gc.clone(), ShareConfig::default(), 10);
        let store = Mutex::new(HashMap::new());
        let a = c.heartbeat("g", join(""), &topics(), 0).unwrap();
        assert_eq!(persisted(&c, &store), vec![("g".to_string(), true)]);
        // A heartbeat that changes nothing stored writes nothing.
        c.heartbeat("g", Heartbeat { member_id: a.member_id.clone(), epoch: 1, ..Default::default() }, &topics(), 50).unwrap();
        assert!(persisted(&c, &store).is_empty());
        // A failed first heartbeat leaves nothing to write.
        assert!(c.heartbeat("h", Heartbeat { member_id: "x".into(), epoch: 3, ..Default::default() }, &topics(), 0).is_err());
        assert!(persisted(&c, &store).is_empty());
        c.ensure_empty_group("e").unwrap();
        assert_eq!(persisted(&c, &store), vec![("e".to_string(), true)]);

        // The next coordinator: a member keeps its id and epoch, and its session runs from the load.
        let next = ShareCoordinator::new(gc, ShareConfig::default(), 10);
        let loaded: Vec<(String, Vec<u8>)> = store.lock().clone().into_iter().collect();
        next.restore_groups(&|_| true, loaded, 1_000);
        assert_eq!(next.list(), vec![("e".to_string(), "Empty"), ("g".to_string(), "Stable")]);
        let beat = Heartbeat { member_id: a.member_id.clone(), epoch: 1, ..Default::default() };
        assert_eq!(next.heartbeat("g", beat, &topics(), 1_050).unwrap().epoch, 1);
        assert_eq!(next.tick(&topics(), 1_100), 0);
        assert_eq!(next.describe("g").unwrap().members.len(), 1);
        // Its session runs out as usual: the group empties, a new epoch is written.
        next.tick(&topics(), 1_200);
        assert_eq!(next.describe("g").unwrap().epoch, 2);
        assert_eq!(persisted(&next, &store), vec![("g".to_string(), true)]);
        next.delete_group("e").unwrap();
        assert_eq!(persisted(&next, &store), vec![("e".to_string(), false)]);
        // Groups coordinated elsewhere now are dropped, with nothing written for them.
        next.restore_groups(&|g| g != "g", Vec::new(), 1_300);
        assert!(next.list().is_empty());
        assert!(persisted(&next, &store).is_empty());
    }

    #[test]
    fn a_timed_out_member_and_lapsed_locks_free_records() {
        let gc = GroupConfig { session_timeout_ms: 100, ..Default::default() };
        let c = ShareCoordinator::new(gc, ShareConfig { record_lock_duration_ms: 50, ..Default::default() }, 10);
        let tp = (Uuid::from_u128(1), 0);
        c.heartbeat("g", join("a"), &topics(), 0).unwrap();
        // Another member's session keeps the group's share partitions in memory.
        c.session_step("g", "z", 0, &[tp], &[]).unwrap();
        c.install("g", tp, 0, 0, SharePartition::new(0));
        c.acquire("g", "a", tp, &[batch(0, 0)], &[], 10, AcquireMode::RecordLimit, 0);
        assert_eq!(c.dirty().len(), 1);
        let w = c.pending_write(&("g".into(), tp.0, tp.1)).unwrap();
        assert_eq!(w.written.batches, vec![PersistedBatch { first: 0, last: 0, state: 0, count: 1 }]);
        c.written(&("g".into(), tp.0, tp.1), w.version);
        assert!(c.dirty().is_empty());
        assert_eq!(c.tick(&topics(), 49), 0);
        assert_eq!(c.tick(&topics(), 50), 1);
        c.acquire("g", "a", tp, &[batch(0, 0)], &[], 10, AcquireMode::RecordLimit, 60);
        c.tick(&topics(), 101);
        assert!(c.describe("g").unwrap().members.is_empty());
        assert_eq!(c.partition_state("g", tp).unwrap().1[0].state, partition::RecordState::Available);
        assert!(matches!(c.heartbeat("", join("a"), &topics(), 0), Err(Error::InvalidRequest(_))));
        assert!(!c.is_share_group(""));
    }
}
