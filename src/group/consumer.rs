//! KIP-848 consumer groups: the server assigns partitions, and each member moves to
//! the group's target assignment on its own, revoking before anyone else may take
//! what it gives up. Like [`super::classic`], this is a pure state machine: time and
//! the topic metadata come in as arguments.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::assignor::{self, MemberSpec, Tp};
use super::modern;
use crate::error::{Error, Result};

/// Epoch a member sends to leave; static members send -2 to leave for a while.
pub const LEAVE_EPOCH: i32 = -1;
pub const LEAVE_STATIC_EPOCH: i32 = -2;

/// Coordinator-wide settings for consumer groups.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub session_timeout_ms: i64,
    pub heartbeat_interval_ms: i32,
    pub assignors: Vec<String>,
    pub max_size: usize,
    /// Streams groups' settings (`group.streams.*`), overridden per group alongside these.
    pub streams: super::streams::StreamsConfig,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            assignors: vec!["uniform".into(), "range".into()],
            max_size: usize::MAX,
            streams: Default::default(),
        }
    }
}

/// Topics as the coordinator sees them: name → (id, partition count).
pub type Topics = BTreeMap<String, (Uuid, i32)>;

/// Where a member is on its way to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberState {
    Stable,
    /// It must first give up partitions that are no longer its own.
    UnrevokedPartitions,
    /// Some of its target partitions are still held by others.
    UnreleasedPartitions,
}

/// A consumer group member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_names: Vec<String>,
    pub subscribed_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    pub assigned: BTreeSet<Tp>,
    pub pending_revocation: BTreeSet<Tp>,
    #[serde(skip)]
    last_heartbeat: i64,
    #[serde(skip)]
    revocation_deadline: Option<i64>,
    /// A static member that left with epoch -2 and may come back.
    pub away: bool,
}

/// One ConsumerGroupHeartbeat.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_names: Option<Vec<String>>,
    pub subscribed_regex: Option<String>,
    pub server_assignor: Option<String>,
    pub owned: Option<Vec<Tp>>,
    pub client_id: String,
    pub client_host: String,
    /// v1+: the client makes up its member id.
    pub client_member_id: bool,
}

/// Its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatReply {
    pub member_id: String,
    pub epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub assignment: Option<BTreeSet<Tp>>,
}

/// A consumer group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumerGroup {
    pub id: String,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, Member>,
    pub target: BTreeMap<String, BTreeSet<Tp>>,
    /// Partition counts of the subscribed topics when the target was computed.
    subscribed: BTreeMap<Uuid, i32>,
    pub assignor: String,
    #[serde(skip)]
    pub dirty: bool,
}

fn resolve(m: &Member, topics: &Topics) -> Result<BTreeSet<Uuid>> {
    let mut out: BTreeSet<Uuid> = m.subscribed_names.iter().filter_map(|n| topics.get(n).map(|t| t.0)).collect();
    if let Some(re) = &m.subscribed_regex {
        let re = regex::Regex::new(&format!("^(?:{re})$")).map_err(|e| Error::InvalidRegularExpression(e.to_string()))?;
        // Against every topic name, internal ones included, as Kafka's coordinator does.
        out.extend(topics.iter().filter(|(n, _)| re.is_match(n)).map(|(_, t)| t.0));
    }
    Ok(out)
}

impl ConsumerGroup {
    pub fn new(id: &str) -> ConsumerGroup {
        ConsumerGroup {
            id: id.into(),
            epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            subscribed: BTreeMap::new(),
            assignor: "uniform".into(),
            dirty: false,
        }
    }

    /// Marks every member as heard from at `now` (after loading from disk).
    pub fn touch_all(&mut self, now: i64) {
        for m in self.members.values_mut() {
            m.last_heartbeat = now;
        }
    }

