//! The share coordinator's state (KIP-932): for every share partition (group, topic,
//! partition) what its leader last wrote, as Kafka's `ShareCoordinatorShard` keeps it.
//! A pure state machine: each request is first decided ([`StateStore::initialize`],
//! [`StateStore::write`], [`StateStore::delete`]), which yields the record to append to
//! `__share_group_state`; once appended, [`StateStore::apply`] takes it as the state,
//! the same way a new leader replays the partition.
//!
//! A write becomes a ShareSnapshot (the whole state) when the key has none yet or after
//! `share.coordinator.snapshot.update.records.per.snapshot` updates, else a ShareUpdate
//! (only the request's batches, merged into the state on replay). Every record before a
//! key's latest snapshot is redundant, so the topic is pruned up to the oldest snapshot
//! any key still needs ([`StateStore::redundant_offset`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};

/// A share partition: the group, the topic id, the partition.
pub type StateKey = (String, Uuid, i32);

/// Kafka's delivery-state codes a state batch may carry (available, acquired,
/// acknowledged, archived).
const DELIVERY_STATES: [i8; 4] = [0, 1, 2, 4];

/// A run of offsets in one delivery state, as the state APIs and records carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersistedBatch {
    pub first: i64,
    pub last: i64,
    pub state: i8,
    pub count: i16,
}

/// One share partition's durable state (Kafka's ShareGroupOffset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareState {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// Records in the window that are done with (WriteShareGroupState v1); -1 unknown.
    pub delivery_complete_count: i32,
    pub batches: Vec<PersistedBatch>,
}

/// One partition of a WriteShareGroupState request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    /// -1 leaves the start offset as it is.
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub batches: Vec<PersistedBatch>,
}

/// A record of `__share_group_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The whole state of a key.
    Snapshot(StateKey, ShareState),
    /// Batches (and epochs, start offset) to merge into the latest snapshot.
    Update(StateKey, ShareState),
    /// The key's state is gone (DeleteShareGroupState).
    Delete(StateKey),
}

/// Record key type, as Kafka numbers them: ShareSnapshotKey 0, ShareUpdateKey 1.
const SNAPSHOT: u16 = 0;
const UPDATE: u16 = 1;

impl Record {
    /// The key and value bytes: a 2-byte key type, then (group, topic id, partition); the
    /// value is the state (none for a deletion).
    pub fn encode(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        let (kind, key, value) = match self {
            Record::Snapshot(k, s) => (SNAPSHOT, k, Some(s)),
            Record::Update(k, s) => (UPDATE, k, Some(s)),
            Record::Delete(k) => (SNAPSHOT, k, None),
        };
        let mut out = kind.to_be_bytes().to_vec();
        out.extend(serde_json::to_vec(key).expect("keys serialize"));
        (out, value.map(|v| serde_json::to_vec(v).expect("states serialize")))
    }

    /// A record read back; None for bytes this version did not write.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Option<Record> {
        let kind = u16::from_be_bytes([*key.first()?, *key.get(1)?]);
        let k: StateKey = serde_json::from_slice(&key[2..]).ok()?;
        let Some(v) = value else { return Some(Record::Delete(k)) };
        let s: ShareState = serde_json::from_slice(v).ok()?;
        match kind {
            SNAPSHOT => Some(Record::Snapshot(k, s)),
            UPDATE => Some(Record::Update(k, s)),
            _ => None,
        }
    }
}

struct Entry {
    state: ShareState,
    /// ShareUpdates written since the latest snapshot.
    updates: u32,
    /// Where the latest snapshot is in the topic: nothing before it is needed.
    snapshot_offset: i64,
}

/// The state of every share partition whose `__share_group_state` partition is led here.
pub struct StateStore {
    states: HashMap<StateKey, Entry>,
    /// The highest leader epoch a Read or Write named, per key: older leaders are fenced.
    leader_epochs: HashMap<StateKey, i32>,
    per_snapshot: u32,
}

impl StateStore {
    /// An empty store that snapshots every `per_snapshot` updates.
    pub fn new(per_snapshot: u32) -> StateStore {
        StateStore { states: HashMap::new(), leader_epochs: HashMap::new(), per_snapshot: per_snapshot.max(1) }
    }

