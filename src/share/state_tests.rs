use super::*;

fn key() -> StateKey {
    ("g".to_string(), Uuid::from_u128(7), 0)
}

fn b(first: i64, last: i64, state: i8, count: i16) -> PersistedBatch {
    PersistedBatch { first, last, state, count }
}

fn w(leader_epoch: i32, start: i64, batches: Vec<PersistedBatch>) -> Written {
    Written { state_epoch: 0, leader_epoch, start_offset: start, delivery_complete_count: -1, batches }
}

/// Decides and applies, as the coordinator does once the record is appended.
fn write(s: &mut StateStore, w: &Written, offset: i64) -> Record {
    let r = s.write(&key(), w).unwrap();
    s.apply(r.clone(), offset);
    r
}

#[test]
fn combine_overlays_cuts_at_the_start_and_joins_runs() {
    let base = vec![b(0, 9, 0, 1)];
    assert_eq!(combine(&base, &[b(3, 4, 2, 1)], 0), vec![b(0, 2, 0, 1), b(3, 4, 2, 1), b(5, 9, 0, 1)]);
    assert_eq!(combine(&base, &[b(3, 4, 0, 1)], 0), vec![b(0, 9, 0, 1)]);
    assert_eq!(combine(&base, &[b(8, 12, 4, 2)], 5), vec![b(5, 7, 0, 1), b(8, 12, 4, 2)]);
    assert_eq!(combine(&base, &[], 10), vec![]);
}

#[test]
fn updates_merge_into_the_snapshot_and_snapshots_come_every_n_updates() {
    let mut s = StateStore::new(2);
    assert!(matches!(write(&mut s, &w(1, 0, vec![b(0, 4, 0, 1)]), 0), Record::Snapshot(..)));
    assert!(matches!(write(&mut s, &w(1, 2, vec![b(2, 2, 2, 1)]), 1), Record::Update(..)));
    assert!(matches!(write(&mut s, &w(1, -1, vec![b(3, 3, 4, 1)]), 2), Record::Update(..)));
    let snap = write(&mut s, &w(1, -1, vec![b(5, 5, 0, 1)]), 3);
    let Record::Snapshot(_, st) = &snap else { panic!("{snap:?}") };
    assert_eq!(st.snapshot_epoch, 1);
    assert_eq!(st.start_offset, 2);
    assert_eq!(st.batches, vec![b(2, 2, 2, 1), b(3, 3, 4, 1), b(4, 5, 0, 1)]);
    assert_eq!(s.redundant_offset(|_| true, 10), 3);
    assert_eq!(s.read(&key(), 1).unwrap().unwrap(), *st);
}

#[test]
fn replaying_the_records_gives_the_same_state() {
    let mut s = StateStore::new(3);
    let mut log = Vec::new();
    log.push(s.initialize(&key(), 0, 5).unwrap());
    s.apply(log[0].clone(), 0);
    for (i, batches) in [vec![b(5, 9, 0, 1)], vec![b(5, 6, 2, 1)], vec![b(7, 7, 0, 2)], vec![b(10, 10, 4, 1)]].into_iter().enumerate() {
        log.push(write(&mut s, &w(3, 7, batches), i as i64 + 1));
    }
    let mut replayed = StateStore::new(3);
    for (i, r) in log.iter().enumerate() {
        let (k, v) = r.encode();
        replayed.apply(Record::decode(&k, v.as_deref()).unwrap(), i as i64);
    }
    assert_eq!(replayed.read(&key(), 3).unwrap(), s.read(&key(), 3).unwrap());
    let del = s.delete(&key()).unwrap().unwrap();
    let (k, v) = del.encode();
    replayed.apply(Record::decode(&k, v.as_deref()).unwrap(), 9);
    assert_eq!(replayed.read(&key(), 3).unwrap(), None);
}

#[test]
fn older_leaders_and_state_epochs_are_fenced() {
    let mut s = StateStore::new(10);
    let r = s.initialize(&key(), 1, 0).unwrap();
    s.apply(r, 0);
    assert!(matches!(s.initialize(&key(), 1, 0), Err(Error::FencedStateEpoch(_))));
    assert!(s.read(&key(), 4).unwrap().is_some());
    assert!(matches!(s.write(&key(), &w(3, 0, vec![])), Err(Error::FencedLeaderEpoch(3))));
    assert!(s.summary(&key()).unwrap().is_some(), "a summary fences no leader");
    let stale = Written { state_epoch: 0, ..w(4, 0, vec![]) };
    assert!(matches!(s.write(&key(), &stale), Err(Error::FencedStateEpoch(_))));
    assert!(matches!(s.write(&key(), &w(4, 0, vec![b(3, 2, 0, 1)])), Err(Error::InvalidRequest(_))));
    assert!(matches!(s.write(&key(), &w(4, 0, vec![b(0, 2, 3, 1)])), Err(Error::InvalidRequest(_))));
    assert!(matches!(s.read(&("g".into(), Uuid::from_u128(7), -1), 0), Err(Error::InvalidRequest(_))));
    assert_eq!(s.read(&("g".into(), Uuid::from_u128(7), 9), 0).unwrap(), None);
}
