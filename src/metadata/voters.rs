//! The metadata quorum's voters as the log records them (KIP-853's `VotersRecord`): the
//! directory id and controller endpoints of each voter added through AddRaftVoter, and
//! the changes that carry them through the Raft log.
//!
//! Raft itself keeps the set of voter ids (its configuration); this is what Raft does not
//! know: the directory id that tells one incarnation of a node from another, and where to
//! reach it. Voters of the bootstrap set (`controller.quorum.voters`) have no directory id
//! (Kafka's static voters neither), and their endpoints come from that config.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One listener of a voter (AddRaftVoter's `Listener`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoterEndpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl VoterEndpoint {
    /// `host:port`, bracketing an IPv6 host.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A voter (or a voter being added, while it catches up as a learner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoterInfo {
    pub directory_id: Uuid,
    pub endpoints: Vec<VoterEndpoint>,
}

/// A change to the voter set: the context of one Raft configuration change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum VoterChange {
    /// Start replicating to `id` as a learner (Kafka's observer), so it catches up.
    AddLearner { id: i32, info: VoterInfo },
    /// Make the caught-up learner `id` a voter.
    Promote { id: i32 },
    /// Take voter `id` out of the voters: it stays a learner, so a controller that still
    /// runs keeps the log, as Kafka's removed voters keep fetching as observers.
    Demote { id: i32 },
}

impl VoterChange {
    /// The bytes carried in the log entry.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("voter changes serialize")
    }

    /// Reads an entry's context back; `None` for one that is not ours.
    pub fn decode(bytes: &[u8]) -> Option<VoterChange> {
        serde_json::from_slice(bytes).ok()
    }
}
