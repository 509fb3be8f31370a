//! KIP-1071 streams groups: the broker owns Kafka Streams' topology and assigns its tasks.
//! Each member moves to its target on its own and gives tasks up before another member
//! may take them, as in [`super::consumer`]. A pure state machine: time and the topic
//! metadata come in as arguments; the internal topics to create go out in the reply.

pub mod assignor;
pub mod pacing;
pub mod task_offsets;
pub mod topology;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::modern;
use crate::error::{Error, Result};
use assignor::{MemberSpec, TaskId};
use pacing::Pacing;
use task_offsets::{Reported, TaskOffsets};
use topology::{
    Configured, TopicInfo, Topology, STATUS_ASSIGNMENT_DELAYED, STATUS_MISSING_CLIENT_TAGS, STATUS_SHUTDOWN_APPLICATION,
    STATUS_STALE_TOPOLOGY,
};

/// Epoch a member sends to leave; static members send -2 to leave for a while.
pub const LEAVE_EPOCH: i32 = -1;
pub const LEAVE_STATIC_EPOCH: i32 = -2;

/// Topics as the coordinator sees them: name → partition count.
pub type TopicCounts = BTreeMap<String, i32>;

/// Settings of one streams group (the broker's `group.streams.*`, or its group configs).
#[derive(Debug, Clone)]
pub struct StreamsConfig {
    pub session_timeout_ms: i64,
    pub heartbeat_interval_ms: i32,
    pub num_standby_replicas: i32,
    pub max_size: usize,
    pub task_offset_interval_ms: i32,
    pub acceptable_recovery_lag: i64,
    /// No assignment for this long after a member joins an empty group.
    pub initial_rebalance_delay_ms: i32,
    /// The least time between two target assignments.
    pub assignment_interval_ms: i32,
    /// Client tags members must report (Kafka 4.4 checks them; its assignor does not use them).
    pub rack_aware_assignment_tags: Vec<String>,
}

impl StreamsConfig {
    /// Kafka's `streamsGroupAssignmentConfigs`: the settings whose change calls for a new
    /// target assignment.
    fn assignment_configs(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::from([("num.standby.replicas".to_string(), self.num_standby_replicas.to_string())]);
        if !self.rack_aware_assignment_tags.is_empty() {
            m.insert("rack.aware.assignment.tags".into(), self.rack_aware_assignment_tags.join(","));
        }
        m
    }
}

impl Default for StreamsConfig {
    fn default() -> Self {
        StreamsConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            num_standby_replicas: 0,
            max_size: i32::MAX as usize,
            task_offset_interval_ms: 60_000,
            acceptable_recovery_lag: 10_000,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
            rack_aware_assignment_tags: vec![],
        }
    }
}

/// Tasks of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tasks {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
    pub warmup: BTreeSet<TaskId>,
}

impl Tasks {
    fn is_empty(&self) -> bool {
        self.active.is_empty() && self.standby.is_empty() && self.warmup.is_empty()
    }

    fn kinds(&self) -> [&BTreeSet<TaskId>; 3] {
        [&self.active, &self.standby, &self.warmup]
    }

    fn zip(&self, other: &Tasks, f: impl Fn(&BTreeSet<TaskId>, &BTreeSet<TaskId>) -> BTreeSet<TaskId>) -> Tasks {
        Tasks { active: f(&self.active, &other.active), standby: f(&self.standby, &other.standby), warmup: f(&self.warmup, &other.warmup) }
    }

    fn contains_any(&self, t: &TaskId) -> bool {
        self.kinds().iter().any(|k| k.contains(t))
    }
}

/// Where a member is on its way to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemberState {
    Stable,
    /// It must first give up tasks that are no longer its own.
    UnrevokedTasks,
    /// Some of its target tasks are still held by others.
    UnreleasedTasks,
}

