//! The classic group protocol's rebalance state machine (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup). It does no I/O and reads no clock: time comes in as `now`,
//! and answers to requests that had to wait come out as [`Reply`] values keyed by the
//! ticket the caller gave. Tests drive it with a fake clock.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use indexmap::IndexMap;

use crate::error::{Error, Result};

/// Identifies a waiting request; the caller maps it back to a connection.
pub type Ticket = u64;

/// Group states, with the names DescribeGroups reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
            State::Dead => "Dead",
        }
    }
}

/// Settings the coordinator applies to every group.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i64,
    pub max_size: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3000,
            max_size: usize::MAX,
        }
    }
}

/// A group member.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub assignment: Bytes,
    last_heartbeat: i64,
    awaiting_join: Option<Ticket>,
    awaiting_sync: Option<Ticket>,
    join_version: i16,
}

impl Member {
    /// The metadata this member sent for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols.iter().find(|(n, _)| n == protocol).map(|(_, m)| m.clone()).unwrap_or_default()
    }
}

/// What a JoinGroup request carries.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    /// JoinGroup v4+: new members first get MEMBER_ID_REQUIRED (KIP-394).
    pub require_known_member_id: bool,
    pub version: i16,
}

/// A JoinGroup answer.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinResponse {
    pub error: Option<Error>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// Filled for the leader: (member id, instance id, metadata).
    pub members: Vec<(String, Option<String>, Bytes)>,
    pub skip_assignment: bool,
}

impl JoinResponse {
    /// A failed join for `member_id`.
    pub fn error(e: Error, member_id: &str) -> JoinResponse {
        JoinResponse {
            error: Some(e),
            generation: -1,
            protocol_type: None,
            protocol: None,
            leader: String::new(),
            member_id: member_id.to_string(),
            members: vec![],
            skip_assignment: false,
        }
    }
}

/// A SyncGroup answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncResponse {
    pub error: Option<Error>,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub assignment: Bytes,
}

/// An answer for a request that waited.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Join(Ticket, JoinResponse),
    Sync(Ticket, SyncResponse),
}

/// A classic group.
#[derive(Debug, Clone)]
pub struct Group {
    pub id: String,
    pub state: State,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub members: IndexMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, and when.
    pending: HashMap<String, (i64, i32)>,
    /// Static members: instance id → member id.
    statics: HashMap<String, String>,
    join_deadline: Option<i64>,
    /// While the initial delay runs: how much longer it may still be stretched.
    initial_delay: Option<(i64, bool)>,
    sync_deadline: Option<i64>,
    /// When the state last changed (for offset expiry of empty groups).
    pub state_since: i64,
    /// Set whenever something worth persisting changed.
    pub dirty: bool,
    next_id: u64,
}

impl Group {
    /// A new, empty group.
    pub fn new(id: &str, now: i64) -> Group {
        Group {
            id: id.to_string(),
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: IndexMap::new(),
            pending: HashMap::new(),
            statics: HashMap::new(),
            join_deadline: None,
            initial_delay: None,
            sync_deadline: None,
            state_since: now,
            dirty: false,
            next_id: 0,
        }
    }

    /// A group restored from disk in its last stable shape; members must heartbeat
    /// within their session timeout from `now` to stay.
    pub fn restore(
        id: &str,
        generation: i32,
        protocol_type: Option<String>,
        protocol: Option<String>,
        leader: Option<String>,
        members: Vec<Member>,
        now: i64,
    ) -> Group {
        let mut g = Group::new(id, now);
        g.generation = generation;
        g.protocol_type = protocol_type;
        g.protocol = protocol;
        g.leader = leader;
        for mut m in members {
            m.last_heartbeat = now;
            if let Some(i) = &m.instance_id {
                g.statics.insert(i.clone(), m.id.clone());
            }
            g.members.insert(m.id.clone(), m);
        }
        g.state = if g.members.is_empty() { State::Empty } else { State::Stable };
        g
    }

