//! Replication state of a partition: on the leader, each follower's log end offset and
//! when it was last caught up, which move the high watermark and decide the ISR; on a
//! follower, appending the leader's batches as they are and truncating a divergent tail.
//!
//! Nothing here reads a clock or a socket: times come in as arguments.

use super::{load_producers, Partition, State};
use crate::error::{Error, Result};
use crate::log::batch::{self, BatchHeader};
use crate::log::control;
use crate::metadata::records::PartitionState;

/// The controller's assignment of a partition, seen from this broker.
#[derive(Debug, Clone)]
pub struct ReplicaSet {
    pub me: i32,
    /// -1 when the partition has no leader.
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub partition_epoch: i32,
}

impl Default for ReplicaSet {
    /// Before the controller has spoken: nobody leads.
    fn default() -> Self {
        ReplicaSet { me: -1, leader: -1, replicas: Vec::new(), isr: Vec::new(), partition_epoch: -1 }
    }
}

impl ReplicaSet {
    pub fn is_leader(&self) -> bool {
        self.leader >= 0 && self.leader == self.me
    }

    /// Clients may only produce to and fetch from the leader.
    pub fn check_leader(&self) -> Result<()> {
        if self.is_leader() {
            Ok(())
        } else if self.leader < 0 {
            Err(Error::LeaderNotAvailable)
        } else {
            Err(Error::NotLeaderOrFollower)
        }
    }
}

/// A follower as its leader sees it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Follower {
    /// Its log end offset: the offset it last fetched from (-1 until it fetches).
    leo: i64,
    /// When it was last fully caught up with the leader.
    caught_up_ms: i64,
    /// The leader's log end offset and the time at its previous fetch.
    prev_leader_leo: i64,
    prev_fetch_ms: i64,
}

/// A leader's view of its replicas' progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderProgress {
    pub log_end_offset: i64,
    pub high_watermark: i64,
    /// (broker id, log end offset), -1 for a follower that has not fetched yet.
    pub followers: Vec<(i32, i64)>,
}

/// An ISR change the leader wants the controller to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<i32>,
}

impl Partition {
    /// Takes the controller's view of this partition: leader, epochs, replicas and ISR.
    pub fn set_replica_state(&self, ps: &PartitionState, me: i32) {
        self.set_replica_state_at(ps, me, crate::clock::now_ms())
    }

    /// [`Partition::set_replica_state`] at a given time (a new leader's followers' lag
    /// allowance starts then): simulations run on their own clock.
    pub fn set_replica_state_at(&self, ps: &PartitionState, me: i32, now_ms: i64) {
        let mut st = self.state.lock();
        let became_leader = ps.leader == me && (!st.replicas.is_leader() || st.leader_epoch != ps.leader_epoch);
        crate::invariant!(
            ps.leader_epoch >= st.leader_epoch,
            "{}-{}: leader epoch {} after {}",
            self.topic,
            self.index,
            ps.leader_epoch,
            st.leader_epoch
        );
        if ps.leader_epoch < st.leader_epoch {
            // As Kafka's brokers ignore a LeaderAndIsr with a stale epoch: acting on it could
            // make this broker lead beside the leader of the newer epoch.
            return;
        }
        if ps.partition_epoch != st.replicas.partition_epoch {
            // The controller decided something about this partition: pending is settled.
            st.pending_isr.clear();
        }
        // Kafka counts ISR changes on the leader; here, on the committed ISR this broker is
        // told of while it leads, so the controller's shrinks (a fenced follower) count too.
        if st.replicas.is_leader() && ps.leader == me {
            let (shrunk, expanded) = isr_moved(&st.replicas.isr, &ps.isr);
            if shrunk {
                crate::stats::isr_shrunk();
            }
            if expanded {
                crate::stats::isr_expanded();
            }
        }
        st.leader_epoch = ps.leader_epoch;
        st.replicas =
            ReplicaSet { me, leader: ps.leader, replicas: ps.replicas.clone(), isr: ps.isr.clone(), partition_epoch: ps.partition_epoch };
        if became_leader {
            let leo = st.log.log_end_offset();
            st.epochs.assign_on_leadership(ps.leader_epoch, leo);
            // Followers get a full lag allowance from the moment this broker leads.
            let now = now_ms;
            st.followers = ps
                .replicas
                .iter()
                .filter(|r| **r != me)
                .map(|r| (*r, Follower { leo: -1, caught_up_ms: now, prev_leader_leo: -1, prev_fetch_ms: now }))
                .collect();
            tracing::info!(topic = %self.topic, partition = self.index, epoch = ps.leader_epoch, leo, "became leader");
        } else if ps.leader != me {
            st.followers.clear();
            let leo = st.log.log_end_offset();
            st.high_watermark = st.high_watermark.min(leo);
        }
        if st.replicas.is_leader() {
            self.advance_hw(&mut st);
        }
        self.hw_moved.notify_waiters();
        // A fetch waiting here learns of the new leader (or its own NOT_LEADER) at once.
        self.watchers.wake();
    }

