use super::*;

fn topics(parts: i32) -> Topics {
    [("t".to_string(), (Uuid::from_u128(1), parts))].into_iter().collect()
}

fn join(id: &str) -> Heartbeat {
    Heartbeat { member_id: id.into(), epoch: 0, subscribed: Some(vec!["t".into()]), ..Default::default() }
}

fn beat(id: &str, epoch: i32) -> Heartbeat {
    Heartbeat { member_id: id.into(), epoch, ..Default::default() }
}

#[test]
fn members_join_and_share_the_partitions() {
    let (t, c) = (topics(3), GroupConfig::default());
    let mut g = ShareGroup::new("g");
    let a = g.heartbeat(join("a"), &t, &c, 0).unwrap();
    assert_eq!((a.epoch, a.assignment.unwrap().len()), (1, 3));
    let b = g.heartbeat(join("b"), &t, &c, 0).unwrap();
    assert_eq!(b.epoch, 2);
    // a learns of its smaller share with the new epoch.
    let a = g.heartbeat(beat("a", 1), &t, &c, 0).unwrap();
    assert_eq!(a.epoch, 2);
    let (a, b) = (a.assignment.unwrap(), b.assignment.unwrap());
    assert_eq!(a.len() + b.len(), 3);
    assert!(a.is_disjoint(&b));
    // Nothing changed: no assignment sent.
    assert_eq!(g.heartbeat(beat("a", 2), &t, &c, 0).unwrap().assignment, None);
}

#[test]
fn more_members_than_partitions_all_get_one() {
    let (t, c) = (topics(2), GroupConfig::default());
    let mut g = ShareGroup::new("g");
    for m in ["a", "b", "c"] {
        g.heartbeat(join(m), &t, &c, 0).unwrap();
    }
    let all: Vec<usize> = g.members.values().map(|m| m.assigned.len()).collect();
    assert_eq!(all, vec![1, 1, 1]);
    let covered: BTreeSet<Tp> = g.members.values().flat_map(|m| m.assigned.iter().copied()).collect();
    assert_eq!(covered.len(), 2);
}

#[test]
fn wrong_epochs_and_unknown_members_are_refused() {
    let (t, c) = (topics(1), GroupConfig::default());
    let mut g = ShareGroup::new("g");
    g.heartbeat(join("a"), &t, &c, 0).unwrap();
    assert!(matches!(g.heartbeat(beat("a", 7), &t, &c, 0), Err(Error::FencedMemberEpoch { got: 7, current: 1 })));
    assert!(matches!(g.heartbeat(beat("z", 1), &t, &c, 0), Err(Error::UnknownMemberId(_))));
    assert!(matches!(g.heartbeat(beat("z", LEAVE_EPOCH), &t, &c, 0), Err(Error::UnknownMemberId(_))));
    assert!(matches!(g.heartbeat(beat("b", 0), &t, &c, 0), Err(Error::InvalidRequest(_))), "join without topics");
    assert!(matches!(g.heartbeat(beat("a", -5), &t, &c, 0), Err(Error::InvalidRequest(_))));
}

#[test]
fn leaving_and_timing_out_hand_partitions_over() {
    let (t, c) = (topics(2), GroupConfig { session_timeout_ms: 100, ..Default::default() });
    let mut g = ShareGroup::new("g");
    g.heartbeat(join("a"), &t, &c, 0).unwrap();
    g.heartbeat(join("b"), &t, &c, 0).unwrap();
    assert_eq!(g.heartbeat(beat("a", LEAVE_EPOCH), &t, &c, 0).unwrap().epoch, LEAVE_EPOCH);
    assert_eq!(g.members["b"].assigned.len(), 2);
    g.heartbeat(join("c"), &t, &c, 50).unwrap();
    assert_eq!(g.tick(&t, &c, 120), vec!["b".to_string()]);
    assert_eq!(g.members["c"].assigned.len(), 2);
    assert_eq!(g.state_name(), "Stable");
}

#[test]
fn the_group_size_is_capped() {
    let (t, c) = (topics(1), GroupConfig { max_size: 1, ..Default::default() });
    let mut g = ShareGroup::new("g");
    g.heartbeat(join("a"), &t, &c, 0).unwrap();
    assert!(matches!(g.heartbeat(join("b"), &t, &c, 0), Err(Error::GroupMaxSizeReached)));
}

#[test]
fn new_partitions_are_assigned() {
    let c = GroupConfig::default();
    let mut g = ShareGroup::new("g");
    g.heartbeat(join("a"), &topics(1), &c, 0).unwrap();
    let r = g.heartbeat(beat("a", 1), &topics(3), &c, 0).unwrap();
    assert_eq!((r.epoch, r.assignment.map(|a| a.len())), (2, Some(3)));
}

#[test]
fn a_stored_group_reads_back_with_its_members_epochs_and_assignment() {
    let (t, c) = (topics(3), GroupConfig { session_timeout_ms: 100, ..Default::default() });
    let mut g = ShareGroup::new("g");
    g.heartbeat(join("a"), &t, &c, 0).unwrap();
    g.heartbeat(join("b"), &t, &c, 0).unwrap();
    let mut back = ShareGroup::decode(&g.encode(), 1_000).unwrap();
    assert_eq!((back.epoch, back.assignment_epoch), (2, 2));
    assert_eq!(back.members["a"].assigned, g.members["a"].assigned);
    // The members' sessions run from the load: none has timed out at once.
    assert!(back.tick(&t, &c, 1_050).is_empty());
    // a continues with its epoch; nothing moved, so the group epoch stays.
    assert_eq!(back.heartbeat(beat("a", 1), &t, &c, 1_150).unwrap().epoch, 2);
    assert_eq!(back.epoch, 2);
    // b never comes back: its session runs out and the epoch goes on from the stored one.
    assert_eq!(back.tick(&t, &c, 1_200), vec!["b".to_string()]);
    assert_eq!(back.epoch, 3);
    let empty = ShareGroup::decode(&ShareGroup::new("e").encode(), 0).unwrap();
    assert_eq!(empty.state_name(), "Empty");
    assert!(ShareGroup::decode(b"{\"v\":9,\"group\":{}}", 0).is_none());
    assert!(ShareGroup::decode(b"\xff", 0).is_none());
}
