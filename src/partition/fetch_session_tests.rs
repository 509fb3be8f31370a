use super::*;

fn key(p: i32) -> PartitionKey {
    PartitionKey { topic_id: Uuid::nil(), topic: StrBytes::from_static_str("t"), partition: p }
}

fn params(offset: i64) -> FetchParams {
    FetchParams { fetch_offset: offset, partition_max_bytes: 1 << 20, current_leader_epoch: -1, last_fetched_epoch: -1 }
}

fn answer(hw: i64, has_records: bool) -> Answered {
    Answered { error: 0, high_watermark: hw, last_stable_offset: hw, log_start_offset: 0, has_records, redirects: false }
}

fn cache(slots: usize) -> FetchSessionCache {
    FetchSessionCache::new(FetchSessionConfig { max_slots: slots, eviction_ms: 1000 }, 7)
}

/// Opens a consumer session of partitions 0..n, all answered at high watermark 5.
fn open(c: &mut FetchSessionCache, n: i32, now: i64) -> i32 {
    let keys: Vec<_> = (0..n).map(key).collect();
    assert_eq!(c.begin(0, INITIAL_EPOCH, &[], &[], false, now), Ok(Plan::Full));
    c.open(false, false, keys.iter().map(|k| (k, params(0), answer(5, false))), now)
}

fn incremental(c: &mut FetchSessionCache, id: i32, epoch: i32) -> Vec<(PartitionKey, FetchParams)> {
    match c.begin(id, epoch, &[], &[], false, 0) {
        Ok(Plan::Incremental { partitions, .. }) => partitions,
        other => panic!("not incremental: {other:?}"),
    }
}

#[test]
fn epochs_must_follow_on_and_ids_must_exist() {
    let mut c = cache(10);
    let id = open(&mut c, 2, 0);
    assert_ne!(id, INVALID_SESSION_ID);
    assert_eq!(c.begin(id + 1, 1, &[], &[], false, 0), Err(Error::FetchSessionIdNotFound(id + 1)));
    assert_eq!(c.begin(id, 2, &[], &[], false, 0), Err(Error::InvalidFetchSessionEpoch { got: 2, expected: 1 }));
    assert_eq!(c.begin(id, 1, &[], &[], true, 0), Err(Error::FetchSessionTopicIdError(id)));
    assert_eq!(incremental(&mut c, id, 1).len(), 2);
    assert_eq!(c.begin(id, 1, &[], &[], false, 0), Err(Error::InvalidFetchSessionEpoch { got: 1, expected: 2 }));
    assert_eq!(c.incremental_fetches(), 1);
}

#[test]
fn a_full_fetch_closes_the_session_it_names() {
    let mut c = cache(10);
    let id = open(&mut c, 1, 0);
    assert_eq!(c.begin(id, FINAL_EPOCH, &[], &[], false, 0), Ok(Plan::Sessionless));
    assert!(c.is_empty());
    assert_eq!(c.begin(id, 1, &[], &[], false, 0), Err(Error::FetchSessionIdNotFound(id)));
    let id = open(&mut c, 1, 0);
    assert_eq!(c.begin(id, INITIAL_EPOCH, &[], &[], false, 0), Ok(Plan::Full));
    assert!(c.is_empty(), "a new full fetch replaces the session it names");
}

#[test]
fn only_changed_partitions_are_answered_and_they_rotate_to_the_end() {
    let mut c = cache(10);
    let id = open(&mut c, 3, 0);
    let plan = incremental(&mut c, id, 1);
    let order: Vec<i32> = plan.iter().map(|(k, _)| k.partition).collect();
    assert_eq!(order, [0, 1, 2]);
    // Partition 0 got records, partition 2's high watermark moved, 1 is unchanged.
    let (k0, k1, k2) = (key(0), key(1), key(2));
    let keep = c.respond(id, &[(&k0, answer(9, true)), (&k1, answer(5, false)), (&k2, answer(6, false))]);
    assert_eq!(keep, [true, false, true]);
    let order: Vec<i32> = incremental(&mut c, id, 2).iter().map(|(k, _)| k.partition).collect();
    assert_eq!(order, [1, 0, 2], "the unanswered one first, then the answered in the order they were sent");
    let keep = c.respond(id, &[(&k1, answer(5, false)), (&k0, answer(9, false)), (&k2, answer(6, false))]);
    assert_eq!(keep, [false, false, false], "nothing changed since the last answer");
}

