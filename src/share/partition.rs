//! One share partition (KIP-932): which records of a topic partition a share group has
//! handed out, to whom, until when, and how often. A pure state machine like
//! [`crate::group::classic`]: the log's batches and the time come in as arguments.
//!
//! The in-flight window runs from the share-partition start offset (SPSO) to the end
//! offset (SPEO, one past the last record ever acquired). Below the SPSO every record is
//! done with; at or above the SPEO none has been handed out yet. Records in between are
//! kept one entry per offset, so the window's size bounds the memory it takes
//! (`group.share.partition.max.record.locks`).

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// What the group has done with one in-flight record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// Waiting to be acquired (new, released, or its lock ran out).
    Available,
    /// Handed to one member until its lock deadline.
    Acquired,
    /// Accepted: processed for good.
    Acknowledged,
    /// Rejected, out of deliveries, or never deliverable (aborted, control, gap).
    Archived,
}

impl RecordState {
    /// Kafka's persisted code for the state (`RecordState.id`).
    pub fn code(self) -> i8 {
        match self {
            RecordState::Available => 0,
            RecordState::Acquired => 1,
            RecordState::Acknowledged => 2,
            RecordState::Archived => 4,
        }
    }

    fn is_done(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

/// Acknowledgement types of ShareFetch/ShareAcknowledge (`AcknowledgeType` ids).
pub const ACK_GAP: i8 = 0;
pub const ACK_ACCEPT: i8 = 1;
pub const ACK_RELEASE: i8 = 2;
pub const ACK_REJECT: i8 = 3;
/// v2 (KIP-1222): the member keeps the record for another lock duration.
pub const ACK_RENEW: i8 = 4;

/// How a fetch counts its `MaxRecords` (ShareFetch v2's `ShareAcquireMode`, KIP-1206).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireMode {
    /// Whole log batches: the batch that reaches the limit is acquired to its end (v1's way).
    BatchOptimized,
    /// `MaxRecords` is a strict limit, even in the middle of a batch.
    RecordLimit,
}

impl AcquireMode {
    /// The mode with Kafka's id (`ShareAcquireMode.id`), if there is one.
    pub fn from_id(id: i8) -> Option<AcquireMode> {
        match id {
            0 => Some(AcquireMode::BatchOptimized),
            1 => Some(AcquireMode::RecordLimit),
            _ => None,
        }
    }
}

/// Checks one partition's acknowledgement batches as Kafka's request handler does
/// before any reaches the share partition: ranges in order and not overlapping, one type
/// or one per offset, each type known to the request's version (RENEW from v2 on, and
/// only in a request that says `IsRenewAck`). INVALID_REQUEST otherwise.
pub fn check_ack_batches(batches: &[(i64, i64, Vec<i8>)], renew_allowed: bool, is_renew_ack: bool) -> Result<()> {
    let max_type = if renew_allowed { ACK_RENEW } else { ACK_REJECT };
    let mut prev_last = -1;
    for (first, last, types) in batches {
        if first > last {
            return Err(Error::InvalidRequest(format!("acknowledgement batch {first}..{last} is empty")));
        }
        if *first < prev_last {
            return Err(Error::InvalidRequest(format!("acknowledgement batch at {first} overlaps the one ending at {prev_last}")));
        }
        if types.is_empty() || (types.len() > 1 && (last - first) != types.len() as i64 - 1) {
            return Err(Error::InvalidRequest(format!("{} acknowledge types for offsets {first}..={last}", types.len())));
        }
        if let Some(t) = types.iter().find(|t| !(0..=max_type).contains(*t)) {
            return Err(Error::InvalidRequest(format!("acknowledge type {t} is not valid here")));
        }
        if !is_renew_ack && types.contains(&ACK_RENEW) {
            return Err(Error::InvalidRequest("a RENEW acknowledgement needs IsRenewAck".into()));
        }
        prev_last = *last;
    }
    Ok(())
}

/// Where a new share partition starts (`share.auto.offset.reset`, a group config).
pub use crate::config::group::OffsetReset as AutoOffsetReset;

/// The settings a share partition runs with.
#[derive(Debug, Clone)]
pub struct ShareConfig {
    pub record_lock_duration_ms: i64,
    pub delivery_count_limit: i16,
    pub max_record_locks: i64,
    pub auto_offset_reset: AutoOffsetReset,
    pub read_committed: bool,
    /// `share.renew.acknowledge.enable`: may members RENEW their locks?
    pub renew_enabled: bool,
}

impl Default for ShareConfig {
    fn default() -> Self {
        ShareConfig {
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_record_locks: 2000,
            auto_offset_reset: AutoOffsetReset::Latest,
            read_committed: false,
            renew_enabled: true,
        }
    }
}

/// One in-flight record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub state: RecordState,
    pub delivery_count: i16,
    /// The member holding it while acquired.
    pub member: Option<String>,
    /// When an acquired record's lock runs out.
    pub deadline: i64,
}

