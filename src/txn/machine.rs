//! The transaction coordinator's state machine: every transactional id's producer id,
//! epoch and state, and the rules of InitProducerId, AddPartitionsToTxn, EndTxn and the
//! transaction timeout. It does no I/O and reads no clock: time comes in as `now_ms`, a
//! new producer id comes in when a [`Step::NeedProducerId`] asked for one, and what must
//! be written comes out as [`Step::Write`]. A record changes the state only once the
//! caller reports it appended ([`TxnMachine::written`]), so a failed append leaves the
//! state as the log has it. Tests drive it with no log, no network and no clock.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The epoch from which a bump moves to a new producer id: Kafka keeps `i16::MAX` free so
/// that fencing an exhausted producer (one more bump) cannot overflow.
const LAST_EPOCH: i16 = i16::MAX - 1;

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
    /// The name DescribeTransactions and ListTransactions use.
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
    pub fn preparing(self) -> Option<bool> {
        match self {
            TxnState::PrepareCommit => Some(true),
            TxnState::PrepareAbort => Some(false),
            _ => None,
        }
    }

    fn prepare(commit: bool) -> TxnState {
        if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        }
    }

    fn complete(commit: bool) -> TxnState {
        if commit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        }
    }
}

fn no_producer_id() -> i64 {
    -1
}

fn no_epoch() -> i16 {
    -1
}

/// One transactional id's state: the value of its `__transaction_state` record, as JSON
/// (`"v"` is the format version; records written before `last_*` existed load with -1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxnMeta {
    pub v: u16,
    pub id: String,
    pub producer_id: i64,
    pub epoch: i16,
    /// The producer id before the last rotation, so a retry that crossed it is recognised.
    #[serde(default = "no_producer_id")]
    pub last_producer_id: i64,
    /// The epoch a client's InitProducerId moved on from, so its retry gets the same answer.
    #[serde(default = "no_epoch")]
    pub last_epoch: i16,
    /// The producer id a transactions-v2 end that used up the epochs moves to once the
    /// transaction completes (-1: none).
    #[serde(default = "no_producer_id")]
    pub next_producer_id: i64,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub update_ms: i64,
}

impl TxnMeta {
    /// Moves to the next epoch, or to `fresh` at epoch 0 once the epochs are used up;
    /// None when that needs a producer id and none was given.
    fn bumped(&self, fresh: Option<i64>) -> Option<TxnMeta> {
        let mut m = self.clone();
        if m.epoch >= LAST_EPOCH {
            m.last_producer_id = m.producer_id;
            m.producer_id = fresh?;
            m.epoch = 0;
        } else {
            m.epoch += 1;
        }
        Some(m)
    }

    /// The epoch raised once to fence the current producer before its transaction is
    /// aborted; never rotates, as the abort markers must carry this producer id.
    fn fenced(&self, now_ms: i64) -> TxnMeta {
        let mut m = self.clone();
        m.epoch = m.epoch.saturating_add(1);
        m.last_epoch = -1;
        m.state = TxnState::PrepareAbort;
        m.update_ms = now_ms;
        m
    }
}

/// Coordinator settings.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    pub max_timeout_ms: i32,
    pub partitions: i32,
}

/// What the coordinator does next for a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answer now, with the producer id and epoch (or the error); nothing is written.
    Answer(Result<(i64, i16)>),
    /// The transition moves to a new producer id: allocate one and ask again with it.
    NeedProducerId,
    /// Append this record to the transactional id's `__transaction_state` partition,
    /// report it with [`TxnMachine::written`], and once it is durable go on with [`Then`].
    Write(TxnMeta, Then),
}

/// What follows a record's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Answer with this producer id and epoch.
    Answer(i64, i16),
    /// The transaction is prepared: write its markers ([`TxnMachine::markers_due`]), record
    /// the completion ([`TxnMachine::markers_written`]), then answer with this id and epoch.
    WriteMarkers(i64, i16),
    /// InitProducerId fenced an open transaction: finish its abort, then ask again as
    /// the producer at this id and epoch.
    InitAfterAbort(i64, i16),
}

/// Markers to write for a prepared transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerJob {
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub partitions: BTreeSet<(String, i32)>,
}

/// An InitProducerId with a transactional id.
#[derive(Debug, Clone)]
pub struct InitRequest<'a> {
    pub id: &'a str,
    pub timeout_ms: i32,
    /// InitProducerId v3+: the id and epoch the producer has (KIP-360), if any.
    pub expected: Option<(i64, i16)>,
}

