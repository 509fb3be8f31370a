//! Topic decisions of the active controller: create (with placement), delete, grow, configure.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::election::place;
use super::rpc::{ConfigTarget, CreateRequest, Response};
use super::Controller;
use crate::config;
use crate::error::{Error, Result};
use crate::metadata::image::{Image, TopicImage};
use crate::metadata::names;
use crate::metadata::records::{PartitionState, Record};

impl Controller {
    pub(super) async fn create_topics(&self, topics: Vec<CreateRequest>, validate_only: bool) -> Result<Response> {
        let mut results = Vec::new();
        let mut recs = Vec::new();
        {
            let img = self.image();
            let mut names_seen = std::collections::HashSet::new();
            for req in &topics {
                let r = if !names_seen.insert(req.name.clone()) {
                    Err(Error::TopicAlreadyExists(format!("topic '{}' already exists", req.name)))
                } else {
                    self.plan_topic(&img, req)
                };
                if let Ok(t) = &r {
                    recs.push(Record::Topic { name: t.name.clone(), id: t.id, configs: t.configs.clone() });
                    for (i, p) in t.partitions.iter().enumerate() {
                        recs.push(Record::Partition { topic_id: t.id, index: i as i32, state: p.clone() });
                    }
                }
                results.push(r);
            }
        }
        let offset = if validate_only || recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        for t in results.iter().flatten() {
            if !validate_only {
                tracing::info!(topic = %t.name, partitions = t.partitions.len(), id = %t.id, "created topic");
            }
        }
        Ok(Response::Topics { results, offset })
    }

    /// Validates a create request against the image and decides its placement.
    fn plan_topic(&self, img: &Image, req: &CreateRequest) -> Result<TopicImage> {
        names::validate(&req.name).map_err(Error::InvalidTopic)?;
        if img.topics.contains_key(&req.name) {
            return Err(Error::TopicAlreadyExists(format!("topic '{}' already exists", req.name)));
        }
        let settings = self.settings_from(img);
        let live: Vec<(i32, Option<String>)> = img.live_brokers().iter().map(|b| (b.id, b.rack.clone())).collect();
        for (k, v) in &req.configs {
            let def = config::topic_key(k).ok_or_else(|| Error::InvalidConfig(format!("unknown topic config '{k}'")))?;
            config::validate(def, v).map_err(Error::InvalidConfig)?;
        }
        let assignment: Vec<Vec<i32>> = if !req.assignments.is_empty() {
            if req.partitions != -1 || req.replication_factor != -1 {
                return Err(Error::InvalidRequest("both assignments and numPartitions/replicationFactor were given".into()));
            }
            let mut a = req.assignments.clone();
            a.sort_by_key(|x| x.0);
            if a.iter().enumerate().any(|(i, (p, _))| *p != i as i32) {
                return Err(Error::InvalidReplicaAssignment("partitions must be numbered 0..n".into()));
            }
            let rf = a[0].1.len();
            for (_, replicas) in &a {
                check_replicas(img, replicas)?;
                if replicas.len() != rf {
                    return Err(Error::InvalidReplicaAssignment("every partition needs the same number of replicas".into()));
                }
            }
            a.into_iter().map(|(_, r)| r).collect()
        } else {
            let partitions = if req.partitions == -1 { settings.num_partitions } else { req.partitions };
            if partitions <= 0 {
                return Err(Error::InvalidPartitions(format!("number of partitions must be larger than 0, not {partitions}")));
            }
            let default_rf = match req.name.as_str() {
                names::OFFSETS_TOPIC => settings.offsets_topic_replication_factor,
                names::TXN_TOPIC => settings.transaction_state_log_replication_factor,
                names::SHARE_STATE_TOPIC => settings.share_state_topic_replication_factor,
                _ => settings.default_replication_factor,
            };
            let rf = if req.replication_factor == -1 { default_rf } else { req.replication_factor as i64 };
            if rf <= 0 {
                return Err(Error::InvalidReplicationFactor(format!("replication factor must be larger than 0, not {rf}")));
            }
            // Internal topics ask for Kafka's 3 replicas; a smaller cluster gets what it has,
            // so a single dev broker can still run groups and transactions.
            let rf = if names::is_internal(&req.name) { (rf as usize).min(live.len().max(1)) } else { rf as usize };
            place(&live, partitions, rf, start_index(&req.name, live.len()))?
        };
        let mut configs = req.configs.clone();
        let internal_min_isr = match req.name.as_str() {
            names::TXN_TOPIC => Some(settings.transaction_state_log_min_isr),
            names::SHARE_STATE_TOPIC => Some(settings.share_state_topic_min_isr),
            _ => None,
        };
        if let Some(min) = internal_min_isr.filter(|_| !configs.contains_key("min.insync.replicas")) {
            // Kafka's default of 2 on a topic that got fewer replicas (a small cluster, see
            // above) would stop every transaction and share group: it gets what it has.
            let min = (min.max(1) as usize).min(assignment[0].len());
            configs.insert("min.insync.replicas".into(), min.to_string());
        }
        let min_isr = configs.get("min.insync.replicas").and_then(|v| v.parse::<usize>().ok()).unwrap_or(settings.min_insync_replicas);
        if min_isr > assignment[0].len() {
            tracing::info!(topic = %req.name, min_isr, rf = assignment[0].len(), "min.insync.replicas exceeds the replication factor");
        }
        let partitions = assignment
            .into_iter()
            .map(|replicas| PartitionState {
                isr: replicas.iter().copied().filter(|b| img.is_live(*b)).collect(),
                leader: replicas.iter().copied().find(|b| img.is_live(*b)).unwrap_or(-1),
                replicas,
                leader_epoch: 0,
                partition_epoch: 0,
                ..Default::default()
            })
            .collect();
        Ok(TopicImage { name: req.name.clone(), id: Uuid::new_v4(), configs, partitions })
    }

