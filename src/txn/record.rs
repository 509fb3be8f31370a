//! The `__transaction_state` record of a transactional id: its key and value bytes, and
//! reading the latest state of every id back from a partition's records on load.

use std::collections::HashMap;

use super::machine::TxnMeta;

/// The key of `id`'s records: a format version (0), then the id.
pub fn key(id: &str) -> Vec<u8> {
    let mut k = 0u16.to_be_bytes().to_vec();
    k.extend(id.as_bytes());
    k
}

/// The value of a record holding `m`.
pub fn value(m: &TxnMeta) -> Vec<u8> {
    serde_json::to_vec(m).expect("TxnMeta serializes")
}

/// Replays records, oldest first; the last record of each id is its state, and an id
/// whose last value is a tombstone (or unreadable) is gone.
#[derive(Debug, Default)]
pub struct Recovery {
    found: HashMap<String, Option<TxnMeta>>,
}

impl Recovery {
    /// One record, as read from the log.
    pub fn record(&mut self, key: Option<&[u8]>, value: Option<&[u8]>) {
        let Some(k) = key.filter(|k| k.len() >= 2) else { return };
        let id = String::from_utf8_lossy(&k[2..]).to_string();
        self.found.insert(id, value.and_then(|v| serde_json::from_slice(v).ok()));
    }

    /// The state of every id still present.
    pub fn finish(self) -> HashMap<String, TxnMeta> {
        self.found.into_iter().filter_map(|(id, m)| Some((id, m?))).collect()
    }
}
