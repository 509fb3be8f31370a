//! Idempotent-producer state of one partition: each producer's epoch and its last
//! five batches, so retries are recognised and gaps refused.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::log::batch::BatchHeader;

/// How many recent batches per producer are remembered for duplicate detection (Kafka's 5).
pub const RETAINED_BATCHES: usize = 5;

/// One remembered batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchMeta {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub timestamp: i64,
}

/// What is known of one producer on this partition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProducerEntry {
    pub epoch: i16,
    pub batches: VecDeque<BatchMeta>,
    /// First offset of this producer's open transaction on this partition.
    #[serde(default)]
    pub txn_first_offset: Option<i64>,
}

/// An aborted transaction on this partition: its producer and offset range
/// (`last` is the abort marker's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aborted {
    pub producer_id: i64,
    pub first: i64,
    pub last: i64,
}

/// The outcome of checking a batch before it is appended.
#[derive(Debug, PartialEq, Eq)]
pub enum Check {
    /// Append it.
    Append,
    /// A retry of a batch already in the log, at this base offset.
    Duplicate(i64),
}

/// All producers seen on one partition.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProducerStates {
    pub producers: HashMap<i64, ProducerEntry>,
}

fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

impl ProducerStates {
    /// Decides what to do with an idempotent batch (one with a producer id).
    pub fn check(&self, h: &BatchHeader) -> Result<Check> {
        let Some(entry) = self.producers.get(&h.producer_id) else {
            // A producer we know nothing of (new, or its state expired): accept any sequence.
            return Ok(Check::Append);
        };
        if h.producer_epoch < entry.epoch {
            return Err(Error::InvalidProducerEpoch { got: h.producer_epoch, current: entry.epoch });
        }
        if h.producer_epoch > entry.epoch {
            // A new epoch must start its sequences again from zero.
            if h.base_sequence != 0 {
                return Err(Error::OutOfOrderSequence { got: h.base_sequence, expected: 0 });
            }
            return Ok(Check::Append);
        }
        if let Some(b) = entry.batches.iter().find(|b| b.first_seq == h.base_sequence && b.last_seq == h.last_sequence()) {
            return Ok(Check::Duplicate(b.first_offset));
        }
        let expected = entry.batches.back().map_or(0, |b| next_seq(b.last_seq));
        if h.base_sequence != expected {
            return Err(Error::OutOfOrderSequence { got: h.base_sequence, expected });
        }
        Ok(Check::Append)
    }

    /// Records a batch that is now in the log. For a transaction marker, returns the
    /// aborted range when it was an abort.
    pub fn record(&mut self, h: &BatchHeader, abort_marker: bool) -> Option<Aborted> {
        if !h.has_producer_id() {
            return None;
        }
        let entry = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch != entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        if h.is_control() {
            let first = entry.txn_first_offset.take();
            return match (abort_marker, first) {
                (true, Some(first)) => Some(Aborted { producer_id: h.producer_id, first, last: h.base_offset }),
                _ => None,
            };
        }
        if h.is_transactional() && entry.txn_first_offset.is_none() {
            entry.txn_first_offset = Some(h.base_offset);
        }
        if h.base_sequence < 0 {
            return None;
        }
        entry.batches.push_back(BatchMeta {
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset: h.base_offset,
            last_offset: h.last_offset(),
            timestamp: h.max_timestamp,
        });
        while entry.batches.len() > RETAINED_BATCHES {
            entry.batches.pop_front();
        }
        None
    }

    /// The first offset of the oldest open transaction, if any.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers.values().filter_map(|e| e.txn_first_offset).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(pid: i64, epoch: i16, seq: i32, n: i32, off: i64) -> BatchHeader {
        BatchHeader {
            base_offset: off,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: n - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: n,
        }
    }

    #[test]
    fn retries_gaps_and_epochs() {
        let mut s = ProducerStates::default();
        let a = hdr(7, 0, 0, 3, 100);
        assert_eq!(s.check(&a).unwrap(), Check::Append);
        s.record(&a, false);
        assert_eq!(s.check(&hdr(7, 0, 0, 3, 0)).unwrap(), Check::Duplicate(100));
        assert!(matches!(s.check(&hdr(7, 0, 5, 1, 0)), Err(Error::OutOfOrderSequence { expected: 3, .. })));
        s.record(&hdr(7, 0, 3, 1, 103), false);
        assert_eq!(s.check(&hdr(7, 0, 4, 1, 0)).unwrap(), Check::Append);
        s.record(&hdr(7, 1, 0, 1, 104), false);
        assert!(matches!(s.check(&hdr(7, 0, 4, 1, 0)), Err(Error::InvalidProducerEpoch { .. })));
        assert!(matches!(s.check(&hdr(7, 2, 3, 1, 0)), Err(Error::OutOfOrderSequence { .. })));
    }

    #[test]
    fn only_five_batches_are_remembered() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            s.record(&hdr(1, 0, i, 1, i as i64), false);
        }
        assert_eq!(s.check(&hdr(1, 0, 2, 1, 0)).unwrap(), Check::Duplicate(2));
        assert!(s.check(&hdr(1, 0, 1, 1, 0)).is_err());
    }
}
