use super::topology::*;
use super::*;

/// Word count: subtopology 0 reads `input` and writes the repartition topic; 1 reads it
/// and keeps a changelogged store.
fn word_count(epoch: i32) -> Topology {
    Topology {
        epoch,
        subtopologies: vec![
            Subtopology {
                id: "0".into(),
                source_topics: vec!["input".into()],
                repartition_sink_topics: vec!["app-repartition".into()],
                ..Default::default()
            },
            Subtopology {
                id: "1".into(),
                repartition_source_topics: vec![TopicInfo { name: "app-repartition".into(), ..Default::default() }],
                state_changelog_topics: vec![TopicInfo { name: "app-changelog".into(), ..Default::default() }],
                ..Default::default()
            },
        ],
    }
}

/// Kafka's defaults without the initial rebalance delay and the assignment interval, so
/// that each step assigns at once.
fn cfg() -> StreamsConfig {
    StreamsConfig { initial_rebalance_delay_ms: 0, assignment_interval_ms: 0, ..Default::default() }
}

fn join(id: &str, process: &str) -> Heartbeat {
    Heartbeat {
        member_id: id.into(),
        epoch: 0,
        rebalance_timeout_ms: 30_000,
        topology: Some(word_count(0)),
        process_id: Some(process.into()),
        owned: Some(Tasks::default()),
        ..Default::default()
    }
}

fn beat(id: &str, epoch: i32, owned: &Tasks) -> Heartbeat {
    Heartbeat { member_id: id.into(), epoch, rebalance_timeout_ms: -1, owned: Some(owned.clone()), ..Default::default() }
}

fn topics(with_internal: bool) -> TopicCounts {
    let mut t: TopicCounts = [("input".to_string(), 4)].into();
    if with_internal {
        t.insert("app-repartition".into(), 4);
        t.insert("app-changelog".into(), 4);
    }
    t
}

#[test]
fn internal_topics_are_derived_then_tasks_assigned() {
    let cfg = cfg();
    let mut g = StreamsGroup::new("g");
    let r = g.heartbeat(join("a", "p1"), &topics(false), &cfg, 0).unwrap();
    let mut created: Vec<(String, i32)> = r.to_create.iter().map(|t| (t.name.clone(), t.partitions)).collect();
    created.sort();
    assert_eq!(created, vec![("app-changelog".to_string(), 4), ("app-repartition".to_string(), 4)]);
    assert_eq!(r.status[0].0, STATUS_MISSING_INTERNAL_TOPICS);
    assert!(r.tasks.unwrap().is_empty());
    assert_eq!(g.state_name(), "NotReady");
    let r = g.heartbeat(beat("a", r.epoch, &Tasks::default()), &topics(true), &cfg, 10).unwrap();
    assert!(r.status.is_empty(), "{:?}", r.status);
    assert_eq!(r.tasks.unwrap().active.len(), 8);
    assert_eq!(g.state_name(), "Stable");
}

#[test]
fn missing_source_topics_is_a_status() {
    let mut g = StreamsGroup::new("g");
    let r = g.heartbeat(join("a", "p1"), &TopicCounts::new(), &cfg(), 0).unwrap();
    assert_eq!(r.status[0].0, STATUS_MISSING_SOURCE_TOPICS);
    assert!(r.to_create.is_empty());
}

#[test]
fn tasks_move_only_after_release() {
    let cfg = cfg();
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap();
    let a_tasks = a.tasks.unwrap();
    assert_eq!(a_tasks.active.len(), 8);
    let b = g.heartbeat(join("b", "p2"), &t, &cfg, 1).unwrap();
    // b's target is half the tasks, but a still holds them all.
    assert!(b.tasks.unwrap().active.is_empty());
    // a is asked to give up four tasks, at its current epoch.
    let a2 = g.heartbeat(beat("a", a.epoch, &a_tasks), &t, &cfg, 2).unwrap();
    let kept = a2.tasks.unwrap();
    assert_eq!(kept.active.len(), 4);
    assert_eq!(a2.epoch, a.epoch);
    // Until a reports the release, b gets nothing.
    let b2 = g.heartbeat(beat("b", b.epoch, &Tasks::default()), &t, &cfg, 3).unwrap();
    assert!(b2.tasks.is_none_or(|x| x.active.is_empty()));
    let a3 = g.heartbeat(beat("a", a2.epoch, &kept), &t, &cfg, 4).unwrap();
    assert!(a3.epoch > a.epoch);
    let b3 = g.heartbeat(beat("b", b2.epoch, &Tasks::default()), &t, &cfg, 5).unwrap();
    let got = b3.tasks.unwrap();
    assert_eq!(got.active.len(), 4);
    assert!(got.active.is_disjoint(&kept.active));
    assert_eq!(g.state_name(), "Stable");
}

