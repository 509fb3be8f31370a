//! The replica state of one partition this broker hosts: its log, the leader epoch,
//! the high watermark and the producers' idempotence state. `replica.rs` holds what
//! replication adds: followers' progress on the leader, the follower's own appends
//! and truncation.

pub mod fetch_session;
mod internal;
mod manager;
mod relocate;
mod replica;
#[cfg(test)]
mod replica_tests;
mod topic;
pub mod watchers;

pub use internal::InternalPartitions;
pub use manager::ReplicaManager;
pub use relocate::FutureReplica;
pub use replica::{IsrChange, LeaderProgress, ReplicaSet};
pub use topic::Topic;

use std::path::Path;

use parking_lot::Mutex;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::log::batch::{self, BatchHeader};
use crate::log::control;
use crate::log::producers::{Aborted, Check, ProducerStates};
use crate::log::{Log, LogConfig};

/// Settings a partition applies to produce requests, from its topic config.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendConfig {
    pub max_message_bytes: usize,
    pub log_append_time: bool,
    pub min_insync_replicas: i32,
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    /// Compacted topics refuse records without keys.
    pub compacted: bool,
}

impl Default for AppendConfig {
    fn default() -> Self {
        AppendConfig {
            max_message_bytes: 1_048_588,
            log_append_time: false,
            min_insync_replicas: 1,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            compacted: false,
        }
    }
}

/// Where an appended batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    /// The batch's last offset (for a duplicate, the original's base offset).
    pub last_offset: i64,
    /// The broker's time when the topic uses LogAppendTime, else -1.
    pub log_append_time: i64,
    pub log_start_offset: i64,
}

/// What a fetch of one partition returns.
#[derive(Debug, Default)]
pub struct FetchData {
    pub records: Vec<u8>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    /// For read_committed: aborted transactions overlapping the records returned.
    pub aborted: Vec<Aborted>,
}

/// A consumer fetch answered with a file range instead of bytes.
#[derive(Debug, Default)]
pub struct SliceData {
    pub slice: Option<crate::log::FileSlice>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub aborted: Vec<Aborted>,
}

/// Mutable state, behind the partition's lock.
pub struct State {
    pub log: Log,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub producers: ProducerStates,
    pub append_config: AppendConfig,
    /// Aborted transactions, oldest first (the "transaction index").
    pub aborted: Vec<Aborted>,
    /// Log end offset at which `producers` was last written to disk.
    snapshot_offset: i64,
    /// Who leads and who is in sync, as the controller last said.
    pub replicas: ReplicaSet,
    /// Where each leader epoch starts in this log.
    pub epochs: crate::log::epochs::EpochCache,
    /// On the leader: each follower's progress.
    followers: std::collections::HashMap<i32, replica::Follower>,
    /// On the leader: followers asked to be added to the ISR, not yet decided.
    pending_isr: Vec<i32>,
    /// On a follower: the leader's high watermark at the last fetch minus this log's end
    /// (Kafka's fetcher lag), 0 until a fetch answers.
    follower_lag: i64,
}

impl State {
    /// Whether the answer to a fetch made as a follower in leader epoch `fetched_in` may
    /// still be applied: not once this broker leads, nor after the epoch moved on (the
    /// answer may come from a deposed leader, or predate a truncation), as Kafka's fetcher
    /// drops responses whose epoch no longer matches the partition's.
    pub(crate) fn check_follows_in(&self, fetched_in: i32) -> Result<()> {
        if self.replicas.is_leader() {
            return Err(Error::NotLeaderOrFollower);
        }
        if fetched_in != self.leader_epoch {
            return Err(Error::FencedLeaderEpoch(fetched_in));
        }
        Ok(())
    }

    /// The last stable offset: below the oldest open transaction, and never past the HW.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers.first_unstable_offset().map_or(self.high_watermark, |o| o.min(self.high_watermark))
    }

    fn note_aborted(&mut self, a: Aborted) -> Result<()> {
        if self.aborted.iter().any(|x| x.last == a.last) {
            return Ok(());
        }
        self.aborted.push(a);
        let path = self.log.dir().join(ABORTED_FILE);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&self.aborted).map_err(|e| Error::Storage(e.to_string()))?)?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }
}

/// File holding the partition's aborted transactions.
const ABORTED_FILE: &str = "aborted-txns.json";

