//! Deterministic replication tests on real logs: two replicas of one partition, driven
//! through the same calls the fetch path makes, with no sockets and a fixed clock.

use std::path::Path;

use super::*;
use crate::log::batch::tests::make_batch;
use crate::metadata::records::PartitionState;

fn open(dir: &Path) -> Partition {
    Partition::open("t", 0, Uuid::nil(), dir, LogConfig::default(), AppendConfig::default(), true, 1000).unwrap()
}

/// A one-record batch; `tag` (its timestamp) makes its bytes distinct.
fn batch(tag: i64) -> Vec<u8> {
    make_batch(1, tag, -1, -1, -1)
}

fn state(leader: i32, epoch: i32, isr: &[i32]) -> PartitionState {
    PartitionState { replicas: vec![1, 2], isr: isr.to_vec(), leader, leader_epoch: epoch, partition_epoch: epoch, ..Default::default() }
}

/// One fetch round as the fetcher and the leader's fetch handler do it. Returns false
/// when there was nothing to copy.
fn fetch_round(leader: &Partition, follower: &Partition, follower_id: i32, now: i64) -> bool {
    let (offset, last_epoch, _) = follower.fetch_position();
    if last_epoch >= 0 {
        if let Some((_, end)) = leader.diverging(last_epoch, offset) {
            follower.truncate_to(end, follower.leader_epoch(), now).unwrap();
            return true;
        }
    }
    leader.follower_fetched(follower_id, offset, now);
    let d = leader.fetch_slice_for_follower(offset, 1 << 20, true, -1).unwrap();
    let copied = match d.slice {
        Some(slice) => follower.append_replicated(&slice.to_vec().unwrap(), follower.leader_epoch(), now).unwrap() > 0,
        None => false,
    };
    follower.set_follower_hw(d.high_watermark, follower.leader_epoch());
    copied
}

fn log_bytes(p: &Partition) -> Vec<u8> {
    p.with_state(|s| {
        let leo = s.log.log_end_offset();
        s.log.read(0, leo, usize::MAX, true).map(|r| r.bytes).unwrap_or_default()
    })
}

#[test]
fn a_divergent_follower_truncates_and_then_matches_the_leader_byte_for_byte() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (b1, b2) = (open(d1.path()), open(d2.path()));
    // Epoch 0: broker 1 leads, broker 2 follows and copies the first three batches.
    b1.set_replica_state(&state(1, 0, &[1, 2]), 1);
    b2.set_replica_state(&state(1, 0, &[1, 2]), 2);
    for i in 0..3 {
        b1.append(&batch(i), 1, 1000).unwrap();
    }
    while fetch_round(&b1, &b2, 2, 1000) {}
    assert_eq!(log_bytes(&b1), log_bytes(&b2));
    // Broker 1 takes two more batches nobody copied, then dies.
    for i in 3..5 {
        b1.append(&batch(1 * 100 + i), 1, 1000).unwrap();
    }
    assert_eq!(b1.fetch_position().0, 5);
    // Epoch 1: broker 2 leads and writes different records at offsets 3 and 4 onwards.
    b2.set_replica_state(&state(2, 1, &[2]), 2);
    for i in 0..4 {
        b2.append(&batch(2 * 100 + 100 + i), 1, 1000).unwrap();
    }
    // Broker 1 returns as a follower: it must drop its tail from offset 3, then copy.
    b1.set_replica_state(&state(2, 1, &[2]), 1);
    let mut rounds = 0;
    while fetch_round(&b2, &b1, 1, 2000) {
        rounds += 1;
        assert!(rounds < 10, "replication did not converge");
    }
    assert_eq!(b1.fetch_position().0, 7);
    assert_eq!(log_bytes(&b1), log_bytes(&b2), "the follower's log is the leader's, byte for byte");
    assert_eq!(b1.end_offset_for_epoch(0), (0, 3));
    assert_eq!(b1.end_offset_for_epoch(1), (1, 7));
    // And after a restart from disk the follower still agrees (epoch cache included).
    drop(b1);
    let b1 = open(d1.path());
    assert_eq!(log_bytes(&b1), log_bytes(&b2));
    assert_eq!(b1.end_offset_for_epoch(0), (0, 3));
}

