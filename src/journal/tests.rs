use std::collections::BTreeMap;

use uuid::Uuid;

use super::*;
use crate::config::listeners::SecurityProtocol;
use crate::metadata::image::Image;
use crate::metadata::records::{ElectionReason, Endpoint, PartitionState, Record, RecordBatch};

const TOPIC: Uuid = Uuid::from_u64_pair(7, 7);

fn register(id: i32) -> Record {
    Record::RegisterBroker {
        id,
        incarnation: Uuid::from_u64_pair(1, id as u64),
        host: "127.0.0.1".into(),
        port: 9000 + id,
        rack: None,
        controller: true,
        endpoints: vec![Endpoint {
            listener: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9000 + id,
            security_protocol: SecurityProtocol::Plaintext,
        }],
        http: None,
    }
}

fn state(replicas: &[i32], isr: &[i32], leader: i32, leader_epoch: i32) -> PartitionState {
    PartitionState {
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch,
        partition_epoch: leader_epoch,
        ..Default::default()
    }
}

fn change(state: PartitionState, reason: Option<ElectionReason>) -> Record {
    Record::PartitionChange { topic_id: TOPIC, index: 0, state, unclean: false, reason }
}

/// Applies one batch of `recs` at `offset`, stamped at `offset * 10` ms.
fn run(img: &mut Image, offset: u64, recs: Vec<Record>) -> Vec<Event> {
    apply_batch(img, offset, &RecordBatch::new(recs).at(offset as i64 * 10))
}

fn kinds(events: &[Event]) -> Vec<Kind> {
    events.iter().map(|e| e.kind.clone()).collect()
}

/// Brokers 1-3 registered (offsets 1-3) and unfenced, and topic `t` with one partition
/// on all three, led by 1 (offset 5).
fn cluster() -> Image {
    let mut img = Image::default();
    for id in 1..=3 {
        run(&mut img, id as u64, vec![register(id)]);
    }
    run(&mut img, 4, (1..=3).map(|id| Record::UnfenceBroker { id, epoch: id as u64 }).collect());
    let topic = Record::Topic { name: "t".into(), id: TOPIC, configs: BTreeMap::new() };
    let p = Record::Partition { topic_id: TOPIC, index: 0, state: state(&[1, 2, 3], &[1, 2, 3], 1, 0) };
    run(&mut img, 5, vec![topic, p]);
    img
}

#[test]
fn brokers_register_unfence_fence_and_unregister_once_per_epoch() {
    let mut img = Image::default();
    let ev = run(&mut img, 5, vec![register(1)]);
    let endpoints = BTreeMap::from([("PLAINTEXT".to_string(), "127.0.0.1:9001".to_string())]);
    assert_eq!(kinds(&ev), vec![Kind::BrokerRegistered { broker_id: 1, epoch: 5, endpoints }]);
    assert_eq!((ev[0].seq, ev[0].time_ms), (5_000_000, Some(50)));
    assert_eq!(run(&mut img, 6, vec![Record::UnfenceBroker { id: 1, epoch: 4 }]), vec![], "an older registration's epoch");
    let ev = run(&mut img, 7, vec![Record::UnfenceBroker { id: 1, epoch: 5 }]);
    assert_eq!(kinds(&ev), vec![Kind::BrokerUnfenced { broker_id: 1, epoch: 5 }]);
    assert_eq!(run(&mut img, 8, vec![Record::UnfenceBroker { id: 1, epoch: 5 }]), vec![], "already unfenced");
    let ev = run(&mut img, 9, vec![Record::FenceBroker { id: 1, epoch: 5 }]);
    assert_eq!(kinds(&ev), vec![Kind::BrokerFenced { broker_id: 1, epoch: 5 }]);
    assert!(!img.is_live(1), "the image was applied too");
    assert_eq!(run(&mut img, 10, vec![Record::UnregisterBroker { id: 1, epoch: 4 }]), vec![], "an older registration's epoch");
    assert!(img.brokers.contains_key(&1), "an unregister of an older registration leaves this one");
    let ev = run(&mut img, 11, vec![Record::UnregisterBroker { id: 1, epoch: 5 }]);
    assert_eq!(kinds(&ev), vec![Kind::BrokerUnregistered { broker_id: 1, epoch: 5 }]);
    assert!(!img.brokers.contains_key(&1), "the registration is gone");
    assert_eq!(run(&mut img, 12, vec![Record::UnregisterBroker { id: 1, epoch: 5 }]), vec![], "already gone");
}

