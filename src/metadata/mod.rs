//! Cluster metadata: the records of the replicated metadata log, and the image they build.

pub mod features;
pub mod health;
pub mod image;
pub mod names;
pub mod published;
pub mod records;
pub mod voters;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A topic as the metadata knows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopicRecord {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    /// Topic-level overrides only; defaults come from the broker.
    pub configs: BTreeMap<String, String>,
}

/// A random cluster id in Kafka's style: 16 bytes, URL-safe base64 without padding.
pub fn new_cluster_id() -> String {
    kafka_uuid(Uuid::new_v4())
}

/// A UUID as Kafka writes one (`Uuid.toString`): URL-safe base64 without padding.
pub fn kafka_uuid(u: Uuid) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(u.as_bytes())
}

/// Reads a UUID as Kafka writes one (`Uuid.fromString`).
pub fn parse_kafka_uuid(s: &str) -> Option<Uuid> {
    use base64::Engine;
    let b = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s.trim()).ok()?;
    Uuid::from_slice(&b).ok()
}

/// The single-broker metadata file of earlier Sluice versions, read once to carry its
/// topics into the metadata log.
#[derive(Deserialize)]
struct LegacyStore {
    cluster_id: String,
    topics: BTreeMap<String, TopicRecord>,
    #[serde(default)]
    broker_configs: BTreeMap<String, String>,
}

/// The records that recreate a `metadata.json` from before the metadata log, with every
/// partition on `node`; `None` if there is no such file.
pub fn legacy_records(data_dir: &std::path::Path, node: i32) -> std::io::Result<Option<Vec<records::Record>>> {
    use records::{PartitionState, Record};
    let bytes = match std::fs::read(data_dir.join("metadata.json")) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let old: LegacyStore = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
    let mut out = vec![Record::ClusterId { id: old.cluster_id }];
    for t in old.topics.into_values() {
        out.push(Record::Topic { name: t.name.clone(), id: t.id, configs: t.configs });
        for index in 0..t.partitions {
            let state = PartitionState { replicas: vec![node], isr: vec![node], leader: node, ..Default::default() };
            out.push(Record::Partition { topic_id: t.id, index, state });
        }
    }
    out.extend(old.broker_configs.into_iter().map(|(key, value)| Record::BrokerConfig { key, value: Some(value) }));
    Ok(Some(out))
}
