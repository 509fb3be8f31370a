//! The transaction coordinator: transactional ids, their producer ids and epochs,
//! and the two-phase end of a transaction (prepare, write markers, complete).
//! State lives in the compacted internal topic `__transaction_state`; the leader of a
//! transactional id's partition of it is that id's coordinator, as in Kafka.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::TxnHost;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::log::records;
use crate::metadata::names::coordinator_partition;
use crate::partition::Topic;

/// The internal topic holding transaction state.
pub use crate::metadata::names::TXN_TOPIC;

/// How long one attempt at writing a transaction's markers keeps retrying; the
/// coordinator's tick starts another while the transaction stays prepared.
const MARKER_RETRY_MS: u64 = 10_000;

/// Transaction states, named as DescribeTransactions reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }

    /// Some(commit?) for a transaction whose markers are being written.
    fn preparing(self) -> Option<bool> {
        match self {
            TxnState::PrepareCommit => Some(true),
            TxnState::PrepareAbort => Some(false),
            _ => None,
        }
    }
}

/// One transactional id's state. Persisted as JSON (`"v"` is the format version).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TxnMeta {
    pub v: u16,
    pub id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub update_ms: i64,
}

/// Coordinator settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    pub max_timeout_ms: i32,
    pub partitions: i32,
}

/// The transaction coordinator.
pub struct TxnCoordinator {
    txns: Mutex<HashMap<String, TxnMeta>>,
    /// The `__transaction_state` partitions this broker leads and has loaded.
    owned: Mutex<HashSet<i32>>,
    /// Transactional ids whose markers are being written right now.
    completing: Arc<Mutex<HashSet<String>>>,
    config: TxnConfig,
}

fn key_bytes(id: &str) -> Vec<u8> {
    let mut k = 0u16.to_be_bytes().to_vec();
    k.extend(id.as_bytes());
    k
}

/// Removes an id from the `completing` set however its completion ends.
struct Completing(Arc<Mutex<HashSet<String>>>, String);

impl Drop for Completing {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

impl TxnCoordinator {
    pub fn new(config: TxnConfig) -> TxnCoordinator {
        TxnCoordinator { txns: Mutex::default(), owned: Mutex::default(), completing: Arc::default(), config }
    }

    /// The `__transaction_state` partition that holds `id`.
    pub fn partition_of(&self, id: &str) -> i32 {
        coordinator_partition(id, self.config.partitions)
    }

    /// `__transaction_state`, created on first use as Kafka does.
    pub fn ensure_topic(&self, host: &dyn TxnHost) -> Result<Arc<Topic>> {
        host.ensure_internal_topic(TXN_TOPIC, self.config.partitions)
    }

    /// (node id, host, port) of `id`'s coordinator: the leader of its partition.
    pub fn coordinator_of(&self, host: &dyn TxnHost, id: &str) -> Result<(i32, String, i32)> {
        let topic = self.ensure_topic(host)?;
        host.leader_endpoint(&topic, self.partition_of(id)).map_err(|_| Error::CoordinatorNotAvailable)
    }

    /// Is this broker `id`'s coordinator?
    pub fn check(&self, host: &dyn TxnHost, id: &str) -> Result<()> {
        if host.replicas().topic(TXN_TOPIC).is_none() {
            return Err(Error::CoordinatorNotAvailable);
        }
        if self.owned.lock().contains(&self.partition_of(id)) {
            Ok(())
        } else {
            Err(Error::NotCoordinator)
        }
    }

    fn persist(&self, host: &dyn TxnHost, m: &TxnMeta) -> Result<()> {
        let topic = host.replicas().topic(TXN_TOPIC).ok_or(Error::CoordinatorNotAvailable)?;
        let value = serde_json::to_vec(m).expect("serializable");
        let key = key_bytes(&m.id);
        let p = topic.partition(self.partition_of(&m.id)).ok_or(Error::NotCoordinator)?;
        p.append_internal(&records::build(&[(Some(&key), Some(&value))], now_ms()), now_ms()).map_err(|e| match e {
            Error::NotLeaderOrFollower => Error::NotCoordinator,
            e => e,
        })?;
        Ok(())
    }