#[test]
fn wrong_epochs_and_unknown_members_are_refused() {
    let cfg = cfg();
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap();
    let e = g.heartbeat(beat("a", a.epoch + 5, &Tasks::default()), &t, &cfg, 1).unwrap_err();
    assert!(matches!(e, Error::FencedMemberEpoch { .. }));
    let e = g.heartbeat(beat("zz", 1, &Tasks::default()), &t, &cfg, 1).unwrap_err();
    assert!(matches!(e, Error::UnknownMemberId(_)));
    assert!(g.validate_member_epoch("a", a.epoch).is_ok());
    assert!(matches!(g.validate_member_epoch("a", a.epoch - 1), Err(Error::StaleMemberEpoch(_))));
}

#[test]
fn bad_topologies_are_refused() {
    let cfg = cfg();
    let mut g = StreamsGroup::new("g");
    let mut hb = join("a", "p1");
    hb.topology.as_mut().unwrap().subtopologies[1].state_changelog_topics[0].partitions = 3;
    assert!(matches!(g.heartbeat(hb, &topics(false), &cfg, 0), Err(Error::StreamsInvalidTopology(_))));
    let mut hb = join("a", "p1");
    hb.topology.as_mut().unwrap().subtopologies[0].repartition_sink_topics.clear();
    assert!(matches!(g.heartbeat(hb, &topics(false), &cfg, 0), Err(Error::StreamsInvalidTopology(_))));
    let mut hb = join("a", "p1");
    hb.topology = None;
    assert!(matches!(g.heartbeat(hb, &topics(false), &cfg, 0), Err(Error::InvalidRequest(_))));
}

#[test]
fn topology_updates_with_members_are_refused() {
    let cfg = cfg();
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap();
    let mut hb = join("b", "p2");
    hb.topology = Some(word_count(1));
    assert!(matches!(g.heartbeat(hb, &t, &cfg, 1), Err(Error::StreamsInvalidTopologyEpoch(_))));
    // An older topology joins with a STALE_TOPOLOGY status.
    g.topology.as_mut().unwrap().epoch = 2;
    let r = g.heartbeat(join("c", "p3"), &t, &cfg, 2).unwrap();
    assert!(r.status.iter().any(|s| s.0 == STATUS_STALE_TOPOLOGY));
}

#[test]
fn leaving_and_expiry_rebalance() {
    let cfg = cfg();
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap();
    g.heartbeat(join("b", "p2"), &t, &cfg, 0).unwrap();
    let r = g.heartbeat(beat("b", LEAVE_EPOCH, &Tasks::default()), &t, &cfg, 1).unwrap();
    assert_eq!(r.epoch, LEAVE_EPOCH);
    assert_eq!(g.target["a"].active.len(), 8);
    let r = g.heartbeat(beat("a", a.epoch, &a.tasks.unwrap()), &t, &cfg, 2).unwrap();
    assert_eq!(g.members["a"].assigned.active.len(), 8, "{r:?}");
    g.tick(&t, &cfg, 2 + cfg.session_timeout_ms + 1);
    assert_eq!(g.state_name(), "Empty");
}

#[test]
fn standby_replicas_follow_the_config() {
    let cfg = StreamsConfig { num_standby_replicas: 1, ..cfg() };
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap();
    g.heartbeat(join("b", "p2"), &t, &cfg, 0).unwrap();
    // Only subtopology 1 keeps state: its four tasks get a standby, subtopology 0's none.
    let standby: BTreeSet<TaskId> = g.target.values().flat_map(|x| x.standby.iter().cloned()).collect();
    assert_eq!(standby, (0..4).map(|p| ("1".to_string(), p)).collect());
    for x in g.target.values() {
        assert!(x.active.is_disjoint(&x.standby));
    }
}

