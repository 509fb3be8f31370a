//! Requests brokers send to the active controller, over the controller listener.
//!
//! These are internal (JSON in length-prefixed frames), not Kafka APIs: clients never
//! see them. A broker's Kafka handlers translate client requests into these.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::token::DelegationToken;
use crate::auth::{AclBinding, AclFilter, Principal};
use crate::error::Error;
use crate::metadata::image::TopicImage;
use crate::metadata::records::{PartitionState, RecordBatch};

/// What a CreateTopics entry asks for, before defaults are applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CreateRequest {
    pub name: String,
    /// -1 takes `num.partitions`.
    pub partitions: i32,
    /// -1 takes `default.replication.factor`.
    pub replication_factor: i16,
    /// Manual assignment: partition index → broker ids.
    pub assignments: Vec<(i32, Vec<i32>)>,
    pub configs: BTreeMap<String, String>,
}

/// Which configs an AlterConfigs changes: a topic's, the cluster-wide broker defaults, or a group's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ConfigTarget {
    Topic(String),
    Broker,
    Group(String),
    /// A `client-metrics` resource (KIP-714).
    ClientMetrics(String),
}

/// A request to the controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    Register {
        id: i32,
        incarnation: Uuid,
        host: String,
        port: i32,
        rack: Option<String>,
        controller: bool,
        /// Every listener's address (absent from brokers before named listeners).
        #[serde(default)]
        endpoints: Vec<crate::metadata::records::Endpoint>,
        /// Its HTTP listener's address (absent from brokers before it was registered).
        #[serde(default)]
        http: Option<String>,
    },
    Heartbeat {
        id: i32,
        epoch: u64,
        applied: u64,
        shutting_down: bool,
    },
    CreateTopics {
        topics: Vec<CreateRequest>,
        validate_only: bool,
    },
    DeleteTopics {
        names: Vec<String>,
    },
    CreatePartitions {
        name: String,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    },
    /// Replaces the whole set of overrides of the target with `configs`.
    SetConfigs {
        target: ConfigTarget,
        configs: BTreeMap<String, String>,
    },
    AlterPartition {
        broker: i32,
        epoch: u64,
        topic_id: Uuid,
        index: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
    },
    /// (topic, partition, target replicas or `None` to cancel).
    AlterReassignments {
        items: Vec<(String, i32, Option<Vec<i32>>)>,
    },
    /// `None` partitions means all; `preferred` false means unclean.
    ElectLeaders {
        preferred: bool,
        partitions: Option<Vec<(String, i32)>>,
    },
    /// Creates ACLs (one result each, in order).
    CreateAcls {
        acls: Vec<AclBinding>,
    },
    /// Deletes the ACLs each filter selects.
    DeleteAcls {
        filters: Vec<AclFilter>,
    },
    /// AlterUserScramCredentials: deletions (user, mechanism type), then upsertions.
    AlterScram {
        deletions: Vec<(String, i8)>,
        upsertions: Vec<ScramUpsertion>,
    },
    /// AlterClientQuotas: one result per alteration, in order (`Response::Each`).
    AlterClientQuotas {
        alterations: Vec<QuotaAlteration>,
        validate_only: bool,
    },
    /// CreateDelegationToken, checked by the broker; `owner` None: the requester's own.
    CreateToken {
        requester: Principal,
        owner: Option<Principal>,
        renewers: Vec<Principal>,
        max_lifetime_ms: i64,
    },
    /// RenewDelegationToken of the token with this HMAC.
    RenewToken {
        requester: Principal,
        hmac: Hmac,
        period_ms: i64,
    },
    /// ExpireDelegationToken; a negative period removes the token at once.
    ExpireToken {
        requester: Principal,
        hmac: Hmac,
        period_ms: i64,
    },
    /// UnregisterBroker: the broker's registration goes, as after a decommission.
    /// A broker's log dir failed: its replicas of these partitions (topic id, index) are
    /// offline, so it leaves their ISRs and leadership moves (Kafka learns the same from
    /// the offline dirs of a broker's heartbeat, KIP-858).
    OfflineReplicas {
        broker: i32,
        epoch: u64,
        partitions: Vec<(Uuid, i32)>,
    },
    UnregisterBroker {
        id: i32,
    },
    /// UpdateFeatures: every update is checked, then all are written or none.
    UpdateFeatures {
        updates: Vec<crate::metadata::features::FeatureUpdate>,
        validate_only: bool,
    },
    DescribeQuorum,
    /// AddRaftVoter: catch `id` up as a learner, then make it a voter.
    AddVoter {
        id: i32,
        directory_id: Uuid,
        endpoints: Vec<crate::metadata::voters::VoterEndpoint>,
        timeout_ms: i32,
    },
    /// RemoveRaftVoter.
    RemoveVoter {
        id: i32,
        directory_id: Uuid,
    },
    /// Committed metadata from offset `from` on (for nodes that don't vote), asked by node
    /// `node` (absent from nodes before observers were listed), which DescribeQuorum then
    /// shows as an observer.
    FetchMetadata {
        from: u64,
        #[serde(default)]
        node: Option<i32>,
    },
    /// ControllerRegistration (KIP-919): a controller says where it listens and what it
    /// supports; written unless the log already has this very registration.
    RegisterController {
        id: i32,
        incarnation: Uuid,
        endpoints: Vec<crate::metadata::voters::VoterEndpoint>,
        features: BTreeMap<String, (i16, i16)>,
    },
    /// UnregisterController (KIP-1312).
    UnregisterController {
        id: i32,
    },
    /// UpdateRaftVoter (KIP-853): voter (`id`, `directory_id`) listens on `endpoints` now
    /// and supports kraft.version `kraft_min..=kraft_max`.
    UpdateVoter {
        id: i32,
        directory_id: Uuid,
        endpoints: Vec<crate::metadata::voters::VoterEndpoint>,
        kraft_min: i16,
        kraft_max: i16,
    },
}