    /// Waits until everything written for `id` is on its partition's whole ISR: the
    /// coordinator answers only for state that survives its own failure.
    async fn durable(&self, host: &dyn TxnHost, id: &str) -> Result<()> {
        let Some(p) = host.replicas().topic(TXN_TOPIC).and_then(|t| t.partition(self.partition_of(id)).cloned()) else {
            return Err(Error::NotCoordinator);
        };
        let leo = p.fetch_position().0;
        if leo == 0 || p.high_watermark() >= leo {
            return Ok(());
        }
        p.wait_replicated(leo - 1, 1, std::time::Duration::from_secs(10)).await.map_err(|e| match e {
            Error::NotLeaderOrFollower => Error::NotCoordinator,
            e => e,
        })
    }

    /// Moves to the next epoch, or to a new producer id when the epoch is exhausted.
    fn bump(host: &dyn TxnHost, m: &mut TxnMeta) -> Result<()> {
        if m.epoch >= i16::MAX - 1 {
            m.producer_id = host.allocate_producer_id()?;
            m.epoch = 0;
        } else {
            m.epoch += 1;
        }
        Ok(())
    }

    /// Starts aborting an open transaction whose producer was replaced or timed out: the
    /// epoch is bumped first so the abort markers fence the old producer.
    fn prepare_abort_with_bump(&self, host: &dyn TxnHost, m: &mut TxnMeta) -> Result<()> {
        m.epoch = m.epoch.saturating_add(1);
        m.state = TxnState::PrepareAbort;
        m.update_ms = now_ms();
        self.persist(host, m)
    }

    /// InitProducerId with a transactional id.
    pub async fn init_producer(&self, host: &dyn TxnHost, id: &str, timeout_ms: i32, expected: Option<(i64, i16)>) -> Result<(i64, i16)> {
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(Error::InvalidTransactionTimeout(timeout_ms));
        }
        self.check(host, id)?;
        let abort_first = {
            let mut txns = self.txns.lock();
            match txns.get_mut(id) {
                None => {
                    let pid = host.allocate_producer_id()?;
                    let m = TxnMeta {
                        v: 0,
                        id: id.into(),
                        producer_id: pid,
                        epoch: 0,
                        state: TxnState::Empty,
                        partitions: BTreeSet::new(),
                        timeout_ms,
                        start_ms: -1,
                        update_ms: now_ms(),
                    };
                    self.persist(host, &m)?;
                    txns.insert(id.into(), m);
                    None
                }
                Some(m) => {
                    if let Some((pid, epoch)) = expected {
                        if pid != m.producer_id {
                            return Err(Error::InvalidProducerIdMapping);
                        }
                        if epoch != m.epoch {
                            return Err(Error::ProducerFenced(epoch));
                        }
                    }
                    match m.state {
                        TxnState::PrepareCommit | TxnState::PrepareAbort => return Err(Error::ConcurrentTransactions),
                        TxnState::Ongoing => {
                            self.prepare_abort_with_bump(host, m)?;
                            Some(true)
                        }
                        _ => Some(false),
                    }
                }
            }
        };
        let Some(abort_first) = abort_first else {
            // A new transactional id: its first producer id, at epoch 0.
            self.durable(host, id).await?;
            let m = self.txns.lock().get(id).map(|m| (m.producer_id, m.epoch));
            return m.ok_or(Error::NotCoordinator);
        };
        if abort_first && !self.complete(host, id).await? {
            return Err(Error::ConcurrentTransactions);
        }
        let r = {
            let mut txns = self.txns.lock();
            let m = txns.get_mut(id).ok_or(Error::NotCoordinator)?;
            if m.state.preparing().is_some() {
                return Err(Error::ConcurrentTransactions);
            }
            Self::bump(host, m)?;
            m.state = TxnState::Empty;
            m.timeout_ms = timeout_ms;
            m.update_ms = now_ms();
            self.persist(host, m)?;
            (m.producer_id, m.epoch)
        };
        self.durable(host, id).await?;
        Ok(r)
    }

