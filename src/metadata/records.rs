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
//! | `UnregisterBroker` | the broker's registration is gone (Kafka's UnregisterBrokerRecord) |
//! | `Topic`           | a topic exists, with its id and config overrides                |
//! | `Partition`       | a partition's full state: replicas, ISR, leader, epochs         |
//! | `PartitionChange` | a change of leader and/or ISR; bumps the partition epoch         |
//! | `RemoveTopic`     | a topic and its partitions are gone                             |
//! | `TopicConfig`     | a topic config override set (`value`) or removed (`None`)       |
//! | `BrokerConfig`    | a cluster-wide dynamic broker config set or removed             |
//! | `ClientMetricsConfig` | a `client-metrics` resource's config set or removed, by name (KIP-714) |
//! | `GroupConfig`     | a group config override set (`value`) or removed (`None`), by group id |
//! | `AccessControlEntry` | an ACL was created, with its id (Kafka's AccessControlEntryRecord) |
//! | `RemoveAccessControlEntry` | the ACL with that id was deleted                        |
//! | `UserScramCredential` | a user's SCRAM credential for one mechanism (Kafka's `UserScramCredentialRecord`) |
//! | `RemoveUserScramCredential` | that credential is gone                                   |
//! | `DelegationToken` | a token created or given a new expiry (Kafka's `DelegationTokenRecord`; no HMAC) |
//! | `RemoveDelegationToken` | the token is gone (expired, or expired on request)        |
//! | `FeatureLevel`    | a feature's finalized level (Kafka's `FeatureLevelRecord`); 0 removes it |
//! | `ClientQuota`     | a client quota key set (`value`) or removed (`None`) on an entity (Kafka's `QuotaRecord`) |
//! | `RegisterController` | a controller's registration: incarnation, controller endpoints, supported features (Kafka's `RegisterControllerRecord`, KIP-919) |
//! | `UnregisterController` | that controller's registration is gone (Kafka's `UnregisterControllerRecord`, KIP-1312) |
//! | `VoterEndpoints`  | a voter's controller endpoints changed (UpdateRaftVoter: Kafka's updated `VotersRecord`) |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The SCRAM types records carry; they belong to `auth`, which must not import `metadata`.
pub use crate::auth::credential::{ScramCredential, ScramMechanism};
/// The token type records carry, from `auth` like the SCRAM types.
pub use crate::auth::token::DelegationToken;
use crate::auth::AclBinding;
/// The entity a quota record names, from `quota` like the SCRAM types from `auth`.
pub use crate::quota::QuotaEntity;

/// The version written by this build.
pub const BATCH_VERSION: u32 = 1;

/// One Raft entry's payload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordBatch {
    pub v: u32,
    /// When the active controller proposed the batch (epoch ms); absent in older logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<i64>,
    pub records: Vec<Record>,
}

/// Why a partition's leader changed, as Kafka's election types and triggers name it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ElectionReason {
    /// The leader went away and an ISR member took over.
    Clean,
    /// No ISR member was live: a replica outside the ISR took over (data may be lost).
    Unclean,
    /// Leadership moved back to the preferred (first) replica.
    Preferred,
    /// A reassignment moved the partition to new replicas.
    Reassignment,
    /// The leader shut down gracefully and handed leadership over.
    ControlledShutdown,
}

impl ElectionReason {
    /// Every reason, for metric labels that must exist before the first election.
    pub const ALL: [ElectionReason; 5] = [
        ElectionReason::Clean,
        ElectionReason::Unclean,
        ElectionReason::Preferred,
        ElectionReason::Reassignment,
        ElectionReason::ControlledShutdown,
    ];

    /// The snake_case name used in records, events, logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ElectionReason::Clean => "clean",
            ElectionReason::Unclean => "unclean",
            ElectionReason::Preferred => "preferred",
            ElectionReason::Reassignment => "reassignment",
            ElectionReason::ControlledShutdown => "controlled_shutdown",
        }
    }
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
        /// `host:port` of its HTTP listener (Sluice's own: metrics, `/v1`, the console), if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http: Option<String>,
    },
    FenceBroker {
        id: i32,
        epoch: u64,
    },
    UnfenceBroker {
        id: i32,
        epoch: u64,
    },
    /// Removes the registration of that epoch; a later one (the broker came back) stays.
    UnregisterBroker {
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
        /// Why the leader changed; `None` when it did not (an ISR-only change) or in older logs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<ElectionReason>,
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
    GroupConfig {
        group: String,
        key: String,
        value: Option<String>,
    },
    ClientMetricsConfig {
        name: String,
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
    DelegationToken {
        token: DelegationToken,
    },
    RemoveDelegationToken {
        token_id: String,
    },
    FeatureLevel {
        name: String,
        level: i16,
    },
    ClientQuota {
        entity: QuotaEntity,
        key: String,
        value: Option<f64>,
    },
    RegisterController {
        id: i32,
        incarnation: Uuid,
        endpoints: Vec<super::voters::VoterEndpoint>,
        /// Supported (min, max) level of each feature.
        features: BTreeMap<String, (i16, i16)>,
    },
    UnregisterController {
        id: i32,
    },
    /// The voter of that directory id now listens on `endpoints`; a record for a voter the
    /// log does not know under that key changes nothing.
    VoterEndpoints {
        id: i32,
        directory_id: Uuid,
        endpoints: Vec<super::voters::VoterEndpoint>,
    },
}

impl RecordBatch {
    /// Wraps records in a batch of the current version.
    pub fn new(records: Vec<Record>) -> RecordBatch {
        RecordBatch { v: BATCH_VERSION, time_ms: None, records }
    }

    /// The same batch stamped with the time it is proposed at.
    pub fn at(mut self, time_ms: i64) -> RecordBatch {
        self.time_ms = Some(time_ms);
        self
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