/// A streams group member (one stream thread of a Kafka Streams client).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub process_id: String,
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: BTreeMap<String, String>,
    pub rebalance_timeout_ms: i32,
    pub topology_epoch: i32,
    pub epoch: i32,
    pub previous_epoch: i32,
    pub state: MemberState,
    pub assigned: Tasks,
    pub pending_revocation: Tasks,
    #[serde(skip)]
    last_heartbeat: i64,
    #[serde(skip)]
    revocation_deadline: Option<i64>,
    /// A static member that left with epoch -2 and may come back.
    pub away: bool,
    /// Its last reported changelog offsets (memory only, as in Kafka).
    #[serde(skip)]
    pub task_offsets: TaskOffsets,
}

/// One StreamsGroupHeartbeat, decoded.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub epoch: i32,
    pub endpoint_information_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub topology: Option<Topology>,
    /// The tasks the member holds; all three are set or none (null: unchanged).
    pub owned: Option<Tasks>,
    pub process_id: Option<String>,
    pub user_endpoint: Option<(String, u16)>,
    pub client_tags: Option<BTreeMap<String, String>>,
    /// TaskOffsets and TaskEndOffsets as sent (null: unchanged).
    pub task_offsets: Option<Vec<(TaskId, i64)>>,
    pub task_end_offsets: Option<Vec<(TaskId, i64)>>,
    pub shutdown_application: bool,
    pub client_id: String,
    pub client_host: String,
    /// The request's version (some checks apply from v1 on).
    pub version: i16,
}

impl Heartbeat {
    /// Its TaskOffsets and TaskEndOffsets, decoded (a duplicate task is INVALID_REQUEST).
    fn reported(&self) -> Result<Reported> {
        Reported::from_lists(self.task_offsets.as_deref(), self.task_end_offsets.as_deref())
    }
}

/// The partitions one member's endpoint serves, for interactive queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPartitions {
    pub endpoint: (String, u16),
    pub active: BTreeMap<String, Vec<i32>>,
    pub standby: BTreeMap<String, Vec<i32>>,
}

/// Its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatReply {
    pub member_id: String,
    pub epoch: i32,
    pub heartbeat_interval_ms: i32,
    pub status: Vec<(i8, String)>,
    /// The member's tasks, when they changed (or it joined).
    pub tasks: Option<Tasks>,
    pub endpoint_epoch: i32,
    pub endpoints: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker should create now.
    pub to_create: Vec<TopicInfo>,
}

/// A streams group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsGroup {
    pub id: String,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub topology: Option<Topology>,
    pub members: BTreeMap<String, Member>,
    pub target: BTreeMap<String, Tasks>,
    /// Partition counts of the topology's topics when the group epoch was last bumped.
    partition_counts: TopicCounts,
    /// Tasks per subtopology when the topology is configured (every topic in place).
    pub configured_tasks: Option<BTreeMap<String, i32>>,
    pub endpoint_epoch: i32,
    pub shutdown_requested: bool,
    /// When the next target assignment may be computed.
    #[serde(default)]
    pub pacing: Pacing,
    /// The assignment configs at the last group epoch bump (Kafka's `lastAssignmentConfigs`).
    #[serde(default)]
    assignment_configs: BTreeMap<String, String>,
    #[serde(skip)]
    pub dirty: bool,
}

fn invalid(msg: &str) -> Error {
    Error::InvalidRequest(msg.to_string())
}