/// An EndTxn.
#[derive(Debug, Clone)]
pub struct EndRequest<'a> {
    pub id: &'a str,
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    /// EndTxn v5+: transactions v2 (KIP-890), where every end bumps the epoch.
    pub tv2: bool,
}

/// The state of every transactional id this coordinator has loaded.
#[derive(Debug, Default)]
pub struct TxnMachine {
    txns: HashMap<String, TxnMeta>,
}

/// Refuses a transaction timeout outside (0, `max_ms`], as InvalidTransactionTimeout.
pub fn check_timeout(timeout_ms: i32, max_ms: i32) -> Result<()> {
    if timeout_ms <= 0 || timeout_ms > max_ms {
        return Err(Error::InvalidTransactionTimeout(timeout_ms));
    }
    Ok(())
}

fn invalid_transition(state: TxnState, commit: bool) -> Step {
    let verb = if commit { "commit" } else { "abort" };
    Step::Answer(Err(Error::InvalidTxnState(format!("cannot {verb} from {}", state.name()))))
}

impl TxnMachine {
    /// The state of `id`, if known.
    pub fn get(&self, id: &str) -> Option<&TxnMeta> {
        self.txns.get(id)
    }

    /// Every known transactional id's state, sorted by id.
    pub fn all(&self) -> Vec<TxnMeta> {
        let mut v: Vec<TxnMeta> = self.txns.values().cloned().collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// The transactional id of producer `pid`, if known.
    pub fn id_of(&self, pid: i64) -> Option<String> {
        self.txns.values().find(|m| m.producer_id == pid).map(|m| m.id.clone())
    }

    /// A record from a [`Step::Write`] (or [`TxnMachine::expire`], or
    /// [`TxnMachine::markers_written`]) is in the log: it is now the id's state.
    pub fn written(&mut self, record: TxnMeta) {
        self.txns.insert(record.id.clone(), record);
    }

    /// Adds state read back from the log ([`super::record::Recovery`]).
    pub fn load(&mut self, found: HashMap<String, TxnMeta>) {
        self.txns.extend(found);
    }

    /// Forgets the ids `drop` picks (their partition moved to another coordinator).
    pub fn unload(&mut self, drop: impl Fn(&str) -> bool) {
        self.txns.retain(|id, _| !drop(id));
    }

    /// InitProducerId: a new id starts at epoch 0; an idle one moves to the next epoch (a
    /// new producer id once they are used up); an open transaction is fenced and aborted
    /// first; a prepared one must finish first. An expected id and epoch (KIP-360) must
    /// be the current ones or a retry of the last bump, else the caller is fenced.
    pub fn init_producer(&self, req: &InitRequest, now_ms: i64, fresh: Option<i64>) -> Step {
        let Some(m) = self.txns.get(req.id) else {
            let Some(pid) = fresh else { return Step::NeedProducerId };
            let m = TxnMeta {
                v: 0,
                id: req.id.into(),
                producer_id: pid,
                epoch: 0,
                last_producer_id: -1,
                last_epoch: -1,
                next_producer_id: -1,
                state: TxnState::Empty,
                partitions: BTreeSet::new(),
                timeout_ms: req.timeout_ms,
                start_ms: -1,
                update_ms: now_ms,
            };
            return Step::Write(m, Then::Answer(pid, 0));
        };
        if let Some((pid, epoch)) = req.expected {
            // A retry whose answer moved the producer to a new id still names the old one.
            let rotated_retry = pid == m.last_producer_id && epoch >= LAST_EPOCH;
            if pid != m.producer_id && !rotated_retry {
                return Step::Answer(Err(Error::ProducerFenced(epoch)));
            }
        }
        match m.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => Step::Answer(Err(Error::ConcurrentTransactions)),
            // A producer naming an epoch that is not the current one cannot end another's
            // transaction: it is fenced, and the transaction stays open.
            TxnState::Ongoing if req.expected.is_some_and(|(_, e)| e != m.epoch) => {
                Step::Answer(Err(Error::ProducerFenced(req.expected.map_or(-1, |(_, e)| e))))
            }
            TxnState::Ongoing => {
                let f = m.fenced(now_ms);
                let then = Then::InitAfterAbort(f.producer_id, f.epoch);
                Step::Write(f, then)
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let exhausted = m.epoch >= LAST_EPOCH && req.expected.is_none_or(|(_, e)| e == m.epoch);
                let mut n = if exhausted {
                    let Some(mut n) = m.bumped(fresh) else { return Step::NeedProducerId };
                    n.last_epoch = if req.expected.is_some() { m.epoch } else { -1 };
                    n
                } else {
                    match req.expected {
                        None => TxnMeta { epoch: m.epoch + 1, last_epoch: -1, ..m.clone() },
                        Some((_, e)) if e == m.epoch => TxnMeta { epoch: m.epoch + 1, last_epoch: m.epoch, ..m.clone() },
                        // The bump already happened and its answer was lost: the same answer again.
                        Some((_, e)) if e == m.last_epoch => m.clone(),
                        Some((_, e)) => return Step::Answer(Err(Error::ProducerFenced(e))),
                    }
                };
                n.state = TxnState::Empty;
                n.partitions.clear();
                n.timeout_ms = req.timeout_ms;
                n.start_ms = -1;
                n.update_ms = now_ms;
                let then = Then::Answer(n.producer_id, n.epoch);
                Step::Write(n, then)
            }
        }
    }

