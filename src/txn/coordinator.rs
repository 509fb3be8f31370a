//! The transaction coordinator: transactional ids, their producer ids and epochs,
//! and the two-phase end of a transaction (prepare, write markers, complete).
//! State lives in the compacted internal topic `__transaction_state`.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::broker::{now_ms, Broker, CreateRequest};
use crate::error::{Error, Result};
use crate::group::store::partition_for;
use crate::log::records;

/// The internal topic holding transaction state.
pub const TXN_TOPIC: &str = "__transaction_state";

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
    config: TxnConfig,
}

fn key_bytes(id: &str) -> Vec<u8> {
    let mut k = 0u16.to_be_bytes().to_vec();
    k.extend(id.as_bytes());
    k
}

impl TxnCoordinator {
    pub fn new(config: TxnConfig) -> TxnCoordinator {
        TxnCoordinator { txns: Mutex::new(HashMap::new()), config }
    }

    fn persist(&self, broker: &Broker, m: &TxnMeta) -> Result<()> {
        let topic = match broker.topic(TXN_TOPIC) {
            Some(t) => t,
            None => {
                let configs = [("cleanup.policy", "compact"), ("segment.bytes", "104857600")]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                let req = CreateRequest {
                    name: TXN_TOPIC.into(),
                    partitions: self.config.partitions,
                    replication_factor: -1,
                    assignments: vec![],
                    configs,
                };
                match broker.create_topic(&req) {
                    Ok(t) => t,
                    Err(Error::TopicAlreadyExists(_)) => broker.topic(TXN_TOPIC).ok_or(Error::CoordinatorNotAvailable)?,
                    Err(e) => return Err(e),
                }
            }
        };
        let p = partition_for(&m.id, topic.record.partitions);
        let value = serde_json::to_vec(m).expect("serializable");
        let key = key_bytes(&m.id);
        topic
            .partition(p)
            .ok_or(Error::CoordinatorNotAvailable)?
            .append_internal(&records::build(&[(Some(&key), Some(&value))], now_ms()), now_ms())?;
        Ok(())
    }

    /// Writes the markers of an ending transaction and completes it.
    fn complete(&self, broker: &Broker, m: &mut TxnMeta, commit: bool) -> Result<()> {
        let now = now_ms();
        for (topic, p) in &m.partitions {
            let Some(part) = broker.partition(topic, *p) else { continue };
            part.write_marker(m.producer_id, m.epoch, commit, now)?;
            if topic == crate::group::OFFSETS_TOPIC {
                broker.groups.complete_txn(m.producer_id, commit);
            }
        }
        broker.appended.notify_waiters();
        m.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
        m.partitions.clear();
        m.update_ms = now;
        self.persist(broker, m)
    }

    /// Ends an open transaction because its producer was replaced or timed out: the
    /// epoch is bumped first so the abort markers fence the old producer.
    fn abort_with_bump(&self, broker: &Broker, m: &mut TxnMeta) -> Result<()> {
        m.epoch = m.epoch.saturating_add(1);
        m.state = TxnState::PrepareAbort;
        self.persist(broker, m)?;
        self.complete(broker, m, false)
    }

