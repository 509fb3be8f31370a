use super::*;

fn batch(first: i64, last: i64) -> LogBatch {
    LogBatch { first, last, producer_id: -1, transactional: false, control: false }
}

fn cfg() -> ShareConfig {
    ShareConfig { record_lock_duration_ms: 1000, delivery_count_limit: 3, max_record_locks: 10, ..Default::default() }
}

fn acq(first: i64, last: i64, delivery_count: i16) -> Acquired {
    Acquired { first, last, delivery_count }
}

#[test]
fn acquires_new_records_and_accept_moves_the_start() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    assert_eq!(sp.next_fetch_offset(&c), Some(0));
    assert_eq!(sp.acquire("a", &[batch(0, 4)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 4, 1)]);
    assert_eq!((sp.start_offset(), sp.end_offset()), (0, 5));
    sp.acknowledge("a", 0, 2, &[ACK_ACCEPT], &c, 0).unwrap();
    assert_eq!(sp.start_offset(), 3);
    assert_eq!(sp.next_fetch_offset(&c), Some(5));
}

#[test]
fn a_second_member_gets_only_what_is_not_acquired() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    assert_eq!(sp.acquire("a", &[batch(0, 4)], &[], 2, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 1, 1)]);
    assert_eq!(sp.acquire("b", &[batch(0, 4)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(2, 4, 1)]);
    assert_eq!(sp.acquire("c", &[batch(0, 4)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![]);
}

#[test]
fn release_redelivers_with_a_higher_count_and_reject_does_not() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 2)], &[], 100, AcquireMode::RecordLimit, &c, 0);
    sp.acknowledge("a", 0, 2, &[ACK_RELEASE, ACK_REJECT, ACK_RELEASE], &c, 0).unwrap();
    assert_eq!(sp.next_fetch_offset(&c), Some(0));
    assert_eq!(sp.acquire("b", &[batch(0, 2)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 0, 2), acq(2, 2, 2)]);
    assert_eq!(sp.record(1).unwrap().state, RecordState::Archived);
}

#[test]
fn the_delivery_limit_archives() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    for round in 1..=3 {
        assert_eq!(sp.acquire("a", &[batch(0, 0)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 0, round)]);
        sp.acknowledge("a", 0, 0, &[ACK_RELEASE], &c, 0).unwrap();
    }
    assert_eq!(sp.start_offset(), 1, "archived after the third delivery");
    assert_eq!(sp.acquire("a", &[batch(0, 0)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![]);
}

#[test]
fn locks_expire_on_time_only() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 1)], &[], 100, AcquireMode::RecordLimit, &c, 100);
    assert_eq!(sp.expire_locks(1099, &c), 0);
    assert_eq!(sp.expire_locks(1100, &c), 2);
    assert_eq!(sp.acquire("b", &[batch(0, 1)], &[], 100, AcquireMode::RecordLimit, &c, 1100), vec![acq(0, 1, 2)]);
    // a's late acknowledgement is refused: b holds the records now.
    assert!(matches!(sp.acknowledge("a", 0, 1, &[ACK_ACCEPT], &c, 0), Err(Error::InvalidRecordState(_))));
}

#[test]
fn acknowledging_what_one_does_not_hold_is_invalid_record_state() {
    let c = cfg();
    let mut sp = SharePartition::new(5);
    sp.acquire("a", &[batch(5, 9)], &[], 100, AcquireMode::RecordLimit, &c, 0);
    let invalid = |r: Result<()>| matches!(r, Err(Error::InvalidRecordState(_)));
    assert!(invalid(sp.acknowledge("b", 5, 5, &[ACK_ACCEPT], &c, 0)), "another member's record");
    assert!(invalid(sp.acknowledge("a", 3, 5, &[ACK_ACCEPT], &c, 0)), "below the start");
    assert!(invalid(sp.acknowledge("a", 9, 10, &[ACK_ACCEPT], &c, 0)), "past the end");
    sp.acknowledge("a", 5, 5, &[ACK_ACCEPT], &c, 0).unwrap();
    assert!(invalid(sp.acknowledge("a", 5, 5, &[ACK_ACCEPT], &c, 0)), "twice");
    // A failed batch changes nothing.
    assert!(invalid(sp.acknowledge("a", 6, 10, &[ACK_ACCEPT], &c, 0)));
    assert_eq!(sp.record(6).unwrap().state, RecordState::Acquired);
    assert!(matches!(sp.acknowledge("a", 7, 6, &[ACK_ACCEPT], &c, 0), Err(Error::InvalidRequest(_))));
    assert!(matches!(sp.acknowledge("a", 6, 7, &[ACK_ACCEPT, 1, 1], &c, 0), Err(Error::InvalidRequest(_))));
    assert!(matches!(sp.acknowledge("a", 6, 6, &[5], &c, 0), Err(Error::InvalidRequest(_))));
}

