//! Share group membership (KIP-932): members subscribe to topics and the coordinator
//! assigns partitions, several members to a partition when there are more members than
//! partitions. Nothing is revoked first: records are acquired one by one, so a
//! partition may move at once. Pure: time and the topics come in as arguments.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};

/// The epoch a member sends to leave.
pub const LEAVE_EPOCH: i32 = -1;

/// A topic partition by topic id.
pub type Tp = (Uuid, i32);

/// Topics as the coordinator sees them: name → (id, partition count).
pub type Topics = BTreeMap<String, (Uuid, i32)>;

/// Coordinator-wide settings for share groups.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    pub session_timeout_ms: i64,
    pub heartbeat_interval_ms: i32,
    pub max_size: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig { session_timeout_ms: 45_000, heartbeat_interval_ms: 5_000, max_size: 200 }
    }
}

/// A share group member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
    pub epoch: i32,
    pub assigned: BTreeSet<Tp>,
    /// Not stored: a member read back gets a full session from the load on.
    #[serde(skip)]
    last_heartbeat: i64,
}

/// One ShareGroupHeartbeat.
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub epoch: i32,
    pub rack_id: Option<String>,
    pub subscribed: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// Its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatReply {
    pub member_id: String,
    pub epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// Sent when it changed (and on joining).
    pub assignment: Option<BTreeSet<Tp>>,
}

/// A share group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareGroup {
    pub id: String,
    pub epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, Member>,
    /// Partition counts of the subscribed topics when the assignment was computed.
    subscribed: BTreeMap<Uuid, i32>,
}

impl ShareGroup {
    /// An empty group.
    pub fn new(id: &str) -> ShareGroup {
        ShareGroup { id: id.into(), epoch: 0, assignment_epoch: 0, members: BTreeMap::new(), subscribed: BTreeMap::new() }
    }

    /// Kafka's share group state names.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    /// Handles one heartbeat. Members join with epoch 0 and leave with -1; any other
    /// epoch must be the one the coordinator last gave the member.
    pub fn heartbeat(&mut self, hb: Heartbeat, topics: &Topics, cfg: &GroupConfig, now: i64) -> Result<HeartbeatReply> {
        if hb.epoch == LEAVE_EPOCH {
            if self.members.remove(&hb.member_id).is_none() {
                return Err(Error::UnknownMemberId(hb.member_id));
            }
            self.epoch += 1;
            self.reassign(topics);
            return Ok(HeartbeatReply { member_id: hb.member_id, epoch: LEAVE_EPOCH, heartbeat_interval_ms: 0, assignment: None });
        }
        if hb.epoch < 0 {
            return Err(Error::InvalidRequest(format!("member epoch {} is not valid", hb.epoch)));
        }
        let mut member_id = hb.member_id.clone();
        let joining = hb.epoch == 0;
        if joining {
            if hb.subscribed.as_ref().is_none_or(|s| s.is_empty()) {
                return Err(Error::InvalidRequest("SubscribedTopicNames must be set in first request.".into()));
            }
            if member_id.is_empty() {
                member_id = Uuid::new_v4().to_string();
            }
            if !self.members.contains_key(&member_id) && self.members.len() >= cfg.max_size {
                return Err(Error::GroupMaxSizeReached);
            }
        } else if member_id.is_empty() {
            return Err(Error::InvalidRequest("MemberId can't be empty.".into()));
        }
        let changed = {
            let m = match self.members.get_mut(&member_id) {
                Some(m) => m,
                None if joining => self.members.entry(member_id.clone()).or_insert_with(|| Member {
                    id: member_id.clone(),
                    rack_id: None,
                    client_id: String::new(),
                    client_host: String::new(),
                    subscribed: Vec::new(),
                    epoch: 0,
                    assigned: BTreeSet::new(),
                    last_heartbeat: now,
                }),
                None => return Err(Error::UnknownMemberId(member_id)),
            };
            if !joining && hb.epoch != m.epoch {
                return Err(Error::FencedMemberEpoch { got: hb.epoch, current: m.epoch });
            }
            m.last_heartbeat = now;
            m.client_id = hb.client_id;
            m.client_host = hb.client_host;
            if hb.rack_id.is_some() {
                m.rack_id = hb.rack_id;
            }
            let mut changed = joining && m.epoch == 0;
            if let Some(mut subs) = hb.subscribed {
                subs.sort();
                subs.dedup();
                if subs != m.subscribed {
                    m.subscribed = subs;
                    changed = true;
                }
            }
            changed
        };
        if changed || self.topics_changed(topics) {
            self.epoch += 1;
            self.reassign(topics);
        }
        let m = self.members.get_mut(&member_id).expect("present");
        let send = joining || m.epoch != self.assignment_epoch;
        m.epoch = self.assignment_epoch;
        Ok(HeartbeatReply {
            member_id,
            epoch: m.epoch,
            heartbeat_interval_ms: cfg.heartbeat_interval_ms,
            assignment: send.then(|| m.assigned.clone()),
        })
    }