/// Kafka's request checks (GroupCoordinatorService), all INVALID_REQUEST.
fn check_request(hb: &Heartbeat) -> Result<()> {
    if hb.member_id.is_empty() {
        return Err(invalid("MemberId can't be empty."));
    }
    if hb.instance_id.as_deref() == Some("") {
        return Err(invalid("InstanceId can't be empty."));
    }
    if hb.rack_id.as_deref() == Some("") {
        return Err(invalid("RackId can't be empty."));
    }
    if hb.epoch < LEAVE_STATIC_EPOCH {
        return Err(Error::InvalidRequest(format!("MemberEpoch is {}, but must be greater than or equal to -2.", hb.epoch)));
    }
    if hb.epoch == 0 {
        if hb.rebalance_timeout_ms == -1 {
            return Err(invalid("RebalanceTimeoutMs must be provided in first request."));
        }
        let Some(t) = &hb.topology else { return Err(invalid("Topology must be non-null when (re-)joining.")) };
        if let Some(o) = &hb.owned {
            for (name, k) in [("ActiveTasks", &o.active), ("StandbyTasks", &o.standby), ("WarmupTasks", &o.warmup)] {
                if !k.is_empty() {
                    return Err(Error::InvalidRequest(format!("{name} must be empty when (re-)joining.")));
                }
            }
        }
        t.validate()?;
    } else if hb.epoch > 0 && hb.topology.is_some() {
        return Err(invalid("Topology can only be provided when (re-)joining."));
    }
    Ok(())
}

impl StreamsGroup {
    pub fn new(id: &str) -> StreamsGroup {
        StreamsGroup {
            id: id.into(),
            epoch: 0,
            assignment_epoch: 0,
            topology: None,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            partition_counts: BTreeMap::new(),
            configured_tasks: None,
            endpoint_epoch: 0,
            shutdown_requested: false,
            pacing: Pacing::default(),
            assignment_configs: BTreeMap::new(),
            dirty: false,
        }
    }

    /// Marks every member as heard from at `now` (after loading from disk).
    pub fn touch_all(&mut self, now: i64) {
        for m in self.members.values_mut() {
            m.last_heartbeat = now;
        }
    }

