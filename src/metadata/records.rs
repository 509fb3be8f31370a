//! Metadata records: the entries of the replicated metadata log.
//!
//! Each Raft entry holds one [`RecordBatch`] as JSON. The format is versioned by the
//! batch's `v`; a record type is never changed in place, only added. Replaying every
//! committed batch in order over an empty [`super::image::Image`] rebuilds the cluster's
//! metadata exactly, which is what a snapshot shortcuts.
//!
//! | record            | meaning                                                         |
//! |-------------------|-----------------------------------------------------------------|
//! | `ClusterId`       | the cluster's id, written once by the first active controller   |
//! | `RegisterBroker`  | a broker (re)joined, with its endpoints; its epoch is the record's log offset |
//! | `FenceBroker`     | the broker may lead nothing (missed heartbeats or shut down)     |
//! | `UnfenceBroker`   | the broker caught up with the metadata and may serve            |
//! | `Topic`           | a topic exists, with its id and config overrides                |
//! | `Partition`       | a partition's full state: replicas, ISR, leader, epochs         |
//! | `PartitionChange` | a change of leader and/or ISR; bumps the partition epoch         |
//! | `RemoveTopic`     | a topic and its partitions are gone                             |
//! | `TopicConfig`     | a topic config override set (`value`) or removed (`None`)       |
//! | `BrokerConfig`    | a cluster-wide dynamic broker config set or removed             |
//! | `AccessControlEntry` | an ACL was created, with its id (Kafka's AccessControlEntryRecord) |
//! | `RemoveAccessControlEntry` | the ACL with that id was deleted                        |
//! | `UserScramCredential` | a user's SCRAM credential for one mechanism (Kafka's `UserScramCredentialRecord`) |
//! | `RemoveUserScramCredential` | that credential is gone                                   |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::AclBinding;

/// The version written by this build.
pub const BATCH_VERSION: u32 = 1;

/// One Raft entry's payload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordBatch {
    pub v: u32,
    pub records: Vec<Record>,
}

/// The full state of one partition, as the controller decides it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartitionState {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// -1 when no replica can lead (offline).
    pub leader: i32,
    pub leader_epoch: i32,
    /// Bumped on every change, so stale ISR updates can be refused.
    pub partition_epoch: i32,
    /// During a reassignment: replicas being added (they are in `replicas` already).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding: Vec<i32>,
    /// During a reassignment: replicas to remove once the added ones are in sync.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing: Vec<i32>,
}

/// One address a broker serves on, as Kafka's RegisterBrokerRecord lists them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Endpoint {
    pub listener: String,
    pub host: String,
    pub port: i32,
    pub security_protocol: crate::config::listeners::SecurityProtocol,
}

/// One metadata change.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type")]
pub enum Record {
    ClusterId {
        id: String,
    },
    /// `host`/`port` are the inter-broker listener's; `endpoints` every listener's (absent
    /// in records from before named listeners: then host/port serve every listener).
    RegisterBroker {
        id: i32,
        incarnation: Uuid,
        host: String,
        port: i32,
        rack: Option<String>,
        controller: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        endpoints: Vec<Endpoint>,
    },
    FenceBroker {
        id: i32,
        epoch: u64,
    },
    UnfenceBroker {
        id: i32,
        epoch: u64,
    },
    Topic {
        name: String,
        id: Uuid,
        configs: BTreeMap<String, String>,
    },
    Partition {
        topic_id: Uuid,
        index: i32,
        state: PartitionState,
    },
    PartitionChange {
        topic_id: Uuid,
        index: i32,
        state: PartitionState,
        unclean: bool,
    },
    RemoveTopic {
        id: Uuid,
    },
    TopicConfig {
        id: Uuid,
        key: String,
        value: Option<String>,
    },
    BrokerConfig {
        key: String,
        value: Option<String>,
    },
    AccessControlEntry {
        id: Uuid,
        acl: AclBinding,
    },
    RemoveAccessControlEntry {
        id: Uuid,
    },
    UserScramCredential {
        name: String,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    },
    RemoveUserScramCredential {
        name: String,
        mechanism: ScramMechanism,
    },
}

/// A SCRAM mechanism Kafka knows, with its type code in the SCRAM admin APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

impl ScramMechanism {
    /// Both, in type-code order.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism of a type code (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512), as the APIs send it.
    pub fn from_type(code: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.type_code() == code)
    }

    /// Kafka's type code.
    pub fn type_code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL mechanism name.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What the server keeps of a SCRAM password (RFC 5802 section 3): enough to check a
/// client's proof and to prove itself, never the password or the salted password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// Keys stay out of logs, as in Kafka's `ScramCredentialValue`.
impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramCredential([hidden])")
    }
}

impl RecordBatch {
    /// Wraps records in a batch of the current version.
    pub fn new(records: Vec<Record>) -> RecordBatch {
        RecordBatch { v: BATCH_VERSION, records }
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("records always serialize")
    }

    /// Decodes a batch, refusing versions newer than this build understands.
    pub fn decode(bytes: &[u8]) -> Result<RecordBatch, String> {
        let b: RecordBatch = serde_json::from_slice(bytes).map_err(|e| format!("bad metadata batch: {e}"))?;
        if b.v > BATCH_VERSION {
            return Err(format!("metadata batch version {} is newer than this build ({BATCH_VERSION})", b.v));
        }
        Ok(b)
    }
}