#[test]
fn the_in_flight_cap_stops_acquisition() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    assert_eq!(sp.acquire("a", &[batch(0, 19)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 9, 1)]);
    assert_eq!(sp.next_fetch_offset(&c), None, "window full, nothing available");
    sp.acknowledge("a", 0, 3, &[ACK_ACCEPT], &c, 0).unwrap();
    assert_eq!(sp.next_fetch_offset(&c), Some(10));
    assert_eq!(sp.acquire("a", &[batch(10, 19)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(10, 13, 1)]);
}

#[test]
fn a_leaving_member_gives_its_records_back() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 1)], &[], 1, AcquireMode::RecordLimit, &c, 0);
    sp.acquire("b", &[batch(0, 1)], &[], 1, AcquireMode::RecordLimit, &c, 0);
    assert_eq!(sp.release_member("a", &c), 1);
    assert_eq!(sp.record(0).unwrap().state, RecordState::Available);
    assert_eq!(sp.record(1).unwrap().member.as_deref(), Some("b"));
}

#[test]
fn aborted_and_control_records_are_archived_under_read_committed() {
    let c = ShareConfig { read_committed: true, ..cfg() };
    let mut sp = SharePartition::new(0);
    let txn = LogBatch { first: 0, last: 1, producer_id: 7, transactional: true, control: false };
    let marker = LogBatch { first: 2, last: 2, producer_id: 7, transactional: true, control: true };
    let aborted = [AbortedTxn { producer_id: 7, first: 0, last: 2 }];
    assert_eq!(sp.acquire("a", &[txn, marker, batch(3, 3)], &aborted, 100, AcquireMode::RecordLimit, &c, 0), vec![acq(3, 3, 1)]);
    assert_eq!(sp.start_offset(), 3);
    // read_uncommitted hands out the aborted records, never the marker.
    let mut sp = SharePartition::new(0);
    assert_eq!(sp.acquire("a", &[txn, marker], &aborted, 100, AcquireMode::RecordLimit, &cfg(), 0), vec![acq(0, 1, 1)]);
}

#[test]
fn gaps_and_the_log_start() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    // Offsets 2 and 3 were compacted away.
    assert_eq!(sp.acquire("a", &[batch(0, 1), batch(4, 5)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 1, 1), acq(4, 5, 1)]);
    sp.acknowledge("a", 0, 5, &[ACK_ACCEPT, ACK_ACCEPT, ACK_GAP, ACK_GAP, ACK_ACCEPT, ACK_REJECT], &c, 0).unwrap();
    assert_eq!(sp.start_offset(), 6);
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 5)], &[], 100, AcquireMode::RecordLimit, &c, 0);
    sp.advance_to_log_start(4);
    assert_eq!((sp.start_offset(), sp.end_offset()), (4, 6));
    assert!(sp.record(3).is_none());
    sp.advance_to_log_start(9);
    assert_eq!((sp.start_offset(), sp.end_offset(), sp.next_fetch_offset(&c)), (9, 9, Some(9)));
}

#[test]
fn state_batches_summarise_the_window() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 3)], &[], 100, AcquireMode::RecordLimit, &c, 0);
    sp.acknowledge("a", 1, 1, &[ACK_ACCEPT], &c, 0).unwrap();
    let b = sp.state_batches();
    let states: Vec<_> = b.iter().map(|b| (b.first, b.last, b.state)).collect();
    assert_eq!(states, vec![(0, 0, RecordState::Acquired), (1, 1, RecordState::Acknowledged), (2, 3, RecordState::Acquired)]);
}

#[test]
fn initial_offset_follows_auto_offset_reset() {
    assert_eq!(SharePartition::initial_offset(AutoOffsetReset::Earliest, 3, 10, |_| None), 3);
    assert_eq!(SharePartition::initial_offset(AutoOffsetReset::Latest, 3, 10, |_| None), 10);
    assert_eq!(SharePartition::initial_offset(AutoOffsetReset::ByDuration(60_000), 3, 10, |d| (d == 60_000).then_some(7)), 7);
    assert_eq!(SharePartition::initial_offset(AutoOffsetReset::ByDuration(60_000), 3, 10, |_| None), 10, "nothing that recent: latest");
    assert!(AutoOffsetReset::parse("none").is_none());
}