    /// InitializeShareGroupState: a fresh state at `start_offset`, unless the key already
    /// has a state of this epoch or later (FENCED_STATE_EPOCH).
    pub fn initialize(&self, key: &StateKey, state_epoch: i32, start_offset: i64) -> Result<Record> {
        check_partition(key)?;
        if let Some(e) = self.states.get(key).filter(|e| e.state.state_epoch >= state_epoch) {
            return Err(Error::FencedStateEpoch(format!("state epoch {state_epoch} is not newer than {}", e.state.state_epoch)));
        }
        let snapshot_epoch = self.states.get(key).map_or(0, |e| e.state.snapshot_epoch + 1);
        let state =
            ShareState { snapshot_epoch, state_epoch, leader_epoch: -1, start_offset, delivery_complete_count: 0, batches: Vec::new() };
        Ok(Record::Snapshot(key.clone(), state))
    }

    /// ReadShareGroupState: the state (None when uninitialized), after fencing leaders
    /// older than one seen before; the reader's epoch is then the one to beat.
    pub fn read(&mut self, key: &StateKey, leader_epoch: i32) -> Result<Option<ShareState>> {
        self.check_leader(key, leader_epoch)?;
        let state = self.summary(key)?;
        if state.is_some() {
            let e = self.leader_epochs.entry(key.clone()).or_insert(leader_epoch);
            *e = (*e).max(leader_epoch);
        }
        Ok(state)
    }

    /// ReadShareGroupStateSummary: the state, recording nothing. As in Kafka 4.4 it fences
    /// no leader: the group coordinator, which reads it to describe offsets, has no epoch.
    pub fn summary(&self, key: &StateKey) -> Result<Option<ShareState>> {
        check_partition(key)?;
        Ok(self.states.get(key).map(|e| e.state.clone()))
    }

    fn check_leader(&self, key: &StateKey, leader_epoch: i32) -> Result<()> {
        match self.leader_epochs.get(key) {
            Some(seen) if *seen > leader_epoch => Err(Error::FencedLeaderEpoch(leader_epoch)),
            _ => Ok(()),
        }
    }

    /// WriteShareGroupState: the record that makes `w` part of the key's state.
    pub fn write(&self, key: &StateKey, w: &Written) -> Result<Record> {
        check_partition(key)?;
        check_batches(&w.batches)?;
        self.check_leader(key, w.leader_epoch)?;
        let Some(cur) = self.states.get(key) else {
            let state = ShareState {
                snapshot_epoch: 0,
                state_epoch: w.state_epoch,
                leader_epoch: w.leader_epoch,
                start_offset: w.start_offset,
                delivery_complete_count: w.delivery_complete_count,
                batches: combine(&[], &w.batches, w.start_offset),
            };
            return Ok(Record::Snapshot(key.clone(), state));
        };
        if cur.state.state_epoch > w.state_epoch {
            return Err(Error::FencedStateEpoch(format!("state epoch {} is older than {}", w.state_epoch, cur.state.state_epoch)));
        }
        let start_offset = if w.start_offset == -1 { cur.state.start_offset } else { w.start_offset };
        let leader_epoch = if w.leader_epoch == -1 { cur.state.leader_epoch } else { w.leader_epoch };
        if cur.updates >= self.per_snapshot {
            let state = ShareState {
                snapshot_epoch: cur.state.snapshot_epoch + 1,
                state_epoch: w.state_epoch.max(cur.state.state_epoch),
                leader_epoch,
                start_offset,
                delivery_complete_count: w.delivery_complete_count,
                batches: combine(&cur.state.batches, &w.batches, start_offset),
            };
            return Ok(Record::Snapshot(key.clone(), state));
        }
        let update = ShareState {
            snapshot_epoch: cur.state.snapshot_epoch,
            state_epoch: cur.state.state_epoch,
            leader_epoch: w.leader_epoch,
            start_offset: w.start_offset,
            delivery_complete_count: w.delivery_complete_count,
            batches: combine(&[], &w.batches, w.start_offset),
        };
        Ok(Record::Update(key.clone(), update))
    }

    /// DeleteShareGroupState: the record that removes the key's state, if it has one.
    pub fn delete(&self, key: &StateKey) -> Result<Option<Record>> {
        check_partition(key)?;
        Ok(self.states.contains_key(key).then(|| Record::Delete(key.clone())))
    }

