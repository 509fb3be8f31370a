//! `election-storm`: nodes restarted again and again (`sluice dev restart`: SIGKILL, then the
//! same data back) under an acks=all load, each time the leader of the loaded partition.
//! Kafka's promise: every restart costs elections, which the journal counts, and latency,
//! which the load sees (printed), but nothing acknowledged is lost.

use std::time::Duration;

use serde_json::json;

use super::harness::{ids, leader, Harness};
use super::load::{expect_no_loss, Load};
use crate::dev_cluster::dev::DevCommand;

/// Restarts in the storm.
const ROUNDS: usize = 4;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("election-storm-{}", crate::clock::now_ms());
    h.create_topic(&topic, 3, 3, &["min.insync.replicas=2"])?;
    let load = Load::start(h, &h.bootstrap(&[]), &topic, 0, "w", 2_000);
    load.wait_more(h, 100, "the load acknowledged before the storm", Duration::from_secs(30))?;
    let first = h.seen.len();
    for round in 1..=ROUNDS {
        let s = h.wait_partition(&topic, 0, "a leader with a full ISR", Duration::from_secs(60), |s| {
            leader(s) >= 0 && ids(s, "isr").len() == 3
        })?;
        let victim = leader(&s);
        h.say(&format!("round {round}/{ROUNDS}: restarting node {victim}, leader of {topic}-0 (epoch {})", s["leader_epoch"]));
        h.dev(DevCommand::Restart { node: victim as u16 })?;
        load.wait_more(h, 60, &format!("writes acknowledged after round {round}"), Duration::from_secs(60))?;
    }
    h.wait_partition(&topic, 0, "a full ISR after the storm", Duration::from_secs(60), |s| ids(s, "isr").len() == 3)?;
    let report = load.finish();
    h.narrate();
    let storm = &h.seen[first..];
    let count = |kind: &str| storm.iter().filter(|e| e["type"] == kind).count();
    let ours = storm.iter().filter(|e| e["type"] == "leader_changed" && e["topic"] == json!(topic)).count();
    let (elections, controllers, fenced) = (count("leader_changed"), count("controller_changed"), count("broker_fenced"));
    h.say(&format!(
        "the journal counted {elections} leader elections ({ours} of them on {topic}), {controllers} controller changes, {fenced} fencings in {ROUNDS} restarts"
    ));
    if ours < ROUNDS {
        return Err(format!("{ROUNDS} restarts of {topic}-0's leader, but only {ours} elections of its partitions in the journal"));
    }
    h.say(&format!("produce latency through the storm: {}", report.latency()));
    if let Some(e) = report.first_error() {
        h.say(&format!(
            "{} batches failed and were not acknowledged, e.g. {e}",
            report.batches.iter().filter(|b| b.error.is_some()).count()
        ));
    }
    expect_no_loss(h, &topic, 0, &report, "after the storm")
}
