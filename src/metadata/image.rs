//! The metadata image: what every node knows of the cluster, built by applying records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::records::{DelegationToken, Endpoint, PartitionState, QuotaEntity, Record, RecordBatch, ScramCredential, ScramMechanism};
use crate::auth::Acls;

/// A registered broker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BrokerInfo {
    pub id: i32,
    /// The log offset of its registration: a restarted broker gets a new epoch.
    pub epoch: u64,
    pub incarnation: Uuid,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    pub fenced: bool,
    /// Does this node also vote in the controller quorum?
    pub controller: bool,
    /// Every listener's address; empty for a broker registered before named listeners.
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
    /// `host:port` of its HTTP listener, where its `/v1` views of what it leads are.
    #[serde(default)]
    pub http: Option<String>,
}

impl BrokerInfo {
    /// `host:port` of its inter-broker listener.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Its (host, port) on `listener`; a broker registered without endpoints serves every
    /// listener on its one address.
    pub fn endpoint(&self, listener: &str) -> Option<(&str, i32)> {
        if self.endpoints.is_empty() {
            return Some((&self.host, self.port));
        }
        self.endpoints.iter().find(|e| e.listener == listener).map(|e| (e.host.as_str(), e.port))
    }
}

/// A registered controller (Kafka's `ControllerRegistration`, KIP-919).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ControllerInfo {
    pub id: i32,
    pub incarnation: Uuid,
    pub endpoints: Vec<super::voters::VoterEndpoint>,
    /// Supported (min, max) level of each feature.
    pub features: BTreeMap<String, (i16, i16)>,
}

/// A topic and its partitions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicImage {
    pub name: String,
    pub id: Uuid,
    pub configs: BTreeMap<String, String>,
    pub partitions: Vec<PartitionState>,
}

/// The whole image. `offset` is the last log offset applied.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Image {
    pub offset: u64,
    pub cluster_id: Option<String>,
    pub brokers: BTreeMap<i32, BrokerInfo>,
    pub topics: BTreeMap<String, TopicImage>,
    pub broker_configs: BTreeMap<String, String>,
    /// Group config overrides by group id (ConfigResource GROUP); a group without any is absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub group_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// `client-metrics` resources (KIP-714 subscriptions) by name; one without configs is absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_metrics: BTreeMap<String, BTreeMap<String, String>>,
    /// Unclean elections applied, for the operator to see.
    pub unclean_elections: u64,
    /// Every ACL, indexed for the authorizer.
    #[serde(default)]
    pub acls: Acls,
    /// SCRAM credentials by user, then mechanism (Kafka's `ScramImage`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scram: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
    /// Delegation tokens by id (Kafka's `DelegationTokenImage`), expired ones until swept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, DelegationToken>,
    /// Finalized feature levels (Kafka's `FeaturesImage`); a feature at level 0 is absent.
    /// Empty in a log from before feature records: see [`super::features::finalized`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, i16>,
    /// The offset of the last feature record applied: ApiVersions' finalized features epoch.
    #[serde(default)]
    pub features_epoch: u64,
    /// Client quotas by entity, then key (Kafka's `ClientQuotasImage`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "crate::quota::entity::as_pairs")]
    pub client_quotas: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
    /// When the last applied batch that carries a time was proposed (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<i64>,
    /// The offset of the last record applied: unlike `offset`, empty batches (the active
    /// controller's idle NoOps) leave it, so followers of the image can skip them.
    #[serde(default)]
    pub changed_at: u64,
    /// Voters (and learners about to become voters) added through AddRaftVoter, by node
    /// id: their directory ids and endpoints (Kafka's `VotersRecord`). Bootstrap voters are
    /// absent: they have no directory id and the config says where they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub voters: BTreeMap<i32, super::voters::VoterInfo>,
    /// Registered controllers by node id, voters or not (Kafka's `ClusterImage.controllers`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub controllers: BTreeMap<i32, ControllerInfo>,
}