/// A batch as the log holds it, as much as acquisition needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBatch {
    pub first: i64,
    pub last: i64,
    pub producer_id: i64,
    pub transactional: bool,
    pub control: bool,
}

/// An aborted transaction's range, from the partition's transaction index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first: i64,
    pub last: i64,
}

/// Consecutive offsets acquired with one delivery count, as ShareFetch returns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    pub first: i64,
    pub last: i64,
    pub delivery_count: i16,
}

/// A run of offsets in one state, the unit Kafka's share-group state is written in
/// (`__share_group_state`'s state batches): what a later durability step snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first: i64,
    pub last: i64,
    pub state: RecordState,
    pub delivery_count: i16,
}

/// One share partition's state.
#[derive(Debug, Clone, Default)]
pub struct SharePartition {
    start: i64,
    end: i64,
    records: BTreeMap<i64, InFlight>,
}

impl SharePartition {
    /// A share partition whose first record to hand out is `start`.
    pub fn new(start: i64) -> SharePartition {
        SharePartition { start, end: start, records: BTreeMap::new() }
    }

    /// A share partition as the share coordinator holds it: the start offset and the
    /// window's runs as (first, last, Kafka's state code, delivery count). Nothing is
    /// acquired after a restart or failover: acquired records are available again, or
    /// archived once delivered as often as allowed.
    pub fn restore(start: i64, batches: &[(i64, i64, i8, i16)], cfg: &ShareConfig) -> SharePartition {
        let mut sp = SharePartition::new(start);
        for &(first, last, code, count) in batches {
            let state = match code {
                2 => RecordState::Acknowledged,
                4 => RecordState::Archived,
                _ if count >= cfg.delivery_count_limit => RecordState::Archived,
                _ => RecordState::Available,
            };
            // The window never holds more than the cap, whatever a state write claimed.
            for o in first.max(start)..=last.min(start.saturating_add(cfg.max_record_locks) - 1) {
                sp.records.insert(o, InFlight { state, delivery_count: count, member: None, deadline: 0 });
                sp.end = sp.end.max(o + 1);
            }
        }
        sp.advance_start();
        sp
    }

    /// Where a new share partition starts, given the log's start and high watermark.
    /// `by_duration` takes the first offset `at(duration)` finds (a record at most that
    /// old), else the high watermark, as Kafka's ListOffsets by timestamp does.
    pub fn initial_offset(reset: AutoOffsetReset, log_start: i64, high_watermark: i64, at: impl FnOnce(i64) -> Option<i64>) -> i64 {
        match reset {
            AutoOffsetReset::Earliest => log_start,
            AutoOffsetReset::Latest => high_watermark,
            AutoOffsetReset::ByDuration(ms) => at(ms).map_or(high_watermark, |o| o.clamp(log_start, high_watermark)),
        }
    }

    /// The share-partition start offset.
    pub fn start_offset(&self) -> i64 {
        self.start
    }

    /// One past the last offset ever acquired.
    pub fn end_offset(&self) -> i64 {
        self.end
    }

