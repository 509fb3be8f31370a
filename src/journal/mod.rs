//! The event journal: the metadata log read back as what happened to the cluster
//! (brokers fenced, leaders elected, ISRs shrunk, topics created, ...), newest last.
//!
//! [`model`] turns each applied record into events, judged against the image just before
//! it; every node applies the same log, so every node has the same metadata events with
//! the same [`Event::seq`] (`offset × 1 000 000 + index` within the batch). The one kind
//! that are not records are node-local, numbered one past the event before it on this
//! node: `controller_changed`, from the Raft leader changes this node saw, and
//! `fault_injected`/`fault_cleared`, from this node's fault registry, and `scenario_step`,
//! the narration of a scenario this node's console started.
//!
//! [`Journal`] keeps the last [`CAPACITY`] events in memory. A restarted node rebuilds it
//! by replaying the retained metadata log; after a snapshot, its history starts there.

pub mod model;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::watch;

pub use model::{apply_batch, Event, Kind, ResourceType};

/// Events kept per node.
pub const CAPACITY: usize = 10_000;

/// A bounded ring of events, in seq order, that readers can wait on.
pub struct Journal {
    ring: Mutex<VecDeque<Event>>,
    capacity: usize,
    /// The last seq pushed, so followers wake on news.
    latest: watch::Sender<u64>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new(CAPACITY)
    }
}

impl Journal {
    /// An empty journal keeping at most `capacity` events.
    pub fn new(capacity: usize) -> Journal {
        Journal { ring: Mutex::new(VecDeque::new()), capacity: capacity.max(1), latest: watch::channel(0).0 }
    }

    /// Appends events in order; one not newer than the last is dropped, so the ring stays
    /// sorted (a batch applied twice adds nothing).
    pub fn push(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let last = {
            let mut ring = self.ring.lock();
            for e in events {
                if ring.back().is_some_and(|b| b.seq >= e.seq) {
                    continue;
                }
                if ring.len() == self.capacity {
                    ring.pop_front();
                }
                ring.push_back(e);
            }
            ring.back().map_or(0, |e| e.seq)
        };
        self.latest.send_if_modified(|l| std::mem::replace(l, last) != last);
    }

    /// Records that this node saw the Raft leader become `controller_id` in term `epoch`.
    pub fn controller_changed(&self, controller_id: i32, epoch: u64, now_ms: i64) {
        self.push_local(Kind::ControllerChanged { controller_id, epoch }, now_ms);
    }

    /// Appends a node-local event (one that is no metadata record), numbered one past the
    /// newest event under the ring's lock, so two at once never take the same seq; the
    /// next metadata batch's seqs (a whole offset further) still sort after it.
    pub fn push_local(&self, kind: Kind, now_ms: i64) {
        let last = {
            let mut ring = self.ring.lock();
            let seq = ring.back().map_or(0, |e| e.seq) + 1;
            if ring.len() == self.capacity {
                ring.pop_front();
            }
            ring.push_back(Event { seq, time_ms: Some(now_ms), kind });
            seq
        };
        self.latest.send_if_modified(|l| std::mem::replace(l, last) != last);
    }

    /// Records a change to this node's faults (`fault_injected`, `fault_cleared`).
    pub fn fault_changed(&self, change: &crate::fault::Change, now_ms: i64) {
        let kind = match change {
            crate::fault::Change::Injected(f) => {
                Kind::FaultInjected { fault_id: f.id, fault: f.spec.kind().into(), description: f.spec.describe() }
            }
            crate::fault::Change::Cleared(f, why) => {
                Kind::FaultCleared { fault_id: f.id, fault: f.spec.kind().into(), description: f.spec.describe(), reason: (*why).into() }
            }
        };
        self.push_local(kind, now_ms);
    }

    /// The seq of the newest event (0 when empty).
    pub fn last_seq(&self) -> u64 {
        self.ring.lock().back().map_or(0, |e| e.seq)
    }

    /// Events with seq above `after`, oldest first, at most `limit` of them (the first ones).
    pub fn since(&self, after: u64, limit: usize) -> Vec<Event> {
        let ring = self.ring.lock();
        let start = ring.partition_point(|e| e.seq <= after);
        ring.range(start..).take(limit).cloned().collect()
    }

    /// The newest `limit` events, oldest first.
    pub fn newest(&self, limit: usize) -> Vec<Event> {
        let ring = self.ring.lock();
        let start = ring.len().saturating_sub(limit);
        ring.range(start..).cloned().collect()
    }

    /// Changes whenever events are pushed (its value is the newest seq).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.latest.subscribe()
    }
}