impl Image {
    /// Applies one committed batch at log `offset`: its records, its offset and its time.
    pub fn apply_batch(&mut self, offset: u64, batch: &RecordBatch) {
        for r in &batch.records {
            self.apply(offset, r);
        }
        self.offset = self.offset.max(offset);
        if batch.time_ms.is_some() {
            self.time_ms = batch.time_ms;
        }
    }

    /// Applies one committed record at `offset`. Records that name something no longer
    /// there are ignored: a later record may have removed it, and replay must not fail.
    pub fn apply(&mut self, offset: u64, rec: &Record) {
        self.offset = self.offset.max(offset);
        self.changed_at = self.changed_at.max(offset);
        match rec {
            Record::ClusterId { id } => {
                if self.cluster_id.is_none() {
                    self.cluster_id = Some(id.clone());
                }
            }
            Record::RegisterBroker { id, incarnation, host, port, rack, controller, endpoints, http } => {
                self.brokers.insert(
                    *id,
                    BrokerInfo {
                        id: *id,
                        epoch: offset,
                        incarnation: *incarnation,
                        host: host.clone(),
                        port: *port,
                        rack: rack.clone(),
                        fenced: true,
                        controller: *controller,
                        endpoints: endpoints.clone(),
                        http: http.clone(),
                    },
                );
            }
            Record::FenceBroker { id, epoch } | Record::UnfenceBroker { id, epoch } => {
                if let Some(b) = self.brokers.get_mut(id).filter(|b| b.epoch == *epoch) {
                    b.fenced = matches!(rec, Record::FenceBroker { .. });
                }
            }
            Record::UnregisterBroker { id, epoch } => {
                if self.brokers.get(id).is_some_and(|b| b.epoch == *epoch) {
                    self.brokers.remove(id);
                }
            }
            Record::Topic { name, id, configs } => {
                self.topics
                    .insert(name.clone(), TopicImage { name: name.clone(), id: *id, configs: configs.clone(), partitions: Vec::new() });
            }
            Record::Partition { topic_id, index, state } | Record::PartitionChange { topic_id, index, state, .. } => {
                if let Some(t) = self.topic_by_id_mut(*topic_id) {
                    let i = *index as usize;
                    if i < t.partitions.len() {
                        t.partitions[i] = state.clone();
                    } else if i == t.partitions.len() {
                        t.partitions.push(state.clone());
                    }
                }
                if matches!(rec, Record::PartitionChange { unclean: true, .. }) {
                    self.unclean_elections += 1;
                }
            }
            Record::RemoveTopic { id } => self.topics.retain(|_, t| t.id != *id),
            Record::TopicConfig { id, key, value } => {
                if let Some(t) = self.topic_by_id_mut(*id) {
                    match value {
                        Some(v) => t.configs.insert(key.clone(), v.clone()),
                        None => t.configs.remove(key),
                    };
                }
            }
            Record::BrokerConfig { key, value } => {
                match value {
                    Some(v) => self.broker_configs.insert(key.clone(), v.clone()),
                    None => self.broker_configs.remove(key),
                };
            }
            Record::GroupConfig { group, key, value } => set_config(&mut self.group_configs, group, key, value),
            Record::ClientMetricsConfig { name, key, value } => set_config(&mut self.client_metrics, name, key, value),
            Record::AccessControlEntry { id, acl } => self.acls.insert(*id, acl.clone()),
            Record::RemoveAccessControlEntry { id } => {
                self.acls.remove(*id);
            }
            Record::UserScramCredential { name, mechanism, credential } => {
                self.scram.entry(name.clone()).or_default().insert(*mechanism, credential.clone());
            }
            Record::RemoveUserScramCredential { name, mechanism } => {
                if let Some(user) = self.scram.get_mut(name) {
                    user.remove(mechanism);
                    if user.is_empty() {
                        self.scram.remove(name);
                    }
                }
            }
            Record::DelegationToken { token } => {
                self.tokens.insert(token.token_id.clone(), token.clone());
            }
            Record::RemoveDelegationToken { token_id } => {
                self.tokens.remove(token_id);
            }
            Record::FeatureLevel { name, level } => {
                // As Kafka's FeatureControlManager.replay: level 0 removes any feature but
                // the metadata version, which always has a level.
                if *level == 0 && name != super::features::METADATA_VERSION {
                    self.features.remove(name);
                } else {
                    self.features.insert(name.clone(), *level);
                }
                self.features_epoch = offset;
            }
            Record::ClientQuota { entity, key, value } => {
                let values = self.client_quotas.entry(entity.clone()).or_default();
                match value {
                    Some(v) => values.insert(key.clone(), *v),
                    None => values.remove(key),
                };
                if values.is_empty() {
                    self.client_quotas.remove(entity);
                }
            }
            Record::RegisterController { id, incarnation, endpoints, features } => {
                let info = ControllerInfo { id: *id, incarnation: *incarnation, endpoints: endpoints.clone(), features: features.clone() };
                self.controllers.insert(*id, info);
            }
            Record::UnregisterController { id } => {
                self.controllers.remove(id);
            }
            Record::VoterEndpoints { id, directory_id, endpoints } => {
                if let Some(v) = self.voters.get_mut(id).filter(|v| v.directory_id == *directory_id) {
                    v.endpoints = endpoints.clone();
                }
            }
        }
    }

