use std::sync::Arc;

use super::*;

const PRODUCE: i16 = 0;
const FETCH: i16 = 1;

fn req(json: serde_json::Value) -> Checked {
    serde_json::from_value::<Request>(json).unwrap().check().unwrap()
}

fn bad(json: serde_json::Value) -> String {
    match serde_json::from_value::<Request>(json) {
        Ok(r) => r.check().unwrap_err(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn nothing_is_added_while_disabled() {
    let r = Registry::default();
    assert_eq!(r.add(req(serde_json::json!({"kind": "isolate"})), 0), Err(AddError::Disabled));
    assert!(r.list(0).is_empty());
    assert_eq!(r.on_link(Some(2), 0), LinkAction::default());
}

#[test]
fn an_injected_error_answers_count_requests_then_clears_itself() {
    let r = Registry::enabled();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    r.on_change(Box::new(move |c| s.lock().push(c.clone())));
    let f = r.add(req(serde_json::json!({"kind": "inject", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3})), 10).unwrap();
    assert_eq!(r.on_request(FETCH, 11).outcome, Outcome::Serve, "other APIs are served");
    for _ in 0..3 {
        assert_eq!(r.on_request(PRODUCE, 12).outcome, Outcome::Error(6));
    }
    assert_eq!(r.on_request(PRODUCE, 13).outcome, Outcome::Serve);
    assert!(r.list(14).is_empty());
    let seen = seen.lock();
    assert_eq!(seen.len(), 2);
    assert!(matches!(&seen[0], Change::Injected(g) if g.id == f.id));
    assert!(matches!(&seen[1], Change::Cleared(g, "count used up") if g.id == f.id && g.remaining == Some(0)));
}

#[test]
fn probability_is_seeded_and_repeatable() {
    let run = |seed: u64| {
        let r = Registry::enabled();
        r.add(req(serde_json::json!({"kind": "inject", "api": "fetch", "error": 15, "probability": 0.3, "seed": seed})), 0).unwrap();
        (0..1000).map(|_| r.on_request(FETCH, 0).outcome != Outcome::Serve).collect::<Vec<bool>>()
    };
    let a = run(7);
    assert_eq!(a, run(7), "the same seed makes the same decisions");
    assert_ne!(a, run(8));
    let fired = a.iter().filter(|f| **f).count();
    assert!((220..380).contains(&fired), "about 30% of 1000 fire, got {fired}");
}

#[test]
fn latency_adds_up_and_disconnect_wins_over_later_faults() {
    let r = Registry::enabled();
    r.add(req(serde_json::json!({"kind": "latency", "api": "Fetch", "ms": 100})), 0).unwrap();
    r.add(req(serde_json::json!({"kind": "latency", "api": "Fetch", "ms": 50})), 0).unwrap();
    r.add(req(serde_json::json!({"kind": "disconnect", "api": "Fetch", "count": 1})), 0).unwrap();
    r.add(req(serde_json::json!({"kind": "inject", "api": "Fetch", "error": "KAFKA_STORAGE_ERROR", "count": 1})), 0).unwrap();
    assert_eq!(r.on_request(FETCH, 1), RequestAction { latency_ms: 150, outcome: Outcome::Disconnect });
    assert_eq!(r.on_request(FETCH, 1), RequestAction { latency_ms: 150, outcome: Outcome::Error(56) });
    assert_eq!(r.on_request(FETCH, 1), RequestAction { latency_ms: 150, outcome: Outcome::Serve });
}

#[test]
fn faults_expire_at_their_time() {
    let r = Registry::enabled();
    r.add(req(serde_json::json!({"kind": "cut", "peer": 2, "duration_ms": 1000})), 5_000).unwrap();
    assert!(r.on_link(Some(2), 5_999).drop);
    assert!(!r.on_link(Some(2), 6_000).drop);
    assert!(r.list(6_000).is_empty());
    assert!(!r.has_link_faults());
}

#[test]
fn link_faults_pick_their_peer_and_isolate_picks_all() {
    let r = Registry::enabled();
    r.add(req(serde_json::json!({"kind": "cut", "peer": 2})), 0).unwrap();
    r.add(req(serde_json::json!({"kind": "delay", "peer": 3, "ms": 40})), 0).unwrap();
    assert_eq!(r.on_link(Some(2), 0), LinkAction { drop: true, delay_ms: 0 });
    assert_eq!(r.on_link(Some(3), 0), LinkAction { drop: false, delay_ms: 40 });
    assert_eq!(r.on_link(None, 0), LinkAction::default(), "an unnamed peer is reached by isolate only");
    assert_eq!(r.on_request(PRODUCE, 0), RequestAction::default(), "link faults leave client requests alone");
    let iso = r.add(req(serde_json::json!({"kind": "isolate"})), 0).unwrap();
    assert!(r.on_link(None, 0).drop && r.on_link(Some(4), 0).drop);
    assert_eq!(r.clear(Some(iso.id)).len(), 1);
    assert!(!r.on_link(Some(4), 0).drop);
    assert_eq!(r.clear(None).len(), 2);
    assert!(!r.has_link_faults() && r.list(0).is_empty());
}

#[test]
fn drop_draws_per_message() {
    let r = Registry::enabled();
    r.add(req(serde_json::json!({"kind": "drop", "peer": 2, "probability": 0.5, "seed": 1})), 0).unwrap();
    let dropped = (0..1000).filter(|_| r.on_link(Some(2), 0).drop).count();
    assert!((400..600).contains(&dropped), "{dropped}");
}

#[test]
fn bad_requests_name_what_is_valid() {
    assert!(bad(serde_json::json!({"kind": "explode"})).contains("inject, latency, disconnect, isolate"));
    assert!(bad(serde_json::json!({"kind": "inject", "api": "Prodooce", "error": 6})).contains("InitProducerId"));
    assert!(bad(serde_json::json!({"kind": "inject", "api": "Produce", "error": "NOPE"})).contains("NOT_LEADER_OR_FOLLOWER"));
    let e = bad(serde_json::json!({"kind": "inject", "api": "CreateTopics", "error": 6}));
    assert!(e.contains("cannot be injected into CreateTopics") && e.contains("Produce"), "{e}");
    assert!(bad(serde_json::json!({"kind": "inject", "api": "Produce", "error": 6, "count": 1, "probability": 0.5})).contains("not both"));
    assert!(bad(serde_json::json!({"kind": "drop", "peer": 2, "probability": 1.5})).contains("(0, 1]"));
    assert!(bad(serde_json::json!({"kind": "cut"})).contains("needs a peer"));
    assert!(bad(serde_json::json!({"kind": "isolate", "peer": 2})).contains("does not take peer"));
    assert!(bad(serde_json::json!({"kind": "isolate", "colour": "red"})).contains("unknown field"));
    assert!(bad(serde_json::json!({"kind": "disconnect", "api": "Fetch", "count": 0})).contains("at least 1"));
}

#[test]
fn a_fault_lists_as_json_with_kafka_names() {
    let r = Registry::enabled();
    let f = r.add(req(serde_json::json!({"kind": "inject", "api": "init_producer_id", "error": 15, "count": 2})), 1).unwrap();
    let v = f.to_json();
    assert_eq!(v["kind"], "inject");
    assert_eq!(v["api"], "InitProducerId");
    assert_eq!(v["error"], "COORDINATOR_NOT_AVAILABLE");
    assert_eq!(v["error_code"], 15);
    assert_eq!(v["remaining"], 2);
    assert_eq!(v["id"], f.id);
}

#[test]
fn clock_faults_add_up_and_touch_neither_requests_nor_links() {
    let r = Registry::enabled();
    let a = r.add(req(serde_json::json!({"kind": "clock", "skew_ms": 5000})), 0).unwrap();
    r.add(req(serde_json::json!({"kind": "clock", "skew_ms": -2000})), 0).unwrap();
    assert_eq!(r.clock_skew_ms(), 3000);
    assert!(!r.has_link_faults() && !r.has_request_faults());
    r.clear(Some(a.id));
    assert_eq!(r.clock_skew_ms(), -2000);
    assert!(bad(serde_json::json!({"kind": "clock"})).contains("needs skew_ms"));
    assert!(bad(serde_json::json!({"kind": "clock", "skew_ms": 1, "duration_ms": 5})).contains("duration_ms"));
    assert!(bad(serde_json::json!({"kind": "isolate", "skew_ms": 1})).contains("does not take skew_ms"));
}

#[test]
fn a_disk_fault_fails_the_op_it_names_for_its_topic_only() {
    let r = Registry::enabled();
    assert!(!r.on_disk(DiskOp::Write, "t", 0), "no fault, no failure");
    let f = r.add(req(serde_json::json!({"kind": "disk", "fail": "write", "topic": "t"})), 0).unwrap();
    assert!(r.on_disk(DiskOp::Write, "t", 1));
    assert!(!r.on_disk(DiskOp::Write, "other", 1), "another topic's writes go on");
    assert!(!r.on_disk(DiskOp::Fsync, "t", 1), "flushes go on");
    assert_eq!(f.to_json()["fail"], "write");
    r.clear(Some(f.id));
    assert!(!r.on_disk(DiskOp::Write, "t", 2));
    r.add(req(serde_json::json!({"kind": "disk", "fail": "FSYNC"})), 3).unwrap();
    assert!(r.on_disk(DiskOp::Fsync, "any", 4), "without a topic, every topic's flushes fail");
}

#[test]
fn a_bad_disk_fault_names_what_is_valid() {
    assert!(bad(serde_json::json!({"kind": "disk"})).contains("write or fsync"));
    assert!(bad(serde_json::json!({"kind": "disk", "fail": "read"})).contains("valid: write, fsync"));
    assert!(bad(serde_json::json!({"kind": "disk", "fail": "write", "peer": 2})).contains("does not take peer"));
    assert!(bad(serde_json::json!({"kind": "isolate", "topic": "t"})).contains("does not take topic"));
    assert!(bad(serde_json::json!({"kind": "disk", "fail": "write", "topic": " "})).contains("must not be empty"));
}
