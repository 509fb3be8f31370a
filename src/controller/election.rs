//! Leader election and replica placement: pure functions over partition states.

use crate::error::{Error, Result};
use crate::metadata::records::{ElectionReason, PartitionState};

/// The outcome of re-deciding a partition's leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub state: PartitionState,
    /// The new leader was not in the ISR: acknowledged records may be lost.
    pub unclean: bool,
}

impl Change {
    /// Why the leader moved, for the record: `None` when it stays; an unclean pick
    /// overrides `cause`, since that is what the operator must learn.
    pub fn reason(&self, before: &PartitionState, cause: ElectionReason) -> Option<ElectionReason> {
        leader_moved(before, &self.state, if self.unclean { ElectionReason::Unclean } else { cause })
    }
}

/// `Some(cause)` when `after` has another leader than `before`.
pub fn leader_moved(before: &PartitionState, after: &PartitionState, cause: ElectionReason) -> Option<ElectionReason> {
    (after.leader != before.leader).then_some(cause)
}

/// Applies `isr` and picks a leader: the current one if it is still eligible, else the
/// first live ISR member in replica order, else (if `unclean_ok`) the first live replica.
/// Returns `None` when nothing changes. The leader epoch grows whenever the leader does.
pub fn elect(cur: &PartitionState, isr: Vec<i32>, live: &dyn Fn(i32) -> bool, unclean_ok: bool) -> Option<Change> {
    let mut next = cur.clone();
    next.isr = isr;
    let eligible = |b: i32| live(b) && next.isr.contains(&b);
    let mut unclean = false;
    if !(cur.leader >= 0 && eligible(cur.leader)) {
        next.leader = match next.replicas.iter().copied().find(|&b| eligible(b)) {
            Some(b) => b,
            None if unclean_ok => match next.replicas.iter().copied().find(|&b| live(b)) {
                Some(b) => {
                    unclean = true;
                    next.isr = vec![b];
                    b
                }
                None => -1,
            },
            None => -1,
        };
    }
    if next.leader != cur.leader {
        next.leader_epoch = cur.leader_epoch + 1;
    }
    if next == *cur {
        return None;
    }
    next.partition_epoch = cur.partition_epoch + 1;
    Some(Change { state: next, unclean })
}

/// What fencing (or shutting down) `broker` does to a partition: it leaves the ISR unless
/// it is the last member (the ISR then remembers who has all the data), and leadership moves.
pub fn on_broker_gone(cur: &PartitionState, broker: i32, live: &dyn Fn(i32) -> bool, unclean_ok: bool) -> Option<Change> {
    if !cur.replicas.contains(&broker) {
        return None;
    }
    let isr: Vec<i32> =
        if cur.isr.len() > 1 || cur.isr != [broker] { cur.isr.iter().copied().filter(|&b| b != broker).collect() } else { cur.isr.clone() };
    let isr = if isr.is_empty() { cur.isr.clone() } else { isr };
    elect(cur, isr, &|b| b != broker && live(b), unclean_ok)
}

/// Moves leadership to the preferred replica (the first) if it is live and in the ISR.
pub fn preferred(cur: &PartitionState, live: &dyn Fn(i32) -> bool) -> Result<Change> {
    let want = *cur.replicas.first().ok_or(Error::PreferredLeaderNotAvailable)?;
    if cur.leader == want {
        return Err(Error::ElectionNotNeeded);
    }
    if !live(want) || !cur.isr.contains(&want) {
        return Err(Error::PreferredLeaderNotAvailable);
    }
    let mut next = cur.clone();
    next.leader = want;
    next.leader_epoch += 1;
    next.partition_epoch += 1;
    Ok(Change { state: next, unclean: false })
}