    /// InitProducerId with a transactional id.
    pub fn init_producer(&self, broker: &Broker, id: &str, timeout_ms: i32, expected: Option<(i64, i16)>) -> Result<(i64, i16)> {
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(Error::InvalidTransactionTimeout(timeout_ms));
        }
        let now = now_ms();
        let mut txns = self.txns.lock();
        let Some(m) = txns.get_mut(id) else {
            let pid = broker.producer_ids.allocate()?;
            let m = TxnMeta {
                v: 0,
                id: id.into(),
                producer_id: pid,
                epoch: 0,
                state: TxnState::Empty,
                partitions: BTreeSet::new(),
                timeout_ms,
                start_ms: -1,
                update_ms: now,
            };
            self.persist(broker, &m)?;
            txns.insert(id.into(), m);
            return Ok((pid, 0));
        };
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
            TxnState::Ongoing => self.abort_with_bump(broker, m)?,
            _ => {}
        }
        if m.epoch >= i16::MAX - 1 {
            m.producer_id = broker.producer_ids.allocate()?;
            m.epoch = 0;
        } else {
            m.epoch += 1;
        }
        m.state = TxnState::Empty;
        m.timeout_ms = timeout_ms;
        m.update_ms = now;
        self.persist(broker, m)?;
        Ok((m.producer_id, m.epoch))
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

    /// AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets partition).
    pub fn add_partitions(&self, broker: &Broker, id: &str, pid: i64, epoch: i16, parts: &[(String, i32)]) -> Result<()> {
        let mut txns = self.txns.lock();
        let m = Self::checked(&mut txns, id, pid, epoch)?;
        if matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
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
        self.persist(broker, m)
    }

    /// Is `(topic, partition)` part of `pid`'s open transaction at `epoch`?
    pub fn verify(&self, pid: i64, epoch: i16, topic: &str, partition: i32) -> Result<()> {
        let txns = self.txns.lock();
        let m = txns.values().find(|m| m.producer_id == pid).ok_or(Error::InvalidProducerIdMapping)?;
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
    pub fn end(&self, broker: &Broker, id: &str, pid: i64, epoch: i16, commit: bool, tv2: bool) -> Result<(i64, i16)> {
        let mut txns = self.txns.lock();
        if tv2 {
            // A retry whose first answer was lost: the end already happened one epoch up.
            if let Some(m) = txns.get(id) {
                let done = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
                if m.producer_id == pid && m.state == done && m.epoch == epoch.saturating_add(1) {
                    return Ok((m.producer_id, m.epoch));
                }
            }
        }
        let m = Self::checked(&mut txns, id, pid, epoch)?;
        match (m.state, commit) {
            (TxnState::Ongoing, _) => {}
            // Nothing was sent in this transaction: v2 still moves the epoch on.
            (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, _) if tv2 => {
                Self::bump(broker, m)?;
                m.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
                self.persist(broker, m)?;
                return Ok((m.producer_id, m.epoch));
            }
            // A retry of an end that already happened.
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => return Ok((m.producer_id, m.epoch)),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => return Err(Error::ConcurrentTransactions),
            (s, _) => return Err(Error::InvalidTxnState(format!("cannot {} from {}", if commit { "commit" } else { "abort" }, s.name()))),
        }
        if tv2 {
            Self::bump(broker, m)?;
        }
        m.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
        self.persist(broker, m)?;
        self.complete(broker, m, commit)?;
        Ok((m.producer_id, m.epoch))
    }

    /// Moves to the next epoch, or to a new producer id when the epoch is exhausted.
    fn bump(broker: &Broker, m: &mut TxnMeta) -> Result<()> {
        if m.epoch >= i16::MAX - 1 {
            m.producer_id = broker.producer_ids.allocate()?;
            m.epoch = 0;
        } else {
            m.epoch += 1;
        }
        Ok(())
    }

    /// Transactions v2: a partition joins `pid`'s transaction when it first writes to it
    /// (or commits offsets for a group), with no AddPartitionsToTxn from the client.
    pub fn add_implicitly(&self, broker: &Broker, pid: i64, epoch: i16, topic: &str, partition: i32) -> Result<()> {
        let id = {
            let txns = self.txns.lock();
            let m = txns.values().find(|m| m.producer_id == pid).ok_or(Error::InvalidProducerIdMapping)?;
            if epoch < m.epoch {
                return Err(Error::InvalidProducerEpoch { got: epoch, current: m.epoch });
            }
            if m.state == TxnState::Ongoing && m.partitions.contains(&(topic.to_string(), partition)) {
                return Ok(());
            }
            m.id.clone()
        };
        self.add_partitions(broker, &id, pid, epoch, &[(topic.to_string(), partition)])
    }

    /// Aborts transactions open longer than their timeout.
    pub fn tick(&self, broker: &Broker) {
        let now = now_ms();
        let mut txns = self.txns.lock();
        for m in txns.values_mut() {
            if m.state == TxnState::Ongoing && now - m.start_ms > m.timeout_ms as i64 {
                tracing::info!(transactional_id = %m.id, producer_id = m.producer_id, "transaction timed out; aborting");
                if let Err(e) = self.abort_with_bump(broker, m) {
                    tracing::warn!(transactional_id = %m.id, error = %e, "could not abort timed-out transaction");
                }
            }
        }
    }

    /// Every transaction, for ListTransactions and DescribeTransactions.
    pub fn all(&self) -> Vec<TxnMeta> {
        let mut v: Vec<TxnMeta> = self.txns.lock().values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// Rebuilds from `__transaction_state`, finishing any end that was in progress.
    pub fn load(&self, broker: &Broker) -> Result<()> {
        let Some(topic) = broker.topic(TXN_TOPIC) else { return Ok(()) };
        let mut found: HashMap<String, Option<TxnMeta>> = HashMap::new();
        for p in topic.local() {
            let mut offset = p.with_state(|s| s.log.log_start_offset());
            while let Ok(d) = p.fetch(offset, 4 << 20, true, -1) {
                if d.records.is_empty() {
                    break;
                }
                for b in records::batches(&d.records) {
                    let Some((h, recs)) = records::parse(b) else { continue };
                    offset = h.last_offset() + 1;
                    for r in recs {
                        let Some(k) = r.key.filter(|k| k.len() >= 2) else { continue };
                        let id = String::from_utf8_lossy(&k[2..]).to_string();
                        found.insert(id, r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                    }
                }
            }
        }
        let mut txns = self.txns.lock();
        for (id, m) in found {
            let Some(mut m) = m else { continue };
            match m.state {
                TxnState::PrepareCommit => self.complete(broker, &mut m, true)?,
                TxnState::PrepareAbort => self.complete(broker, &mut m, false)?,
                _ => {}
            }
            txns.insert(id, m);
        }
        tracing::info!(transactions = txns.len(), "loaded transaction state from {TXN_TOPIC}");
        Ok(())
    }
}
