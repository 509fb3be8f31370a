//! The transaction coordinator: the I/O around [`super::machine`], which decides. It
//! appends the machine's records to `__transaction_state` and waits for them to be
//! durable, writes markers, allocates producer ids, reads the clock and follows
//! leadership. The leader of a transactional id's partition of `__transaction_state` is
//! that id's coordinator, as in Kafka.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use super::machine::{self, EndRequest, InitRequest, Step, Then, TxnMachine};
use super::record::{self, Recovery};
use super::TxnHost;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::log::records;
use crate::metadata::names::coordinator_partition;
use crate::partition::Topic;

pub use super::machine::{TxnConfig, TxnMeta, TxnState};

/// The internal topic holding transaction state.
pub use crate::metadata::names::TXN_TOPIC;

/// How long one attempt at writing a transaction's markers keeps retrying; the
/// coordinator's tick starts another while the transaction stays prepared.
const MARKER_RETRY_MS: u64 = 10_000;

/// The transaction coordinator.
pub struct TxnCoordinator {
    machine: Mutex<TxnMachine>,
    /// The `__transaction_state` partitions this broker leads and has loaded.
    owned: Mutex<HashSet<i32>>,
    /// Transactional ids whose markers are being written right now.
    completing: Arc<Mutex<HashSet<String>>>,
    config: TxnConfig,
}

/// Removes an id from the `completing` set however its completion ends.
struct Completing(Arc<Mutex<HashSet<String>>>, String);