    /// The group state as ConsumerGroupDescribe and ListGroups name it.
    pub fn state_name(&self) -> &'static str {
        let reconciling = self.members.values().any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable);
        modern::state_name(self.members.is_empty(), true, self.epoch, self.assignment_epoch, reconciling)
    }

    fn owned_elsewhere(&self, me: &str, tp: &Tp) -> bool {
        self.members.iter().any(|(id, m)| id != me && (m.assigned.contains(tp) || m.pending_revocation.contains(tp)))
    }

    fn remove_member(&mut self, id: &str) -> bool {
        let gone = self.members.remove(id).is_some();
        if gone {
            self.target.remove(id);
            self.dirty = true;
        }
        gone
    }

    /// Bumps the group epoch if membership or the subscribed topics changed, and then
    /// recomputes the target assignment.
    fn maybe_assign(&mut self, topics: &Topics, changed: bool) -> Result<()> {
        let mut subscribed = BTreeMap::new();
        let mut specs_topics = Vec::new();
        for m in self.members.values() {
            let ts = resolve(m, topics)?;
            for t in &ts {
                if let Some((_, (_, n))) = topics.iter().find(|(_, v)| v.0 == *t) {
                    subscribed.insert(*t, *n);
                }
            }
            specs_topics.push(ts);
        }
        if changed || subscribed != self.subscribed {
            self.subscribed = subscribed.clone();
            self.epoch += 1;
            self.dirty = true;
        }
        if self.epoch == self.assignment_epoch {
            return Ok(());
        }
        let empty = BTreeSet::new();
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .zip(specs_topics)
            .map(|(m, topics)| MemberSpec { id: &m.id, topics, previous: self.target.get(&m.id).unwrap_or(&empty) })
            .collect();
        let name = self.members.values().find_map(|m| m.server_assignor.clone()).unwrap_or_else(|| "uniform".into());
        let target = if name == "range" { assignor::range(&specs, &subscribed) } else { assignor::uniform(&specs, &subscribed) };
        self.target = target;
        self.assignor = name;
        self.assignment_epoch = self.epoch;
        self.dirty = true;
        Ok(())
    }

    /// Moves one member towards its target. `owned` is what the member reports holding.
    fn reconcile(&mut self, id: &str, owned: Option<&[Tp]>, now: i64) {
        let target = self.target.get(id).cloned().unwrap_or_default();
        let (state, epoch, assigned, pending) = {
            let m = &self.members[id];
            (m.state, m.epoch, m.assigned.clone(), m.pending_revocation.clone())
        };
        if state == MemberState::UnrevokedPartitions {
            let revoked = owned.is_some_and(|o| o.iter().all(|tp| !pending.contains(tp)));
            if !revoked {
                return;
            }
            let m = self.members.get_mut(id).expect("member");
            m.pending_revocation.clear();
            m.revocation_deadline = None;
        } else if state == MemberState::Stable && epoch == self.assignment_epoch {
            return;
        }
        let revoke: BTreeSet<Tp> = assigned.difference(&target).copied().collect();
        if !revoke.is_empty() {
            let m = self.members.get_mut(id).expect("member");
            m.assigned = assigned.intersection(&target).copied().collect();
            m.pending_revocation = revoke;
            m.state = MemberState::UnrevokedPartitions;
            m.revocation_deadline = Some(now + m.rebalance_timeout_ms as i64);
            self.dirty = true;
            return;
        }
        let newly: Vec<Tp> = target.difference(&assigned).copied().collect();
        let free: Vec<Tp> = newly.iter().copied().filter(|tp| !self.owned_elsewhere(id, tp)).collect();
        let unreleased = newly.len() - free.len();
        let assignment_epoch = self.assignment_epoch;
        let m = self.members.get_mut(id).expect("member");
        if m.epoch != assignment_epoch {
            m.previous_epoch = m.epoch;
            m.epoch = assignment_epoch;
        }
        m.assigned.extend(free);
        m.state = if unreleased > 0 { MemberState::UnreleasedPartitions } else { MemberState::Stable };
        self.dirty = true;
    }

    /// Handles one ConsumerGroupHeartbeat.
    pub fn heartbeat(&mut self, hb: Heartbeat, topics: &Topics, cfg: &ConsumerConfig, now: i64) -> Result<HeartbeatReply> {
        if let Some(a) = &hb.server_assignor {
            if !cfg.assignors.contains(a) {
                return Err(Error::UnsupportedAssignor(a.clone()));
            }
        }
        if hb.epoch == LEAVE_EPOCH || hb.epoch == LEAVE_STATIC_EPOCH {
            return self.leave(&hb, topics, now);
        }
        if hb.epoch == 0 {
            if hb.client_member_id && hb.member_id.is_empty() {
                return Err(Error::InvalidRequest("MemberId can't be empty.".into()));
            }
            if hb.rebalance_timeout_ms == -1 || (hb.subscribed_names.is_none() && hb.subscribed_regex.is_none()) {
                return Err(Error::InvalidRequest("a joining member must send its rebalance timeout and subscription".into()));
            }
            if hb.owned.as_ref().is_some_and(|o| !o.is_empty()) {
                return Err(Error::InvalidRequest("TopicPartitions must be empty when (re-)joining.".into()));
            }
        } else if hb.member_id.is_empty() {
            return Err(Error::InvalidRequest("MemberId can't be empty.".into()));
        }
        if let Some(re) = &hb.subscribed_regex {
            regex::Regex::new(re).map_err(|e| Error::InvalidRegularExpression(e.to_string()))?;
        }
        let member_id =
            if hb.epoch == 0 && hb.member_id.is_empty() { uuid::Uuid::new_v4().simple().to_string() } else { hb.member_id.clone() };
        let mut joined = false;
        if hb.epoch == 0 {
            joined = self.join(&member_id, &hb, cfg, now)?;
        } else {
            let m = self.members.get(&member_id).ok_or_else(|| Error::UnknownMemberId(member_id.clone()))?;
            if let Some(inst) = &hb.instance_id {
                if m.instance_id.as_deref() != Some(inst) {
                    return Err(Error::FencedInstanceId(inst.clone()));
                }
            }
            let subset = hb.owned.as_ref().is_none_or(|o| o.iter().all(|tp| m.assigned.contains(tp)));
            modern::check_heartbeat_epoch(hb.epoch, m.epoch, m.previous_epoch, subset)?;
        }
        let before = self.members[&member_id].assigned.clone();
        let m = self.members.get_mut(&member_id).expect("member");
        m.last_heartbeat = now;
        let mut changed = joined;
        if let Some(names) = hb.subscribed_names.clone() {
            if names != m.subscribed_names {
                m.subscribed_names = names;
                changed = true;
            }
        }
        if hb.subscribed_regex.is_some() && hb.subscribed_regex != m.subscribed_regex {
            m.subscribed_regex = hb.subscribed_regex.clone();
            changed = true;
        }
        if hb.server_assignor.is_some() && hb.server_assignor != m.server_assignor {
            m.server_assignor = hb.server_assignor.clone();
            changed = true;
        }
        if hb.rebalance_timeout_ms > 0 {
            m.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        self.maybe_assign(topics, changed)?;
        self.reconcile(&member_id, hb.owned.as_deref(), now);
        let m = &self.members[&member_id];
        let full = hb.epoch == 0 || (hb.rebalance_timeout_ms != -1 && hb.subscribed_names.is_some() && hb.owned.is_some());
        Ok(HeartbeatReply {
            member_id: member_id.clone(),
            epoch: m.epoch,
            heartbeat_interval_ms: cfg.heartbeat_interval_ms,
            assignment: (full || m.assigned != before).then(|| m.assigned.clone()),
        })
    }

    /// Adds (or re-adds) a member joining with epoch 0. Returns whether the group changed.
    fn join(&mut self, member_id: &str, hb: &Heartbeat, cfg: &ConsumerConfig, now: i64) -> Result<bool> {
        let fresh = |id: &str| Member {
            id: id.to_string(),
            instance_id: hb.instance_id.clone(),
            rack_id: hb.rack_id.clone(),
            client_id: hb.client_id.clone(),
            client_host: hb.client_host.clone(),
            subscribed_names: vec![],
            subscribed_regex: None,
            server_assignor: None,
            rebalance_timeout_ms: hb.rebalance_timeout_ms,
            epoch: 0,
            previous_epoch: -1,
            state: MemberState::Stable,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            last_heartbeat: now,
            revocation_deadline: None,
            away: false,
        };
        if let Some(inst) = &hb.instance_id {
            let holder = self.members.values().find(|m| m.instance_id.as_ref() == Some(inst)).map(|m| (m.id.clone(), m.away));
            if let Some((old, away)) = holder {
                if old != member_id && !away {
                    return Err(Error::UnreleasedInstanceId(inst.clone()));
                }
                // The static member is back: the new id takes over its place and partitions.
                let mut m = self.members.remove(&old).expect("holder");
                let target = self.target.remove(&old);
                m.id = member_id.to_string();
                m.away = false;
                m.client_id = hb.client_id.clone();
                m.client_host = hb.client_host.clone();
                m.last_heartbeat = now;
                self.members.insert(member_id.to_string(), m);
                if let Some(t) = target {
                    self.target.insert(member_id.to_string(), t);
                }
                self.dirty = true;
                return Ok(false);
            }
        } else if self.members.contains_key(member_id) {
            // A dynamic member rejoining with epoch 0 has dropped its partitions: start over.
            self.remove_member(member_id);
        }
        if self.members.len() >= cfg.max_size {
            return Err(Error::GroupMaxSizeReached);
        }
        self.members.insert(member_id.to_string(), fresh(member_id));
        Ok(true)
    }

    fn leave(&mut self, hb: &Heartbeat, topics: &Topics, now: i64) -> Result<HeartbeatReply> {
        let m = self.members.get_mut(&hb.member_id).ok_or_else(|| Error::UnknownMemberId(hb.member_id.clone()))?;
        if hb.epoch == LEAVE_STATIC_EPOCH && m.instance_id.is_some() {
            // Away for a restart: keep its partitions until the session times out.
            m.away = true;
            m.last_heartbeat = now;
            self.dirty = true;
        } else {
            self.remove_member(&hb.member_id);
            self.maybe_assign(topics, true)?;
        }
        Ok(HeartbeatReply { member_id: hb.member_id.clone(), epoch: hb.epoch, heartbeat_interval_ms: 0, assignment: None })
    }

    /// Session and revocation timeouts.
    pub fn tick(&mut self, topics: &Topics, cfg: &ConsumerConfig, now: i64) {
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| modern::expired(now, m.last_heartbeat, cfg.session_timeout_ms, m.revocation_deadline))
            .map(|m| m.id.clone())
            .collect();
        for id in &expired {
            tracing::info!(group = %self.id, member = %id, "consumer group member expired");
            self.remove_member(id);
        }
        if !expired.is_empty() {
            if let Err(e) = self.maybe_assign(topics, true) {
                tracing::warn!(group = %self.id, error = %e, "assignment failed");
            }
        }
    }

    /// OffsetCommit/OffsetFetch check for a member of this group.
    pub fn validate_member_epoch(&self, member_id: &str, epoch: i32) -> Result<()> {
        let m = self.members.get(member_id).ok_or_else(|| Error::UnknownMemberId(member_id.into()))?;
        modern::check_commit_epoch(epoch, m.epoch)
    }

    /// Topic names the group subscribes to (for OffsetDelete).
    pub fn subscribed_names(&self, topics: &Topics) -> BTreeSet<String> {
        let ids: BTreeSet<Uuid> = self.members.values().filter_map(|m| resolve(m, topics).ok()).flatten().collect();
        topics.iter().filter(|(_, v)| ids.contains(&v.0)).map(|(n, _)| n.clone()).collect()
    }
}

/// Group's per-member views for describe: (member, its target).
pub fn describe_members(g: &ConsumerGroup) -> Vec<(&Member, BTreeSet<Tp>)> {
    g.members.values().map(|m| (m, g.target.get(&m.id).cloned().unwrap_or_default())).collect()
}