#[test]
fn copartitioned_sources_must_agree() {
    let topo = Topology {
        epoch: 0,
        subtopologies: vec![Subtopology {
            id: "0".into(),
            source_topics: vec!["l".into(), "r".into()],
            copartition_groups: vec![CopartitionGroup { source_topics: vec![0, 1], repartition_source_topics: vec![] }],
            ..Default::default()
        }],
    };
    let c = topo.configure(&[("l".to_string(), 2), ("r".to_string(), 3)].into()).unwrap();
    assert_eq!(c.status[0].0, STATUS_INCORRECTLY_PARTITIONED_TOPICS);
    let c = topo.configure(&[("l".to_string(), 3), ("r".to_string(), 3)].into()).unwrap();
    assert_eq!(c.tasks.unwrap()["0"], 3);
}

fn delayed(r: &HeartbeatReply) -> bool {
    r.status.iter().any(|s| s.0 == STATUS_ASSIGNMENT_DELAYED)
}

#[test]
fn initial_delay_holds_the_first_assignment_until_the_timer_fires() {
    let cfg = StreamsConfig { initial_rebalance_delay_ms: 3000, ..cfg() };
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg, 1000).unwrap();
    assert!(delayed(&a), "{a:?}");
    assert!(a.tasks.unwrap().is_empty());
    // Epoch 1 without tasks, not 0 (which the client would answer with an invalid join).
    assert_eq!(a.epoch, 1);
    // b joins a group that is no longer empty: the delay is not extended.
    let b = g.heartbeat(join("b", "p2"), &t, &cfg, 2000).unwrap();
    assert!(delayed(&b));
    assert_eq!(g.assignment_epoch, 0);
    g.tick(&t, &cfg, 3999);
    assert_eq!(g.assignment_epoch, 0);
    // The timer fires: one assignment for both members, none moved twice.
    g.tick(&t, &cfg, 4000);
    assert_eq!(g.assignment_epoch, g.epoch);
    assert_eq!(g.target["a"].active.len(), 4);
    assert_eq!(g.target["b"].active.len(), 4);
    let a2 = g.heartbeat(beat("a", 1, &Tasks::default()), &t, &cfg, 4001).unwrap();
    assert!(!delayed(&a2));
    assert_eq!(a2.epoch, g.epoch);
    assert_eq!(a2.tasks.unwrap().active, g.target["a"].active);
}

#[test]
fn initial_delay_ends_at_a_heartbeat_too_and_returns_when_the_group_empties() {
    let cfg = StreamsConfig { initial_rebalance_delay_ms: 3000, ..cfg() };
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    assert!(delayed(&g.heartbeat(join("a", "p1"), &t, &cfg, 0).unwrap()));
    // No tick in between: the first heartbeat past the deadline assigns.
    let a = g.heartbeat(beat("a", 1, &Tasks::default()), &t, &cfg, 3000).unwrap();
    assert!(!delayed(&a));
    assert_eq!(a.tasks.unwrap().active.len(), 8);
    g.heartbeat(beat("a", LEAVE_EPOCH, &Tasks::default()), &t, &cfg, 4000).unwrap();
    // A member joining the empty group waits again, as in Kafka 4.4.
    let b = g.heartbeat(join("b", "p2"), &t, &cfg, 5000).unwrap();
    assert!(delayed(&b));
    assert!(b.tasks.unwrap().is_empty());
    g.tick(&t, &cfg, 8000);
    assert_eq!(g.target["b"].active.len(), 8);
}

#[test]
fn assignment_interval_spaces_assignments() {
    let cfg = StreamsConfig { assignment_interval_ms: 1000, ..cfg() };
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg, 10).unwrap();
    assert_eq!(a.tasks.clone().unwrap().active.len(), 8);
    // b joins within the interval: the old target stands, with the status.
    let b = g.heartbeat(join("b", "p2"), &t, &cfg, 500).unwrap();
    assert!(delayed(&b), "{b:?}");
    assert!(g.epoch > g.assignment_epoch);
    assert!(!g.target.contains_key("b"));
    // The next heartbeat after the interval computes it.
    let b2 = g.heartbeat(beat("b", b.epoch, &Tasks::default()), &t, &cfg, 1010).unwrap();
    assert!(!delayed(&b2));
    assert_eq!(g.assignment_epoch, g.epoch);
    assert_eq!(g.target["b"].active.len(), 4);
}