/// One partition.
pub struct Partition {
    pub topic: String,
    pub index: i32,
    pub topic_id: Uuid,
    state: Mutex<State>,
    /// Woken whenever the high watermark moves or leadership changes (acks=all waits on it).
    hw_moved: tokio::sync::Notify,
    /// Fetches waiting for this partition's log, high watermark or leadership to change.
    watchers: watchers::Watchers,
    /// The topic's traffic counters, looked up once here so appends and fetches only add.
    pub stats: crate::stats::TopicStats,
    /// Held while the log's files are rewritten outside the state lock (a move to another
    /// log dir, compaction), so that those never overlap.
    relocating: Mutex<()>,
    /// The copy a move to another log dir is building (AlterReplicaLogDirs), if any.
    future: Mutex<Option<FutureReplica>>,
}

/// File with the producer state snapshot, in the partition directory.
const PRODUCER_SNAPSHOT: &str = "producer-state.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Snapshot {
    offset: i64,
    states: ProducerStates,
}

/// Producer state as of the log end: from a snapshot if one fits, then replaying the
/// batches after it. Returns the state, where replay began, and aborted transactions seen.
fn load_producers(log: &Log, snapshot: Option<Snapshot>) -> Result<(ProducerStates, i64, Vec<Aborted>)> {
    let leo = log.log_end_offset();
    let (mut producers, from) = match snapshot {
        Some(s) if s.offset <= leo && s.offset >= log.log_start_offset() => (s.states, s.offset),
        _ => (ProducerStates::default(), log.log_start_offset()),
    };
    let mut replayed = Vec::new();
    for h in log.headers_from(from)? {
        if h.base_offset >= from {
            let abort = h.is_control()
                && log.read(h.base_offset, leo, 1 << 16, true).ok().and_then(|r| control::marker_type(&r.bytes)) == Some(false);
            replayed.extend(producers.record(&h, abort));
        }
    }
    Ok((producers, from, replayed))
}