impl Drop for Completing {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

impl TxnCoordinator {
    /// A coordinator that owns no partition yet.
    pub fn new(config: TxnConfig) -> TxnCoordinator {
        TxnCoordinator { machine: Mutex::default(), owned: Mutex::default(), completing: Arc::default(), config }
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

    /// Appends `m` to its id's partition; only then does the machine take it as the state.
    fn write(&self, host: &dyn TxnHost, machine: &mut TxnMachine, m: TxnMeta) -> Result<()> {
        let topic = host.replicas().topic(TXN_TOPIC).ok_or(Error::CoordinatorNotAvailable)?;
        let p = topic.partition(self.partition_of(&m.id)).ok_or(Error::NotCoordinator)?;
        let (key, value) = (record::key(&m.id), record::value(&m));
        let now = now_ms();
        p.append_internal(&records::build(&[(Some(&key), Some(&value))], now), now).map_err(|e| match e {
            Error::NotLeaderOrFollower => Error::NotCoordinator,
            e => e,
        })?;
        machine.written(m);
        Ok(())
    }

    /// Runs one decision of the machine: allocates the producer id it asks for, writes
    /// the record it asks for, and says what follows. An answer the machine gives at once
    /// comes back as [`Then::Answer`] (or its error).
    fn step(&self, host: &dyn TxnHost, decide: impl Fn(&TxnMachine, Option<i64>) -> Step) -> Result<Then> {
        let mut machine = self.machine.lock();
        let mut step = decide(&machine, None);
        if step == Step::NeedProducerId {
            step = decide(&machine, Some(host.allocate_producer_id()?));
        }
        match step {
            Step::Answer(r) => r.map(|(pid, epoch)| Then::Answer(pid, epoch)),
            Step::Write(m, then) => {
                self.write(host, &mut machine, m)?;
                Ok(then)
            }
            // Given a producer id the machine never asks for another.
            Step::NeedProducerId => Err(Error::CoordinatorNotAvailable),
        }
    }

    /// Waits until everything written for `id` is on its partition's whole ISR: the
    /// coordinator answers only for state that survives its own failure, including state
    /// another request wrote a moment ago.
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

    /// InitProducerId with a transactional id.
    pub async fn init_producer(&self, host: &dyn TxnHost, id: &str, timeout_ms: i32, expected: Option<(i64, i16)>) -> Result<(i64, i16)> {
        machine::check_timeout(timeout_ms, self.config.max_timeout_ms)?;
        self.check(host, id)?;
        let req = InitRequest { id, timeout_ms, expected };
        let mut then = self.step(host, |m, fresh| m.init_producer(&req, now_ms(), fresh))?;
        if let Then::InitAfterAbort(pid, epoch) = then {
            // Kafka answers CONCURRENT_TRANSACTIONS here and the client asks again; we finish
            // the abort and ask again for it, as the producer the fence left behind.
            if !self.complete(host, id).await? {
                return Err(Error::ConcurrentTransactions);
            }
            let req = InitRequest { expected: expected.map(|_| (pid, epoch)), ..req };
            then = self.step(host, |m, fresh| m.init_producer(&req, now_ms(), fresh))?;
        }
        let Then::Answer(pid, epoch) = then else { return Err(Error::ConcurrentTransactions) };
        self.durable(host, id).await?;
        Ok((pid, epoch))
    }

    /// AddPartitionsToTxn (and AddOffsetsToTxn, which adds the group's offsets
    /// partition; and, with transactions v2, a partition's first write).
    pub async fn add_partitions(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, parts: &[(String, i32)]) -> Result<()> {
        self.check(host, id)?;
        self.step(host, |m, _| m.add_partitions(id, pid, epoch, parts, now_ms()))?;
        self.durable(host, id).await
    }

    /// The transactional id of producer `pid`, if this coordinator holds it.
    pub fn id_of(&self, pid: i64) -> Option<String> {
        self.machine.lock().id_of(pid)
    }

    /// Is `(topic, partition)` part of `id`'s open transaction at `pid`/`epoch`?
    pub fn verify(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, topic: &str, partition: i32) -> Result<()> {
        self.check(host, id)?;
        self.machine.lock().verify(id, pid, epoch, topic, partition)
    }

    /// EndTxn: commit or abort. With transactions v2 (KIP-890) the epoch is bumped on
    /// every end, the markers carry the new epoch, and the new (id, epoch) is returned.
    pub async fn end(&self, host: &dyn TxnHost, id: &str, pid: i64, epoch: i16, commit: bool, tv2: bool) -> Result<(i64, i16)> {
        self.check(host, id)?;
        let req = EndRequest { id, producer_id: pid, epoch, commit, tv2 };
        match self.step(host, |m, fresh| m.end(&req, now_ms(), fresh))? {
            // Once the prepare is durable the outcome is decided; markers that cannot be
            // written yet are retried by the tick, and the client sees
            // CONCURRENT_TRANSACTIONS until they are.
            Then::WriteMarkers(pid, epoch) => {
                self.complete(host, id).await?;
                Ok((pid, epoch))
            }
            Then::Answer(pid, epoch) => {
                self.durable(host, id).await?;
                Ok((pid, epoch))
            }
            Then::InitAfterAbort(..) => Err(Error::ConcurrentTransactions),
        }
    }

    /// Finishes a prepared transaction: waits for the prepare record to be durable, writes
    /// the markers to every partition's leader, then records the completion. Ok(true) when
    /// the transaction is complete (or was not prepared); Ok(false) when markers are still
    /// outstanding (the tick tries again).
    pub async fn complete(&self, host: &dyn TxnHost, id: &str) -> Result<bool> {
        let job = {
            let machine = self.machine.lock();
            let Some(job) = machine.markers_due(id) else { return Ok(true) };
            if !self.completing.lock().insert(id.to_string()) {
                return Ok(false);
            }
            job
        };
        let _guard = Completing(self.completing.clone(), id.to_string());
        self.durable(host, id).await?;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(MARKER_RETRY_MS);
        if !super::markers::deliver(host, job.producer_id, job.epoch, job.commit, &job.partitions, deadline).await {
            tracing::warn!(transactional_id = %id, producer_id = job.producer_id, "transaction markers not all written yet; will retry");
            return Ok(false);
        }
        {
            let mut machine = self.machine.lock();
            let Some(done) = machine.markers_written(id, &job, now_ms()) else { return Ok(true) };
            self.write(host, &mut machine, done)?;
        }
        self.durable(host, id).await?;
        Ok(true)
    }

    /// Aborts transactions open longer than their timeout. Returns every prepared
    /// transaction nobody is completing (after a failover or a failed marker write), for
    /// the caller to drive with [`TxnCoordinator::complete`].
    pub fn tick(&self, host: &dyn TxnHost) -> Vec<String> {
        let mut machine = self.machine.lock();
        for m in machine.expire(now_ms()) {
            tracing::info!(transactional_id = %m.id, producer_id = m.producer_id, "transaction timed out; aborting");
            let id = m.id.clone();
            // Not written, not changed: the next tick tries again.
            if let Err(e) = self.write(host, &mut machine, m) {
                tracing::warn!(transactional_id = %id, error = %e, "could not abort timed-out transaction");
            }
        }
        let completing = self.completing.lock();
        machine.prepared().into_iter().filter(|id| !completing.contains(id)).collect()
    }

    /// Every transaction this broker coordinates, for ListTransactions and DescribeTransactions.
    pub fn all(&self) -> Vec<TxnMeta> {
        self.machine.lock().all()
    }

    /// Follows leadership of `__transaction_state`: a partition this broker now leads has
    /// its transactions loaded (prepared ones are then finished by the tick); one it no
    /// longer leads has them dropped.
    pub fn sync_ownership(&self, host: &dyn TxnHost) {
        let Some(topic) = host.replicas().topic(TXN_TOPIC) else { return };
        let Some((led, gained, lost)) = topic.leadership_change(&self.owned.lock()) else { return };
        self.machine.lock().unload(|id| {
            let p = self.partition_of(id);
            lost.contains(&p) || gained.contains(&p)
        });
        match self.load(&topic, &gained) {
            Ok(found) => {
                let n = found.len();
                self.machine.lock().load(found);
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
        let mut recovery = Recovery::default();
        for p in topic.local().filter(|p| only.contains(&p.index)) {
            p.replay(|b| {
                for r in records::parse(b).map(|(_, recs)| recs).unwrap_or_default() {
                    recovery.record(r.key.as_deref(), r.value.as_deref());
                }
            })?;
        }
        Ok(recovery.finish())
    }
}