#[test]
fn the_high_watermark_waits_for_the_isr_and_never_moves_back() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, follower) = (open(d1.path()), open(d2.path()));
    leader.set_replica_state(&state(1, 0, &[1, 2]), 1);
    follower.set_replica_state(&state(1, 0, &[1, 2]), 2);
    leader.append(&batch(3 * 100 + 0), -1, 1000).unwrap();
    assert_eq!(leader.high_watermark(), 0, "the follower has not fetched it yet");
    fetch_round(&leader, &follower, 2, 1000);
    fetch_round(&leader, &follower, 2, 1001);
    assert_eq!(leader.high_watermark(), 1);
    assert_eq!(follower.high_watermark(), 1);
    // The ISR shrinks to the leader alone: the HW follows the leader's own log.
    leader.set_replica_state(&state(1, 0, &[1]), 1);
    leader.append(&batch(4 * 100 + 1), -1, 1000).unwrap();
    assert_eq!(leader.high_watermark(), 2);
    // The follower comes back in: the HW stays where it was until it catches up.
    leader.set_replica_state(&state(1, 0, &[1, 2]), 1);
    assert_eq!(leader.high_watermark(), 2);
}

#[test]
fn lagging_followers_leave_the_isr_and_caught_up_ones_come_back() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, follower) = (open(d1.path()), open(d2.path()));
    let now = crate::clock::now_ms();
    leader.set_replica_state(&state(1, 0, &[1, 2]), 1);
    follower.set_replica_state(&state(1, 0, &[1, 2]), 2);
    assert_eq!(leader.isr_shrink(now + 1000, 30_000), None);
    leader.append(&batch(3 * 100 + 0), 1, now).unwrap();
    let shrink = leader.isr_shrink(now + 31_000, 30_000).expect("silent for longer than the lag limit");
    assert_eq!(shrink.isr, vec![1]);
    leader.set_replica_state(&state(1, 0, &[1]), 1);
    // It fetches everything: the leader asks to take it back.
    fetch_round(&leader, &follower, 2, now + 32_000);
    let (offset, _, _) = follower.fetch_position();
    let expand = leader.follower_fetched(2, offset, now + 32_001).expect("caught up");
    assert_eq!(expand.isr, vec![1, 2]);
}

#[test]
fn acks_all_times_out_without_the_isr_and_fails_after_a_shrink_below_min() {
    let d1 = tempfile::tempdir().unwrap();
    let leader = open(d1.path());
    leader.set_replica_state(&state(1, 0, &[1, 2]), 1);
    let info = leader.append(&batch(3 * 100 + 0), -1, 1000).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let r = rt.block_on(leader.wait_replicated(info.last_offset, 2, std::time::Duration::from_millis(50)));
    assert!(matches!(r, Err(Error::RequestTimedOut(_))), "{r:?}");
    leader.set_replica_state(&state(1, 0, &[1]), 1);
    let r = rt.block_on(leader.wait_replicated(info.last_offset, 2, std::time::Duration::from_millis(50)));
    assert_eq!(r, Err(Error::NotEnoughReplicasAfterAppend));
}

#[test]
fn acks_all_is_refused_before_the_append_when_the_isr_is_too_small() {
    let d1 = tempfile::tempdir().unwrap();
    let leader = open(d1.path());
    leader.with_state(|s| s.append_config.min_insync_replicas = 2);
    leader.set_replica_state(&state(1, 0, &[1]), 1);
    assert_eq!(leader.append(&batch(1), -1, 1000), Err(Error::NotEnoughReplicas));
    assert!(leader.append(&batch(2), 1, 1000).is_ok(), "acks=1 does not need the ISR");
    assert_eq!(leader.fetch_position().0, 1, "the refused batch was not written");
}

#[test]
fn a_follower_being_added_to_the_isr_holds_the_high_watermark_at_once() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (leader, follower) = (open(d1.path()), open(d2.path()));
    let now = crate::clock::now_ms();
    leader.set_replica_state(&state(1, 0, &[1]), 1);
    follower.set_replica_state(&state(1, 0, &[1]), 2);
    leader.append(&batch(1), 1, now).unwrap();
    while fetch_round(&leader, &follower, 2, now) {}
    let (offset, _, _) = follower.fetch_position();
    assert!(leader.follower_fetched(2, offset, now).is_some(), "caught up: the leader asks to add it");
    // Until the controller answers, a record is acknowledged only once the newcomer has it
    // too: it may be elected as soon as the addition commits.
    let info = leader.append(&batch(2), -1, now).unwrap();
    assert_eq!(leader.high_watermark(), info.last_offset, "held back for the pending member");
    fetch_round(&leader, &follower, 2, now);
    fetch_round(&leader, &follower, 2, now);
    assert_eq!(leader.high_watermark(), info.last_offset + 1);
    // A pending member that falls behind for the lag time: the controller may have added it
    // already, so it holds the HW back until the metadata says. The leader asks for the ISR
    // without it, which settles the question either way.
    let info = leader.append(&batch(3), -1, now).unwrap();
    let retract = leader.isr_shrink(now + 60_000, 30_000).expect("a decision is needed");
    assert_eq!((retract.isr, retract.partition_epoch), (vec![1], 0));
    leader.append(&batch(4), -1, now + 60_000).unwrap();
    assert_eq!(leader.high_watermark(), info.last_offset, "still held for the member-to-be");
    let mut decided = state(1, 0, &[1]);
    decided.partition_epoch = 1;
    leader.set_replica_state(&decided, 1);
    assert!(leader.high_watermark() > info.last_offset, "the controller kept it out: no longer waiting for it");
    assert_eq!(leader.isr_shrink(now + 60_000, 30_000), None);
}