    /// Checks a client's idea of the current leader epoch (-1: no idea) against this
    /// leader's: older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
    pub fn check_current_epoch(&self, epoch: i32) -> Result<()> {
        let st = self.state.lock();
        st.replicas.check_leader()?;
        super::check_epoch(epoch, st.leader_epoch)
    }

    /// Does this broker lead the partition?
    pub fn is_leader(&self) -> bool {
        self.state.lock().replicas.is_leader()
    }

    /// On the leader, for operators: its log end offset, high watermark, and each other
    /// replica's log end offset (-1 until it has fetched); None elsewhere.
    pub fn leader_progress(&self) -> Option<LeaderProgress> {
        let st = self.state.lock();
        if !st.replicas.is_leader() {
            return None;
        }
        let me = st.replicas.me;
        let followers =
            st.replicas.replicas.iter().filter(|r| **r != me).map(|r| (*r, st.followers.get(r).map_or(-1, |f| f.leo))).collect();
        Some(LeaderProgress { log_end_offset: st.log.log_end_offset(), high_watermark: st.high_watermark, followers })
    }

    /// On the leader: the high watermark is the smallest log end offset in the ISR, and
    /// never moves back.
    pub(super) fn advance_hw(&self, st: &mut State) {
        if !st.replicas.is_leader() {
            return;
        }
        let me = st.replicas.me;
        let mut hw = st.log.log_end_offset();
        // The "maximal" ISR: a follower whose addition was asked for counts at once, so
        // nothing is acknowledged that a member-to-be (which could soon be elected) lacks.
        for r in st.replicas.isr.iter().chain(&st.pending_isr) {
            if *r != me {
                hw = hw.min(st.followers.get(r).map_or(-1, |f| f.leo));
            }
        }
        crate::invariant!(hw <= st.log.log_end_offset(), "{}-{}: high watermark {hw} past the log end", self.topic, self.index);
        if hw > st.high_watermark {
            st.high_watermark = hw;
            self.hw_moved.notify_waiters();
            // Consumers read up to the high watermark: what it now covers is theirs.
            self.watchers.wake();
        }
    }

    /// On the leader: a follower fetched from `offset`, so its log ends there. Returns an
    /// ISR expansion to ask for when it has caught up while out of the ISR.
    pub fn follower_fetched(&self, replica: i32, offset: i64, now_ms: i64) -> Option<IsrChange> {
        let mut st = self.state.lock();
        if !st.replicas.is_leader() || !st.replicas.replicas.contains(&replica) {
            return None;
        }
        let leo = st.log.log_end_offset();
        let f =
            st.followers.entry(replica).or_insert(Follower { leo: -1, caught_up_ms: now_ms, prev_leader_leo: -1, prev_fetch_ms: now_ms });
        f.leo = offset.min(leo);
        // Caught up if it has everything now, or everything the leader had at its previous fetch.
        if offset >= leo {
            f.caught_up_ms = now_ms;
        } else if f.prev_leader_leo >= 0 && offset >= f.prev_leader_leo {
            f.caught_up_ms = f.caught_up_ms.max(f.prev_fetch_ms);
        }
        f.prev_leader_leo = leo;
        f.prev_fetch_ms = now_ms;
        let follower_leo = f.leo;
        self.advance_hw(&mut st);
        let epoch_start = st.epochs.end_offset_for(st.leader_epoch - 1, leo).1.max(0);
        if !st.replicas.isr.contains(&replica) && follower_leo >= st.high_watermark && follower_leo >= epoch_start {
            if !st.pending_isr.contains(&replica) {
                st.pending_isr.push(replica);
            }
            let mut isr = st.replicas.isr.clone();
            isr.push(replica);
            return Some(IsrChange { leader_epoch: st.leader_epoch, partition_epoch: st.replicas.partition_epoch, isr });
        }
        None
    }