    /// Takes a record appended (or replayed) at `offset` as the state.
    pub fn apply(&mut self, record: Record, offset: i64) {
        match record {
            Record::Snapshot(key, state) => {
                self.bump_leader(&key, state.leader_epoch);
                self.states.insert(key, Entry { state, updates: 0, snapshot_offset: offset });
            }
            Record::Update(key, update) => {
                self.bump_leader(&key, update.leader_epoch);
                match self.states.get_mut(&key) {
                    Some(e) => {
                        let s = &mut e.state;
                        if update.start_offset != -1 {
                            s.start_offset = update.start_offset;
                        }
                        if update.leader_epoch != -1 {
                            s.leader_epoch = update.leader_epoch;
                        }
                        s.delivery_complete_count = update.delivery_complete_count;
                        s.batches = combine(&s.batches, &update.batches, s.start_offset);
                        e.updates += 1;
                    }
                    // An update whose snapshot was pruned away cannot happen (pruning
                    // keeps every key's latest snapshot); taken as a snapshot if it does.
                    None => {
                        self.states.insert(key, Entry { state: update, updates: 0, snapshot_offset: offset });
                    }
                }
            }
            Record::Delete(key) => {
                self.states.remove(&key);
                self.leader_epochs.remove(&key);
            }
        }
    }

    fn bump_leader(&mut self, key: &StateKey, epoch: i32) {
        let e = self.leader_epochs.entry(key.clone()).or_insert(epoch);
        *e = (*e).max(epoch);
    }

    /// Forgets the keys `drop` selects (their partition moved to another coordinator).
    pub fn unload(&mut self, drop: impl Fn(&StateKey) -> bool) {
        self.states.retain(|k, _| !drop(k));
        self.leader_epochs.retain(|k, _| !drop(k));
    }

    /// The offset below which partition `p`'s records are all redundant: the oldest
    /// latest-snapshot of its keys, or `end` when it holds none.
    pub fn redundant_offset(&self, in_partition: impl Fn(&StateKey) -> bool, end: i64) -> i64 {
        self.states.iter().filter(|(k, _)| in_partition(k)).map(|(_, e)| e.snapshot_offset).min().unwrap_or(end).min(end)
    }
}

fn check_partition(key: &StateKey) -> Result<()> {
    if key.0.is_empty() {
        return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
    }
    if key.1.is_nil() {
        return Err(Error::InvalidRequest("Topic id can't be the zero id.".into()));
    }
    if key.2 < 0 {
        return Err(Error::InvalidRequest(format!("Partition id {} is negative.", key.2)));
    }
    Ok(())
}

fn check_batches(batches: &[PersistedBatch]) -> Result<()> {
    for b in batches {
        if b.first < 0 || b.first > b.last {
            return Err(Error::InvalidRequest(format!("state batch {}..{} is not a range of offsets", b.first, b.last)));
        }
        if !DELIVERY_STATES.contains(&b.state) {
            return Err(Error::InvalidRequest(format!("delivery state {} is not known", b.state)));
        }
        if b.count < 0 {
            return Err(Error::InvalidRequest(format!("delivery count {} is negative", b.count)));
        }
    }
    Ok(())
}

/// `base` with `new` laid over it (a later batch wins where they overlap), cut at
/// `start` (nothing below the start offset is kept), runs of equal state joined.
pub fn combine(base: &[PersistedBatch], new: &[PersistedBatch], start: i64) -> Vec<PersistedBatch> {
    let mut out: Vec<PersistedBatch> = base.to_vec();
    for n in new {
        let mut kept = Vec::with_capacity(out.len() + 2);
        for b in out {
            if b.last < n.first || b.first > n.last {
                kept.push(b);
                continue;
            }
            if b.first < n.first {
                kept.push(PersistedBatch { last: n.first - 1, ..b });
            }
            if b.last > n.last {
                kept.push(PersistedBatch { first: n.last + 1, ..b });
            }
        }
        kept.push(*n);
        out = kept;
    }
    out.sort_by_key(|b| b.first);
    let mut joined: Vec<PersistedBatch> = Vec::with_capacity(out.len());
    for mut b in out {
        if b.last < start {
            continue;
        }
        b.first = b.first.max(start);
        match joined.last_mut() {
            Some(j) if j.last + 1 == b.first && j.state == b.state && j.count == b.count => j.last = b.last,
            _ => joined.push(b),
        }
    }
    joined
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