    /// Builds a member from stored fields.
    #[allow(clippy::too_many_arguments)]
    pub fn stored_member(
        id: String,
        instance_id: Option<String>,
        client_id: String,
        client_host: String,
        protocol_type: String,
        protocols: Vec<(String, Bytes)>,
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
        assignment: Bytes,
    ) -> Member {
        Member {
            id,
            instance_id,
            client_id,
            client_host,
            protocol_type,
            protocols,
            session_timeout_ms,
            rebalance_timeout_ms,
            assignment,
            last_heartbeat: 0,
            awaiting_join: None,
            awaiting_sync: None,
            join_version: 0,
        }
    }

    fn set_state(&mut self, s: State, now: i64) {
        if self.state != s {
            self.state = s;
            self.state_since = now;
        }
    }

    fn new_member_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}-{}", uuid::Uuid::new_v4())
    }

    fn rebalance_timeout(&self) -> i64 {
        self.members.values().map(|m| m.rebalance_timeout_ms as i64).max().unwrap_or(0)
    }

    /// Is this request's protocol set compatible with the group's?
    fn compatible(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        self.candidates().iter().any(|c| protocols.iter().any(|(n, _)| n == c))
    }

    /// Protocols every current member supports.
    fn candidates(&self) -> Vec<String> {
        let mut it = self.members.values();
        let Some(first) = it.next() else { return vec![] };
        let mut set: Vec<String> = first.protocols.iter().map(|(n, _)| n.clone()).collect();
        for m in it {
            set.retain(|p| m.protocols.iter().any(|(n, _)| n == p));
        }
        set
    }

    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidates();
        let mut votes: IndexMap<&str, usize> = candidates.iter().map(|c| (c.as_str(), 0)).collect();
        for m in self.members.values() {
            if let Some((n, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(n)) {
                *votes.get_mut(n.as_str()).expect("a candidate") += 1;
            }
        }
        let max = votes.values().copied().max()?;
        votes.iter().find(|(_, &v)| v == max).map(|(k, _)| k.to_string())
    }

    fn current_join_response(&self, member_id: &str, skip_assignment: bool) -> JoinResponse {
        let is_leader = self.leader.as_deref() == Some(member_id);
        let protocol = self.protocol.clone().unwrap_or_default();
        JoinResponse {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            members: if is_leader {
                self.members.values().map(|m| (m.id.clone(), m.instance_id.clone(), m.metadata(&protocol))).collect()
            } else {
                vec![]
            },
            skip_assignment: skip_assignment && is_leader,
        }
    }

    /// Handles JoinGroup. The answer may be immediate (`Ok(Some)`), or come later as a
    /// [`Reply::Join`] for `ticket`; replies for other waiting members may come out too.
    pub fn join(&mut self, req: JoinRequest, ticket: Ticket, cfg: &GroupConfig, now: i64) -> (Option<JoinResponse>, Vec<Reply>) {
        let fail = |e: Error, id: &str| (Some(JoinResponse::error(e, id)), vec![]);
        if req.session_timeout_ms < cfg.min_session_timeout_ms || req.session_timeout_ms > cfg.max_session_timeout_ms {
            return fail(Error::InvalidSessionTimeout(req.session_timeout_ms), &req.member_id);
        }
        if self.state == State::Dead {
            return fail(Error::CoordinatorNotAvailable, &req.member_id);
        }
        let known_member = self.members.contains_key(&req.member_id) || self.pending.contains_key(&req.member_id);
        if !known_member && !self.compatible(&req.protocol_type, &req.protocols) {
            return fail(Error::InconsistentGroupProtocol, &req.member_id);
        }
        if req.member_id.is_empty() {
            return self.join_new(req, ticket, cfg, now);
        }
        if let Some(inst) = &req.instance_id {
            if let Some(owner) = self.statics.get(inst) {
                if *owner != req.member_id {
                    return fail(Error::FencedInstanceId(inst.clone()), &req.member_id);
                }
            }
        }
        if self.pending.remove(&req.member_id).is_some() {
            if self.members.len() >= cfg.max_size {
                return fail(Error::GroupMaxSizeReached, &req.member_id);
            }
            let id = req.member_id.clone();
            return (None, self.add_and_rebalance(id, req, ticket, cfg, now));
        }
        let Some(member) = self.members.get(&req.member_id) else {
            return fail(Error::UnknownMemberId(req.member_id.clone()), &req.member_id);
        };
        if !self.compatible(&req.protocol_type, &req.protocols) {
            return fail(Error::InconsistentGroupProtocol, &req.member_id);
        }
        let unchanged = member.protocols == req.protocols;
        let is_leader = self.leader.as_deref() == Some(req.member_id.as_str());
        match self.state {
            State::PreparingRebalance => {
                let mut replies = self.update_member(&req, ticket, now);
                replies.extend(self.maybe_complete_join(cfg, now));
                (None, replies)
            }
            State::CompletingRebalance if unchanged => (Some(self.current_join_response(&req.member_id, false)), vec![]),
            State::Stable if unchanged && !is_leader => {
                self.touch(&req.member_id, now);
                (Some(self.current_join_response(&req.member_id, false)), vec![])
            }
            State::CompletingRebalance | State::Stable => {
                let mut replies = self.update_member(&req, ticket, now);
                replies.extend(self.prepare_rebalance(cfg, now));
                (None, replies)
            }
            State::Empty | State::Dead => fail(Error::UnknownMemberId(req.member_id.clone()), &req.member_id),
        }
    }

    fn join_new(&mut self, req: JoinRequest, ticket: Ticket, cfg: &GroupConfig, now: i64) -> (Option<JoinResponse>, Vec<Reply>) {
        if let Some(inst) = req.instance_id.clone() {
            let new_id = self.new_member_id(&inst);
            if let Some(old_id) = self.statics.get(&inst).cloned() {
                return self.replace_static(old_id, new_id, req, ticket, cfg, now);
            }
            if self.members.len() >= cfg.max_size {
                return (Some(JoinResponse::error(Error::GroupMaxSizeReached, "")), vec![]);
            }
            self.statics.insert(inst, new_id.clone());
            return (None, self.add_and_rebalance(new_id, req, ticket, cfg, now));
        }
        let new_id = self.new_member_id(if req.client_id.is_empty() { "member" } else { &req.client_id });
        if req.require_known_member_id {
            self.pending.insert(new_id.clone(), (now, req.session_timeout_ms));
            return (Some(JoinResponse::error(Error::MemberIdRequired, &new_id)), vec![]);
        }
        if self.members.len() >= cfg.max_size {
            return (Some(JoinResponse::error(Error::GroupMaxSizeReached, "")), vec![]);
        }
        (None, self.add_and_rebalance(new_id, req, ticket, cfg, now))
    }

    /// A static member came back with a new member id: it takes the old one's place.
    fn replace_static(
        &mut self,
        old_id: String,
        new_id: String,
        req: JoinRequest,
        ticket: Ticket,
        cfg: &GroupConfig,
        now: i64,
    ) -> (Option<JoinResponse>, Vec<Reply>) {
        let mut replies = Vec::new();
        let Some(mut m) = self.members.shift_remove(&old_id) else {
            self.statics.remove(req.instance_id.as_deref().unwrap_or_default());
            return self.join_new(req, ticket, cfg, now);
        };
        // The old instance is fenced: whatever it was waiting for fails.
        if let Some(t) = m.awaiting_join.take() {
            replies.push(Reply::Join(t, JoinResponse::error(Error::FencedInstanceId(old_id.clone()), &old_id)));
        }
        if let Some(t) = m.awaiting_sync.take() {
            replies.push(Reply::Sync(
                t,
                SyncResponse {
                    error: Some(Error::FencedInstanceId(old_id.clone())),
                    protocol_type: None,
                    protocol: None,
                    assignment: Bytes::new(),
                },
            ));
        }
        m.protocols = req.protocols.clone();
        m.id = new_id.clone();
        m.last_heartbeat = now;
        m.client_id = req.client_id.clone();
        m.client_host = req.client_host.clone();
        m.session_timeout_ms = req.session_timeout_ms;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.join_version = req.version;
        self.members.insert(new_id.clone(), m);
        self.statics.insert(req.instance_id.clone().expect("static"), new_id.clone());
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        self.dirty = true;
        // As in Kafka, only a change of the group's chosen protocol forces a rebalance;
        // new metadata bytes (say, owned partitions) alone don't.
        let unchanged = self.protocol.is_some() && self.select_protocol() == self.protocol;
        match self.state {
            State::Stable | State::CompletingRebalance if unchanged => {
                // No rebalance: the member gets the current generation and, at SyncGroup,
                // its old assignment back.
                (Some(self.current_join_response(&new_id, true)), replies)
            }
            _ => {
                replies.extend(self.update_member(&req_with_id(req, &new_id), ticket, now));
                if self.state == State::PreparingRebalance {
                    replies.extend(self.maybe_complete_join(cfg, now));
                } else {
                    replies.extend(self.prepare_rebalance(cfg, now));
                }
                (None, replies)
            }
        }
    }

    fn add_and_rebalance(&mut self, id: String, req: JoinRequest, ticket: Ticket, cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        let m = Member {
            id: id.clone(),
            instance_id: req.instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            session_timeout_ms: req.session_timeout_ms,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            assignment: Bytes::new(),
            last_heartbeat: now,
            awaiting_join: Some(ticket),
            awaiting_sync: None,
            join_version: req.version,
        };
        self.members.insert(id, m);
        if let Some((_, ref mut newcomer)) = self.initial_delay {
            *newcomer = true;
        }
        match self.state {
            State::PreparingRebalance => self.maybe_complete_join(cfg, now),
            _ => self.prepare_rebalance(cfg, now),
        }
    }

    fn update_member(&mut self, req: &JoinRequest, ticket: Ticket, now: i64) -> Vec<Reply> {
        let mut replies = Vec::new();
        let m = self.members.get_mut(&req.member_id).expect("caller checked");
        if let Some(old) = m.awaiting_join.replace(ticket) {
            // A second JoinGroup from the same member replaces the first.
            replies.push(Reply::Join(old, JoinResponse::error(Error::UnknownMemberId(req.member_id.clone()), &req.member_id)));
        }
        m.protocols = req.protocols.clone();
        m.protocol_type = req.protocol_type.clone();
        m.session_timeout_ms = req.session_timeout_ms;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        m.client_id = req.client_id.clone();
        m.client_host = req.client_host.clone();
        m.join_version = req.version;
        m.last_heartbeat = now;
        replies
    }

    fn touch(&mut self, member_id: &str, now: i64) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.last_heartbeat = now;
        }
    }

    /// Moves to PreparingRebalance. Waiting syncs fail with REBALANCE_IN_PROGRESS.
    fn prepare_rebalance(&mut self, cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        let mut replies = Vec::new();
        for m in self.members.values_mut() {
            if let Some(t) = m.awaiting_sync.take() {
                replies.push(Reply::Sync(
                    t,
                    SyncResponse { error: Some(Error::RebalanceInProgress), protocol_type: None, protocol: None, assignment: Bytes::new() },
                ));
            }
        }
        self.sync_deadline = None;
        let was_empty = self.state == State::Empty;
        self.set_state(State::PreparingRebalance, now);
        if was_empty && cfg.initial_rebalance_delay_ms > 0 {
            self.join_deadline = Some(now + cfg.initial_rebalance_delay_ms);
            self.initial_delay = Some(((self.rebalance_timeout() - cfg.initial_rebalance_delay_ms).max(0), false));
        } else {
            self.initial_delay = None;
            self.join_deadline = Some(now + self.rebalance_timeout());
            replies.extend(self.maybe_complete_join(cfg, now));
        }
        replies
    }

    fn all_joined(&self) -> bool {
        self.pending.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    fn maybe_complete_join(&mut self, cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        if self.state == State::PreparingRebalance && self.initial_delay.is_none() && self.all_joined() {
            return self.complete_join(cfg, now);
        }
        vec![]
    }

    /// Ends the join phase: members that did not rejoin are dropped, a generation
    /// starts, and every waiting member gets its JoinGroup answer.
    fn complete_join(&mut self, _cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        let gone: Vec<String> = self.members.values().filter(|m| m.awaiting_join.is_none()).map(|m| m.id.clone()).collect();
        for id in gone {
            self.remove_member(&id);
        }
        self.join_deadline = None;
        self.initial_delay = None;
        self.generation += 1;
        self.dirty = true;
        if self.members.is_empty() {
            self.protocol = None;
            self.leader = None;
            self.set_state(State::Empty, now);
            return vec![];
        }
        self.protocol = self.select_protocol();
        if !self.leader.as_ref().is_some_and(|l| self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        self.set_state(State::CompletingRebalance, now);
        self.sync_deadline = Some(now + self.rebalance_timeout());
        let mut replies = Vec::new();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let resp = self.current_join_response(&id, false);
            let m = self.members.get_mut(&id).expect("present");
            m.last_heartbeat = now;
            if let Some(t) = m.awaiting_join.take() {
                replies.push(Reply::Join(t, resp));
            }
        }
        replies
    }

    fn remove_member(&mut self, id: &str) -> Option<Member> {
        let m = self.members.shift_remove(id)?;
        if let Some(i) = &m.instance_id {
            if self.statics.get(i).map(String::as_str) == Some(id) {
                self.statics.remove(i);
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
        self.dirty = true;
        Some(m)
    }

    /// Checks member id, instance id and generation for Sync/Heartbeat/OffsetCommit.
    pub fn validate_member(&self, member_id: &str, instance_id: Option<&str>, generation: i32) -> Result<()> {
        if let Some(inst) = instance_id {
            if let Some(owner) = self.statics.get(inst) {
                if owner != member_id {
                    return Err(Error::FencedInstanceId(inst.to_string()));
                }
            }
        }
        if !self.members.contains_key(member_id) {
            return Err(Error::UnknownMemberId(member_id.to_string()));
        }
        if generation != self.generation {
            return Err(Error::IllegalGeneration(generation));
        }
        Ok(())
    }

    /// Handles SyncGroup: immediate answer, or later as [`Reply::Sync`] for `ticket`.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        ticket: Ticket,
        now: i64,
    ) -> (Option<SyncResponse>, Vec<Reply>) {
        let fail =
            |e: Error| (Some(SyncResponse { error: Some(e), protocol_type: None, protocol: None, assignment: Bytes::new() }), vec![]);
        if self.state == State::Dead {
            return fail(Error::CoordinatorNotAvailable);
        }
        if let Err(e) = self.validate_member(member_id, instance_id, generation) {
            return fail(e);
        }
        if protocol_type.is_some_and(|p| Some(p) != self.protocol_type.as_deref())
            || protocol.is_some_and(|p| Some(p) != self.protocol.as_deref())
        {
            return fail(Error::InconsistentGroupProtocol);
        }
        self.touch(member_id, now);
        match self.state {
            State::PreparingRebalance => fail(Error::RebalanceInProgress),
            State::Stable => (Some(self.sync_ok(member_id)), vec![]),
            State::CompletingRebalance => {
                self.members.get_mut(member_id).expect("validated").awaiting_sync = Some(ticket);
                if self.leader.as_deref() != Some(member_id) {
                    return (None, vec![]);
                }
                let mut given: HashMap<String, Bytes> = assignments.into_iter().collect();
                for m in self.members.values_mut() {
                    m.assignment = given.remove(&m.id).unwrap_or_default();
                }
                self.set_state(State::Stable, now);
                self.sync_deadline = None;
                self.dirty = true;
                let mut replies = Vec::new();
                let ids: Vec<String> = self.members.keys().cloned().collect();
                for id in ids {
                    let resp = self.sync_ok(&id);
                    if let Some(t) = self.members.get_mut(&id).and_then(|m| m.awaiting_sync.take()) {
                        replies.push(Reply::Sync(t, resp));
                    }
                }
                (None, replies)
            }
            State::Empty | State::Dead => fail(Error::UnknownMemberId(member_id.to_string())),
        }
    }

    fn sync_ok(&self, member_id: &str) -> SyncResponse {
        SyncResponse {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            assignment: self.members.get(member_id).map(|m| m.assignment.clone()).unwrap_or_default(),
        }
    }

    /// Handles Heartbeat.
    pub fn heartbeat(&mut self, member_id: &str, instance_id: Option<&str>, generation: i32, now: i64) -> Result<()> {
        if self.state == State::Dead {
            return Err(Error::CoordinatorNotAvailable);
        }
        if self.state == State::Empty {
            return Err(Error::UnknownMemberId(member_id.to_string()));
        }
        self.validate_member(member_id, instance_id, generation)?;
        self.touch(member_id, now);
        match self.state {
            State::PreparingRebalance => Err(Error::RebalanceInProgress),
            _ => Ok(()),
        }
    }

    /// Handles one member of a LeaveGroup.
    pub fn leave(&mut self, member_id: &str, instance_id: Option<&str>, cfg: &GroupConfig, now: i64) -> Result<Vec<Reply>> {
        let id = match instance_id {
            Some(inst) => {
                let owner = self.statics.get(inst).cloned().ok_or_else(|| Error::UnknownMemberId(member_id.to_string()))?;
                if !member_id.is_empty() && owner != member_id {
                    return Err(Error::FencedInstanceId(inst.to_string()));
                }
                owner
            }
            None => member_id.to_string(),
        };
        if self.pending.remove(&id).is_some() {
            return Ok(vec![]);
        }
        let mut m = self.remove_member(&id).ok_or_else(|| Error::UnknownMemberId(id.clone()))?;
        let mut replies = Vec::new();
        if let Some(t) = m.awaiting_join.take() {
            replies.push(Reply::Join(t, JoinResponse::error(Error::UnknownMemberId(id.clone()), &id)));
        }
        replies.extend(self.after_member_gone(cfg, now));
        Ok(replies)
    }

    fn after_member_gone(&mut self, cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        match self.state {
            State::Stable | State::CompletingRebalance => self.prepare_rebalance(cfg, now),
            State::PreparingRebalance => self.maybe_complete_join(cfg, now),
            _ => vec![],
        }
    }

    /// Applies timeouts: the join and sync phases, the initial delay, and members
    /// whose session expired.
    pub fn tick(&mut self, cfg: &GroupConfig, now: i64) -> Vec<Reply> {
        let mut replies = Vec::new();
        let expired_pending: Vec<String> =
            self.pending.iter().filter(|(_, (at, st))| now - at > *st as i64).map(|(k, _)| k.clone()).collect();
        for id in expired_pending {
            self.pending.remove(&id);
            replies.extend(self.maybe_complete_join(cfg, now));
        }
        if self.state == State::PreparingRebalance && self.join_deadline.is_some_and(|d| now >= d) {
            match self.initial_delay {
                Some((budget, true)) if budget > 0 => {
                    let step = cfg.initial_rebalance_delay_ms.min(budget);
                    self.join_deadline = Some(now + step);
                    self.initial_delay = Some((budget - step, false));
                }
                _ => replies.extend(self.complete_join(cfg, now)),
            }
        }
        if self.state == State::CompletingRebalance && self.sync_deadline.is_some_and(|d| now >= d) {
            let laggards: Vec<String> = self.members.values().filter(|m| m.awaiting_sync.is_none()).map(|m| m.id.clone()).collect();
            for id in laggards {
                self.remove_member(&id);
            }
            replies.extend(self.prepare_rebalance(cfg, now));
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.awaiting_sync.is_none() && now - m.last_heartbeat > m.session_timeout_ms as i64)
            .map(|m| m.id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.id, member = %id, "member session expired");
            self.remove_member(&id);
            replies.extend(self.after_member_gone(cfg, now));
        }
        replies
    }

    /// Marks the group deleted.
    pub fn kill(&mut self, now: i64) {
        self.set_state(State::Dead, now);
    }

    /// Topics the members subscribe to, read from consumer-protocol metadata.
    pub fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let proto = self.protocol.clone()?;
        let mut out = HashSet::new();
        for m in self.members.values() {
            out.extend(super::consumer_protocol::subscription_topics(&m.metadata(&proto))?);
        }
        Some(out)
    }
}

fn req_with_id(mut req: JoinRequest, id: &str) -> JoinRequest {
    req.member_id = id.to_string();
    req
}