#[test]
fn a_topic_created_in_one_batch_is_one_event_with_its_size() {
    let mut img = cluster();
    let id = Uuid::from_u64_pair(8, 8);
    let mut recs = vec![Record::Topic { name: "u".into(), id, configs: BTreeMap::new() }];
    for i in 0..4 {
        recs.push(Record::Partition { topic_id: id, index: i, state: state(&[1, 2], &[1, 2], 1, 0) });
    }
    let ev = run(&mut img, 10, recs);
    assert_eq!(kinds(&ev), vec![Kind::TopicCreated { topic: "u".into(), topic_id: id, partitions: 4, replication_factor: 2 }]);
    assert_eq!(img.topics["u"].partitions.len(), 4);

    let more: Vec<Record> = (4..6).map(|i| Record::Partition { topic_id: id, index: i, state: state(&[2, 3], &[2, 3], 2, 0) }).collect();
    let ev = run(&mut img, 11, more);
    assert_eq!(kinds(&ev), vec![Kind::PartitionsCreated { topic: "u".into(), count_before: 4, count_after: 6 }]);

    let ev = run(&mut img, 12, vec![Record::RemoveTopic { id }]);
    assert_eq!(kinds(&ev), vec![Kind::TopicDeleted { topic: "u".into(), topic_id: id }]);
    assert_eq!(run(&mut img, 13, vec![Record::RemoveTopic { id }]), vec![], "already gone");
}

#[test]
fn every_election_reason_is_carried_with_previous_leader_and_epoch() {
    for (k, reason) in ElectionReason::ALL.iter().enumerate() {
        let mut img = cluster();
        let ev = run(&mut img, 10 + k as u64, vec![change(state(&[1, 2, 3], &[1, 2, 3], 2, 1), Some(*reason))]);
        assert_eq!(
            kinds(&ev),
            vec![Kind::LeaderChanged { topic: "t".into(), partition: 0, previous_leader: 1, leader: 2, leader_epoch: 1, reason: *reason }]
        );
        let json = serde_json::to_value(&ev[0]).unwrap();
        assert_eq!(json["reason"], reason.as_str(), "the reason serializes as its name");
    }
    // A record from before reasons were written: only its unclean flag tells.
    let mut img = cluster();
    let old = Record::PartitionChange { topic_id: TOPIC, index: 0, state: state(&[1, 2, 3], &[3], 3, 1), unclean: true, reason: None };
    let ev = run(&mut img, 10, vec![old]);
    assert!(matches!(ev[0].kind, Kind::LeaderChanged { reason: ElectionReason::Unclean, leader: 3, .. }), "{ev:?}");
}