/// One AlterUserScramCredentials upsertion: the client salts and hashes the password,
/// so only the salted password travels (as in Kafka) and the controller derives the keys.
#[derive(Clone, Serialize, Deserialize)]
pub struct ScramUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// The salted password stays out of logs.
impl std::fmt::Debug for ScramUpsertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScramUpsertion({}, mechanism {}, {} iterations)", self.name, self.mechanism, self.iterations)
    }
}

/// One AlterClientQuotas entry as the client sent it: the entity's (type, name) parts
/// (None: the default) and the keys to set (`Some`) or remove (`None`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuotaAlteration {
    pub entity: Vec<(String, Option<String>)>,
    pub ops: Vec<(String, Option<f64>)>,
}

/// A token's HMAC as a request names it: it logs a token in, so it stays out of logs.
#[derive(Clone, Serialize, Deserialize)]
pub struct Hmac(pub Vec<u8>);

impl std::fmt::Debug for Hmac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hmac([hidden])")
    }
}

/// The quorum as DescribeQuorum reports it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QuorumInfo {
    pub leader: i32,
    pub term: u64,
    pub high_watermark: u64,
    /// (voter id, log end offset the leader knows it has).
    pub voters: Vec<(i32, u64)>,
    /// (observer id, log end offset): controllers being added, catching up.
    #[serde(default)]
    pub observers: Vec<(i32, u64)>,
    /// The directory id of every voter and observer added through AddRaftVoter.
    #[serde(default)]
    pub directory_ids: Vec<(i32, Uuid)>,
    /// The controller endpoints of voters added through AddRaftVoter.
    #[serde(default)]
    pub endpoints: Vec<(i32, Vec<crate::metadata::voters::VoterEndpoint>)>,
    /// When the leader last heard from each peer (epoch ms).
    #[serde(default)]
    pub heard: Vec<(i32, i64)>,
}

/// The controller's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// Done; the change is in the metadata log at `offset`.
    Done {
        offset: u64,
    },
    Failed(Error),
    /// Not the active controller; here's who is, if known.
    NotController {
        leader: Option<i32>,
    },
    Registered {
        epoch: u64,
    },
    Heartbeat {
        fenced: bool,
        shutdown_ready: bool,
    },
    Topics {
        results: Vec<Result<TopicImage, Error>>,
        offset: u64,
    },
    Each {
        results: Vec<Result<(), Error>>,
        offset: u64,
    },
    Partition {
        state: PartitionState,
        offset: u64,
    },
    Elected {
        results: Vec<(String, i32, Result<(), Error>)>,
        offset: u64,
    },
    /// Per DeleteAcls filter: the ACLs it removed.
    AclsDeleted {
        results: Vec<Result<Vec<AclBinding>, Error>>,
        offset: u64,
    },
    /// Per user, in the order the users first appear in the request.
    Users {
        results: Vec<(String, Result<(), Error>)>,
        offset: u64,
    },
    /// A created token, or why not.
    Token {
        result: Result<DelegationToken, Error>,
        offset: u64,
    },
    /// A renewed or expired token's new expiry, or why not.
    TokenExpiry {
        result: Result<i64, Error>,
        offset: u64,
    },
    Quorum(QuorumInfo),
    Batches {
        batches: Vec<(u64, RecordBatch)>,
    },
    Snapshot {
        image: Vec<u8>,
    },
}
