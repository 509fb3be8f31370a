//! Fault injection: the faults active on this node and the decisions made from them
//! ("answer this Produce with NOT_LEADER_OR_FOLLOWER?", "drop this message to node 2?").
//!
//! The decisions are pure: time comes in as an argument and every random draw comes from
//! the fault's own seeded generator, so tests drive them without sockets or clocks. The
//! hooks (the connection loop, the peer transport, the controller's links) consult the
//! process's [`global`] registry, which is empty, and costs one atomic load per request,
//! until a fault is added. Faults live in memory only: a restart starts clean. Adding
//! one is refused unless `fault.injection.enable=true` (see [`Registry::enable`]).
//!
//! The bottom layer: it imports nothing from the crate, so every layer can consult it.

pub mod names;
pub mod nodes;
pub mod spec;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;
use serde_json::{json, Value};

pub use spec::{Checked, DiskOp, Request, Spec};

/// A fault as listed: its id, effect and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub id: u64,
    pub spec: Spec,
    /// Requests it still applies to (for `count`); None is unlimited.
    pub remaining: Option<u32>,
    pub added_ms: i64,
    pub expires_ms: Option<i64>,
    pub seed: u64,
}

impl Fault {
    /// The fault as JSON: `{"id", "kind", <the kind's fields>, "remaining", ...}`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "id": self.id, "kind": self.spec.kind(), "description": self.spec.describe() });
        if let (Value::Object(out), Value::Object(fields)) = (&mut v, self.spec.fields()) {
            out.extend(fields);
            out.insert("remaining".into(), json!(self.remaining));
            out.insert("added_ms".into(), json!(self.added_ms));
            out.insert("expires_ms".into(), json!(self.expires_ms));
            out.insert("seed".into(), json!(self.seed));
        }
        v
    }
}

/// A change to the set of faults, for the journal and the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Injected(Fault),
    /// The fault and why it ended: `cleared`, `count used up`, `expired`.
    Cleared(Fault, &'static str),
}

/// Why a fault could not be added.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AddError {
    #[error("fault injection is off on this node; start it with fault.injection.enable=true")]
    Disabled,
    #[error("{0}")]
    Invalid(String),
}

/// What to do with one client request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestAction {
    /// Hold the request this long first.
    pub latency_ms: u64,
    pub outcome: Outcome,
}

/// How a client request ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    /// Served as usual.
    #[default]
    Serve,
    /// Answered with this error code instead.
    Error(i16),
    /// The connection closes, the request unanswered.
    Disconnect,
}

/// What to do with one message on a link to or from another node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkAction {
    /// The message is lost (an outgoing call fails, an incoming one is not served).
    pub drop: bool,
    pub delay_ms: u64,
}

/// The active faults.
#[derive(Default)]
pub struct Registry {
    enabled: AtomicBool,
    /// Active request faults and link faults: the hooks' fast path reads only these.
    request_faults: AtomicUsize,
    link_faults: AtomicUsize,
    disk_faults: AtomicUsize,
    state: Mutex<State>,
    /// Told of every change, after the registry's lock is released.
    sink: OnceLock<Box<dyn Fn(&Change) + Send + Sync>>,
}

#[derive(Default)]
struct State {
    last_id: u64,
    faults: Vec<Active>,
}

struct Active {
    fault: Fault,
    /// The fault's generator (splitmix64), advanced once per draw.
    rng: u64,
}

impl Active {
    /// A uniform draw in [0, 1).
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether a fault with `probability` fires this time (always without one).
    fn fires(&mut self, probability: Option<f64>) -> bool {
        probability.is_none_or(|p| self.draw() < p)
    }

    fn expired(&self, now_ms: i64) -> bool {
        self.fault.expires_ms.is_some_and(|e| now_ms >= e)
    }
}

/// The process's registry, which the hooks consult.
pub fn global() -> &'static Registry {
    static GLOBAL: OnceLock<Registry> = OnceLock::new();
    GLOBAL.get_or_init(Registry::default)
}