/// Starts a reassignment of `cur` to `target`, replacing one in progress; `None` cancels.
/// New replicas join `replicas` (and fetch) at once; the switch-over waits for them to
/// be in sync (see [`complete_reassignment`]) unless nothing is being added.
pub fn reassign(cur: &PartitionState, target: Option<&[i32]>, live: &dyn Fn(i32) -> bool) -> Result<PartitionState> {
    let original: Vec<i32> = cur.replicas.iter().copied().filter(|r| !cur.adding.contains(r)).collect();
    let mut next = cur.clone();
    next.partition_epoch += 1;
    match target {
        None => {
            if cur.adding.is_empty() && cur.removing.is_empty() {
                return Err(Error::NoReassignmentInProgress);
            }
            next.replicas = original;
            next.adding.clear();
            next.removing.clear();
            next.isr.retain(|r| next.replicas.contains(r));
            fix_leader(&mut next, cur, live);
            Ok(next)
        }
        Some(t) => {
            next.adding = t.iter().copied().filter(|r| !original.contains(r)).collect();
            next.removing = original.iter().copied().filter(|r| !t.contains(r)).collect();
            next.replicas = t.to_vec();
            next.replicas.extend(original.iter().copied().filter(|r| !t.contains(r)));
            next.isr.retain(|r| next.replicas.contains(r));
            Ok(complete_reassignment(&next, live).unwrap_or(next))
        }
    }
}

/// Finishes a reassignment once every added replica is in the ISR: the removed replicas
/// go, and leadership moves if the leader was one of them.
pub fn complete_reassignment(cur: &PartitionState, live: &dyn Fn(i32) -> bool) -> Option<PartitionState> {
    if cur.adding.is_empty() && cur.removing.is_empty() {
        return None;
    }
    if cur.adding.iter().any(|r| !cur.isr.contains(r)) {
        return None;
    }
    let mut next = cur.clone();
    next.replicas.retain(|r| !cur.removing.contains(r));
    next.isr.retain(|r| !cur.removing.contains(r));
    if next.isr.is_empty() {
        // Nothing in sync would remain: wait for the new replicas.
        return None;
    }
    next.adding.clear();
    next.removing.clear();
    next.partition_epoch = cur.partition_epoch + 1;
    fix_leader(&mut next, cur, live);
    Some(next)
}

/// Keeps the leader if it is still a replica in sync, else elects one; bumps the epoch on change.
fn fix_leader(next: &mut PartitionState, cur: &PartitionState, live: &dyn Fn(i32) -> bool) {
    if !(next.leader >= 0 && next.replicas.contains(&next.leader) && next.isr.contains(&next.leader)) {
        next.leader = next.replicas.iter().copied().find(|b| next.isr.contains(b) && live(*b)).unwrap_or(-1);
    }
    if next.leader != cur.leader {
        next.leader_epoch = cur.leader_epoch + 1;
    }
}

/// Places `partitions` partitions of `rf` replicas each on `brokers` (id, rack), spreading
/// leaders and followers evenly, as Kafka does: brokers are ordered so racks alternate, the
/// first replica walks the list, and followers shift by one more every full round, so no two
/// partitions share a replica set more than they must.
pub fn place(brokers: &[(i32, Option<String>)], partitions: i32, rf: usize, start: usize) -> Result<Vec<Vec<i32>>> {
    let n = brokers.len();
    if rf == 0 || rf > n {
        return Err(Error::InvalidReplicationFactor(format!(
            "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {n} broker(s) are registered."
        )));
    }
    let order = rack_alternated(brokers);
    let rack_of = |b: i32| brokers.iter().find(|(id, _)| *id == b).and_then(|(_, r)| r.as_deref());
    let mut out = Vec::with_capacity(partitions as usize);
    for p in 0..partitions as usize {
        let first = (start + p) % n;
        let shift = if n > 1 { (start + p / n) % (n - 1) } else { 0 };
        let mut replicas = vec![order[first]];
        for j in 0..rf - 1 {
            let base = (first + 1 + (shift + j) % (n - 1)) % n;
            let candidates = || (0..n).map(|k| order[(base + k) % n]).filter(|b| !replicas.contains(b));
            // Prefer a rack this partition does not use yet.
            let pick = candidates()
                .find(|b| rack_of(*b).is_none() || !replicas.iter().any(|r| rack_of(*r) == rack_of(*b)))
                .or_else(|| candidates().next())
                .expect("rf <= n leaves a broker");
            replicas.push(pick);
        }
        out.push(replicas);
    }
    Ok(out)
}