    /// `user`'s SCRAM credential for `mechanism`.
    pub fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.scram.get(user)?.get(&mechanism)
    }

    fn topic_by_id_mut(&mut self, id: Uuid) -> Option<&mut TopicImage> {
        self.topics.values_mut().find(|t| t.id == id)
    }

    /// A topic by id.
    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.topics.values().find(|t| t.id == id)
    }

    /// Registered, unfenced brokers, by id.
    pub fn live_brokers(&self) -> Vec<&BrokerInfo> {
        self.brokers.values().filter(|b| !b.fenced).collect()
    }

    /// Is this broker registered and unfenced?
    pub fn is_live(&self, id: i32) -> bool {
        self.live_broker(id).is_some()
    }

    /// Broker `id`, if registered and unfenced.
    pub fn live_broker(&self, id: i32) -> Option<&BrokerInfo> {
        self.brokers.get(&id).filter(|b| !b.fenced)
    }

    /// Snapshot bytes: the image as JSON.
    pub fn to_snapshot(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("images always serialize")
    }

    /// An image from snapshot bytes.
    pub fn from_snapshot(bytes: &[u8]) -> Result<Image, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("bad metadata snapshot: {e}"))
    }
}

/// Sets or removes one config of a named resource; a resource left without configs goes.
fn set_config(all: &mut BTreeMap<String, BTreeMap<String, String>>, name: &str, key: &str, value: &Option<String>) {
    let configs = all.entry(name.to_string()).or_default();
    match value {
        Some(v) => configs.insert(key.to_string(), v.clone()),
        None => configs.remove(key),
    };
    if configs.is_empty() {
        all.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::RecordBatch;
    use crate::testing::Rng;

    /// A plausible metadata log: brokers come and go, topics are created, changed, removed.
    fn random_log(seed: u64, len: usize) -> Vec<RecordBatch> {
        let mut rng = Rng(seed | 1);
        let mut topics: Vec<Uuid> = Vec::new();
        let mut out = vec![RecordBatch::new(vec![Record::ClusterId { id: format!("c{seed}") }])];
        for i in 0..len {
            let broker = rng.below(5) as i32;
            let rec = match rng.below(13) {
                0 => Record::RegisterBroker {
                    id: broker,
                    incarnation: Uuid::from_u64_pair(seed, i as u64),
                    host: "127.0.0.1".into(),
                    port: 9000 + broker,
                    rack: (broker % 2 == 0).then(|| format!("r{}", broker % 3)),
                    controller: broker < 3,
                    endpoints: Vec::new(),
                    http: None,
                },
                // Epochs are offsets: guess one near the present, as real records would name.
                1 => Record::FenceBroker { id: broker, epoch: rng.below(i as u64 + 2) },
                2 => Record::UnfenceBroker { id: broker, epoch: rng.below(i as u64 + 2) },
                3 => {
                    let id = Uuid::from_u64_pair(seed, 1_000_000 + i as u64);
                    topics.push(id);
                    Record::Topic { name: format!("t{}", rng.below(20)), id, configs: BTreeMap::new() }
                }
                4 | 5 if !topics.is_empty() => {
                    let topic_id = topics[rng.below(topics.len() as u64) as usize];
                    let state = PartitionState {
                        replicas: vec![broker, (broker + 1) % 5],
                        isr: vec![broker],
                        leader: broker,
                        leader_epoch: i as i32,
                        partition_epoch: i as i32,
                        ..Default::default()
                    };
                    let index = rng.below(4) as i32;
                    if rng.below(2) == 0 {
                        Record::Partition { topic_id, index, state }
                    } else {
                        Record::PartitionChange { topic_id, index, state, unclean: rng.below(5) == 0, reason: None }
                    }
                }
                6 if !topics.is_empty() => Record::RemoveTopic { id: topics[rng.below(topics.len() as u64) as usize] },
                7 if !topics.is_empty() => Record::TopicConfig {
                    id: topics[rng.below(topics.len() as u64) as usize],
                    key: "retention.ms".into(),
                    value: (rng.below(3) > 0).then(|| rng.below(100_000).to_string()),
                },
                7 => Record::BrokerConfig { key: "log.retention.ms".into(), value: Some(i.to_string()) },
                8 if rng.below(3) == 0 => {
                    Record::RemoveAccessControlEntry { id: Uuid::from_u64_pair(seed, 2_000_000 + rng.below(i as u64 + 1)) }
                }
                8 => {
                    use crate::auth::*;
                    let acl = AclBinding {
                        resource_type: ResourceType::Topic,
                        resource_name: format!("t{}", rng.below(5)),
                        pattern_type: if rng.below(2) == 0 { PatternType::Literal } else { PatternType::Prefixed },
                        principal: format!("User:u{}", rng.below(3)),
                        host: "*".into(),
                        operation: Operation::Read,
                        permission: Permission::Allow,
                    };
                    Record::AccessControlEntry { id: Uuid::from_u64_pair(seed, 2_000_000 + i as u64), acl }
                }
                9 if rng.below(2) == 0 => Record::UserScramCredential {
                    name: format!("u{}", rng.below(4)),
                    mechanism: ScramMechanism::ALL[rng.below(2) as usize],
                    credential: ScramCredential { salt: vec![i as u8], stored_key: vec![1], server_key: vec![2], iterations: 4096 },
                },
                9 => Record::RemoveUserScramCredential {
                    name: format!("u{}", rng.below(4)),
                    mechanism: ScramMechanism::ALL[rng.below(2) as usize],
                },
                10 if rng.below(3) == 0 => Record::RemoveDelegationToken { token_id: format!("tok{}", rng.below(4)) },
                10 => Record::DelegationToken {
                    token: DelegationToken {
                        token_id: format!("tok{}", rng.below(4)),
                        owner: crate::auth::Principal::user(&format!("u{}", rng.below(3))),
                        requester: crate::auth::Principal::user("admin"),
                        renewers: vec![crate::auth::Principal::user("u0")],
                        issue_ms: i as i64,
                        max_ms: i as i64 + 100,
                        expiry_ms: i as i64 + rng.below(100) as i64,
                    },
                },
                11 => Record::FeatureLevel {
                    name: ["group.version", "metadata.version"][rng.below(2) as usize].into(),
                    level: rng.below(3) as i16,
                },
                12 => {
                    use crate::quota::EntityName;
                    let name = |n: u64| if n == 0 { EntityName::Default } else { EntityName::Named(format!("n{n}")) };
                    let user = (rng.below(2) == 0).then(|| name(rng.below(3)));
                    let client_id = (user.is_none() || rng.below(2) == 0).then(|| name(rng.below(3)));
                    Record::ClientQuota {
                        entity: QuotaEntity::of(user, client_id),
                        key: ["producer_byte_rate", "consumer_byte_rate"][rng.below(2) as usize].into(),
                        value: (rng.below(3) > 0).then(|| (1 + rng.below(1000)) as f64),
                    }
                }
                _ => Record::UnfenceBroker { id: broker, epoch: i as u64 },
            };
            out.push(RecordBatch::new(vec![rec]));
        }
        out
    }

    fn replay(image: &mut Image, log: &[RecordBatch], first_offset: u64) {
        for (i, batch) in log.iter().enumerate() {
            for r in &batch.records {
                image.apply(first_offset + i as u64, r);
            }
        }
    }

    #[test]
    fn snapshot_plus_tail_equals_full_replay() {
        for seed in 1..200u64 {
            let log = random_log(seed, 300);
            let mut full = Image::default();
            replay(&mut full, &log, 1);
            for cut in [0usize, 1, 57, 150, 299, log.len()] {
                let mut head = Image::default();
                replay(&mut head, &log[..cut], 1);
                // Through the snapshot's byte form, as a restarted or lagging node gets it.
                let mut restored = Image::from_snapshot(&head.to_snapshot()).unwrap();
                replay(&mut restored, &log[cut..], 1 + cut as u64);
                assert_eq!(restored, full, "seed {seed}, snapshot after {cut} batches");
            }
        }
    }

    #[test]
    fn batches_round_trip_and_refuse_newer_versions() {
        for batch in random_log(7, 50) {
            assert_eq!(RecordBatch::decode(&batch.encode()).unwrap(), batch);
        }
        let mut newer = RecordBatch::new(vec![]);
        newer.v = 99;
        assert!(RecordBatch::decode(&newer.encode()).unwrap_err().contains("newer"));
    }

    #[test]
    fn batches_of_older_builds_decode_without_time_or_reason() {
        let old = br#"{"v":1,"records":[{"type":"PartitionChange","topic_id":"00000000-0000-0000-0000-000000000000","index":0,"state":{"replicas":[1],"isr":[1],"leader":1,"leader_epoch":1,"partition_epoch":1},"unclean":false}]}"#;
        let b = RecordBatch::decode(old).unwrap();
        assert_eq!(b.time_ms, None);
        assert!(matches!(b.records[0], Record::PartitionChange { reason: None, .. }));
        let mut img = Image::default();
        img.apply_batch(3, &RecordBatch::new(vec![]).at(1_700_000_000_000));
        img.apply_batch(4, &b);
        assert_eq!((img.offset, img.time_ms), (4, Some(1_700_000_000_000)));
    }

    #[test]
    fn fencing_names_an_epoch() {
        let mut img = Image::default();
        let reg = Record::RegisterBroker {
            id: 1,
            incarnation: Uuid::nil(),
            host: "h".into(),
            port: 1,
            rack: None,
            controller: true,
            endpoints: Vec::new(),
            http: None,
        };
        img.apply(5, &reg);
        assert!(!img.is_live(1), "a new registration starts fenced");
        img.apply(6, &Record::UnfenceBroker { id: 1, epoch: 4 });
        assert!(!img.is_live(1), "an unfence for an older registration does nothing");
        img.apply(7, &Record::UnfenceBroker { id: 1, epoch: 5 });
        assert!(img.is_live(1));
        img.apply(8, &Record::FenceBroker { id: 1, epoch: 5 });
        assert!(!img.is_live(1));
    }
}