impl Partition {
    /// Opens the partition's log in `dir` and rebuilds its producer state.
    pub fn open(
        topic: &str,
        index: i32,
        topic_id: Uuid,
        dir: &Path,
        log_config: LogConfig,
        append_config: AppendConfig,
        clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<Partition> {
        let log = Log::open(dir, log_config, clean_shutdown, now_ms)?;
        let leo = log.log_end_offset();
        let snapshot = std::fs::read(dir.join(PRODUCER_SNAPSHOT)).ok().and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok());
        let (producers, from, replayed) = load_producers(&log, snapshot)?;
        let aborted: Vec<Aborted> =
            std::fs::read(dir.join(ABORTED_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        let mut epochs = crate::log::epochs::EpochCache::open(dir);
        if epochs.is_empty() && leo > log.log_start_offset() {
            // A log from before the cache existed: rebuild it from the batches.
            for h in log.headers_from(log.log_start_offset())? {
                epochs.assign(h.partition_leader_epoch, h.base_offset)?;
            }
        }
        let mut state = State {
            // Not the log end: the tail may never have been committed (a leader that died
            // before its followers fetched it). The leader's fetch answers, or the ISR's
            // progress once this broker leads, move it up from here.
            high_watermark: log.log_start_offset(),
            log,
            leader_epoch: 0,
            producers,
            append_config,
            aborted,
            snapshot_offset: from,
            replicas: ReplicaSet::default(),
            epochs,
            followers: Default::default(),
            pending_isr: Vec::new(),
            follower_lag: 0,
        };
        for a in replayed {
            state.note_aborted(a)?;
        }
        // Replaying opened the segment files; an idle partition holds no handles.
        state.log.close_idle_files(i64::MAX, 0);
        Ok(Partition {
            topic: topic.to_string(),
            index,
            topic_id,
            state: Mutex::new(state),
            hw_moved: tokio::sync::Notify::new(),
            watchers: Default::default(),
            stats: crate::stats::topic(topic),
            relocating: Mutex::new(()),
            future: Mutex::new(None),
        })
    }

    /// After the leader's log grew: the high watermark may move, and the fetches waiting
    /// here (followers, for the new batch) wake. Every leader append ends here.
    fn leader_appended(&self, st: &mut State) {
        self.advance_hw(st);
        self.watchers.wake();
    }

    /// Registers a fetch that waits for this partition to change (see [`watchers::Watchers::watch`]).
    pub fn watch(&self, waiter: &std::sync::Arc<tokio::sync::Notify>) {
        self.watchers.watch(waiter);
    }

    /// Runs `f` with the partition's state locked.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock())
    }

    /// Validates one produce request's records and appends them.
    pub fn append(&self, records: &[u8], acks: i16, now_ms: i64) -> Result<AppendInfo> {
        let ranges = batch::split(records)?;
        if ranges.len() != 1 {
            return Err(Error::InvalidRecord(format!("produce requests must hold exactly one record batch, not {}", ranges.len())));
        }
        let mut st = self.state.lock();
        st.replicas.check_leader()?;
        let cfg = st.append_config.clone();
        if records.len() > cfg.max_message_bytes {
            return Err(Error::MessageTooLarge { size: records.len(), max: cfg.max_message_bytes });
        }
        let h = batch::validate(records)?;
        batch::check_produced(&h)?;
        if h.is_control() {
            return Err(Error::InvalidRecord("clients may not write control batches".into()));
        }

        if !cfg.log_append_time {
            check_timestamp(&h, &cfg, now_ms)?;
        }
        if cfg.compacted {
            let keyless = crate::log::cleaner::keyless_records(records)?;
            if !keyless.is_empty() {
                let message =
                    format!("Compacted topic cannot accept message without key in topic partition {}-{}.", self.topic, self.index);
                return Err(Error::InvalidRecords { indexes: keyless, message });
            }
        }
        if acks == -1 && (st.replicas.isr.len() as i32) < cfg.min_insync_replicas {
            return Err(Error::NotEnoughReplicas);
        }
        if h.has_producer_id() {
            if let Check::Duplicate(base_offset) = st.producers.check(&h)? {
                // acks=all waits for the original's first offset: its batch is all or nothing.
                return Ok(AppendInfo {
                    base_offset,
                    last_offset: base_offset,
                    log_append_time: -1,
                    log_start_offset: st.log.log_start_offset(),
                });
            }
        }
        let base_offset = st.log.log_end_offset();
        let epoch = st.leader_epoch;
        st.epochs.assign(epoch, base_offset)?;
        let (h, log_append_time) = if cfg.log_append_time {
            // The CRC covers the append time: the whole batch is rewritten.
            let mut bytes = records.to_vec();
            batch::assign_offset(&mut bytes, base_offset, epoch);
            batch::set_log_append_time(&mut bytes, now_ms);
            let h = BatchHeader::parse(&bytes)?;
            st.log.append(&bytes, &h, now_ms)?;
            (h, now_ms)
        } else {
            // Offset and epoch lie outside the CRC: only the header is rewritten, and the
            // records go from the request to the page cache without another copy.
            let mut head = [0u8; batch::HEADER_LEN];
            head.copy_from_slice(&records[..batch::HEADER_LEN]);
            batch::assign_offset(&mut head, base_offset, epoch);
            let h = BatchHeader { base_offset, partition_leader_epoch: epoch, ..h };
            st.log.append_parts(&head, &records[batch::HEADER_LEN..], &h, now_ms)?;
            (h, -1)
        };
        st.producers.record(&h, false);
        self.leader_appended(&mut st);
        self.stats.bytes_in.inc_by(records.len() as u64);
        self.stats.records_in.inc_by(h.records_count.max(0) as u64);
        Ok(AppendInfo { base_offset, last_offset: h.last_offset(), log_append_time, log_start_offset: st.log.log_start_offset() })
    }

    /// Appends a batch the broker itself built (internal topics): no client checks.
    pub fn append_internal(&self, batch: &[u8], now_ms: i64) -> Result<i64> {
        let mut st = self.state.lock();
        st.replicas.check_leader()?;
        let base_offset = st.log.log_end_offset();
        let mut bytes = batch.to_vec();
        batch::assign_offset(&mut bytes, base_offset, st.leader_epoch);
        let epoch = st.leader_epoch;
        st.epochs.assign(epoch, base_offset)?;
        let h = batch::validate(&bytes)?;
        st.log.append(&bytes, &h, now_ms)?;
        st.producers.record(&h, false);
        self.leader_appended(&mut st);
        Ok(base_offset)
    }

    /// The fetch path for clients: the same as [`Partition::fetch_isolated`], but the
    /// records stay in the segment file until the socket takes them.
    /// `from_follower`: a follower may answer too (KIP-392), up to its own high watermark.
    pub fn fetch_slice(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
        leader_epoch: i32,
        read_committed: bool,
        from_follower: bool,
    ) -> Result<SliceData> {
        let st = self.state.lock();
        if !(from_follower && st.replicas.leader >= 0) {
            st.replicas.check_leader()?;
        }
        check_epoch(leader_epoch, st.leader_epoch)?;
        let lso = st.last_stable_offset();
        let upper = if read_committed { lso } else { st.high_watermark };
        let slice = st.log.read_slice(offset, upper, max_bytes, min_one)?;
        let aborted = match (&slice, read_committed) {
            (Some(s), true) => st.aborted.iter().filter(|a| a.last >= offset && a.first <= s.last_offset).copied().collect(),
            _ => vec![],
        };
        Ok(SliceData {
            slice,
            high_watermark: st.high_watermark,
            last_stable_offset: lso,
            log_start_offset: st.log.log_start_offset(),
            aborted,
        })
    }

    /// The fetch path for followers: records up to the log end, not the high watermark.
    /// `max_bytes` 0 reads nothing (just the offsets).
    pub fn fetch_slice_for_follower(&self, offset: i64, max_bytes: usize, min_one: bool, leader_epoch: i32) -> Result<SliceData> {
        let st = self.state.lock();
        st.replicas.check_leader()?;
        check_epoch(leader_epoch, st.leader_epoch)?;
        let leo = st.log.log_end_offset();
        let slice = if max_bytes == 0 && !min_one { None } else { st.log.read_slice(offset, leo, max_bytes, min_one)? };
        Ok(SliceData {
            slice,
            high_watermark: st.high_watermark,
            last_stable_offset: st.last_stable_offset(),
            log_start_offset: st.log.log_start_offset(),
            aborted: vec![],
        })
    }

    /// Writes a transaction marker for `pid` and ends its transaction here.
    /// `transaction_version` is the marker's, as WriteTxnMarkers v2 declares it (0 before).
    pub fn write_marker(&self, pid: i64, epoch: i16, commit: bool, transaction_version: i8, now_ms: i64) -> Result<i64> {
        let mut st = self.state.lock();
        st.replicas.check_leader()?;
        if let Some(e) = st.producers.producers.get(&pid) {
            // A zombie coordinator's marker, from before the producer was fenced. A TV2
            // coordinator bumps the epoch before it writes markers (KIP-1228), so a TV2
            // marker must be newer than the producer's epoch, unless it is the retry of one
            // already written (same epoch, and no transaction open any more).
            let stale = if transaction_version >= 2 {
                epoch < e.epoch || (epoch == e.epoch && e.txn_first_offset.is_some())
            } else {
                epoch < e.epoch
            };
            if stale {
                return Err(Error::InvalidProducerEpoch { got: epoch, current: e.epoch });
            }
        }
        let base_offset = st.log.log_end_offset();
        let mut bytes = control::build(pid, epoch, commit, 0, now_ms);
        batch::assign_offset(&mut bytes, base_offset, st.leader_epoch);
        let epoch = st.leader_epoch;
        st.epochs.assign(epoch, base_offset)?;
        let h = batch::validate(&bytes)?;
        st.log.append(&bytes, &h, now_ms)?;
        if let Some(a) = st.producers.record(&h, !commit) {
            st.note_aborted(a)?;
        }
        self.leader_appended(&mut st);
        Ok(base_offset)
    }

    /// Feeds every batch from the log start to the log end to `f`: how a coordinator
    /// rebuilds its state. Up to the log end, not the high watermark: a new leader holds
    /// everything its ISR had, even what the HW has not caught up with yet.
    pub fn replay(&self, mut f: impl FnMut(&[u8])) -> Result<()> {
        let mut offset = self.with_state(|s| s.log.log_start_offset());
        loop {
            let data = match self.with_state(|s| s.log.read(offset, s.log.log_end_offset(), 4 << 20, true)) {
                Ok(d) => d.bytes,
                Err(Error::OffsetOutOfRange(_)) => return Ok(()),
                Err(e) => return Err(e),
            };
            if data.is_empty() {
                return Ok(());
            }
            for b in crate::log::records::batches(&data) {
                let Ok(h) = batch::BatchHeader::parse(b) else { return Ok(()) };
                offset = h.last_offset() + 1;
                f(b);
            }
        }
    }

    /// Does `pid` at `epoch` have a transaction open on this partition? Then the
    /// coordinator has already verified that the partition belongs to it.
    pub fn in_txn(&self, pid: i64, epoch: i16) -> bool {
        self.state.lock().producers.producers.get(&pid).is_some_and(|e| e.epoch == epoch && e.txn_first_offset.is_some())
    }

    /// Reads from `offset` for a consumer: below the high watermark, or below the
    /// last stable offset for read_committed (with the aborted transactions in range).
    pub fn fetch(&self, offset: i64, max_bytes: usize, min_one: bool, leader_epoch: i32) -> Result<FetchData> {
        self.fetch_isolated(offset, max_bytes, min_one, leader_epoch, false)
    }

    pub fn fetch_isolated(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
        leader_epoch: i32,
        read_committed: bool,
    ) -> Result<FetchData> {
        let st = self.state.lock();
        st.replicas.check_leader()?;
        check_epoch(leader_epoch, st.leader_epoch)?;
        let lso = st.last_stable_offset();
        let upper = if read_committed { lso } else { st.high_watermark };
        let r = st.log.read(offset, upper, max_bytes, min_one)?;
        let aborted = if read_committed && !r.bytes.is_empty() {
            let end =
                crate::log::records::batches(&r.bytes).last().and_then(|b| BatchHeader::parse(b).ok()).map_or(offset, |h| h.last_offset());
            st.aborted.iter().filter(|a| a.last >= offset && a.first <= end).copied().collect()
        } else {
            vec![]
        };
        Ok(FetchData {
            records: r.bytes,
            high_watermark: st.high_watermark,
            last_stable_offset: lso,
            log_start_offset: st.log.log_start_offset(),
            aborted,
        })
    }

    /// The offsets ListOffsets answers with, at timestamp `ts` (or a special negative one).
    /// Returns (timestamp, offset, leader epoch).
    pub fn list_offset(&self, ts: i64, leader_epoch: i32, read_committed: bool) -> Result<(i64, i64, i32)> {
        let st = self.state.lock();
        st.replicas.check_leader()?;
        check_epoch(leader_epoch, st.leader_epoch)?;
        let epoch = st.leader_epoch;
        Ok(match ts {
            -2 | -4 => (-1, st.log.log_start_offset(), epoch),
            -1 if read_committed => (-1, st.last_stable_offset(), epoch),
            -1 => (-1, st.high_watermark, epoch),
            -3 => match st.log.max_timestamp()? {
                Some((off, t)) if off < st.high_watermark => (t, off, epoch),
                _ => (-1, -1, -1),
            },
            t if t >= 0 => match st.log.offset_for_timestamp(t)? {
                Some((off, t)) if off < st.high_watermark => (t, off, epoch),
                _ => (-1, -1, -1),
            },
            // Tiered-storage markers: no remote tier here, so no offset.
            _ => (-1, -1, -1),
        })
    }

    /// Compacts the closed segments if enough of them is dirty. Returns bytes saved.
    pub fn compact(&self, now_ms: i64) -> Result<u64> {
        use crate::log::cleaner;
        // A move to another log dir is copying the files: compaction waits for the next turn.
        let Some(_files) = self.relocating.try_lock() else { return Ok(0) };
        let (cfg, segments, checkpoint, aborted, lso) = {
            let st = self.state.lock();
            let Some(cfg) = st.log.config.compact.clone() else { return Ok(0) };
            let segs = st.log.cleanable_segments(now_ms, cfg.min_compaction_lag_ms);
            (cfg, segs, st.log.cleaner_checkpoint(), st.aborted.clone(), st.last_stable_offset())
        };
        // Never compact past an open transaction: whether its records count isn't known yet.
        let segments: Vec<_> = segments.into_iter().take_while(|s| s.2 <= lso).collect();
        let total: u64 = segments.iter().map(|s| s.3).sum();
        let dirty: u64 = segments.iter().filter(|s| s.2 > checkpoint).map(|s| s.3).sum();
        if total == 0 || dirty == 0 || (dirty as f64) < cfg.min_cleanable_dirty_ratio * total as f64 {
            return Ok(0);
        }
        let paths: Vec<_> = segments.iter().map(|s| s.1.clone()).collect();
        let map = cleaner::build_offset_map(&paths, &aborted)?;
        let mut saved = 0u64;
        for (base, path, _, _) in &segments {
            let out = path.with_extension("log.cleaned");
            let (before, after) = cleaner::clean_segment(path, &out, &map, &aborted, &cfg, now_ms)?;
            saved += (before - after) as u64;
            self.state.lock().log.replace_segment(*base, &out)?;
        }
        let end = segments.last().map_or(checkpoint, |s| s.2);
        self.state.lock().log.set_cleaner_checkpoint(end)?;
        Ok(saved)
    }

    /// DeleteRecords: moves the log start offset to `offset` (-1: the high watermark).
    /// Returns the new low watermark.
    pub fn delete_records(&self, offset: i64) -> Result<i64> {
        let mut st = self.state.lock();
        let target = if offset == -1 { st.high_watermark } else { offset };
        if target < 0 || target > st.high_watermark {
            return Err(Error::OffsetOutOfRange(offset));
        }
        st.log.set_log_start_offset(target)?;
        st.log.delete_below_start()?;
        Ok(st.log.log_start_offset())
    }

    /// Writes the producer state to disk if it moved, so restarts don't rescan the log.
    pub fn snapshot_producers(&self) -> Result<()> {
        let mut st = self.state.lock();
        let leo = st.log.log_end_offset();
        if leo == st.snapshot_offset {
            return Ok(());
        }
        let snap = Snapshot { offset: leo, states: st.producers.clone() };
        let dir = st.log.dir().to_path_buf();
        let tmp = dir.join(format!("{PRODUCER_SNAPSHOT}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(&snap).map_err(|e| Error::Storage(e.to_string()))?)?;
        std::fs::rename(&tmp, dir.join(PRODUCER_SNAPSHOT))?;
        st.snapshot_offset = leo;
        Ok(())
    }

    pub fn high_watermark(&self) -> i64 {
        self.state.lock().high_watermark
    }

    pub fn leader_epoch(&self) -> i32 {
        self.state.lock().leader_epoch
    }
}

fn check_epoch(requested: i32, current: i32) -> Result<()> {
    match requested {
        -1 => Ok(()),
        e if e < current => Err(Error::FencedLeaderEpoch(e)),
        e if e > current => Err(Error::UnknownLeaderEpoch(e)),
        _ => Ok(()),
    }
}

fn check_timestamp(h: &BatchHeader, cfg: &AppendConfig, now_ms: i64) -> Result<()> {
    for ts in [h.base_timestamp, h.max_timestamp] {
        if ts < 0 {
            continue;
        }
        if ts > now_ms.saturating_add(cfg.timestamp_after_max_ms) || ts < now_ms.saturating_sub(cfg.timestamp_before_max_ms) {
            return Err(Error::InvalidTimestamp(format!("timestamp {ts} is out of the accepted range")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::tests::make_batch;

    fn open(dir: &Path, clean: bool) -> Partition {
        let p = Partition::open("t", 0, Uuid::nil(), dir, LogConfig::default(), AppendConfig::default(), clean, 1000).unwrap();
        let lead = crate::metadata::records::PartitionState {
            replicas: vec![1],
            isr: vec![1],
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            ..Default::default()
        };
        p.set_replica_state(&lead, 1);
        p
    }

    #[test]
    fn idempotent_state_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path(), true);
        let b = make_batch(2, 1000, 9, 0, 0);
        assert_eq!(p.append(&b, -1, 1000).unwrap().base_offset, 0);
        assert_eq!(p.append(&make_batch(1, 1000, -1, -1, -1), 1, 1000).unwrap().base_offset, 2);
        drop(p);
        let p = open(dir.path(), false);
        assert_eq!(p.append(&b, -1, 1000).unwrap().base_offset, 0, "a retry after restart is a duplicate");
        assert_eq!(p.high_watermark(), 3);
        p.snapshot_producers().unwrap();
        drop(p);
        let p = open(dir.path(), true);
        assert_eq!(p.append(&b, -1, 1000).unwrap().base_offset, 0);
        assert!(matches!(p.append(&make_batch(1, 1000, 9, 0, 5), -1, 1000), Err(Error::OutOfOrderSequence { .. })));
    }

    #[test]
    fn limits_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let p = open(dir.path(), true);
        p.with_state(|s| s.append_config.max_message_bytes = 80);
        assert!(matches!(p.append(&make_batch(20, 1000, -1, -1, -1), 1, 1000), Err(Error::MessageTooLarge { .. })));
        let mut two = make_batch(1, 1000, -1, -1, -1);
        two.extend(make_batch(1, 1000, -1, -1, -1));
        assert!(matches!(p.append(&two, 1, 1000), Err(Error::InvalidRecord(_))));
        assert!(matches!(p.fetch(5, 100, true, -1), Err(Error::OffsetOutOfRange(5))));
    }
}