/// Broker ids ordered so consecutive entries sit on different racks where possible.
fn rack_alternated(brokers: &[(i32, Option<String>)]) -> Vec<i32> {
    let mut sorted = brokers.to_vec();
    sorted.sort();
    if sorted.iter().all(|(_, r)| r.is_none()) {
        return sorted.into_iter().map(|(b, _)| b).collect();
    }
    let mut racks: Vec<(String, Vec<i32>)> = Vec::new();
    for (b, r) in sorted {
        let r = r.unwrap_or_default();
        match racks.iter_mut().find(|(name, _)| *name == r) {
            Some((_, v)) => v.push(b),
            None => racks.push((r, vec![b])),
        }
    }
    racks.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    let mut round = 0;
    while out.len() < brokers.len() {
        for (_, v) in &racks {
            if let Some(b) = v.get(round) {
                out.push(*b);
            }
        }
        round += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionState {
        PartitionState { replicas: replicas.to_vec(), isr: isr.to_vec(), leader, leader_epoch: 3, partition_epoch: 7, ..Default::default() }
    }

    #[test]
    fn a_dead_leader_is_replaced_from_the_isr_with_a_new_epoch() {
        let c = on_broker_gone(&st(&[1, 2, 3], &[1, 2, 3], 1), 1, &|b| b != 1, false).unwrap();
        assert_eq!(
            c.state,
            PartitionState {
                replicas: vec![1, 2, 3],
                isr: vec![2, 3],
                leader: 2,
                leader_epoch: 4,
                partition_epoch: 8,
                ..Default::default()
            }
        );
        assert!(!c.unclean);
    }

    #[test]
    fn the_last_isr_member_stays_and_the_partition_goes_offline() {
        let c = on_broker_gone(&st(&[1, 2, 3], &[1], 1), 1, &|b| b != 1, false).unwrap();
        assert_eq!((c.state.leader, c.state.isr.clone(), c.state.leader_epoch), (-1, vec![1], 4));
        // When that member returns it leads again, cleanly.
        let back = elect(&c.state, c.state.isr.clone(), &|_| true, false).unwrap();
        assert_eq!((back.state.leader, back.unclean), (1, false));
    }

    #[test]
    fn unclean_election_picks_a_live_out_of_sync_replica_and_says_so() {
        let c = on_broker_gone(&st(&[1, 2, 3], &[1], 1), 1, &|b| b == 3, true).unwrap();
        assert_eq!((c.state.leader, c.state.isr.clone(), c.unclean), (3, vec![3], true));
    }

    #[test]
    fn a_change_names_its_reason_only_when_the_leader_moves() {
        let before = st(&[1, 2, 3], &[1, 2, 3], 1);
        let moved = on_broker_gone(&before, 1, &|b| b != 1, false).unwrap();
        assert_eq!(moved.reason(&before, ElectionReason::ControlledShutdown), Some(ElectionReason::ControlledShutdown));
        let kept = on_broker_gone(&before, 3, &|b| b != 3, false).unwrap();
        assert_eq!(kept.reason(&before, ElectionReason::Clean), None);
        // Unclean wins over the trigger: the operator must learn that data may be lost.
        let lone = st(&[1, 2, 3], &[1], 1);
        let unclean = on_broker_gone(&lone, 1, &|b| b == 3, true).unwrap();
        assert_eq!(unclean.reason(&lone, ElectionReason::Clean), Some(ElectionReason::Unclean));
        // Going offline is a leader change too.
        let offline = on_broker_gone(&lone, 1, &|b| b != 1, false).unwrap();
        assert_eq!(offline.reason(&lone, ElectionReason::Clean), Some(ElectionReason::Clean));
    }

    #[test]
    fn a_follower_leaving_keeps_the_leader_and_epoch() {
        let c = on_broker_gone(&st(&[1, 2, 3], &[1, 2, 3], 1), 3, &|b| b != 3, false).unwrap();
        assert_eq!((c.state.leader, c.state.leader_epoch, c.state.isr.clone()), (1, 3, vec![1, 2]));
        assert!(on_broker_gone(&st(&[1, 2], &[1, 2], 1), 3, &|_| true, false).is_none());
    }

    #[test]
    fn preferred_election_needs_the_preferred_replica_in_sync() {
        assert_eq!(preferred(&st(&[1, 2], &[1, 2], 1), &|_| true), Err(Error::ElectionNotNeeded));
        assert_eq!(preferred(&st(&[1, 2], &[2], 2), &|_| true), Err(Error::PreferredLeaderNotAvailable));
        assert_eq!(preferred(&st(&[1, 2], &[1, 2], 2), &|_| true).unwrap().state.leader, 1);
    }

    #[test]
    fn a_reassignment_adds_first_and_switches_over_when_in_sync() {
        let cur = st(&[1], &[1], 1);
        let started = reassign(&cur, Some(&[2, 3]), &|_| true).unwrap();
        assert_eq!((started.replicas.clone(), started.adding.clone(), started.removing.clone()), (vec![2, 3, 1], vec![2, 3], vec![1]));
        assert_eq!(started.leader, 1, "the old leader serves until the switch");
        assert!(complete_reassignment(&started, &|_| true).is_none(), "the new replicas are not in sync yet");
        let mut synced = started.clone();
        synced.isr = vec![1, 2, 3];
        let done = complete_reassignment(&synced, &|_| true).unwrap();
        assert_eq!((done.replicas.clone(), done.isr.clone(), done.leader), (vec![2, 3], vec![2, 3], 2));
        assert!(done.adding.is_empty() && done.removing.is_empty());
        assert_eq!(done.leader_epoch, cur.leader_epoch + 1);
        // Cancelling restores the original replicas.
        let back = reassign(&started, None, &|_| true).unwrap();
        assert_eq!((back.replicas.clone(), back.isr.clone(), back.leader), (vec![1], vec![1], 1));
        assert_eq!(reassign(&back, None, &|_| true), Err(Error::NoReassignmentInProgress));
    }

    #[test]
    fn a_reassignment_that_only_removes_completes_at_once() {
        let done = reassign(&st(&[1, 2, 3], &[1, 2, 3], 1), Some(&[2, 3]), &|_| true).unwrap();
        assert_eq!((done.replicas.clone(), done.isr.clone(), done.leader), (vec![2, 3], vec![2, 3], 2));
        assert!(done.adding.is_empty() && done.removing.is_empty());
    }

    #[test]
    fn placement_spreads_leaders_and_replicas() {
        let brokers: Vec<(i32, Option<String>)> = (1..=3).map(|b| (b, None)).collect();
        for start in 0..3 {
            let a = place(&brokers, 6, 3, start).unwrap();
            for b in 1..=3 {
                assert_eq!(a.iter().filter(|r| r[0] == b).count(), 2, "leaders {a:?}");
            }
            assert!(a.iter().all(|r| {
                let mut s = r.clone();
                s.sort();
                s == vec![1, 2, 3]
            }));
        }
        assert!(matches!(place(&brokers, 1, 4, 0), Err(Error::InvalidReplicationFactor(_))));
    }

    #[test]
    fn placement_is_rack_aware() {
        let brokers = vec![(1, Some("a".into())), (2, Some("a".into())), (3, Some("b".into())), (4, Some("b".into()))];
        for start in 0..4 {
            for r in place(&brokers, 8, 2, start).unwrap() {
                let rack = |b: i32| if b <= 2 { "a" } else { "b" };
                assert_ne!(rack(r[0]), rack(r[1]), "replicas {r:?} share a rack");
            }
        }
    }
}