#[test]
fn an_epoch_led_without_writes_does_not_make_every_fetch_diverge() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (b1, b2) = (open(d1.path()), open(d2.path()));
    b1.set_replica_state(&state(1, 0, &[1, 2]), 1);
    b2.set_replica_state(&state(1, 0, &[1, 2]), 2);
    b1.append(&batch(1), 1, 1000).unwrap();
    while fetch_round(&b1, &b2, 2, 1000) {}
    // Broker 2 leads epoch 1 but writes nothing before it dies; broker 1 leads epoch 2.
    b2.set_replica_state(&state(2, 1, &[2]), 2);
    b1.set_replica_state(&state(1, 2, &[1]), 1);
    b1.append(&batch(2), 1, 1000).unwrap();
    // Broker 2 returns as a follower: one truncation (of nothing but its epoch 1), then it copies.
    b2.set_replica_state(&state(1, 2, &[1]), 2);
    let mut rounds = 0;
    while fetch_round(&b1, &b2, 2, 2000) {
        rounds += 1;
        assert!(rounds < 5, "the follower keeps diverging");
    }
    assert_eq!(log_bytes(&b1), log_bytes(&b2));
}

#[test]
fn an_answer_to_a_fetch_from_an_older_epoch_changes_nothing() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (b1, b2) = (open(d1.path()), open(d2.path()));
    b1.set_replica_state(&state(1, 0, &[1, 2]), 1);
    b2.set_replica_state(&state(1, 0, &[1, 2]), 2);
    for i in 0..3 {
        b1.append(&batch(5 * 100 + i), 1, 1000).unwrap();
    }
    while fetch_round(&b1, &b2, 2, 1000) {}
    let answer = b1.fetch_slice_for_follower(0, 1 << 20, true, -1).unwrap();
    let records = answer.slice.unwrap().to_vec().unwrap();
    // While broker 2's fetch (made in epoch 0) was in flight, it was elected (epoch 1) and
    // acknowledged writes of its own. The late answer must not cut its log back.
    b2.set_replica_state(&state(2, 1, &[2]), 2);
    b2.append(&batch(6 * 100), -1, 1000).unwrap();
    let before = log_bytes(&b2);
    assert_eq!(b2.high_watermark(), 4);
    assert!(matches!(b2.truncate_to(0, 0, 2000), Err(Error::NotLeaderOrFollower)));
    assert!(matches!(b2.reset_to(0, 0, 2000), Err(Error::NotLeaderOrFollower)));
    assert!(matches!(b2.append_replicated(&records, 0, 2000), Err(Error::NotLeaderOrFollower)));
    assert_eq!(log_bytes(&b2), before, "the new leader's log is untouched");
    assert_eq!(b2.high_watermark(), 4);
    // A follower whose leader moved on (epoch 1 now) refuses what the epoch-0 leader said.
    b1.set_replica_state(&state(2, 1, &[2]), 1);
    let before = log_bytes(&b1);
    assert!(matches!(b1.truncate_to(0, 0, 2000), Err(Error::FencedLeaderEpoch(0))));
    b1.set_follower_hw(0, 0);
    assert_eq!(log_bytes(&b1), before);
    assert_eq!(b1.high_watermark(), 3);
}

#[test]
fn isr_moves_are_told_apart() {
    assert_eq!(replica::isr_moved(&[1, 2, 3], &[1, 3]), (true, false));
    assert_eq!(replica::isr_moved(&[1, 3], &[1, 3, 2]), (false, true));
    assert_eq!(replica::isr_moved(&[1, 2], &[1, 3]), (true, true));
    assert_eq!(replica::isr_moved(&[1, 2], &[2, 1]), (false, false));
}

#[test]
fn a_follower_knows_its_lag_behind_the_leaders_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(dir.path());
    assert_eq!(f.follower_lag(), None, "nobody leads yet");
    f.set_replica_state_at(&state(1, 1, &[1, 2]), 2, 1000);
    assert_eq!(f.follower_lag(), Some(0));
    f.set_follower_hw(5, 1);
    assert_eq!(f.follower_lag(), Some(5), "an empty log is 5 behind a high watermark of 5");
    f.set_replica_state_at(&state(2, 2, &[2]), 2, 1000);
    assert_eq!(f.follower_lag(), None, "a leader has no fetcher lag");
}