#[test]
fn isr_changes_carry_before_and_after_in_record_order() {
    let mut img = cluster();
    // The leader drops a lagging follower: no leader change.
    let ev = run(&mut img, 10, vec![change(state(&[1, 2, 3], &[1, 2], 1, 0), None)]);
    let shrunk = Kind::IsrShrunk { topic: "t".into(), partition: 0, isr_before: vec![1, 2, 3], isr_after: vec![1, 2], leader: 1 };
    assert_eq!(kinds(&ev), vec![shrunk]);
    // The leader's broker is fenced: in one batch, the fence, the new leader and the ISR
    // without it, judged against the image after the ISR shrink above.
    let recs = vec![
        Record::FenceBroker { id: 1, epoch: 1 },
        change(state(&[1, 2, 3], &[2], 2, 1), Some(ElectionReason::Clean)),
        change(state(&[1, 2, 3], &[2, 3], 2, 1), None),
    ];
    let ev = run(&mut img, 11, recs);
    assert_eq!(
        kinds(&ev),
        vec![
            Kind::BrokerFenced { broker_id: 1, epoch: 1 },
            Kind::LeaderChanged {
                topic: "t".into(),
                partition: 0,
                previous_leader: 1,
                leader: 2,
                leader_epoch: 1,
                reason: ElectionReason::Clean
            },
            Kind::IsrShrunk { topic: "t".into(), partition: 0, isr_before: vec![1, 2], isr_after: vec![2], leader: 2 },
            Kind::IsrExpanded { topic: "t".into(), partition: 0, isr_before: vec![2], isr_after: vec![2, 3], leader: 2 },
        ]
    );
    let seqs: Vec<u64> = ev.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![11_000_000, 11_000_001, 11_000_002, 11_000_003], "offset × 10⁶ + index within the batch");
    assert!(ev.iter().all(|e| e.time_ms == Some(110)));
    // Leaderless: the election to -1 is an event too.
    let ev = run(&mut img, 12, vec![change(state(&[1, 2, 3], &[2, 3], -1, 2), Some(ElectionReason::Clean))]);
    assert!(matches!(ev[0].kind, Kind::LeaderChanged { previous_leader: 2, leader: -1, leader_epoch: 2, .. }), "{ev:?}");
}

#[test]
fn reassignments_start_and_complete_with_the_replica_sets() {
    let mut img = cluster();
    run(&mut img, 6, vec![register(4)]);
    // 3 → 4: 4 is added, 3 removed once 4 is in sync.
    let moving = PartitionState { adding: vec![4], removing: vec![3], ..state(&[1, 2, 4, 3], &[1, 2, 3], 1, 0) };
    let ev = run(&mut img, 10, vec![change(moving, None)]);
    let started =
        Kind::ReassignmentStarted { topic: "t".into(), partition: 0, replicas_before: vec![1, 2, 3], replicas_after: vec![1, 2, 4] };
    assert_eq!(kinds(&ev), vec![started]);
    let ev = run(&mut img, 11, vec![change(state(&[1, 2, 4], &[1, 2, 4], 1, 0), None)]);
    assert_eq!(
        kinds(&ev),
        vec![
            Kind::IsrShrunk { topic: "t".into(), partition: 0, isr_before: vec![1, 2, 3], isr_after: vec![1, 2, 4], leader: 1 },
            Kind::IsrExpanded { topic: "t".into(), partition: 0, isr_before: vec![1, 2, 3], isr_after: vec![1, 2, 4], leader: 1 },
            Kind::ReassignmentCompleted { topic: "t".into(), partition: 0, replicas_before: vec![1, 2, 3], replicas_after: vec![1, 2, 4] },
        ]
    );
    // Only removing a replica needs no copy: started and completed in one record.
    let ev = run(&mut img, 12, vec![change(state(&[1, 2], &[1, 2], 1, 0), None)]);
    let names: Vec<&str> = ev.iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, vec!["isr_shrunk", "reassignment_started", "reassignment_completed"]);
}

