//! Deterministic simulation of replication, in the manner of `controller/quorum_tests.rs`:
//! one partition on three brokers (real `Partition`s on real logs), a controller that
//! fences silent brokers and elects from the ISR, one acks=all producer, and a seeded
//! network. A nemesis crashes and restarts brokers, cuts them off, stalls fetchers past
//! replica.lag.time.max.ms and makes the network lossy and slow. After every step the
//! invariants below are checked; at the end faults heal and the replicas must converge.
//!
//! A seed replays exactly: `SLUICE_SIM_SEED=1234 cargo test --release --lib sim_tests -- --nocapture`.
//! Soak: `SLUICE_SIM_SEEDS=5000 cargo test --release --lib sim_tests` (seeds 1..=5000,
//! `SLUICE_SIM_FIRST` moves the start).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::sim::{Sim, Stats, IDS, LAG_MS, SESSION_MS, STEP_MS};

/// Steps with faults (15 s of simulated time), then at most this many to heal.
const STEPS: u64 = 3000;
const HEAL_STEPS: u64 = 3000;

/// The nemesis' plans and what the checks remember between steps.
struct Chaos {
    restarts: Vec<(i64, i32)>,
    controller_epoch: i32,
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Picks a fault now and then; restarts crashed brokers when their time comes.
fn nemesis(sim: &mut Sim, chaos: &mut Chaos) {
    let now = sim.now;
    let due: Vec<i32> = chaos.restarts.iter().filter(|(t, _)| *t <= now).map(|(_, b)| *b).collect();
    chaos.restarts.retain(|(t, _)| *t > now);
    for b in due {
        sim.restart(b);
    }
    if !sim.rng.chance(1) {
        return;
    }
    let b = IDS[sim.rng.below(3) as usize];
    let up = sim.brokers[Sim::index(b)].part.is_some();
    let crashed = sim.brokers.iter().filter(|x| x.part.is_none()).count();
    match sim.rng.below(7) {
        0 | 1 if up && crashed < 2 => {
            // Down for a moment (back before the session ends) or for long.
            let down = STEP_MS + sim.rng.below(SESSION_MS as u64 * 3) as i64;
            sim.crash(b);
            chaos.restarts.push((now + down, b));
        }
        2 => {
            let until = now + 50 + sim.rng.below(SESSION_MS as u64 * 2) as i64;
            sim.isolated.insert(b, until);
            sim.note(format!("broker {b} cut off until {until}"));
        }
        3 if up => {
            // A stalled fetcher (a slow disk, a long GC): heartbeats go on, fetches stop.
            let until = now + LAG_MS + sim.rng.below(LAG_MS as u64 * 2) as i64;
            sim.brokers[Sim::index(b)].paused_until = until;
            sim.note(format!("broker {b} fetcher stalled until {until}"));
        }
        4 => {
            sim.loss_percent = sim.rng.below(30);
            sim.slow_percent = sim.rng.below(20);
            sim.note(format!("network: {}% lost, {}% slow", sim.loss_percent, sim.slow_percent));
        }
        5 if up => {
            // The broker's background duty, so restarts also start from snapshots.
            if let Some(p) = &sim.brokers[Sim::index(b)].part {
                p.snapshot_producers().expect("snapshot producer state");
            }
        }
        _ => {}
    }
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// The invariants, after every step.
fn check(sim: &mut Sim, chaos: &mut Chaos) -> Result<(), String> {
    if let Some(v) = sim.violation.take() {
        return Err(v);
    }
    let st = &sim.ctl.state;
    ensure!(st.leader_epoch >= chaos.controller_epoch, "the controller's leader epoch went back to {}", st.leader_epoch);
    chaos.controller_epoch = st.leader_epoch;
    ensure!(st.leader < 0 || st.isr.contains(&st.leader), "leader {} is not in the ISR {:?}", st.leader, st.isr);

    let mut hws = Vec::new();
    for br in sim.brokers.iter_mut() {
        // Exactly once, in order: the producer's sequence numbers only grow along any log.
        if let Some(w) = br.mirror.windows(2).position(|w| w[1].tag <= w[0].tag) {
            return Err(format!(
                "broker {}: offset {} holds tag {} after tag {} (a duplicate or reordering)",
                br.id,
                w + 1,
                br.mirror[w + 1].tag,
                br.mirror[w].tag
            ));
        }
        let Some(p) = &br.part else { continue };
        let (hw, epoch, leads) = (p.high_watermark(), p.leader_epoch(), p.is_leader());
        let leo = br.mirror.len() as i64;
        ensure!((0..=leo).contains(&hw), "broker {}: high watermark {hw} outside 0..={leo}", br.id);
        ensure!(epoch >= br.epoch_seen, "broker {}: leader epoch went back from {} to {epoch}", br.id, br.epoch_seen);
        br.epoch_seen = epoch;
        if leads {
            let chosen = sim.ctl.leaders.get(&epoch).copied();
            ensure!(chosen == Some(br.id), "broker {} leads epoch {epoch}, which the controller gave to {chosen:?}", br.id);
            match br.lead {
                Some((inc, e, high)) if inc == br.incarnation && e == epoch => {
                    ensure!(hw >= high, "broker {}: high watermark moved back from {high} to {hw} while leading epoch {epoch}", br.id);
                    br.lead = Some((inc, e, hw));
                }
                _ => br.lead = Some((br.incarnation, epoch, hw)),
            }
        } else {
            br.lead = None;
        }
        hws.push((br.id, hw));
    }
    // Below both high watermarks, two replicas hold the same batches.
    for (x, (a, hw_a)) in hws.iter().enumerate() {
        for (b, hw_b) in &hws[x + 1..] {
            let (ma, mb) = (&sim.brokers[Sim::index(*a)].mirror, &sim.brokers[Sim::index(*b)].mirror);
            let upto = (*hw_a).min(*hw_b) as usize;
            if let Some(o) = (0..upto).find(|o| ma[*o] != mb[*o]) {
                return Err(format!("brokers {a} (HW {hw_a}) and {b} (HW {hw_b}) differ at offset {o}: {:?} vs {:?}", ma[o], mb[o]));
            }
        }
    }
    // No acknowledged record is lost while an ISR member survives: every member (and so
    // whoever is elected next) holds each one, at its offset. Disks survive crashes here.
    let holders: Vec<i32> = st.isr.iter().copied().chain((st.leader >= 0).then_some(st.leader)).collect();
    for m in holders {
        let mirror = &sim.brokers[Sim::index(m)].mirror;
        for (o, tag) in &sim.acked {
            let have = mirror.get(*o as usize).map(|e| e.tag);
            ensure!(
                have == Some(*tag),
                "acknowledged offset {o} (tag {tag}) is {have:?} on broker {m} (leader {}, ISR {:?})",
                st.leader,
                st.isr
            );
        }
    }
    Ok(())
}

/// Faults stop; is everyone back in sync, with the leader serving everything acknowledged?
fn converged(sim: &Sim) -> bool {
    let st = &sim.ctl.state;
    if st.leader < 0 || st.isr.len() != IDS.len() || sim.client.inflight.is_some() {
        return false;
    }
    let leo = sim.brokers[Sim::index(st.leader)].mirror.len();
    sim.brokers.iter().all(|b| {
        b.part.as_ref().is_some_and(|p| p.high_watermark() == leo as i64)
            && b.mirror.len() == leo
            && b.known.as_ref().is_some_and(|k| k.partition_epoch == st.partition_epoch)
    })
}

fn full_log(sim: &Sim, i: usize) -> Vec<u8> {
    let p = sim.brokers[i].part.as_ref().expect("up after healing");
    let mut out = Vec::new();
    p.replay(|b| out.extend_from_slice(b)).expect("read the whole log");
    out
}

/// One seed, start to end. Returns what happened, or the first broken invariant.
fn run(seed: u64) -> Result<Stats, String> {
    let mut sim = Sim::new(seed);
    if env("SLUICE_SIM_SEED") == Some(seed) {
        // Replaying one seed: keep the whole story.
        sim.trace_len = usize::MAX;
        sim.verbose = true;
    }
    let mut chaos = Chaos { restarts: Vec::new(), controller_epoch: 0 };
    let fail = |sim: &Sim, step: u64, msg: String| {
        format!(
            "seed {seed} failed at step {step} (t={}): {msg}\nreplay: SLUICE_SIM_SEED={seed} cargo test --release --lib sim_tests -- --nocapture\nlast events:\n  {}",
            sim.now,
            sim.trace.join("\n  ")
        )
    };
    for step in 0..STEPS {
        nemesis(&mut sim, &mut chaos);
        sim.step();
        check(&mut sim, &mut chaos).map_err(|m| fail(&sim, step, m))?;
    }
    // Heal: everyone back, nothing lost on the wire, no more produce.
    sim.client.stop = true;
    sim.isolated.clear();
    sim.loss_percent = 0;
    sim.slow_percent = 0;
    for (_, b) in std::mem::take(&mut chaos.restarts) {
        sim.restart(b);
    }
    for br in sim.brokers.iter_mut() {
        br.paused_until = 0;
    }
    let mut healed = false;
    for step in STEPS..STEPS + HEAL_STEPS {
        sim.step();
        check(&mut sim, &mut chaos).map_err(|m| fail(&sim, step, m))?;
        if converged(&sim) {
            healed = true;
            break;
        }
    }
    let st = sim.ctl.state.clone();
    if !healed {
        let view: Vec<String> = sim
            .brokers
            .iter()
            .map(|b| {
                format!(
                    "{}: end {} hw {:?} known epoch {:?} alter {:?}",
                    b.id,
                    b.mirror.len(),
                    b.part.as_ref().map(|p| p.high_watermark()),
                    b.known.as_ref().map(|k| k.partition_epoch),
                    b.alter
                )
            })
            .collect();
        return Err(fail(&sim, STEPS + HEAL_STEPS, format!("did not converge after healing: controller {st:?}, brokers {view:?}")));
    }
    // Byte for byte, every replica is the leader's log, and the mirrors were right.
    let leader = Sim::index(st.leader);
    let reference = full_log(&sim, leader);
    for (i, id) in IDS.iter().enumerate() {
        let bytes = full_log(&sim, i);
        if bytes != reference {
            return Err(fail(&sim, STEPS + HEAL_STEPS, format!("broker {id} differs from leader {} after healing", st.leader)));
        }
        let before = sim.brokers[i].mirror.clone();
        sim.brokers[i].mirror.clear();
        sim.sync_mirror(i);
        if sim.brokers[i].mirror != before {
            return Err(fail(&sim, STEPS + HEAL_STEPS, format!("broker {id}: the mirror had drifted from the log")));
        }
    }
    // What a consumer reads from the leader: every acknowledged record, at its offset, once.
    let p = sim.brokers[leader].part.as_ref().expect("up");
    let data = p.fetch(0, usize::MAX, true, -1).map_err(|e| fail(&sim, STEPS, format!("consumer fetch: {e}")))?;
    let mut read = std::collections::BTreeMap::new();
    for b in crate::log::records::batches(&data.records) {
        let h = crate::log::batch::BatchHeader::parse(b).expect("a batch");
        read.insert(h.base_offset, h.base_timestamp);
    }
    for (o, tag) in &sim.acked {
        if read.get(o) != Some(tag) {
            return Err(fail(&sim, STEPS, format!("a consumer reads {:?} at acknowledged offset {o} (tag {tag})", read.get(o))));
        }
    }
    Ok(sim.stats)
}

/// Runs seeds `first..first + count` on a few threads; panics with the first failure.
fn run_seeds(first: u64, count: u64) -> Stats {
    let next = AtomicU64::new(first);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let totals = Mutex::new(Stats::default());
    let threads = env("SLUICE_SIM_THREADS").unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u64).min(2));
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + count {
                        return;
                    }
                    let r = catch_unwind(AssertUnwindSafe(|| run(seed))).unwrap_or_else(|e| {
                        let what = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                        Err(format!(
                            "seed {seed} panicked: {}\nreplay: SLUICE_SIM_SEED={seed} cargo test --release --lib sim_tests -- --nocapture",
                            what.unwrap_or_default()
                        ))
                    });
                    match r {
                        Ok(st) => {
                            let mut t = totals.lock().unwrap();
                            t.acked += st.acked;
                            t.elections += st.elections;
                            t.isr_changes += st.isr_changes;
                            t.truncations += st.truncations;
                            t.crashes += st.crashes;
                        }
                        Err(m) => {
                            stop.store(true, Ordering::Relaxed);
                            let mut f = failure.lock().unwrap();
                            // The lowest failing seed is reported: the easiest to replay.
                            if f.as_ref().is_none_or(|old| seed_of(old) > seed) {
                                *f = Some(m);
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(m) = failure.into_inner().unwrap() {
        panic!("{m}");
    }
    totals.into_inner().unwrap()
}

fn seed_of(msg: &str) -> u64 {
    msg.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX)
}

#[test]
fn replication_keeps_acknowledged_records_through_faults() {
    let (first, count) = match env("SLUICE_SIM_SEED") {
        Some(seed) => (seed, 1),
        None => (env("SLUICE_SIM_FIRST").unwrap_or(1), env("SLUICE_SIM_SEEDS").unwrap_or(200)),
    };
    let started = std::time::Instant::now();
    let t = run_seeds(first, count);
    eprintln!("replication sim: {count} seeds from {first} in {:.1?}: {t:?}", started.elapsed());
    if count >= 50 {
        // The faults must reach the paths they are meant to test, or passing means little.
        assert!(t.acked > count * 20, "too few records acknowledged: {t:?}");
        assert!(t.elections > count && t.truncations > count / 4 && t.isr_changes > count, "faults did not bite: {t:?}");
    }
}

#[test]
fn without_faults_everything_is_acknowledged_and_replicated() {
    let mut sim = Sim::new(3);
    sim.loss_percent = 0;
    sim.slow_percent = 0;
    let mut chaos = Chaos { restarts: Vec::new(), controller_epoch: 0 };
    for _ in 0..400 {
        sim.step();
        check(&mut sim, &mut chaos).unwrap();
    }
    // About one round trip to each follower and back per record.
    assert!(sim.acked.len() > 20, "only {} acknowledged", sim.acked.len());
    assert_eq!(sim.stats.elections, 0, "nothing failed, so nobody was elected");
    assert_eq!(sim.ctl.state.isr.len(), 3);
}

#[test]
fn a_crashed_leader_is_replaced_from_the_isr_and_rejoins_after_truncating() {
    let mut sim = Sim::new(11);
    sim.loss_percent = 0;
    sim.slow_percent = 0;
    let mut chaos = Chaos { restarts: Vec::new(), controller_epoch: 0 };
    for _ in 0..100 {
        sim.step();
    }
    let old = sim.ctl.state.leader;
    sim.crash(old);
    for _ in 0..(SESSION_MS / STEP_MS * 2) {
        sim.step();
        check(&mut sim, &mut chaos).unwrap();
    }
    let new = sim.ctl.state.leader;
    assert!(new >= 0 && new != old, "a new leader, not {new}");
    assert_eq!(sim.ctl.state.leader_epoch, 1);
    sim.restart(old);
    for _ in 0..400 {
        sim.step();
        check(&mut sim, &mut chaos).unwrap();
    }
    assert!(sim.ctl.state.isr.contains(&old), "the old leader caught up and is back in the ISR: {:?}", sim.ctl.state);
}
