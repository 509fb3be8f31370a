//! The share coordinator (Kafka's ShareCoordinatorService): the I/O around
//! [`super::state`]. The leader of a share partition's `__share_group_state` partition
//! (picked by hashing "group:topicId:partition") serves its state APIs; each change is
//! appended there and answered only once the partition's ISR has it (acks=all), and a
//! broker that becomes the leader of a state partition replays it first.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;

use super::state::{Record, ShareState, StateKey, StateStore, Written};
use super::ShareHost;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::log::records;
use crate::metadata::names::{coordinator_partition, SHARE_STATE_TOPIC};
use crate::partition::{Partition, Topic};

/// How long an answer waits for the state partition's ISR.
const DURABLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How often redundant records are pruned from the state partitions led here.
const PRUNE_INTERVAL_MS: i64 = 30_000;

/// The share coordinator's settings (`share.coordinator.*`).
#[derive(Debug, Clone)]
pub struct StateConfig {
    pub partitions: i32,
    pub snapshot_every: u32,
}

/// The share coordinator of this broker.
pub struct StateCoordinator {
    store: Mutex<StateStore>,
    /// State partitions led here and loaded.
    owned: Mutex<HashSet<i32>>,
    /// State partitions led here whose records are still being replayed.
    loading: Mutex<HashSet<i32>>,
    last_prune: Mutex<i64>,
    config: StateConfig,
}

/// The coordinator key of a share partition, as Kafka's SharePartitionKey spells it:
/// "group:topicId:partition", the topic id in Kafka's base64 form.
pub fn coordinator_key(key: &StateKey) -> String {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.1.as_bytes());
    format!("{}:{id}:{}", key.0, key.2)
}

impl StateCoordinator {
    /// A coordinator that leads no state partition yet.
    pub fn new(config: StateConfig) -> StateCoordinator {
        StateCoordinator {
            store: Mutex::new(StateStore::new(config.snapshot_every)),
            owned: Mutex::default(),
            loading: Mutex::default(),
            last_prune: Mutex::new(now_ms()),
            config,
        }
    }

    /// The state partition of a coordinator key ("group:topicId:partition").
    pub fn partition_of(&self, coordinator_key: &str) -> i32 {
        coordinator_partition(coordinator_key, self.config.partitions)
    }

    fn partition_of_key(&self, key: &StateKey) -> i32 {
        self.partition_of(&coordinator_key(key))
    }

    /// `__share_group_state`, created on first use.
    pub fn ensure_topic(&self, host: &dyn ShareHost) -> Result<Arc<Topic>> {
        host.ensure_internal_topic(SHARE_STATE_TOPIC, self.config.partitions)
    }

    /// (node id, host, port) of the coordinator of `coordinator_key`.
    pub fn coordinator_of(&self, host: &dyn ShareHost, coordinator_key: &str) -> Result<(i32, String, i32)> {
        let topic = self.ensure_topic(host)?;
        host.leader_endpoint(&topic, self.partition_of(coordinator_key)).map_err(|_| Error::CoordinatorNotAvailable)
    }

    /// The state partition of `key` when this broker is its coordinator, and the ISR size
    /// its writes need (the topic's min.insync.replicas, as for acks=all).
    fn check(&self, host: &dyn ShareHost, key: &StateKey) -> Result<(Arc<Partition>, usize)> {
        let topic = host.replicas().topic(SHARE_STATE_TOPIC).ok_or(Error::CoordinatorNotAvailable)?;
        let p = self.partition_of_key(key);
        if self.loading.lock().contains(&p) {
            return Err(Error::CoordinatorLoadInProgress);
        }
        if !self.owned.lock().contains(&p) {
            return Err(Error::NotCoordinator);
        }
        let part = topic.partition(p).cloned().ok_or(Error::NotCoordinator)?;
        if key.2 >= 0 && !key.1.is_nil() && !host.has_partition(key.1, key.2) {
            return Err(Error::UnknownTopicOrPartition);
        }
        let min_isr = topic.record.configs.get("min.insync.replicas").and_then(|v| v.parse().ok()).unwrap_or(1);
        Ok((part, min_isr))
    }

    /// Appends the record `decide` makes and takes it as the state, then waits for the
    /// ISR to have everything written so far.
    async fn commit(&self, host: &dyn ShareHost, key: &StateKey, decide: impl FnOnce(&StateStore) -> Result<Option<Record>>) -> Result<()> {
        let (p, min_isr) = self.check(host, key)?;
        {
            let mut store = self.store.lock();
            let Some(record) = decide(&store)? else { return Ok(()) };
            let (k, v) = record.encode();
            let now = now_ms();
            let offset = p.append_internal(&records::build(&[(Some(&k), v.as_deref())], now), now).map_err(not_coordinator)?;
            store.apply(record, offset);
        }
        durable(&p, min_isr).await
    }

