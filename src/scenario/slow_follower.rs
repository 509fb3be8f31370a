//! `slow-follower`: a follower's replication link is delayed past `replica.lag.time.max.ms`
//! under an acks=all load. Kafka's promise: the leader drops the slow follower from the ISR
//! (it is slow, not dead: never fenced), writes go on at acks=all since the ISR still meets
//! `min.insync.replicas`, and the high watermark keeps moving; once the link heals the
//! follower catches up and the leader adds it back to the ISR.

use std::time::Duration;

use serde_json::json;

use super::harness::{ids, leader, Harness};
use super::load::{expect_no_loss, Load};

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("slow-follower-{}", crate::clock::now_ms());
    let ps = h.create_topic(&topic, 3, 3, &["min.insync.replicas=2"])?;
    let (p, state) = h.pick(&ps, "led by a node that is not the controller", |p, c| leader(p) != c)?;
    let l = leader(&state);
    let controller = h.controller()?;
    // The follower that is neither leader nor controller: only its replication is slowed.
    let f = ids(&state, "replicas").into_iter().find(|r| *r != l && *r != controller).ok_or("no follower apart from the controller")?;
    let lag = h.broker_ms(l as u16, "replica.lag.time.max.ms")?;
    let delay = lag + lag / 2;
    // A long request timeout: an acks=all write waits for the shrink, and a retry would double it.
    let load = Load::start(h, &h.bootstrap(&[]), &topic, p, "w", 30_000);
    load.wait_more(h, 100, "the load acknowledged before the delay", Duration::from_secs(30))?;
    h.say(&format!("acks=all load running on {topic}-{p}: leader {l}, isr {}", state["isr"]));

    h.say(&format!("slowing node {f}'s link to the leader {l} by {delay} ms, past replica.lag.time.max.ms={lag}"));
    h.fault(f as u16, &["delay", "--peer", &l.to_string(), "--ms", &delay.to_string()])?;
    let wait = Duration::from_millis(lag * 3) + Duration::from_secs(20);
    let shrunk = h.wait_partition(&topic, p, &format!("node {f} out of the ISR"), wait, |s| !ids(s, "isr").contains(&f))?;
    let isr = ids(&shrunk, "isr");
    h.say(&format!("the leader dropped node {f} from the ISR: isr {isr:?}, still >= min.insync.replicas=2"));
    let hw_at_shrink = shrunk["high_watermark"].as_i64().unwrap_or(-1);
    load.wait_more(h, 200, "acks=all writes going on with the smaller ISR", Duration::from_secs(30))?;
    let moved = h.partition(&topic, p)?;
    let hw = moved["high_watermark"].as_i64().unwrap_or(-1);
    if hw <= hw_at_shrink {
        return Err(format!("the high watermark did not move after the shrink ({hw_at_shrink} -> {hw})"));
    }
    h.say(&format!("acks=all writes go on: high watermark {hw_at_shrink} -> {hw} while node {f} lags"));

    h.say(&format!("healing node {f}'s link"));
    h.fault(f as u16, &["clear"])?;
    let healed = h.wait_partition(&topic, p, &format!("node {f} back in the ISR"), wait, |s| ids(s, "isr").contains(&f))?;
    h.say(&format!("node {f} caught up and rejoined: isr {}", healed["isr"]));
    let report = load.finish();
    h.narrate();
    let (tp, fi) = (json!(topic), json!(f));
    let has = |v: &serde_json::Value, key: &str| v[key].as_array().is_some_and(|a| a.contains(&fi));
    if !h.seen("isr_shrunk", &[("topic", tp.clone())]).iter().any(|e| has(e, "isr_before") && !has(e, "isr_after")) {
        return Err(format!("no isr_shrunk event dropping node {f} from {topic}"));
    }
    if !h.seen("isr_expanded", &[("topic", tp)]).iter().any(|e| has(e, "isr_after") && !has(e, "isr_before")) {
        return Err(format!("no isr_expanded event adding node {f} back to {topic}"));
    }
    if !h.seen("broker_fenced", &[("broker_id", fi)]).is_empty() {
        return Err(format!("node {f} was fenced: it was slow, not gone"));
    }
    h.say(&format!("node {f} was never fenced: a slow follower leaves the ISR, not the cluster; {}", report.latency()));
    expect_no_loss(h, &topic, p, &report, "after the follower caught up")
}