    /// Starts every member's session afresh at `now`, as after the group is read back.
    pub fn touch_all(&mut self, now: i64) {
        for m in self.members.values_mut() {
            m.last_heartbeat = now;
        }
    }

    /// What a heartbeat of `member` may change that is stored: the epochs, the member
    /// count, and the member's own fields. Assignments move only with the group epoch.
    pub(super) fn stored_view(&self, member: &str) -> (i32, i32, usize, Option<Member>) {
        let m = self.members.get(member).map(|m| Member { last_heartbeat: 0, ..m.clone() });
        (self.epoch, self.assignment_epoch, self.members.len(), m)
    }

    /// Removes members whose session ran out; returns their ids.
    pub fn tick(&mut self, topics: &Topics, cfg: &GroupConfig, now: i64) -> Vec<String> {
        let gone: Vec<String> =
            self.members.values().filter(|m| now - m.last_heartbeat > cfg.session_timeout_ms).map(|m| m.id.clone()).collect();
        for id in &gone {
            self.members.remove(id);
        }
        if !gone.is_empty() || (!self.members.is_empty() && self.topics_changed(topics)) {
            self.epoch += 1;
            self.reassign(topics);
        }
        gone
    }

    /// The topics the members subscribe to, by name.
    pub fn subscribed_names(&self) -> BTreeSet<String> {
        self.members.values().flat_map(|m| m.subscribed.iter().cloned()).collect()
    }

    fn subscribed_counts(&self, topics: &Topics) -> BTreeMap<Uuid, i32> {
        self.subscribed_names().iter().filter_map(|n| topics.get(n).copied()).collect()
    }

    fn topics_changed(&self, topics: &Topics) -> bool {
        self.subscribed_counts(topics) != self.subscribed
    }

    /// Recomputes every member's partitions for the current epoch.
    fn reassign(&mut self, topics: &Topics) {
        self.subscribed = self.subscribed_counts(topics);
        let members: Vec<(String, BTreeSet<String>)> =
            self.members.values().map(|m| (m.id.clone(), m.subscribed.iter().cloned().collect())).collect();
        let mut out = assign(&members, topics);
        for m in self.members.values_mut() {
            m.assigned = out.remove(&m.id).unwrap_or_default();
        }
        self.assignment_epoch = self.epoch;
    }
}

/// A share group as stored in `__consumer_offsets` (see `group::store`), JSON with a
/// version like the other groups' values there.
#[derive(Serialize, Deserialize)]
struct StoredGroup {
    v: u16,
    group: ShareGroup,
}

impl ShareGroup {
    /// The stored value of the group.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&StoredGroup { v: 0, group: self.clone() }).expect("serializable")
    }

    /// A group read back from its stored value, its members' sessions starting at `now`;
    /// None for bytes that are not one.
    pub fn decode(b: &[u8], now: i64) -> Option<ShareGroup> {
        let mut g = serde_json::from_slice::<StoredGroup>(b).ok().filter(|s| s.v == 0)?.group;
        g.touch_all(now);
        Some(g)
    }
}

/// The share assignor: per topic, its partitions dealt round robin over the members
/// that subscribe to it, and when members outnumber partitions the partitions dealt
/// round robin over the members instead, so every partition has a member and every
/// member a partition.
pub fn assign(members: &[(String, BTreeSet<String>)], topics: &Topics) -> BTreeMap<String, BTreeSet<Tp>> {
    let mut out: BTreeMap<String, BTreeSet<Tp>> = members.iter().map(|(id, _)| (id.clone(), BTreeSet::new())).collect();
    for (name, (id, count)) in topics {
        let subs: Vec<&String> = members.iter().filter(|(_, s)| s.contains(name)).map(|(m, _)| m).collect();
        if subs.is_empty() || *count <= 0 {
            continue;
        }
        let n = (*count as usize).max(subs.len());
        for i in 0..n {
            let m = subs[i % subs.len()];
            out.get_mut(m).expect("member").insert((*id, (i % *count as usize) as i32));
        }
    }
    out
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