    /// The group state as StreamsGroupDescribe and ListGroups name it.
    pub fn state_name(&self) -> &'static str {
        let reconciling = self.members.values().any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable);
        let ready = self.configured_tasks.is_some();
        modern::state_name(self.members.is_empty(), ready, self.epoch, self.assignment_epoch, reconciling)
    }

    fn remove_member(&mut self, id: &str) {
        if self.members.remove(id).is_some() {
            self.target.remove(id);
            self.dirty = true;
        }
        if self.members.is_empty() {
            self.shutdown_requested = false;
        }
    }

    /// Configures the topology, bumps the group epoch when membership, the topics or the
    /// assignment configs changed, and recomputes the target assignment for a new epoch
    /// unless [`Pacing`] holds it back (then the status says so).
    fn maybe_assign(&mut self, topics: &TopicCounts, changed: bool, cfg: &StreamsConfig, now: i64) -> Result<Configured> {
        let Some(topology) = &self.topology else { return Ok(Configured::default()) };
        let mut configured = topology.configure(topics)?;
        let counts: TopicCounts = topology.topic_names().into_iter().filter_map(|t| topics.get(&t).map(|n| (t, *n))).collect();
        let configs = cfg.assignment_configs();
        if changed || counts != self.partition_counts || configured.tasks != self.configured_tasks || configs != self.assignment_configs {
            self.partition_counts = counts;
            self.configured_tasks = configured.tasks.clone();
            self.assignment_configs = configs;
            self.epoch += 1;
            self.dirty = true;
        }
        if self.epoch == self.assignment_epoch {
            return Ok(configured);
        }
        if let Some(why) = self.pacing.delayed(cfg.assignment_interval_ms, now) {
            configured.status.push((STATUS_ASSIGNMENT_DELAYED, why.to_string()));
            return Ok(configured);
        }
        let all = self.configured_tasks.as_ref().map(assignor::all_tasks).unwrap_or_default();
        let stateful: BTreeSet<&str> =
            topology.subtopologies.iter().filter(|s| !s.state_changelog_topics.is_empty()).map(|s| s.id.as_str()).collect();
        let empty = Tasks::default();
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| {
                let prev = self.target.get(&m.id).unwrap_or(&empty);
                MemberSpec {
                    id: &m.id,
                    process_id: &m.process_id,
                    prev_active: &prev.active,
                    prev_standby: &prev.standby,
                    offsets: &m.task_offsets.offsets,
                }
            })
            .collect();
        let standbys = cfg.num_standby_replicas.max(0) as usize;
        self.target = assignor::assign(&specs, &all, &stateful, standbys)
            .into_iter()
            .map(|(id, a)| (id, Tasks { active: a.active, standby: a.standby, warmup: BTreeSet::new() }))
            .collect();
        self.assignment_epoch = self.epoch;
        self.pacing.assigned(now);
        self.endpoint_epoch += 1;
        self.dirty = true;
        Ok(configured)
    }

    /// The epoch members reconcile to. While the initial rebalance delay runs a member gets
    /// at least epoch 1 with no tasks, as from Kafka 4.4: the Kafka Streams client sends the
    /// join fields (topology, rebalance timeout) only while it has epoch 0, so leaving it
    /// there would make its next heartbeat an invalid join. When the delay ends, a member
    /// already at the new assignment's epoch still moves to its tasks (see [`Self::reconcile`]).
    fn target_epoch(&self) -> i32 {
        match self.pacing.initial_delay_until {
            Some(_) => self.assignment_epoch.max(1),
            None => self.assignment_epoch,
        }
    }

    /// Is task `t` of kind `kind` held by a member other than `me` so that `me` must wait?
    /// An active task is exclusive; a standby or warm-up copy only within one process.
    fn unreleased(&self, me: &str, process: &str, t: &TaskId, active: bool) -> bool {
        self.members.iter().filter(|(id, _)| id.as_str() != me).any(|(_, m)| {
            if active {
                m.assigned.active.contains(t) || m.pending_revocation.active.contains(t)
            } else {
                m.process_id == process && (m.assigned.contains_any(t) || m.pending_revocation.contains_any(t))
            }
        })
    }

    /// Moves one member towards its target. `owned` is what the member reports holding.
    fn reconcile(&mut self, id: &str, owned: Option<&Tasks>, now: i64) {
        let target = self.target.get(id).cloned().unwrap_or_default();
        let m = &self.members[id];
        let (state, epoch, assigned, pending, process) =
            (m.state, m.epoch, m.assigned.clone(), m.pending_revocation.clone(), m.process_id.clone());
        if state == MemberState::UnrevokedTasks {
            let released = owned.is_some_and(|o| pending.kinds().iter().flat_map(|k| k.iter()).all(|t| !o.contains_any(t)));
            if !released {
                return;
            }
            let m = self.members.get_mut(id).expect("member");
            m.pending_revocation = Tasks::default();
            m.revocation_deadline = None;
        } else if state == MemberState::Stable && epoch == self.target_epoch() && assigned == target {
            return;
        }
        let revoke = assigned.zip(&target, |a, t| a.difference(t).cloned().collect());
        if !revoke.is_empty() {
            let m = self.members.get_mut(id).expect("member");
            m.assigned = assigned.zip(&target, |a, t| a.intersection(t).cloned().collect());
            m.pending_revocation = revoke;
            m.state = MemberState::UnrevokedTasks;
            m.revocation_deadline = Some(now + m.rebalance_timeout_ms as i64);
            self.dirty = true;
            return;
        }
        let newly = target.zip(&assigned, |t, a| t.difference(a).cloned().collect());
        let free = |set: &BTreeSet<TaskId>, active: bool| -> BTreeSet<TaskId> {
            set.iter().filter(|t| !self.unreleased(id, &process, t, active)).cloned().collect()
        };
        let got = Tasks { active: free(&newly.active, true), standby: free(&newly.standby, false), warmup: free(&newly.warmup, false) };
        let complete = got == newly;
        let assignment_epoch = self.target_epoch();
        let m = self.members.get_mut(id).expect("member");
        if m.epoch != assignment_epoch {
            m.previous_epoch = m.epoch;
            m.epoch = assignment_epoch;
        }
        m.assigned = m.assigned.zip(&got, |a, g| a.union(g).cloned().collect());
        m.state = if complete { MemberState::Stable } else { MemberState::UnreleasedTasks };
        self.dirty = true;
    }

    /// Handles one StreamsGroupHeartbeat.
    pub fn heartbeat(&mut self, hb: Heartbeat, topics: &TopicCounts, cfg: &StreamsConfig, now: i64) -> Result<HeartbeatReply> {
        check_request(&hb)?;
        if hb.epoch == LEAVE_EPOCH || hb.epoch == LEAVE_STATIC_EPOCH {
            return self.leave(&hb, topics, cfg, now);
        }
        let mut changed = false;
        let was_empty = self.members.is_empty();
        // Checked before anything changes, after the checks Kafka makes first.
        let reported = if hb.epoch == 0 {
            let r = hb.reported()?;
            changed |= self.join(&hb, cfg, now)?;
            r
        } else {
            let m = self.members.get(&hb.member_id).ok_or_else(|| Error::UnknownMemberId(hb.member_id.clone()))?;
            if let Some(inst) = &hb.instance_id {
                if m.instance_id.as_deref() != Some(inst) {
                    return Err(Error::FencedInstanceId(inst.clone()));
                }
            }
            let subset = hb.owned.as_ref().is_none_or(|o| {
                o.active.is_subset(&m.assigned.active) && o.standby.is_subset(&m.assigned.standby) && o.warmup.is_subset(&m.assigned.warmup)
            });
            modern::check_heartbeat_epoch(hb.epoch, m.epoch, m.previous_epoch, subset)?;
            hb.reported()?
        };
        changed |= self.update_member(&hb, now);
        // Not a change the group epoch follows: the next assignment reads them.
        self.members.get_mut(&hb.member_id).expect("member").task_offsets.apply(reported);
        if hb.shutdown_application && !self.shutdown_requested {
            tracing::info!(group = %self.id, member = %hb.member_id, "streams member requested the shutdown of the whole application");
            self.shutdown_requested = true;
            self.dirty = true;
        }
        if was_empty {
            self.pacing.member_joined_empty_group(cfg.initial_rebalance_delay_ms, now);
        }
        let before = self.members[&hb.member_id].assigned.clone();
        let configured = self.maybe_assign(topics, changed, cfg, now)?;
        self.reconcile(&hb.member_id, hb.owned.as_ref(), now);
        let m = &self.members[&hb.member_id];
        let mut status = configured.status;
        let group_topology_epoch = self.topology.as_ref().map_or(0, |t| t.epoch);
        if m.topology_epoch < group_topology_epoch {
            status.push((
                STATUS_STALE_TOPOLOGY,
                format!("The member's topology epoch {} is behind the group's topology epoch {}.", m.topology_epoch, group_topology_epoch),
            ));
        }
        if self.shutdown_requested {
            status.push((
                STATUS_SHUTDOWN_APPLICATION,
                "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application.".into(),
            ));
        }
        let missing: Vec<&str> =
            cfg.rack_aware_assignment_tags.iter().filter(|t| !m.client_tags.contains_key(*t)).map(String::as_str).collect();
        if hb.version >= 1 && !missing.is_empty() {
            status.push((
                STATUS_MISSING_CLIENT_TAGS,
                format!(
                    "Missing required client tags for rack-aware standby assignment: [{}]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
                    missing.join(", ")
                ),
            ));
        }
        let full = hb.epoch == 0 || hb.owned.is_some() && hb.process_id.is_some();
        let endpoints = (hb.endpoint_information_epoch < self.endpoint_epoch).then(|| self.endpoints());
        Ok(HeartbeatReply {
            member_id: hb.member_id.clone(),
            epoch: m.epoch,
            heartbeat_interval_ms: cfg.heartbeat_interval_ms,
            status,
            tasks: (full || m.assigned != before).then(|| m.assigned.clone()),
            endpoint_epoch: self.endpoint_epoch,
            endpoints,
            to_create: configured.to_create,
        })
    }

    /// Adds (or re-adds) a member joining with epoch 0, and takes its topology when the
    /// group has none yet. Returns whether the group changed.
    fn join(&mut self, hb: &Heartbeat, cfg: &StreamsConfig, now: i64) -> Result<bool> {
        let topology = hb.topology.clone().expect("checked");
        let others = self.members.keys().any(|k| *k != hb.member_id);
        let mut changed = false;
        match &self.topology {
            Some(t) if others && topology.epoch > t.epoch => {
                return Err(Error::StreamsInvalidTopologyEpoch("Topology updates are not supported yet.".into()));
            }
            Some(t) if others || *t == topology => {}
            _ => {
                tracing::info!(group = %self.id, member = %hb.member_id, epoch = topology.epoch, "streams group takes the member's topology");
                self.topology = Some(topology.clone());
                changed = true;
            }
        }
        if let Some(inst) = &hb.instance_id {
            let holder = self.members.values().find(|m| m.instance_id.as_ref() == Some(inst)).map(|m| (m.id.clone(), m.away));
            if let Some((old, away)) = holder {
                if old != hb.member_id && !away {
                    return Err(Error::UnreleasedInstanceId(inst.clone()));
                }
                // The static member is back: the new id takes over its place and tasks.
                let mut m = self.members.remove(&old).expect("holder");
                let target = self.target.remove(&old);
                m.id = hb.member_id.clone();
                m.away = false;
                m.topology_epoch = topology.epoch;
                m.last_heartbeat = now;
                self.members.insert(hb.member_id.clone(), m);
                if let Some(t) = target {
                    self.target.insert(hb.member_id.clone(), t);
                }
                self.dirty = true;
                return Ok(changed);
            }
        } else if self.members.contains_key(&hb.member_id) {
            // A dynamic member rejoining with epoch 0 has dropped its tasks: start over.
            self.remove_member(&hb.member_id);
        }
        if self.members.len() >= cfg.max_size {
            return Err(Error::GroupMaxSizeReached);
        }
        let m = Member {
            id: hb.member_id.clone(),
            instance_id: hb.instance_id.clone(),
            rack_id: hb.rack_id.clone(),
            client_id: hb.client_id.clone(),
            client_host: hb.client_host.clone(),
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            rebalance_timeout_ms: hb.rebalance_timeout_ms,
            topology_epoch: topology.epoch,
            epoch: 0,
            previous_epoch: -1,
            state: MemberState::Stable,
            assigned: Tasks::default(),
            pending_revocation: Tasks::default(),
            last_heartbeat: now,
            revocation_deadline: None,
            away: false,
            task_offsets: TaskOffsets::default(),
        };
        self.members.insert(hb.member_id.clone(), m);
        self.dirty = true;
        Ok(true)
    }

    /// Applies the member fields a heartbeat carries; true if one the assignor uses changed.
    fn update_member(&mut self, hb: &Heartbeat, now: i64) -> bool {
        let m = self.members.get_mut(&hb.member_id).expect("member");
        m.last_heartbeat = now;
        let mut changed = false;
        if let Some(p) = &hb.process_id {
            changed |= *p != m.process_id;
            m.process_id = p.clone();
        }
        if hb.user_endpoint.is_some() && hb.user_endpoint != m.user_endpoint {
            m.user_endpoint = hb.user_endpoint.clone();
            changed = true;
        }
        if let Some(tags) = &hb.client_tags {
            changed |= *tags != m.client_tags;
            m.client_tags = tags.clone();
        }
        if hb.rack_id.is_some() && hb.rack_id != m.rack_id {
            m.rack_id = hb.rack_id.clone();
            changed = true;
        }
        if hb.rebalance_timeout_ms > 0 {
            m.rebalance_timeout_ms = hb.rebalance_timeout_ms;
        }
        if changed {
            self.dirty = true;
        }
        changed
    }

    fn leave(&mut self, hb: &Heartbeat, topics: &TopicCounts, cfg: &StreamsConfig, now: i64) -> Result<HeartbeatReply> {
        let m = self.members.get_mut(&hb.member_id).ok_or_else(|| Error::UnknownMemberId(hb.member_id.clone()))?;
        if hb.epoch == LEAVE_STATIC_EPOCH && m.instance_id.is_some() {
            // Away for a restart: keep its tasks until the session times out.
            m.away = true;
            m.last_heartbeat = now;
            self.dirty = true;
        } else {
            tracing::info!(group = %self.id, member = %hb.member_id, "member left the streams group");
            self.remove_member(&hb.member_id);
            self.maybe_assign(topics, true, cfg, now)?;
        }
        Ok(HeartbeatReply {
            member_id: hb.member_id.clone(),
            epoch: hb.epoch,
            heartbeat_interval_ms: 0,
            status: vec![],
            tasks: None,
            endpoint_epoch: self.endpoint_epoch,
            endpoints: None,
            to_create: vec![],
        })
    }

    /// The input partitions of each member's tasks, per user endpoint (interactive queries).
    fn endpoints(&self) -> Vec<EndpointPartitions> {
        let Some(topology) = &self.topology else { return vec![] };
        let partitions = |tasks: &[&BTreeSet<TaskId>]| -> BTreeMap<String, Vec<i32>> {
            let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (sub, p) in tasks.iter().flat_map(|s| s.iter()) {
                let Some(s) = topology.subtopologies.iter().find(|s| s.id == *sub) else { continue };
                for t in Topology::inputs(s) {
                    if self.partition_counts.get(t).is_some_and(|n| p < n) {
                        out.entry(t.to_string()).or_default().push(*p);
                    }
                }
            }
            out
        };
        self.members
            .values()
            .filter_map(|m| {
                let e = m.user_endpoint.clone()?;
                Some(EndpointPartitions {
                    endpoint: e,
                    active: partitions(&[&m.assigned.active]),
                    standby: partitions(&[&m.assigned.standby, &m.assigned.warmup]),
                })
            })
            .collect()
    }

    /// Session and revocation timeouts, and the end of the initial rebalance delay (Kafka's
    /// delayed target assignment: computed then, for an epoch bumped during the delay).
    pub fn tick(&mut self, topics: &TopicCounts, cfg: &StreamsConfig, now: i64) {
        if self.pacing.initial_delay_expired(now) && !self.members.is_empty() {
            if let Err(e) = self.maybe_assign(topics, false, cfg, now) {
                tracing::warn!(group = %self.id, error = %e, "streams assignment failed");
            }
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| modern::expired(now, m.last_heartbeat, cfg.session_timeout_ms, m.revocation_deadline))
            .map(|m| m.id.clone())
            .collect();
        for id in &expired {
            tracing::info!(group = %self.id, member = %id, "streams group member expired");
            self.remove_member(id);
        }
        if !expired.is_empty() {
            if let Err(e) = self.maybe_assign(topics, true, cfg, now) {
                tracing::warn!(group = %self.id, error = %e, "streams assignment failed");
            }
        }
    }

    /// OffsetCommit/TxnOffsetCommit check for a member of this group.
    pub fn validate_member_epoch(&self, member_id: &str, epoch: i32) -> Result<()> {
        let m = self.members.get(member_id).ok_or_else(|| Error::UnknownMemberId(member_id.into()))?;
        modern::check_commit_epoch(epoch, m.epoch)
    }

    /// The source topics of the topology (for OffsetDelete).
    pub fn source_topics(&self) -> BTreeSet<String> {
        self.topology.iter().flat_map(|t| &t.subtopologies).flat_map(|s| Topology::inputs(s).map(str::to_string)).collect()
    }
}

#[cfg(test)]
mod tests;