    pub(super) async fn delete_topics(&self, names: Vec<String>) -> Result<Response> {
        if !self.settings_from(&self.image()).delete_topic_enable {
            let e = Error::PolicyViolation("topic deletion is disabled (delete.topic.enable=false)".into());
            return Ok(Response::Each { results: names.iter().map(|_| Err(e.clone())).collect(), offset: 0 });
        }
        let mut recs = Vec::new();
        let results: Vec<Result<()>> = {
            let img = self.image();
            names
                .iter()
                .map(|n| {
                    let t = img.topics.get(n).ok_or(Error::UnknownTopicOrPartition)?;
                    if !recs.iter().any(|r| matches!(r, Record::RemoveTopic { id } if *id == t.id)) {
                        recs.push(Record::RemoveTopic { id: t.id });
                    }
                    Ok(())
                })
                .collect()
        };
        let offset = if recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        Ok(Response::Each { results, offset })
    }

    pub(super) async fn create_partitions(
        &self,
        name: &str,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    ) -> Result<Response> {
        let recs = {
            let img = self.image();
            let t = img.topics.get(name).ok_or(Error::UnknownTopicOrPartition)?;
            let current = t.partitions.len() as i32;
            if count < current {
                return Err(Error::InvalidPartitions(format!(
                    "topic currently has {current} partitions, {count} would not be an increase"
                )));
            }
            if count == current {
                return Err(Error::InvalidPartitions(format!("topic already has {current} partitions")));
            }
            let rf = t.partitions.first().map_or(1, |p| p.replicas.len());
            let new: Vec<Vec<i32>> = match assignments {
                Some(a) => {
                    if a.len() as i32 != count - current {
                        return Err(Error::InvalidReplicaAssignment(format!(
                            "{} assignments given for {} new partitions",
                            a.len(),
                            count - current
                        )));
                    }
                    for r in &a {
                        check_replicas(&img, r)?;
                    }
                    a
                }
                None => {
                    let live: Vec<(i32, Option<String>)> = img.live_brokers().iter().map(|b| (b.id, b.rack.clone())).collect();
                    place(&live, count - current, rf, start_index(name, live.len()) + current as usize)?
                }
            };
            new.into_iter()
                .enumerate()
                .map(|(i, replicas)| Record::Partition {
                    topic_id: t.id,
                    index: current + i as i32,
                    state: PartitionState {
                        isr: replicas.iter().copied().filter(|b| img.is_live(*b)).collect(),
                        leader: replicas.iter().copied().find(|b| img.is_live(*b)).unwrap_or(-1),
                        replicas,
                        leader_epoch: 0,
                        partition_epoch: 0,
                        ..Default::default()
                    },
                })
                .collect::<Vec<_>>()
        };
        if validate_only {
            return Ok(Response::Done { offset: self.image().offset });
        }
        let offset = self.quorum.propose(recs).await?;
        tracing::info!(topic = %name, to = count, "added partitions");
        Ok(Response::Done { offset })
    }

    pub(super) async fn set_configs(&self, target: ConfigTarget, configs: BTreeMap<String, String>) -> Result<Response> {
        let recs: Vec<Record> = {
            let img = self.image();
            let (current, make): (&BTreeMap<String, String>, Box<dyn Fn(String, Option<String>) -> Record>) = match &target {
                ConfigTarget::Topic(name) => {
                    let t = img.topics.get(name).ok_or(Error::UnknownTopicOrPartition)?;
                    let id = t.id;
                    (&t.configs, Box::new(move |key, value| Record::TopicConfig { id, key, value }))
                }
                ConfigTarget::Broker => (&img.broker_configs, Box::new(|key, value| Record::BrokerConfig { key, value })),
                ConfigTarget::Group(group) => {
                    let group = group.clone();
                    let current = img.group_configs.get(&group).unwrap_or(&NO_CONFIGS);
                    (current, Box::new(move |key, value| Record::GroupConfig { group: group.clone(), key, value }))
                }
                ConfigTarget::ClientMetrics(name) => {
                    let name = name.clone();
                    let current = img.client_metrics.get(&name).unwrap_or(&NO_CONFIGS);
                    (current, Box::new(move |key, value| Record::ClientMetricsConfig { name: name.clone(), key, value }))
                }
            };
            let mut recs: Vec<Record> = current.keys().filter(|k| !configs.contains_key(*k)).map(|k| make(k.clone(), None)).collect();
            recs.extend(configs.iter().filter(|(k, v)| current.get(*k) != Some(v)).map(|(k, v)| make(k.clone(), Some(v.clone()))));
            recs
        };
        let offset = if recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        Ok(Response::Done { offset })
    }
}

/// The overrides of a group that has none.
static NO_CONFIGS: BTreeMap<String, String> = BTreeMap::new();

/// A manual assignment must name distinct, registered brokers.
pub(super) fn check_replicas(img: &Image, replicas: &[i32]) -> Result<()> {
    let mut seen = replicas.to_vec();
    seen.sort_unstable();
    seen.dedup();
    if replicas.is_empty() || seen.len() != replicas.len() {
        return Err(Error::InvalidReplicaAssignment(format!("replicas {replicas:?} must be distinct and non-empty")));
    }
    if let Some(b) = replicas.iter().find(|b| !img.brokers.contains_key(b)) {
        return Err(Error::InvalidReplicaAssignment(format!("broker {b} in {replicas:?} is not registered")));
    }
    Ok(())
}

/// Where placement starts for a topic: varied per topic, so small topics don't all lead on one broker.
fn start_index(name: &str, brokers: usize) -> usize {
    name.bytes().fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize)) % brokers.max(1)
}