    /// The state of `id` for a request from producer `pid` at `epoch`.
    fn current(&self, id: &str, pid: i64, epoch: i16) -> Result<&TxnMeta> {
        let m = self.txns.get(id).filter(|m| m.producer_id == pid).ok_or(Error::InvalidProducerIdMapping)?;
        if m.epoch != epoch {
            return Err(Error::ProducerFenced(epoch));
        }
        Ok(m)
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets partition;
    /// and, with transactions v2, a partition's first write): the transaction is open
    /// from the first add on.
    pub fn add_partitions(&self, id: &str, pid: i64, epoch: i16, parts: &[(String, i32)], now_ms: i64) -> Step {
        let m = match self.current(id, pid, epoch) {
            Ok(m) => m,
            Err(e) => return Step::Answer(Err(e)),
        };
        if m.state.preparing().is_some() {
            return Step::Answer(Err(Error::ConcurrentTransactions));
        }
        if m.state == TxnState::Ongoing && parts.iter().all(|p| m.partitions.contains(p)) {
            return Step::Answer(Ok((pid, epoch)));
        }
        let mut n = m.clone();
        if n.state != TxnState::Ongoing {
            n.start_ms = now_ms;
        }
        n.partitions.extend(parts.iter().cloned());
        n.state = TxnState::Ongoing;
        n.update_ms = now_ms;
        Step::Write(n, Then::Answer(pid, epoch))
    }

    /// Is `(topic, partition)` in `id`'s open transaction at `pid`/`epoch`? (A partition
    /// leader asks before a producer's first transactional write, KIP-890.)
    pub fn verify(&self, id: &str, pid: i64, epoch: i16, topic: &str, partition: i32) -> Result<()> {
        let m = self.txns.get(id).filter(|m| m.producer_id == pid).ok_or(Error::InvalidProducerIdMapping)?;
        if m.epoch != epoch {
            return Err(Error::InvalidProducerEpoch { got: epoch, current: m.epoch });
        }
        if m.state != TxnState::Ongoing || !m.partitions.contains(&(topic.to_string(), partition)) {
            return Err(Error::InvalidTxnState(format!("{topic}-{partition} was not added to the transaction")));
        }
        Ok(())
    }

    /// EndTxn: an open transaction is prepared (its markers follow); a retry of an end
    /// that is done gets the same answer, and one still being written
    /// CONCURRENT_TRANSACTIONS. With transactions v2 every end bumps the epoch, the
    /// markers carry the new one, and a retry comes at the epoch below.
    pub fn end(&self, req: &EndRequest, now_ms: i64, fresh: Option<i64>) -> Step {
        if req.tv2 {
            return self.end_v2(req, now_ms, fresh);
        }
        let m = match self.current(req.id, req.producer_id, req.epoch) {
            Ok(m) => m,
            Err(e) => return Step::Answer(Err(e)),
        };
        let done = (m.producer_id, m.epoch);
        match (m.state, req.commit) {
            (TxnState::Ongoing, commit) => {
                let n = TxnMeta { state: TxnState::prepare(commit), update_ms: now_ms, ..m.clone() };
                Step::Write(n, Then::WriteMarkers(done.0, done.1))
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Step::Answer(Ok(done)),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => Step::Answer(Err(Error::ConcurrentTransactions)),
            (s, commit) => invalid_transition(s, commit),
        }
    }

    /// EndTxn with transactions v2. Besides the open transaction, an abort may end an
    /// idle producer's nothing (moving its epoch on); a commit of nothing is refused.
    fn end_v2(&self, req: &EndRequest, now_ms: i64, fresh: Option<i64>) -> Step {
        let Some(m) = self.txns.get(req.id) else { return Step::Answer(Err(Error::InvalidProducerIdMapping)) };
        // A retry is of an end this producer asked for at the epoch below: an abort the
        // coordinator forced (a fence) leaves no last epoch, so the fenced producer is
        // told so rather than answered as if it had ended the transaction itself.
        let asked_at = m.last_epoch == req.epoch;
        let retry_on_bump = asked_at && m.producer_id == req.producer_id && i32::from(m.epoch) == i32::from(req.epoch) + 1;
        let retry_on_rotation = asked_at && m.last_producer_id == req.producer_id && req.epoch == LAST_EPOCH && m.epoch == 0;
        if m.producer_id != req.producer_id && !retry_on_rotation {
            return Step::Answer(Err(Error::InvalidProducerIdMapping));
        }
        let current = m.producer_id == req.producer_id && m.epoch == req.epoch;
        let valid = match m.state {
            TxnState::Empty | TxnState::Ongoing => current,
            TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
            TxnState::CompleteCommit | TxnState::CompleteAbort => current || retry_on_bump || retry_on_rotation,
        };
        if !valid {
            return Step::Answer(Err(Error::ProducerFenced(req.epoch)));
        }
        let retry = retry_on_bump || retry_on_rotation;
        // Ends the transaction at the next epoch. With partitions it is prepared and its
        // markers follow; they must carry the producer id its records have, so a rotation
        // (epochs used up) waits in `next_producer_id` until the transaction completes.
        let finish = |commit: bool, has_partitions: bool| {
            let next = match (m.epoch >= LAST_EPOCH, fresh) {
                (false, _) => None,
                (true, Some(p)) => Some(p),
                (true, None) => return Step::NeedProducerId,
            };
            let mut n = TxnMeta { last_epoch: m.epoch, update_ms: now_ms, ..m.clone() };
            if has_partitions {
                n.epoch = m.epoch.saturating_add(1);
                n.next_producer_id = next.unwrap_or(-1);
                n.state = TxnState::prepare(commit);
                let (pid, epoch) = next.map_or((n.producer_id, n.epoch), |p| (p, 0));
                return Step::Write(n, Then::WriteMarkers(pid, epoch));
            }
            match next {
                Some(p) => {
                    n.last_producer_id = n.producer_id;
                    n.producer_id = p;
                    n.epoch = 0;
                }
                None => n.epoch += 1,
            }
            n.state = TxnState::complete(commit);
            n.partitions.clear();
            n.start_ms = now_ms;
            let then = Then::Answer(n.producer_id, n.epoch);
            Step::Write(n, then)
        };
        match (m.state, req.commit) {
            (TxnState::Ongoing, commit) => finish(commit, true),
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) if retry => Step::Answer(Ok((m.producer_id, m.epoch))),
            (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false) if !retry => finish(false, false),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => Step::Answer(Err(Error::ConcurrentTransactions)),
            (s, commit) => invalid_transition(s, commit),
        }
    }

    /// The markers `id`'s prepared transaction still needs, if it is prepared.
    pub fn markers_due(&self, id: &str) -> Option<MarkerJob> {
        let m = self.txns.get(id)?;
        let commit = m.state.preparing()?;
        Some(MarkerJob { producer_id: m.producer_id, epoch: m.epoch, commit, partitions: m.partitions.clone() })
    }

    /// Every marker of `job` is written: the record that completes the transaction, unless
    /// the state moved on meanwhile.
    pub fn markers_written(&self, id: &str, job: &MarkerJob, now_ms: i64) -> Option<TxnMeta> {
        let m = self.txns.get(id)?;
        if m.producer_id != job.producer_id || m.epoch != job.epoch || m.state.preparing() != Some(job.commit) {
            return None;
        }
        let mut n = m.clone();
        if n.next_producer_id >= 0 {
            n.last_producer_id = n.producer_id;
            n.producer_id = n.next_producer_id;
            n.next_producer_id = -1;
            n.epoch = 0;
        }
        n.state = TxnState::complete(job.commit);
        n.partitions.clear();
        n.update_ms = now_ms;
        Some(n)
    }

    /// Transactions open longer than their timeout, fenced and prepared to abort: the
    /// records to write (the epoch is bumped so the abort markers fence the producer).
    pub fn expire(&self, now_ms: i64) -> Vec<TxnMeta> {
        let mut v: Vec<TxnMeta> = self
            .txns
            .values()
            .filter(|m| m.state == TxnState::Ongoing && now_ms - m.start_ms > i64::from(m.timeout_ms))
            .map(|m| m.fenced(now_ms))
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }

    /// Every transactional id whose markers are still to be written.
    pub fn prepared(&self) -> Vec<String> {
        let mut v: Vec<String> = self.txns.values().filter(|m| m.state.preparing().is_some()).map(|m| m.id.clone()).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
