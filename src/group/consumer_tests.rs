//! Deterministic tests of KIP-848 reconciliation, on a fake clock.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::consumer::*;
use crate::error::Error;

fn topics() -> Topics {
    Topics::from([("t".to_string(), (Uuid::from_u128(7), 4))])
}

fn join(id: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_names: Some(vec!["t".into()]),
        owned: Some(vec![]),
        client_member_id: true,
        ..Default::default()
    }
}

fn beat(id: &str, epoch: i32, owned: Option<&BTreeSet<(Uuid, i32)>>) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        epoch,
        rebalance_timeout_ms: -1,
        owned: owned.map(|o| o.iter().copied().collect()),
        client_member_id: true,
        ..Default::default()
    }
}

#[test]
fn second_member_waits_for_the_first_to_revoke() {
    let cfg = ConsumerConfig::default();
    let mut g = ConsumerGroup::new("g");
    let a = g.heartbeat(join("a"), &topics(), &cfg, 0).unwrap();
    assert_eq!(a.epoch, 1);
    let a_parts = a.assignment.unwrap();
    assert_eq!(a_parts.len(), 4);
    let b = g.heartbeat(join("b"), &topics(), &cfg, 10).unwrap();
    assert_eq!(b.epoch, 2);
    assert!(b.assignment.unwrap().is_empty(), "a still holds every partition");
    assert_eq!(g.state_name(), "Reconciling");
    // a learns it must give up two partitions, keeping its epoch until it does.
    let r = g.heartbeat(beat("a", 1, Some(&a_parts)), &topics(), &cfg, 20).unwrap();
    assert_eq!(r.epoch, 1);
    let kept = r.assignment.unwrap();
    assert_eq!(kept.len(), 2);
    // a reports it now owns only what it kept: it moves to epoch 2.
    let r = g.heartbeat(beat("a", 1, Some(&kept)), &topics(), &cfg, 30).unwrap();
    assert_eq!(r.epoch, 2);
    // b now gets the released partitions.
    let r = g.heartbeat(beat("b", 2, Some(&BTreeSet::new())), &topics(), &cfg, 40).unwrap();
    let b_parts = r.assignment.unwrap();
    assert_eq!(b_parts.len(), 2);
    assert!(b_parts.is_disjoint(&kept));
    assert_eq!(g.state_name(), "Stable");
}

#[test]
fn epochs_are_checked() {
    let cfg = ConsumerConfig::default();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("a"), &topics(), &cfg, 0).unwrap();
    assert!(matches!(g.heartbeat(beat("a", 5, None), &topics(), &cfg, 1), Err(Error::FencedMemberEpoch { .. })));
    assert!(matches!(g.heartbeat(beat("x", 1, None), &topics(), &cfg, 1), Err(Error::UnknownMemberId(_))));
    assert!(g.validate_member_epoch("a", 1).is_ok());
    assert_eq!(g.validate_member_epoch("a", 0), Err(Error::StaleMemberEpoch(0)));
}

#[test]
fn expired_member_frees_its_partitions() {
    let cfg = ConsumerConfig::default();
    let mut g = ConsumerGroup::new("g");
    g.heartbeat(join("a"), &topics(), &cfg, 0).unwrap();
    g.heartbeat(join("b"), &topics(), &cfg, 0).unwrap();
    g.tick(&topics(), &cfg, 30_000);
    assert_eq!(g.members.len(), 2);
    g.heartbeat(beat("b", 2, Some(&BTreeSet::new())), &topics(), &cfg, 40_000).unwrap();
    g.tick(&topics(), &cfg, 46_000);
    assert_eq!(g.members.keys().collect::<Vec<_>>(), vec!["b"], "a missed its session");
    let r = g.heartbeat(beat("b", 2, Some(&BTreeSet::new())), &topics(), &cfg, 46_001).unwrap();
    assert_eq!(r.assignment.unwrap().len(), 4);
}

#[test]
fn regex_subscription_follows_new_topics() {
    let cfg = ConsumerConfig::default();
    let mut g = ConsumerGroup::new("g");
    let mut hb = join("a");
    hb.subscribed_names = None;
    hb.subscribed_regex = Some("orders-.*".into());
    let mut ts = Topics::from([("orders-1".to_string(), (Uuid::from_u128(1), 1)), ("other".to_string(), (Uuid::from_u128(2), 1))]);
    let r = g.heartbeat(hb, &ts, &cfg, 0).unwrap();
    assert_eq!(r.assignment.unwrap().len(), 1);
    ts.insert("orders-2".into(), (Uuid::from_u128(3), 2));
    let r = g.heartbeat(beat("a", r.epoch, None), &ts, &cfg, 10).unwrap();
    assert_eq!(r.assignment.unwrap().len(), 3);
}

#[test]
fn regex_subscription_matches_internal_topics_too() {
    let cfg = ConsumerConfig::default();
    let mut g = ConsumerGroup::new("g");
    let mut hb = join("a");
    hb.subscribed_names = None;
    hb.subscribed_regex = Some("__consumer_.*|orders".into());
    let ts = Topics::from([("__consumer_offsets".to_string(), (Uuid::from_u128(1), 3)), ("orders".to_string(), (Uuid::from_u128(2), 1))]);
    let r = g.heartbeat(hb, &ts, &cfg, 0).unwrap();
    assert_eq!(r.assignment.unwrap().len(), 4);
}