impl Registry {
    /// A registry that accepts faults (tests; the broker uses [`global`] and [`Registry::enable`]).
    pub fn enabled() -> Registry {
        let r = Registry::default();
        r.enable(true);
        r
    }

    /// Allows adding faults (`fault.injection.enable`); set once at startup.
    pub fn enable(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Whether faults may be added.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Sets who is told of changes (the journal); only the first call counts.
    pub fn on_change(&self, sink: Box<dyn Fn(&Change) + Send + Sync>) {
        let _ = self.sink.set(sink);
    }

    /// Adds a fault at `now_ms`; a fault without a seed is seeded from its id.
    pub fn add(&self, c: Checked, now_ms: i64) -> Result<Fault, AddError> {
        if !self.is_enabled() {
            return Err(AddError::Disabled);
        }
        let fault = {
            let mut st = self.state.lock();
            st.last_id += 1;
            let seed = c.seed.unwrap_or(st.last_id);
            let expires_ms = c.duration_ms.map(|d| now_ms.saturating_add(d.min(i64::MAX as u64) as i64));
            let fault = Fault { id: st.last_id, spec: c.spec, remaining: c.count, added_ms: now_ms, expires_ms, seed };
            st.faults.push(Active { fault: fault.clone(), rng: seed });
            self.recount(&st);
            fault
        };
        self.tell(vec![Change::Injected(fault.clone())]);
        Ok(fault)
    }

    /// Clears fault `id`, or every fault; returns those cleared.
    pub fn clear(&self, id: Option<u64>) -> Vec<Fault> {
        let gone: Vec<Fault> = {
            let mut st = self.state.lock();
            let (gone, kept): (Vec<Active>, Vec<Active>) =
                std::mem::take(&mut st.faults).into_iter().partition(|a| id.is_none_or(|id| a.fault.id == id));
            st.faults = kept;
            self.recount(&st);
            gone.into_iter().map(|a| a.fault).collect()
        };
        self.tell(gone.iter().map(|f| Change::Cleared(f.clone(), "cleared")).collect());
        gone
    }

    /// The faults active at `now_ms`, oldest first.
    pub fn list(&self, now_ms: i64) -> Vec<Fault> {
        let mut ended = Vec::new();
        let list = {
            let mut st = self.state.lock();
            self.expire(&mut st, now_ms, &mut ended);
            st.faults.iter().map(|a| a.fault.clone()).collect()
        };
        self.tell(ended);
        list
    }

    /// What to do with a client request of API `api` arriving at `now_ms`. Latency faults
    /// add up; the oldest error or disconnect fault that fires decides the outcome, and
    /// only a fault that fires uses up one of its count.
    pub fn on_request(&self, api: i16, now_ms: i64) -> RequestAction {
        if self.request_faults.load(Ordering::Relaxed) == 0 {
            return RequestAction::default();
        }
        let mut ended = Vec::new();
        let mut action = RequestAction::default();
        {
            let mut st = self.state.lock();
            self.expire(&mut st, now_ms, &mut ended);
            let mut used_up = None;
            for a in st.faults.iter_mut() {
                match a.fault.spec {
                    Spec::Latency { api: k, ms } if k == api => action.latency_ms = action.latency_ms.saturating_add(ms),
                    Spec::Inject { api: k, error, probability } if k == api && action.outcome == Outcome::Serve => {
                        if a.fires(probability) {
                            action.outcome = Outcome::Error(error);
                            used_up = use_one(a).then_some(a.fault.id);
                        }
                    }
                    Spec::Disconnect { api: k } if k == api && action.outcome == Outcome::Serve => {
                        action.outcome = Outcome::Disconnect;
                        used_up = use_one(a).then_some(a.fault.id);
                    }
                    _ => {}
                }
            }
            if let Some(id) = used_up {
                if let Some(i) = st.faults.iter().position(|a| a.fault.id == id) {
                    ended.push(Change::Cleared(st.faults.remove(i).fault, "count used up"));
                }
            }
            self.recount(&st);
        }
        self.tell(ended);
        action
    }

    /// What to do with one message to or from node `peer` at `now_ms` (None: a peer whose
    /// id the caller does not know, which only `isolate` reaches).
    pub fn on_link(&self, peer: Option<i32>, now_ms: i64) -> LinkAction {
        if self.link_faults.load(Ordering::Relaxed) == 0 {
            return LinkAction::default();
        }
        let mut ended = Vec::new();
        let mut action = LinkAction::default();
        {
            let mut st = self.state.lock();
            self.expire(&mut st, now_ms, &mut ended);
            for a in st.faults.iter_mut() {
                match a.fault.spec {
                    Spec::Isolate => action.drop = true,
                    Spec::Cut { peer: p } if Some(p) == peer => action.drop = true,
                    Spec::Drop { peer: p, probability } if Some(p) == peer => action.drop |= a.fires(Some(probability)),
                    Spec::Delay { peer: p, ms } if Some(p) == peer => action.delay_ms = action.delay_ms.saturating_add(ms),
                    _ => {}
                }
            }
        }
        self.tell(ended);
        action
    }

    /// Whether any link fault is active (callers skip work, such as naming the peer, if not).
    pub fn has_link_faults(&self) -> bool {
        self.link_faults.load(Ordering::Relaxed) > 0
    }

    /// The sum of the active clock faults' skews: what this node's clock is to be shifted by.
    pub fn clock_skew_ms(&self) -> i64 {
        let st = self.state.lock();
        st.faults.iter().map(|a| if let Spec::Clock { skew_ms } = a.fault.spec { skew_ms } else { 0 }).fold(0i64, i64::saturating_add)
    }

    /// Whether a write or flush (`op`) of a log of `topic` at `now_ms` is to fail.
    pub fn on_disk(&self, op: DiskOp, topic: &str, now_ms: i64) -> bool {
        if self.disk_faults.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut ended = Vec::new();
        let fails = {
            let mut st = self.state.lock();
            self.expire(&mut st, now_ms, &mut ended);
            st.faults
                .iter()
                .any(|a| matches!(&a.fault.spec, Spec::Disk { op: o, topic: t } if *o == op && t.as_deref().is_none_or(|t| t == topic)))
        };
        self.tell(ended);
        fails
    }

    /// Whether any request fault is active.
    pub fn has_request_faults(&self) -> bool {
        self.request_faults.load(Ordering::Relaxed) > 0
    }

    /// Moves the faults past their time into `ended`.
    fn expire(&self, st: &mut State, now_ms: i64, ended: &mut Vec<Change>) {
        if !st.faults.iter().any(|a| a.expired(now_ms)) {
            return;
        }
        let (gone, kept): (Vec<Active>, Vec<Active>) = std::mem::take(&mut st.faults).into_iter().partition(|a| a.expired(now_ms));
        st.faults = kept;
        ended.extend(gone.into_iter().map(|a| Change::Cleared(a.fault, "expired")));
        self.recount(st);
    }

    fn recount(&self, st: &State) {
        let requests = st.faults.iter().filter(|a| a.fault.spec.is_request()).count();
        let links = st.faults.iter().filter(|a| a.fault.spec.is_link()).count();
        let disks = st.faults.iter().filter(|a| matches!(a.fault.spec, Spec::Disk { .. })).count();
        self.request_faults.store(requests, Ordering::Relaxed);
        self.link_faults.store(links, Ordering::Relaxed);
        self.disk_faults.store(disks, Ordering::Relaxed);
    }

    fn tell(&self, changes: Vec<Change>) {
        for c in &changes {
            match c {
                Change::Injected(f) => tracing::warn!(fault = f.id, "fault injected: {}", f.spec.describe()),
                Change::Cleared(f, why) => tracing::warn!(fault = f.id, "fault cleared ({why}): {}", f.spec.describe()),
            }
            if let Some(sink) = self.sink.get() {
                sink(c);
            }
        }
    }
}

/// Counts one use of a fault that fired; true when that was its last.
fn use_one(a: &mut Active) -> bool {
    match a.fault.remaining.as_mut() {
        Some(n) => {
            *n = n.saturating_sub(1);
            *n == 0
        }
        None => false,
    }
}