#[test]
fn a_changed_standby_config_bumps_the_epoch_and_no_warmups_are_assigned() {
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let a = g.heartbeat(join("a", "p1"), &t, &cfg(), 0).unwrap();
    let b = g.heartbeat(join("b", "p2"), &t, &cfg(), 0).unwrap();
    let before = g.epoch;
    assert!(g.target.values().all(|x| x.standby.is_empty()));
    // The group config streams.num.standby.replicas=1 arrives: the next heartbeat rebalances.
    let one = StreamsConfig { num_standby_replicas: 1, ..cfg() };
    g.heartbeat(beat("a", a.epoch, &g.members["a"].assigned.clone()), &t, &one, 1).unwrap();
    assert_eq!(g.epoch, before + 1);
    assert_eq!(g.assignment_epoch, g.epoch);
    let standby: usize = g.target.values().map(|x| x.standby.len()).sum();
    assert_eq!(standby, 4);
    // Unchanged configs: no further bump.
    g.heartbeat(beat("b", b.epoch, &g.members["b"].assigned.clone()), &t, &one, 2).unwrap();
    assert_eq!(g.epoch, before + 1);
    // Kafka 4.4 assigns no warm-up tasks (AssignmentRefiner.refine is the identity).
    assert!(g.target.values().all(|x| x.warmup.is_empty()));
}

#[test]
fn missing_client_tags_are_a_status_from_v1() {
    let cfg = StreamsConfig { rack_aware_assignment_tags: vec!["zone".into(), "rack".into()], ..cfg() };
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    let mut hb = join("a", "p1");
    hb.client_tags = Some([("zone".to_string(), "z1".to_string())].into());
    hb.version = 1;
    let r = g.heartbeat(hb.clone(), &t, &cfg, 0).unwrap();
    let s = r.status.iter().find(|s| s.0 == STATUS_MISSING_CLIENT_TAGS).expect("status");
    assert!(s.1.contains("[rack]"), "{s:?}");
    // The tags are only checked from v1 on, and a member that has them all passes.
    let mut hb0 = join("b", "p2");
    hb0.version = 0;
    assert!(g.heartbeat(hb0, &t, &cfg, 1).unwrap().status.iter().all(|s| s.0 != STATUS_MISSING_CLIENT_TAGS));
    let mut full = join("c", "p3");
    full.version = 1;
    full.client_tags = Some([("zone".to_string(), "z1".to_string()), ("rack".to_string(), "r1".to_string())].into());
    assert!(g.heartbeat(full, &t, &cfg, 2).unwrap().status.iter().all(|s| s.0 != STATUS_MISSING_CLIENT_TAGS));
}

#[test]
fn reported_task_offsets_are_kept_and_rank_standby_candidates() {
    let t = topics(true);
    let mut g = StreamsGroup::new("g");
    for (id, p) in [("a", "p1"), ("b", "p2"), ("c", "p3"), ("d", "p4")] {
        g.heartbeat(join(id, p), &t, &cfg(), 0).unwrap();
    }
    let k = (0..4).map(|p| ("1".to_string(), p)).find(|x| !g.target["c"].active.contains(x)).expect("c lacks a stateful task");
    let epoch = g.members["c"].epoch;
    let report = |offsets: Option<Vec<(TaskId, i64)>>, end: Option<Vec<(TaskId, i64)>>| Heartbeat {
        member_id: "c".into(),
        epoch,
        rebalance_timeout_ms: -1,
        task_offsets: offsets,
        task_end_offsets: end,
        ..Default::default()
    };
    let hb = report(Some(vec![(k.clone(), 500)]), Some(vec![(k.clone(), 600)]));
    g.heartbeat(hb, &t, &cfg(), 1).unwrap();
    let kept = TaskOffsets { offsets: [(k.clone(), 500)].into(), end_offsets: [(k.clone(), 600)].into() };
    assert_eq!(g.members["c"].task_offsets, kept);
    // Null lists leave them; a duplicate is refused and changes nothing.
    g.heartbeat(report(None, None), &t, &cfg(), 2).unwrap();
    assert_eq!(g.members["c"].task_offsets, kept);
    let e = g.heartbeat(report(Some(vec![(k.clone(), 1), (k.clone(), 2)]), None), &t, &cfg(), 3).unwrap_err();
    assert!(matches!(e, Error::InvalidRequest(_)), "{e:?}");
    assert_eq!(g.members["c"].task_offsets, kept);
    // One standby per stateful task now: every member holds two active tasks, and of the
    // members that may take `k`, only "c" has its state.
    let one = StreamsConfig { num_standby_replicas: 1, ..cfg() };
    g.heartbeat(report(None, None), &t, &one, 4).unwrap();
    assert!(g.target["c"].standby.contains(&k), "{:?}", g.target);
}