    /// The in-flight record at `offset`, if it is in the window.
    pub fn record(&self, offset: i64) -> Option<&InFlight> {
        self.records.get(&offset)
    }

    /// Records currently acquired by anyone.
    pub fn acquired_count(&self) -> usize {
        self.records.values().filter(|r| r.state == RecordState::Acquired).count()
    }

    /// The offset the next fetch should read the log from: the first available record in
    /// the window, else the end. None when the window is full and nothing in it is
    /// available, so there is nothing to read.
    pub fn next_fetch_offset(&self, cfg: &ShareConfig) -> Option<i64> {
        if let Some((o, _)) = self.records.iter().find(|(_, r)| r.state == RecordState::Available) {
            return Some(*o);
        }
        (self.end - self.start < cfg.max_record_locks).then_some(self.end)
    }

    /// The log's start moved past records (retention, DeleteRecords): they can never be
    /// delivered, so the window starts there.
    pub fn advance_to_log_start(&mut self, log_start: i64) {
        if log_start <= self.start {
            return;
        }
        self.records = self.records.split_off(&log_start);
        self.start = log_start;
        self.end = self.end.max(log_start);
    }

    /// Acquires for `member` what `batches` (read from the log at
    /// [`Self::next_fetch_offset`]) hold that is available, up to `max_records` (as `mode`
    /// counts it) and the in-flight cap. Aborted transactional records (read_committed) and
    /// control records are archived rather than handed out.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &mut self,
        member: &str,
        batches: &[LogBatch],
        aborted: &[AbortedTxn],
        max_records: usize,
        mode: AcquireMode,
        cfg: &ShareConfig,
        now: i64,
    ) -> Vec<Acquired> {
        let mut out: Vec<Acquired> = Vec::new();
        let mut taken = 0usize;
        let deadline = now + cfg.record_lock_duration_ms;
        'batches: for b in batches {
            // Batch-optimized: the batch that reached the limit was acquired to its end.
            if taken >= max_records {
                break;
            }
            let undeliverable = b.control
                || (cfg.read_committed
                    && b.transactional
                    && aborted.iter().any(|a| a.producer_id == b.producer_id && a.first <= b.first && b.last <= a.last));
            for offset in b.first.max(self.start)..=b.last {
                if taken >= max_records && mode == AcquireMode::RecordLimit {
                    break 'batches;
                }
                if offset >= self.end {
                    if self.end - self.start >= cfg.max_record_locks {
                        break 'batches;
                    }
                    // Offsets the log skipped (compaction) stay out of the window: they
                    // have no entry and count as done.
                    self.end = offset + 1;
                    let r = InFlight { state: RecordState::Available, delivery_count: 0, member: None, deadline: 0 };
                    self.records.insert(offset, r);
                }
                let Some(r) = self.records.get_mut(&offset) else { continue };
                if r.state != RecordState::Available {
                    continue;
                }
                if undeliverable {
                    r.state = RecordState::Archived;
                    continue;
                }
                r.state = RecordState::Acquired;
                r.delivery_count = r.delivery_count.saturating_add(1);
                r.member = Some(member.to_string());
                r.deadline = deadline;
                taken += 1;
                match out.last_mut() {
                    Some(a) if a.last + 1 == offset && a.delivery_count == r.delivery_count => a.last = offset,
                    _ => out.push(Acquired { first: offset, last: offset, delivery_count: r.delivery_count }),
                }
            }
        }
        self.advance_start();
        out
    }

    /// Applies one acknowledgement batch of `member` at `now`: `types` holds one type for
    /// the whole range or one per offset. All or nothing: any offset that is not in the
    /// window, or not acquired by this member, fails the batch with INVALID_RECORD_STATE,
    /// as does a RENEW where the group does not allow it. RENEW keeps the record acquired
    /// by the member with a fresh lock, its delivery count unchanged.
    pub fn acknowledge(&mut self, member: &str, first: i64, last: i64, types: &[i8], cfg: &ShareConfig, now: i64) -> Result<()> {
        if first > last || first < 0 {
            return Err(Error::InvalidRequest(format!("acknowledgement range {first}..{last} is empty")));
        }
        let n = last - first + 1;
        if types.is_empty() || (types.len() != 1 && types.len() as i64 != n) {
            return Err(Error::InvalidRequest(format!("{} acknowledge types for {n} offsets", types.len())));
        }
        if let Some(t) = types.iter().find(|t| !(ACK_GAP..=ACK_RENEW).contains(*t)) {
            return Err(Error::InvalidRequest(format!("acknowledge type {t} is not known")));
        }
        if first < self.start || last >= self.end {
            return Err(Error::InvalidRecordState(format!("offsets {first}..={last} are outside the in-flight window")));
        }
        let type_of = |o: i64| if types.len() == 1 { types[0] } else { types[(o - first) as usize] };
        for o in first..=last {
            match self.records.get(&o) {
                // An offset the log never had (compaction) may only be called a gap.
                None if type_of(o) == ACK_GAP => {}
                Some(r) if r.state == RecordState::Acquired && r.member.as_deref() == Some(member) => {}
                _ => return Err(Error::InvalidRecordState(format!("record {o} is not acquired by member {member}"))),
            }
            if type_of(o) == ACK_RENEW && !cfg.renew_enabled {
                return Err(Error::InvalidRecordState("Renewing acquisition locks is not enabled for the group.".into()));
            }
        }
        for o in first..=last {
            let Some(r) = self.records.get_mut(&o) else { continue };
            match type_of(o) {
                ACK_ACCEPT => r.state = RecordState::Acknowledged,
                ACK_RELEASE => release(r, cfg),
                ACK_RENEW => r.deadline = now + cfg.record_lock_duration_ms,
                _ => r.state = RecordState::Archived,
            }
            if r.state != RecordState::Acquired {
                r.member = None;
            }
        }
        self.advance_start();
        Ok(())
    }

    /// Makes available again every record whose lock ran out by `now`. Returns how many.
    pub fn expire_locks(&mut self, now: i64, cfg: &ShareConfig) -> usize {
        let mut n = 0;
        for r in self.records.values_mut() {
            if r.state == RecordState::Acquired && r.deadline <= now {
                release(r, cfg);
                n += 1;
            }
        }
        if n > 0 {
            self.advance_start();
        }
        n
    }

    /// Gives back every record `member` holds (it left the group or closed its session).
    pub fn release_member(&mut self, member: &str, cfg: &ShareConfig) -> usize {
        let mut n = 0;
        for r in self.records.values_mut() {
            if r.state == RecordState::Acquired && r.member.as_deref() == Some(member) {
                release(r, cfg);
                n += 1;
            }
        }
        if n > 0 {
            self.advance_start();
        }
        n
    }

    /// The window as runs of equal state and delivery count, for persisting.
    pub fn state_batches(&self) -> Vec<StateBatch> {
        let mut out: Vec<StateBatch> = Vec::new();
        for (o, r) in &self.records {
            match out.last_mut() {
                Some(b) if b.last + 1 == *o && b.state == r.state && b.delivery_count == r.delivery_count => b.last = *o,
                _ => out.push(StateBatch { first: *o, last: *o, state: r.state, delivery_count: r.delivery_count }),
            }
        }
        out
    }

    /// Drops the done records at the front of the window.
    fn advance_start(&mut self) {
        while self.start < self.end {
            match self.records.get(&self.start) {
                Some(r) if !r.state.is_done() => break,
                Some(_) => {
                    self.records.remove(&self.start);
                }
                None => {}
            }
            self.start += 1;
        }
        debug_assert!(self.records.keys().all(|o| *o >= self.start && *o < self.end));
    }
}

/// A released record comes back, unless it has been delivered as often as allowed.
fn release(r: &mut InFlight, cfg: &ShareConfig) {
    r.member = None;
    r.state = if r.delivery_count >= cfg.delivery_count_limit { RecordState::Archived } else { RecordState::Available };
}

#[cfg(test)]
#[path = "partition_tests.rs"]
mod tests;