#[test]
fn a_restored_partition_has_nothing_acquired_and_redelivers_counted() {
    let c = cfg();
    // Accepted 5, acquired 6..7 twice (written as available), archived 8, out of deliveries 9.
    let sp = SharePartition::restore(5, &[(5, 5, 2, 1), (6, 7, 0, 2), (8, 8, 4, 1), (9, 9, 0, 3), (10, 400, 0, 1)], &c);
    assert_eq!(sp.start_offset(), 6);
    assert_eq!(sp.record(6).map(|r| (r.state, r.delivery_count)), Some((RecordState::Available, 2)));
    assert_eq!(sp.record(9).map(|r| r.state), Some(RecordState::Archived));
    // The window holds no more than its cap, whatever was written.
    assert_eq!(sp.end_offset(), 5 + c.max_record_locks);
    let mut sp = sp;
    assert_eq!(sp.acquire("a", &[batch(6, 9)], &[], 100, AcquireMode::RecordLimit, &c, 0), vec![acq(6, 7, 3)]);
}

#[test]
fn batch_optimized_acquires_to_the_end_of_the_batch_record_limit_stops() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    let log = [batch(0, 5), batch(6, 9)];
    assert_eq!(sp.acquire("a", &log, &[], 2, AcquireMode::RecordLimit, &c, 0), vec![acq(0, 1, 1)]);
    // The limit is reached inside 0..=5: that batch is finished, the next is not started.
    assert_eq!(sp.acquire("b", &log, &[], 2, AcquireMode::BatchOptimized, &c, 0), vec![acq(2, 5, 1)]);
    assert_eq!(sp.acquire("b", &log, &[], 4, AcquireMode::BatchOptimized, &c, 0), vec![acq(6, 9, 1)]);
    // Released records come back by the same rule, and the in-flight cap still holds.
    sp.acknowledge("b", 2, 9, &[ACK_RELEASE], &c, 0).unwrap();
    assert_eq!(sp.acquire("c", &log, &[], 1, AcquireMode::BatchOptimized, &c, 0), vec![acq(2, 5, 2)]);
    assert_eq!(AcquireMode::from_id(1), Some(AcquireMode::RecordLimit));
    assert_eq!(AcquireMode::from_id(2), None);
}

#[test]
fn renew_extends_the_lock_and_keeps_the_delivery_count() {
    let c = cfg();
    let mut sp = SharePartition::new(0);
    sp.acquire("a", &[batch(0, 2)], &[], 100, AcquireMode::RecordLimit, &c, 100);
    // Renewed at 900: the lock now runs to 1900, not 1100.
    sp.acknowledge("a", 0, 2, &[ACK_RENEW, ACK_ACCEPT, ACK_RENEW], &c, 900).unwrap();
    assert_eq!(sp.expire_locks(1100, &c), 0);
    assert_eq!(sp.record(0).map(|r| (r.state, r.delivery_count, r.member.as_deref())), Some((RecordState::Acquired, 1, Some("a"))));
    assert_eq!(sp.record(1).unwrap().state, RecordState::Acknowledged);
    assert!(matches!(sp.acknowledge("b", 0, 0, &[ACK_RENEW], &c, 1000), Err(Error::InvalidRecordState(_))), "not b's");
    assert_eq!(sp.expire_locks(1900, &c), 2);
    assert_eq!(sp.acquire("b", &[batch(0, 2)], &[], 100, AcquireMode::RecordLimit, &c, 1900), vec![acq(0, 0, 2), acq(2, 2, 2)]);
    // A group that disabled RENEW refuses it, and the batch changes nothing.
    let off = ShareConfig { renew_enabled: false, ..c };
    assert!(matches!(sp.acknowledge("b", 0, 2, &[ACK_ACCEPT, ACK_GAP, ACK_RENEW], &off, 2000), Err(Error::InvalidRecordState(_))));
    assert_eq!(sp.record(0).unwrap().state, RecordState::Acquired);
}

#[test]
fn acknowledgement_batches_are_checked_as_kafka_checks_them() {
    let ok = |b: &[(i64, i64, Vec<i8>)], v2: bool, renew: bool| check_ack_batches(b, v2, renew).is_ok();
    assert!(ok(&[(0, 2, vec![1]), (2, 3, vec![2, 3]), (5, 5, vec![0])], false, false));
    assert!(!ok(&[(3, 2, vec![1])], true, true), "empty range");
    assert!(!ok(&[(0, 4, vec![1]), (3, 5, vec![1])], true, true), "overlap");
    assert!(!ok(&[(0, 1, vec![])], true, true), "no type");
    assert!(!ok(&[(0, 2, vec![1, 1])], true, true), "types for two of three offsets");
    assert!(!ok(&[(0, 0, vec![4])], false, true), "RENEW before v2");
    assert!(!ok(&[(0, 0, vec![4])], true, false), "RENEW without IsRenewAck");
    assert!(ok(&[(0, 0, vec![4]), (1, 1, vec![1])], true, true));
    assert!(ok(&[(0, 0, vec![1])], true, true), "IsRenewAck without a RENEW is fine");
    assert!(!ok(&[(0, 0, vec![5])], true, true) && !ok(&[(0, 0, vec![-1])], true, true), "unknown types");
}