    /// InitializeShareGroupState.
    pub async fn initialize(&self, host: &dyn ShareHost, key: &StateKey, state_epoch: i32, start_offset: i64) -> Result<()> {
        self.commit(host, key, |s| s.initialize(key, state_epoch, start_offset).map(Some)).await
    }

    /// WriteShareGroupState.
    pub async fn write(&self, host: &dyn ShareHost, key: &StateKey, w: &Written) -> Result<()> {
        self.commit(host, key, |s| s.write(key, w).map(Some)).await
    }

    /// DeleteShareGroupState.
    pub async fn delete(&self, host: &dyn ShareHost, key: &StateKey) -> Result<()> {
        self.commit(host, key, |s| s.delete(key)).await
    }

    /// ReadShareGroupState: None when the share partition was never initialized.
    pub async fn read(&self, host: &dyn ShareHost, key: &StateKey, leader_epoch: i32) -> Result<Option<ShareState>> {
        let (p, min_isr) = self.check(host, key)?;
        let state = self.store.lock().read(key, leader_epoch)?;
        durable(&p, min_isr).await?;
        Ok(state)
    }

    /// ReadShareGroupStateSummary.
    pub async fn summary(&self, host: &dyn ShareHost, key: &StateKey) -> Result<Option<ShareState>> {
        let (p, min_isr) = self.check(host, key)?;
        let state = self.store.lock().summary(key)?;
        durable(&p, min_isr).await?;
        Ok(state)
    }

    /// Follows leadership of `__share_group_state`: a partition led here now is replayed
    /// (its keys answer COORDINATOR_LOAD_IN_PROGRESS meanwhile); one no longer led here
    /// has its keys dropped.
    pub fn sync_ownership(&self, host: &dyn ShareHost) {
        let Some(topic) = host.replicas().topic(SHARE_STATE_TOPIC) else { return };
        let Some((led, gained, lost)) = topic.leadership_change(&self.owned.lock()) else { return };
        self.loading.lock().extend(gained.iter().copied());
        *self.owned.lock() = led;
        self.store.lock().unload(|k| {
            let p = self.partition_of_key(k);
            lost.contains(&p) || gained.contains(&p)
        });
        for p in topic.local().filter(|p| gained.contains(&p.index)) {
            let mut found = Vec::new();
            let replayed = p.replay(|b| {
                let Some((h, recs)) = records::parse(b) else { return };
                for r in recs {
                    if let Some(rec) = r.key.as_deref().and_then(|k| Record::decode(k, r.value.as_deref())) {
                        found.push((rec, h.base_offset + r.offset_delta as i64));
                    }
                }
            });
            if let Err(e) = replayed {
                tracing::warn!(partition = p.index, error = %e, "could not load share-group state");
            }
            let n = found.len();
            let mut store = self.store.lock();
            for (rec, offset) in found {
                store.apply(rec, offset);
            }
            if n > 0 {
                tracing::info!(partition = p.index, records = n, "loaded share-group state from {SHARE_STATE_TOPIC}");
            }
        }
        self.loading.lock().retain(|p| !gained.contains(p));
    }

    /// Deletes the records every key's latest snapshot has made redundant, now and then.
    pub fn prune(&self, host: &dyn ShareHost) {
        {
            let mut last = self.last_prune.lock();
            if now_ms() - *last < PRUNE_INTERVAL_MS {
                return;
            }
            *last = now_ms();
        }
        let Some(topic) = host.replicas().topic(SHARE_STATE_TOPIC) else { return };
        let owned = self.owned.lock().clone();
        for p in topic.local().filter(|p| owned.contains(&p.index)) {
            let hw = p.high_watermark();
            let upto = self.store.lock().redundant_offset(|k| self.partition_of_key(k) == p.index, hw);
            if upto > p.fetch_position().2 {
                if let Err(e) = p.delete_records(upto) {
                    tracing::debug!(partition = p.index, error = %e, "pruning {SHARE_STATE_TOPIC}");
                }
            }
        }
    }
}

/// Waits until everything appended to `p` is on its whole ISR, of at least `min_isr`:
/// an answer covers only state that survives the coordinator's failure, including what
/// another request wrote a moment ago.
async fn durable(p: &Partition, min_isr: usize) -> Result<()> {
    let leo = p.fetch_position().0;
    if leo == 0 {
        return Ok(());
    }
    p.wait_replicated(leo - 1, min_isr, DURABLE_TIMEOUT).await.map_err(not_coordinator)
}

fn not_coordinator(e: Error) -> Error {
    match e {
        Error::NotLeaderOrFollower => Error::NotCoordinator,
        e => e,
    }
}
