//! Creating, growing and deleting topics.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::{now_ms, Broker, Topic};
use crate::config;
use crate::error::{Error, Result};
use crate::metadata::{names, TopicRecord};
use crate::partition::Partition;

/// What a CreateTopics entry asks for, before defaults are applied.
#[derive(Debug, Clone, Default)]
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

impl Broker {
    pub(super) fn open_topic(&self, rec: TopicRecord, clean: bool) -> Result<Topic> {
        let mut partitions = Vec::with_capacity(rec.partitions as usize);
        for i in 0..rec.partitions {
            partitions.push(Arc::new(self.open_partition(&rec, i, clean)?));
        }
        Ok(Topic { record: rec, partitions })
    }

    fn open_partition(&self, rec: &TopicRecord, index: i32, clean: bool) -> Result<Partition> {
        let (log_cfg, append_cfg) = self.partition_configs(&rec.configs);
        Partition::open(&rec.name, index, rec.id, &self.partition_dir(&rec.name, index), log_cfg, append_cfg, clean, now_ms())
    }

    /// Checks a create request and fills in defaults, without creating anything.
    pub fn validate_create(&self, req: &CreateRequest) -> Result<TopicRecord> {
        names::validate(&req.name).map_err(Error::InvalidTopic)?;
        if self.topic(&req.name).is_some() {
            return Err(Error::TopicAlreadyExists(format!("topic '{}' already exists", req.name)));
        }
        let cfg = self.config();
        let node = self.identity.node_id;
        let partitions = if !req.assignments.is_empty() {
            if req.partitions != -1 || req.replication_factor != -1 {
                return Err(Error::InvalidRequest("both assignments and numPartitions/replicationFactor were given".into()));
            }
            let mut idx: Vec<i32> = req.assignments.iter().map(|a| a.0).collect();
            idx.sort_unstable();
            if idx.iter().enumerate().any(|(i, &p)| p != i as i32) {
                return Err(Error::InvalidReplicaAssignment("partitions must be numbered 0..n".into()));
            }
            for (_, replicas) in &req.assignments {
                if replicas.is_empty() || replicas.iter().any(|&b| b != node) || replicas.len() > 1 {
                    return Err(Error::InvalidReplicaAssignment(format!(
                        "replicas {replicas:?} name brokers that don't exist (only broker {node} does)"
                    )));
                }
            }
            idx.len() as i32
        } else {
            let partitions = if req.partitions == -1 { cfg.get_i64("num.partitions") as i32 } else { req.partitions };
            if partitions <= 0 {
                return Err(Error::InvalidPartitions(format!("number of partitions must be larger than 0, not {partitions}")));
            }
            let rf = if req.replication_factor == -1 { cfg.get_i64("default.replication.factor") } else { req.replication_factor as i64 };
            if rf <= 0 {
                return Err(Error::InvalidReplicationFactor(format!("replication factor must be larger than 0, not {rf}")));
            }
            if rf > 1 {
                return Err(Error::InvalidReplicationFactor(format!("Replication factor: {rf} larger than available brokers: 1.")));
            }
            partitions
        };
        for (k, v) in &req.configs {
            let def = config::topic_key(k).ok_or_else(|| Error::InvalidConfig(format!("unknown topic config '{k}'")))?;
            config::validate(def, v).map_err(Error::InvalidConfig)?;
        }
        Ok(TopicRecord { name: req.name.clone(), id: Uuid::new_v4(), partitions, configs: req.configs.clone() })
    }

    /// Creates a topic and opens its partitions.
    pub fn create_topic(&self, req: &CreateRequest) -> Result<Arc<Topic>> {
        let rec = self.validate_create(req)?;
        let mut store = self.store.lock();
        if store.image.topics.contains_key(&rec.name) {
            return Err(Error::TopicAlreadyExists(format!("topic '{}' already exists", rec.name)));
        }
        let topic = Arc::new(self.open_topic(rec.clone(), true)?);
        store.image.topics.insert(rec.name.clone(), rec.clone());
        store.save()?;
        self.topics.write().insert(rec.name.clone(), topic.clone());
        tracing::info!(topic = %rec.name, partitions = rec.partitions, id = %rec.id, "created topic");
        Ok(topic)
    }

    /// Creates a topic with broker defaults if `auto.create.topics.enable` allows.
    pub fn auto_create(&self, name: &str) -> Result<Arc<Topic>> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        if !self.config().get_bool("auto.create.topics.enable") {
            return Err(Error::UnknownTopicOrPartition);
        }
        let req = CreateRequest { name: name.to_string(), partitions: -1, replication_factor: -1, ..Default::default() };
        match self.create_topic(&req) {
            Err(Error::TopicAlreadyExists(_)) => self.topic(name).ok_or(Error::UnknownTopicOrPartition),
            other => other,
        }
    }

    /// Deletes a topic: it disappears from metadata first, then its files go.
    pub fn delete_topic(&self, name: &str) -> Result<Uuid> {
        if !self.config().get_bool("delete.topic.enable") {
            return Err(Error::PolicyViolation("topic deletion is disabled (delete.topic.enable=false)".into()));
        }
        let mut store = self.store.lock();
        let rec = store.image.topics.remove(name).ok_or(Error::UnknownTopicOrPartition)?;
        store.save()?;
        let topic = self.topics.write().remove(name);
        drop(store);
        if let Some(topic) = topic {
            for p in &topic.partitions {
                let dir = self.partition_dir(name, p.index);
                let trash = self.identity.data_dir.join(format!("{name}-{}.{}-delete", p.index, rec.id.simple()));
                if std::fs::rename(&dir, &trash).is_ok() {
                    let _ = std::fs::remove_dir_all(&trash);
                }
            }
        }
        tracing::info!(topic = %name, "deleted topic");
        Ok(rec.id)
    }

    /// Raises a topic's partition count to `count`.
    pub fn create_partitions(&self, name: &str, count: i32, assignments: Option<&[Vec<i32>]>, validate_only: bool) -> Result<()> {
        let topic = self.topic(name).ok_or(Error::UnknownTopicOrPartition)?;
        let current = topic.record.partitions;
        if count < current {
            return Err(Error::InvalidPartitions(format!("topic currently has {current} partitions, {count} would not be an increase")));
        }
        if count == current {
            return Err(Error::InvalidPartitions(format!("topic already has {current} partitions")));
        }
        if let Some(a) = assignments {
            if a.len() as i32 != count - current {
                return Err(Error::InvalidReplicaAssignment(format!(
                    "{} assignments given for {} new partitions",
                    a.len(),
                    count - current
                )));
            }
            if a.iter().any(|r| r.len() != 1 || r[0] != self.identity.node_id) {
                return Err(Error::InvalidReplicaAssignment(format!("only broker {} exists", self.identity.node_id)));
            }
        }
        if validate_only {
            return Ok(());
        }
        let mut store = self.store.lock();
        let mut rec = topic.record.clone();
        rec.partitions = count;
        let mut partitions = topic.partitions.clone();
        for i in current..count {
            partitions.push(Arc::new(self.open_partition(&rec, i, true)?));
        }
        store.image.topics.insert(name.to_string(), rec.clone());
        store.save()?;
        self.topics.write().insert(name.to_string(), Arc::new(Topic { record: rec, partitions }));
        tracing::info!(topic = %name, from = current, to = count, "added partitions");
        Ok(())
    }
}
