//! Cluster metadata: the records of the replicated metadata log, and the image they build.

pub mod image;
pub mod names;
pub mod records;

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