    fn checked<'a>(txns: &'a mut HashMap<String, TxnMeta>, id: &str, pid: i64, epoch: i16) -> Result<&'a mut TxnMeta> {
        let m = txns.get_mut(id).ok_or(Error::InvalidProducerIdMapping)?;
        if m.producer_id != pid {
            return Err(Error::InvalidProducerIdMapping);
        }
        if m.epoch != epoch {
            return Err(Error::ProducerFenced(epoch));
        }
        Ok(m)
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets
    /// partition; and, with transactions v2, a partition's first write).
    pub async fn add_partitions(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, parts: &[(String, i32)]) -> Result<()> {
        self.check(host, id)?;
        {
            let mut txns = self.txns.lock();
            let m = Self::checked(&mut txns, id, pid, epoch)?;
            if m.state.preparing().is_some() {
                return Err(Error::ConcurrentTransactions);
            }
            if parts.iter().all(|p| m.partitions.contains(p)) && m.state == TxnState::Ongoing {
                return Ok(());
            }
            if m.state != TxnState::Ongoing {
                m.start_ms = now_ms();
            }
            m.partitions.extend(parts.iter().cloned());
            m.state = TxnState::Ongoing;
            m.update_ms = now_ms();
            self.persist(host, m)?;
        }
        self.durable(host, id).await
    }

    /// The transactional id of producer `pid`, if this coordinator holds it.
    pub fn id_of(&self, pid: i64) -> Option<String> {
        self.txns.lock().values().find(|m| m.producer_id == pid).map(|m| m.id.clone())
    }

    /// Is `(topic, partition)` part of `id`'s open transaction at `pid`/`epoch`?
    pub fn verify(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, topic: &str, partition: i32) -> Result<()> {
        self.check(host, id)?;
        let txns = self.txns.lock();
        let m = txns.get(id).filter(|m| m.producer_id == pid).ok_or(Error::InvalidProducerIdMapping)?;
        if m.epoch != epoch {
            return Err(Error::InvalidProducerEpoch { got: epoch, current: m.epoch });
        }
        if m.state != TxnState::Ongoing || !m.partitions.contains(&(topic.to_string(), partition)) {
            return Err(Error::InvalidTxnState(format!("{topic}-{partition} was not added to the transaction")));
        }
        Ok(())
    }

    /// EndTxn: commit or abort. With transactions v2 (KIP-890) the epoch is bumped on
    /// every end, the markers carry the new epoch, and the new (id, epoch) is returned.
    pub async fn end(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, commit: bool, tv2: bool) -> Result<(i64, i16)> {
        self.check(host, id)?;
        let (r, prepared) = {
            let mut txns = self.txns.lock();
            if tv2 {
                // A retry whose first answer was lost: the end already happened one epoch up.
                if let Some(m) = txns.get(id) {
                    let done = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
                    if m.producer_id == pid && m.epoch == epoch.saturating_add(1) {
                        if m.state == done {
                            return Ok((m.producer_id, m.epoch));
                        }
                        if m.state.preparing() == Some(commit) {
                            return Err(Error::ConcurrentTransactions);
                        }
                    }
                }
            }
            let m = Self::checked(&mut txns, id, pid, epoch)?;
            match (m.state, commit) {
                (TxnState::Ongoing, _) => {
                    if tv2 {
                        Self::bump(host, m)?;
                    }
                    m.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
                    m.update_ms = now_ms();
                    self.persist(host, m)?;
                    ((m.producer_id, m.epoch), true)
                }
                // Nothing was sent in this transaction: v2 still moves the epoch on.
                (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, _) if tv2 => {
                    Self::bump(host, m)?;
                    m.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
                    self.persist(host, m)?;
                    ((m.producer_id, m.epoch), false)
                }
                // A retry of an end that already happened.
                (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => return Ok((m.producer_id, m.epoch)),
                (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => return Err(Error::ConcurrentTransactions),
                (s, _) => {
                    return Err(Error::InvalidTxnState(format!("cannot {} from {}", if commit { "commit" } else { "abort" }, s.name())))
                }
            }
        };
        if !prepared {
            self.durable(host, id).await?;
            return Ok(r);
        }
        // Once the prepare is durable the outcome is decided; markers that cannot be
        // written yet are retried by the tick, and the client sees CONCURRENT_TRANSACTIONS
        // until they are.
        self.complete(host, id).await?;
        Ok(r)
    }

    /// Finishes a prepared transaction: waits for the prepare record to be durable, writes
    /// the markers to every partition's leader, then records the completion. Ok(true) when
    /// the transaction is complete (or was not prepared); Ok(false) when markers are still
    /// outstanding (the tick tries again).
    pub async fn complete(&self, host: &dyn TxnHost, id: &str) -> Result<bool> {
        let (pid, epoch, commit, parts) = {
            let txns = self.txns.lock();
            let Some(m) = txns.get(id) else { return Ok(true) };
            let Some(commit) = m.state.preparing() else { return Ok(true) };
            if !self.completing.lock().insert(id.to_string()) {
                return Ok(false);
            }
            (m.producer_id, m.epoch, commit, m.partitions.clone())
        };
        let _guard = Completing(self.completing.clone(), id.to_string());
        self.durable(host, id).await?;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(MARKER_RETRY_MS);
        if !super::markers::deliver(host, pid, epoch, commit, &parts, deadline).await {
            tracing::warn!(transactional_id = %id, producer_id = pid, "transaction markers not all written yet; will retry");
            return Ok(false);
        }
        {
            let mut txns = self.txns.lock();
            let Some(m) = txns.get_mut(id) else { return Ok(true) };
            if m.producer_id != pid || m.epoch != epoch || m.state.preparing() != Some(commit) {
                return Ok(true);
            }
            m.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
            m.partitions.clear();
            m.update_ms = now_ms();
            self.persist(host, m)?;
        }
        self.durable(host, id).await?;
        Ok(true)
    }

    /// Aborts transactions open longer than their timeout. Returns every prepared
    /// transaction nobody is completing (after a failover or a failed marker write), for
    /// the caller to drive with [`TxnCoordinator::complete`].
    pub fn tick(&self, host: &dyn TxnHost) -> Vec<String> {
        let now = now_ms();
        let mut stuck = Vec::new();
        {
            let mut txns = self.txns.lock();
            for m in txns.values_mut() {
                if m.state == TxnState::Ongoing && now - m.start_ms > m.timeout_ms as i64 {
                    tracing::info!(transactional_id = %m.id, producer_id = m.producer_id, "transaction timed out; aborting");
                    if let Err(e) = self.prepare_abort_with_bump(host, m) {
                        tracing::warn!(transactional_id = %m.id, error = %e, "could not abort timed-out transaction");
                    }
                }
                if m.state.preparing().is_some() && !self.completing.lock().contains(&m.id) {
                    stuck.push(m.id.clone());
                }
            }
        }
        stuck
    }

    /// Every transaction this broker coordinates, for ListTransactions and DescribeTransactions.
    pub fn all(&self) -> Vec<TxnMeta> {
        let mut v: Vec<TxnMeta> = self.txns.lock().values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// Follows leadership of `__transaction_state`: a partition this broker now leads has
    /// its transactions loaded (prepared ones are then finished by the tick); one it no
    /// longer leads has them dropped.
    pub fn sync_ownership(&self, host: &dyn TxnHost) {
        let Some(topic) = host.replicas().topic(TXN_TOPIC) else { return };
        let Some((led, gained, lost)) = topic.leadership_change(&self.owned.lock()) else { return };
        self.txns.lock().retain(|id, _| {
            let p = self.partition_of(id);
            !lost.contains(&p) && !gained.contains(&p)
        });
        match self.load(&topic, &gained) {
            Ok(found) => {
                let n = found.len();
                self.txns.lock().extend(found);
                if n > 0 {
                    tracing::info!(transactions = n, partitions = ?gained, "loaded transaction state from {TXN_TOPIC}");
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not load transaction state"),
        }
        *self.owned.lock() = led;
    }

    /// Reads the latest state of every transactional id in the given partitions, up to
    /// the log end: a new leader holds everything its ISR had.
    fn load(&self, topic: &Topic, only: &HashSet<i32>) -> Result<HashMap<String, TxnMeta>> {
        let mut found: HashMap<String, Option<TxnMeta>> = HashMap::new();
        for p in topic.local().filter(|p| only.contains(&p.index)) {
            p.replay(|b| {
                for r in records::parse(b).map(|(_, recs)| recs).unwrap_or_default() {
                    let Some(k) = r.key.filter(|k| k.len() >= 2) else { continue };
                    let id = String::from_utf8_lossy(&k[2..]).to_string();
                    found.insert(id, r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                }
            })?;
        }
        Ok(found.into_iter().filter_map(|(id, m)| Some((id, m?))).collect())
    }
}
