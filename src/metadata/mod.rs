//! Cluster metadata this broker keeps: the cluster id, topics and their configs, and
//! dynamic broker configs. Single-broker for now, persisted as one JSON document;
//! the controller quorum will replace the file with a replicated log.

pub mod names;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Everything persisted. `version` lets the format change later.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Image {
    pub version: u32,
    pub cluster_id: String,
    pub topics: BTreeMap<String, TopicRecord>,
    pub broker_configs: BTreeMap<String, String>,
}

/// The image and where it lives on disk.
pub struct Store {
    path: PathBuf,
    pub image: Image,
}

/// A random cluster id in Kafka's style: 16 bytes, URL-safe base64 without padding.
fn new_cluster_id() -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let b = *Uuid::new_v4().as_bytes();
    let mut s = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.iter().fold(0u32, |acc, &x| (acc << 8) | x as u32) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            s.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    s
}

impl Store {
    /// Loads `metadata.json` from the data dir, creating a fresh image on first start.
    pub fn open(data_dir: &Path) -> std::io::Result<Store> {
        let path = data_dir.join("metadata.json");
        let image = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Image { version: 1, cluster_id: new_cluster_id(), topics: BTreeMap::new(), broker_configs: BTreeMap::new() }
            }
            Err(e) => return Err(e),
        };
        let store = Store { path, image };
        store.save()?;
        Ok(store)
    }

    /// Writes the image atomically and durably: metadata changes are rare and must survive.
    pub fn save(&self) -> std::io::Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(&self.image).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        Ok(())
    }
}
