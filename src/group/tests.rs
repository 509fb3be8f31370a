//! Deterministic tests of the classic rebalance state machine, on a fake clock.

use bytes::Bytes;

use super::classic::*;
use crate::error::Error;

fn cfg() -> GroupConfig {
    GroupConfig { initial_rebalance_delay_ms: 0, ..Default::default() }
}

fn req(member: &str, protos: &[&str]) -> JoinRequest {
    JoinRequest {
        member_id: member.into(),
        instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        protocol_type: "consumer".into(),
        protocols: protos.iter().map(|p| (p.to_string(), Bytes::from_static(b"meta"))).collect(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        require_known_member_id: true,
        version: 9,
    }
}

/// Joins a brand-new member (two-step KIP-394 join); returns its id and any replies.
fn join_new(g: &mut Group, t: Ticket, now: i64) -> (String, Vec<Reply>) {
    let (r, _) = g.join(req("", &["range"]), t, &cfg(), now);
    let r = r.expect("MEMBER_ID_REQUIRED is immediate");
    assert_eq!(r.error, Some(Error::MemberIdRequired));
    let (imm, replies) = g.join(req(&r.member_id, &["range"]), t, &cfg(), now);
    assert!(imm.is_none());
    (r.member_id, replies)
}

fn joins(replies: &[Reply]) -> Vec<(Ticket, JoinResponse)> {
    replies.iter().filter_map(|r| if let Reply::Join(t, j) = r { Some((*t, j.clone())) } else { None }).collect()
}

#[test]
fn single_member_join_sync_heartbeat() {
    let mut g = Group::new("g", 0);
    let (id, replies) = join_new(&mut g, 1, 0);
    let j = joins(&replies);
    assert_eq!(j.len(), 1);
    assert_eq!(j[0].1.generation, 1);
    assert_eq!(j[0].1.leader, id);
    assert_eq!(g.state, State::CompletingRebalance);
    let (imm, replies) = g.sync(&id, None, 1, None, None, vec![(id.clone(), Bytes::from_static(b"A"))], 2, 10);
    assert!(imm.is_none());
    assert!(matches!(&replies[0], Reply::Sync(2, s) if s.assignment == Bytes::from_static(b"A")));
    assert_eq!(g.state, State::Stable);
    assert!(g.heartbeat(&id, None, 1, 20).is_ok());
    assert_eq!(g.heartbeat(&id, None, 0, 20), Err(Error::IllegalGeneration(0)));
}

#[test]
fn join_storm_converges_to_one_generation() {
    let mut g = Group::new("g", 0);
    let (a, _) = join_new(&mut g, 1, 0);
    g.sync(&a, None, 1, None, None, vec![], 2, 0);
    // Five members arrive at once: each joins, forcing a rebalance that waits for all.
    let mut ids = vec![a.clone()];
    let mut all = Vec::new();
    for t in 10..15 {
        let (id, r) = join_new(&mut g, t, 100);
        ids.push(id);
        all.extend(r);
    }
    assert_eq!(g.state, State::PreparingRebalance);
    assert!(
        joins(&all).iter().all(|(_, j)| j.error.is_none()) && joins(&all).is_empty(),
        "nobody is answered until the old member rejoins"
    );
    let (_, r) = g.join(req(&a, &["range"]), 20, &cfg(), 200);
    let done = joins(&r);
    assert_eq!(done.len(), 6);
    assert!(done.iter().all(|(_, j)| j.generation == 2));
    assert_eq!(done.iter().filter(|(_, j)| !j.members.is_empty()).count(), 1, "only the leader gets the member list");
}

#[test]
fn member_that_misses_the_rebalance_is_dropped_at_the_deadline() {
    let mut g = Group::new("g", 0);
    let (a, _) = join_new(&mut g, 1, 0);
    g.sync(&a, None, 1, None, None, vec![], 2, 0);
    let (b, _) = join_new(&mut g, 3, 1000);
    // `a` keeps heartbeating but never rejoins; after the rebalance timeout the join
    // completes without it.
    for t in (1000..31_000).step_by(5000) {
        assert_eq!(g.heartbeat(&a, None, 1, t), Err(Error::RebalanceInProgress));
        assert!(g.tick(&cfg(), t).is_empty());
    }
    assert!(g.tick(&cfg(), 1000 + 29_999).is_empty());
    let r = g.tick(&cfg(), 1000 + 30_000);
    let j = joins(&r);
    assert_eq!(j.len(), 1);
    assert_eq!(j[0].1.leader, b);
    assert!(!g.members.contains_key(&a));
}

#[test]
fn session_timeout_mid_rebalance_removes_the_member() {
    let mut g = Group::new("g", 0);
    let (a, _) = join_new(&mut g, 1, 0);
    g.sync(&a, None, 1, None, None, vec![], 2, 0);
    let (b, r) = join_new(&mut g, 3, 0);
    assert!(joins(&r).is_empty());
    let (_, r) = g.join(req(&a, &["range"]), 4, &cfg(), 0);
    assert_eq!(joins(&r).len(), 2);
    // In CompletingRebalance the follower `b` syncs and waits; the leader `a` goes silent.
    let (imm, _) = g.sync(&b, None, 2, None, None, vec![], 5, 100);
    assert!(imm.is_none());
    assert_eq!(g.state, State::CompletingRebalance);
    assert!(g.tick(&cfg(), 9_000).is_empty());
    let r = g.tick(&cfg(), 10_101);
    assert!(!g.members.contains_key(&a), "a's session expired");
    assert_eq!(g.state, State::PreparingRebalance);
    assert!(matches!(&r[0], Reply::Sync(5, s) if s.error == Some(Error::RebalanceInProgress)));
}

#[test]
fn leader_leaving_during_sync_restarts_the_rebalance() {
    let mut g = Group::new("g", 0);
    let (a, _) = join_new(&mut g, 1, 0);
    g.sync(&a, None, 1, None, None, vec![], 2, 0);
    let (b, _) = join_new(&mut g, 3, 0);
    g.join(req(&a, &["range"]), 4, &cfg(), 0);
    let (imm, _) = g.sync(&b, None, 2, None, None, vec![], 6, 10);
    assert!(imm.is_none(), "the follower waits for the leader");
    let r = g.leave(&a, None, &cfg(), 20).unwrap();
    assert!(matches!(&r[0], Reply::Sync(6, s) if s.error == Some(Error::RebalanceInProgress)));
    let (_, r) = g.join(req(&b, &["range"]), 7, &cfg(), 30);
    let j = joins(&r);
    assert_eq!(j[0].1.leader, b);
    assert_eq!(j[0].1.generation, 3);
}

#[test]
fn static_member_restart_within_session_keeps_the_generation() {
    let mut g = Group::new("g", 0);
    let mut r = req("", &["range"]);
    r.instance_id = Some("i-1".into());
    let (imm, replies) = g.join(r.clone(), 1, &cfg(), 0);
    assert!(imm.is_none());
    let id = joins(&replies)[0].1.member_id.clone();
    g.sync(&id, Some("i-1"), 1, None, None, vec![(id.clone(), Bytes::from_static(b"P"))], 2, 0);
    // The process restarts: same instance id, no member id.
    let (imm, _) = g.join(r, 3, &cfg(), 5_000);
    let j = imm.expect("no rebalance: immediate answer");
    assert_eq!(j.generation, 1);
    assert_ne!(j.member_id, id);
    assert_eq!(g.state, State::Stable);
    let (s, _) = g.sync(&j.member_id, Some("i-1"), 1, None, None, vec![], 4, 5_000);
    assert_eq!(s.unwrap().assignment, Bytes::from_static(b"P"));
    assert_eq!(g.heartbeat(&id, Some("i-1"), 1, 5_000), Err(Error::FencedInstanceId("i-1".into())));
}

#[test]
fn incompatible_protocols_are_refused() {
    let mut g = Group::new("g", 0);
    join_new(&mut g, 1, 0);
    let (r, _) = g.join(req("", &["roundrobin"]), 2, &cfg(), 0);
    assert_eq!(r.unwrap().error, Some(Error::InconsistentGroupProtocol));
}

#[test]
fn initial_delay_waits_and_stretches_for_newcomers() {
    let c = GroupConfig { initial_rebalance_delay_ms: 3000, ..Default::default() };
    let mut g = Group::new("g", 0);
    let (r, _) = g.join(req("", &["range"]), 1, &c, 0);
    let a = r.unwrap().member_id;
    assert!(g.join(req(&a, &["range"]), 1, &c, 0).1.is_empty());
    let (r, _) = g.join(req("", &["range"]), 2, &c, 1000);
    let b = r.unwrap().member_id;
    g.join(req(&b, &["range"]), 2, &c, 1000);
    assert!(g.tick(&c, 3000).is_empty(), "a newcomer stretched the delay");
    assert_eq!(joins(&g.tick(&c, 6000)).len(), 2);
}