#[test]
fn config_changes_name_the_resource_and_hide_secrets() {
    let mut img = cluster();
    let recs = vec![
        Record::TopicConfig { id: TOPIC, key: "retention.ms".into(), value: Some("1000".into()) },
        Record::TopicConfig { id: TOPIC, key: "retention.ms".into(), value: None },
        Record::BrokerConfig { key: "log.retention.ms".into(), value: Some("5".into()) },
        Record::BrokerConfig { key: "listener.name.sasl_ssl.ssl.key.password".into(), value: Some("hunter2".into()) },
        Record::TopicConfig { id: Uuid::from_u64_pair(9, 9), key: "retention.ms".into(), value: None },
    ];
    let ev = run(&mut img, 10, recs);
    let cc = |resource_type, name: &str, key: &str, value: Option<&str>, sensitive| Kind::ConfigChanged {
        resource_type,
        name: name.into(),
        key: key.into(),
        value: value.map(str::to_string),
        sensitive,
    };
    assert_eq!(
        kinds(&ev),
        vec![
            cc(ResourceType::Topic, "t", "retention.ms", Some("1000"), false),
            cc(ResourceType::Topic, "t", "retention.ms", None, false),
            cc(ResourceType::Broker, "", "log.retention.ms", Some("5"), false),
            cc(ResourceType::Broker, "", "listener.name.sasl_ssl.ssl.key.password", None, true),
        ]
    );
    let text = serde_json::to_string(&ev).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn events_serialize_flat_with_seq_time_and_type() {
    let mut img = cluster();
    let ev = run(&mut img, 10, vec![change(state(&[1, 2, 3], &[1, 2], 1, 0), None)]);
    let v = serde_json::to_value(&ev[0]).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"seq": 10_000_000u64, "time_ms": 100, "type": "isr_shrunk", "topic": "t", "partition": 0,
                           "isr_before": [1, 2, 3], "isr_after": [1, 2], "leader": 1})
    );
    let back: Event = serde_json::from_value(v).unwrap();
    assert_eq!(back, ev[0]);
    // A batch from an older log has no time: null, not a guess.
    let ev = apply_batch(&mut img, 11, &RecordBatch::new(vec![change(state(&[1, 2, 3], &[1, 2, 3], 1, 0), None)]));
    assert_eq!(serde_json::to_value(&ev[0]).unwrap()["time_ms"], serde_json::Value::Null);
}

#[test]
fn the_ring_keeps_order_bounds_and_numbers_controller_changes_after_the_last_event() {
    let j = Journal::new(3);
    let mut img = cluster();
    j.push(run(&mut img, 10, vec![change(state(&[1, 2, 3], &[1, 2], 1, 0), None)]));
    j.controller_changed(2, 7, 123);
    j.push(run(&mut img, 11, vec![change(state(&[1, 2, 3], &[1, 2, 3], 1, 0), None)]));
    let all = j.since(0, usize::MAX);
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![10_000_000, 10_000_001, 11_000_000]);
    assert_eq!(all[1].kind, Kind::ControllerChanged { controller_id: 2, epoch: 7 });
    assert_eq!(all[1].time_ms, Some(123));
    assert_eq!(j.since(10_000_001, usize::MAX).len(), 1, "since is exclusive");
    assert_eq!(j.since(0, 1)[0].seq, 10_000_000, "limit keeps the first after since");
    assert_eq!(j.newest(1)[0].seq, 11_000_000, "newest keeps the last");
    // Replayed events (a batch applied again) are not added twice.
    j.push(vec![all[0].clone()]);
    assert_eq!(j.since(0, usize::MAX).len(), 3);
    // Bounded: the oldest go first.
    j.push(run(&mut img, 12, vec![change(state(&[1, 2, 3], &[1, 3], 1, 0), None)]));
    let seqs: Vec<u64> = j.since(0, usize::MAX).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![10_000_001, 11_000_000, 12_000_000]);
    assert_eq!(*j.subscribe().borrow(), 12_000_000);
}

#[test]
fn node_local_fault_events_take_distinct_seqs_between_metadata_events() {
    let j = Journal::new(10);
    let mut img = cluster();
    j.push(run(&mut img, 10, vec![change(state(&[1, 2, 3], &[1, 2], 1, 0), None)]));
    let injected = Kind::FaultInjected { fault_id: 1, fault: "isolate".into(), description: "isolate".into() };
    let cleared = Kind::FaultCleared { fault_id: 1, fault: "isolate".into(), description: "isolate".into(), reason: "cleared".into() };
    j.push_local(injected.clone(), 5);
    j.push_local(cleared, 6);
    j.push(run(&mut img, 11, vec![change(state(&[1, 2, 3], &[1, 2, 3], 1, 0), None)]));
    let seqs: Vec<u64> = j.since(0, usize::MAX).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![10_000_000, 10_000_001, 10_000_002, 11_000_000]);
    let v = serde_json::to_value(&j.since(10_000_000, 1)[0]).unwrap();
    assert_eq!(v["type"], "fault_injected");
    assert_eq!(v["fault_id"], 1);
    assert_eq!(serde_json::from_value::<Event>(v).unwrap().kind, injected);
}