#[test]
fn an_error_is_always_answered_and_the_recovery_too() {
    let mut c = cache(10);
    let id = open(&mut c, 1, 0);
    let k = key(0);
    incremental(&mut c, id, 1);
    let err = Answered { error: 6, high_watermark: -1, last_stable_offset: -1, log_start_offset: -1, has_records: false, redirects: false };
    assert_eq!(c.respond(id, &[(&k, err)]), [true]);
    incremental(&mut c, id, 2);
    assert_eq!(c.respond(id, &[(&k, err)]), [true], "still failing: sent again");
    incremental(&mut c, id, 3);
    assert_eq!(c.respond(id, &[(&k, answer(5, false))]), [true], "recovered at the same offsets: sent");
}

#[test]
fn requested_partitions_are_added_and_updated_and_forgotten_ones_dropped() {
    let mut c = cache(10);
    let id = open(&mut c, 2, 0);
    let plan = c.begin(id, 1, &[(key(1), params(40)), (key(7), params(3))], &[key(0)], false, 0).unwrap();
    let Plan::Incremental { partitions, .. } = plan else { panic!() };
    assert_eq!(partitions, vec![(key(1), params(40)), (key(7), params(3))]);
    assert_eq!(c.partitions(), 2);
    let k7 = key(7);
    assert_eq!(c.respond(id, &[(&k7, answer(0, false))]), [true], "a new partition is sent once even if empty");
}

#[test]
fn a_full_cache_evicts_only_stale_or_less_valuable_sessions() {
    let mut c = cache(2);
    let a = open(&mut c, 3, 0);
    let b = open(&mut c, 1, 10);
    // Both fresh: a new one-partition session takes no slot.
    assert_eq!(open(&mut c, 1, 20), INVALID_SESSION_ID);
    assert_eq!(c.len(), 2);
    assert_eq!(c.evictions(), 0);
    // b is used after it has lived past the eviction time, so it becomes evictable; a larger session replaces it.
    c.begin(b, 1, &[], &[], false, 1500).unwrap();
    c.begin(a, 1, &[], &[], false, 1500).unwrap();
    assert_eq!(open(&mut c, 1, 1600), INVALID_SESSION_ID, "not more valuable than b (same size)");
    let d = open(&mut c, 2, 1600);
    assert_ne!(d, INVALID_SESSION_ID);
    assert!(c.session_partitions(b).is_none(), "b, the smallest evictable, went");
    assert_eq!(c.evictions(), 1);
    // Idle past the eviction time: the least recently used goes, whatever its size.
    let e = open(&mut c, 1, 5000);
    assert_ne!(e, INVALID_SESSION_ID);
    assert!(c.session_partitions(a).is_none(), "a was used least recently");
    assert_eq!((c.len(), c.evictions()), (2, 2));
}

#[test]
fn a_follower_may_evict_a_consumers_fresh_session() {
    let mut c = cache(1);
    open(&mut c, 5, 0);
    let f = c.open(true, false, [(&key(0), params(0), answer(1, false))], 1);
    assert_ne!(f, INVALID_SESSION_ID);
    assert_eq!(c.open(false, false, [(&key(0), params(0), answer(1, false))], 2), INVALID_SESSION_ID);
}

#[test]
fn a_flood_of_sessions_stays_within_the_slots() {
    let mut c = cache(5);
    for i in 0..1000 {
        open(&mut c, 1 + i % 3, i as i64 * 10);
        assert!(c.len() <= 5);
    }
    assert!(c.evictions() > 0);
}

#[test]
fn session_names_do_not_share_the_request_buffer() {
    let frame = bytes::Bytes::from_static(b"xxtopicyy");
    let k = PartitionKey { topic_id: Uuid::nil(), topic: StrBytes::from_utf8(frame.slice(2..7)).unwrap(), partition: 0 };
    let owned = k.owned();
    assert_eq!(owned, k);
    assert_ne!(owned.topic.as_ptr(), k.topic.as_ptr());
}

#[test]
fn the_epoch_wraps_to_one() {
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(4), 5);
}