    /// On the leader: the ISR without followers that have not caught up for `max_lag_ms`,
    /// if any must go.
    ///
    /// A follower asked to join that fell behind again also needs a decision: the controller
    /// may have added it already, so it keeps holding the HW back until this broker's
    /// metadata says (a new partition epoch clears the pending list). The ISR without it is
    /// asked for: the controller makes that change if it never made the addition, and
    /// refuses it (a stale partition epoch) if it did; either way the epoch moves.
    pub fn isr_shrink(&self, now_ms: i64, max_lag_ms: i64) -> Option<IsrChange> {
        let st = self.state.lock();
        if !st.replicas.is_leader() {
            return None;
        }
        let me = st.replicas.me;
        let lags = |r: &i32| *r != me && st.followers.get(r).is_none_or(|f| now_ms - f.caught_up_ms > max_lag_ms);
        let lagging: Vec<i32> = st.replicas.isr.iter().copied().filter(lags).collect();
        if lagging.is_empty() && !st.pending_isr.iter().any(lags) {
            return None;
        }
        let isr = st.replicas.isr.iter().copied().filter(|r| !lagging.contains(r)).collect();
        Some(IsrChange { leader_epoch: st.leader_epoch, partition_epoch: st.replicas.partition_epoch, isr })
    }

    /// acks=all, one look: has the high watermark passed `last_offset` (with at least
    /// `min_isr` in sync)? An error when this broker no longer leads, or the ISR is too small.
    /// [`Partition::wait_replicated`] asks it at every wake-up; simulations ask it directly.
    pub fn replicated(&self, last_offset: i64, min_isr: usize) -> Result<bool> {
        let st = self.state.lock();
        st.replicas.check_leader()?;
        if st.high_watermark > last_offset {
            if st.replicas.isr.len() < min_isr {
                return Err(Error::NotEnoughReplicasAfterAppend);
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// acks=all: waits until the high watermark passes `last_offset`, without polling.
    pub async fn wait_replicated(&self, last_offset: i64, min_isr: usize, timeout: std::time::Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.hw_moved.notified();
            if self.replicated(last_offset, min_isr)? {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(Error::RequestTimedOut(format!("offset {last_offset} was not replicated to the ISR in time")));
            }
        }
    }

    /// On a follower: where to fetch from, and the epoch of the last batch held.
    pub fn fetch_position(&self) -> (i64, i32, i64) {
        let st = self.state.lock();
        (st.log.log_end_offset(), st.epochs.latest().unwrap_or(-1), st.log.log_start_offset())
    }

    /// On the leader: the end of `epoch` in this log (OffsetForLeaderEpoch, diverging epochs).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let st = self.state.lock();
        st.epochs.end_offset_for(epoch, st.log.log_end_offset())
    }

    /// On the leader: where a fetcher whose log ends at `fetch_offset` in `last_epoch`
    /// diverges from this log, if it does: the (epoch, end offset) to truncate to.
    pub fn diverging(&self, last_epoch: i32, fetch_offset: i64) -> Option<(i32, i64)> {
        let st = self.state.lock();
        let (epoch, end) = st.epochs.end_offset_for(last_epoch, st.log.log_end_offset());
        if end < 0 {
            // An epoch this leader never saw: keep only what is committed.
            return Some((-1, st.high_watermark.min(fetch_offset)));
        }
        (epoch != last_epoch || end < fetch_offset).then_some((epoch, end))
    }

    /// On a follower: appends the leader's batches unchanged (offsets, epochs and all).
    /// A partial batch at the end (fetch responses may cut one) is left for the next fetch.
    pub fn append_replicated(&self, records: &[u8], fetched_in: i32, now_ms: i64) -> Result<usize> {
        let mut st = self.state.lock();
        st.check_follows_in(fetched_in)?;
        let mut pos = 0;
        let mut appended = 0;
        while pos + batch::HEADER_LEN <= records.len() {
            let h = BatchHeader::parse(&records[pos..])?;
            let end = pos + h.total_len();
            if end > records.len() {
                break;
            }
            let bytes = &records[pos..end];
            pos = end;
            let leo = st.log.log_end_offset();
            if h.last_offset() < leo {
                continue;
            }
            if h.base_offset != leo {
                return Err(Error::CorruptMessage(format!("leader sent offset {} but this log ends at {leo}", h.base_offset)));
            }
            let h = batch::validate(bytes)?;
            st.epochs.assign(h.partition_leader_epoch, h.base_offset)?;
            st.log.append(bytes, &h, now_ms)?;
            let abort = h.is_control() && control::marker_type(bytes) == Some(false);
            if let Some(a) = st.producers.record(&h, abort) {
                st.note_aborted(a)?;
            }
            appended += 1;
        }
        Ok(appended)
    }

    /// On a follower: the leader's high watermark, as far as this log reaches.
    pub fn set_follower_hw(&self, hw: i64, fetched_in: i32) {
        let mut st = self.state.lock();
        if st.check_follows_in(fetched_in).is_ok() {
            st.follower_lag = (hw - st.log.log_end_offset()).max(0);
            let hw = hw.min(st.log.log_end_offset()).max(0);
            if hw != st.high_watermark {
                st.high_watermark = hw;
                // Consumers reading from this follower (KIP-392) see up to its HW.
                self.watchers.wake();
            }
        }
    }

    /// On a follower: how far its log is behind the leader's high watermark at the last
    /// fetch; None where this broker leads or nobody does.
    pub fn follower_lag(&self) -> Option<i64> {
        let st = self.state.lock();
        (!st.replicas.is_leader() && st.replicas.leader >= 0).then_some(st.follower_lag)
    }

    /// On a follower: drops the tail from `offset` on (it diverges from the leader's log),
    /// with the producer state, aborted-transaction and epoch entries it implied.
    pub fn truncate_to(&self, offset: i64, fetched_in: i32, now_ms: i64) -> Result<i64> {
        let mut st = self.state.lock();
        // A leader never gives up what its high watermark covers: that was acknowledged. (An
        // answer to a fetch made before this broker was elected is refused just below.)
        crate::invariant!(
            !st.replicas.is_leader() || st.leader_epoch != fetched_in || offset >= st.high_watermark,
            "{}-{}: leader truncating to {offset} below its high watermark {}",
            self.topic,
            self.index,
            st.high_watermark
        );
        st.check_follows_in(fetched_in)?;
        let before = st.log.log_end_offset();
        let leo = st.log.truncate_to(offset, now_ms)?;
        // Even when no batch goes: an epoch this replica led without writing anything
        // starts at its log end, and would make every fetch diverge again.
        st.epochs.truncate_from(leo)?;
        if leo == before {
            return Ok(leo);
        }
        st.aborted.retain(|a| a.last < leo);
        let (producers, from, _) = load_producers(&st.log, None)?;
        st.producers = producers;
        st.snapshot_offset = from;
        st.high_watermark = st.high_watermark.min(leo);
        tracing::warn!(topic = %self.topic, partition = self.index, from = before, to = leo, "truncated a divergent tail");
        Ok(leo)
    }

    /// On a follower whose log is entirely below the leader's log start: start over there.
    pub fn reset_to(&self, offset: i64, fetched_in: i32, now_ms: i64) -> Result<()> {
        let mut st = self.state.lock();
        st.check_follows_in(fetched_in)?;
        st.log.reset_to(offset, now_ms)?;
        st.epochs.clear()?;
        st.aborted.clear();
        st.producers = Default::default();
        st.high_watermark = offset;
        Ok(())
    }
}

/// Whether going from ISR `before` to `after` dropped a member, and whether it added one.
pub(super) fn isr_moved(before: &[i32], after: &[i32]) -> (bool, bool) {
    (before.iter().any(|r| !after.contains(r)), after.iter().any(|r| !before.contains(r)))
}
