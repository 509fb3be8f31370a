//! Client telemetry (KIP-714): which metrics each client instance is asked for, when it may
//! push, and what it pushed, as Kafka 4.4's `ClientMetricsManager` decides. Sluice is its
//! own receiver: pushed OTLP metrics are decoded ([`otlp`]) and kept as the latest value of
//! each series ([`export`]) for the broker's `/metrics` page.
//!
//! The state machine takes time as an input. Memory is bounded: at most
//! [`MAX_INSTANCES`] client instances, each forgotten after `max(60 s, 3 × its push
//! interval)` without a request, and at most [`export::MAX_SERIES`] exported series.

pub mod export;
pub mod otlp;
pub mod subscription;

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use uuid::Uuid;

use crate::error::Error;
use subscription::{ClientInfo, Subscription, ALL_METRICS, INTERVAL_MS_DEFAULT};

/// Kafka's instance cache size (16k active clients per broker).
pub const MAX_INSTANCES: usize = 16_384;
/// Kafka's `DEFAULT_CACHE_EXPIRY_MS`.
const EXPIRY_MS: i64 = 60_000;
/// The compression types accepted, preferred first (Kafka: zstd, lz4, gzip, snappy).
pub const ACCEPTED_COMPRESSION: [i8; 4] = [4, 3, 1, 2];

/// One client instance's subscription and request times (Kafka's `ClientMetricsInstance`).
#[derive(Debug, Clone)]
struct Instance {
    info: ClientInfo,
    subscription_id: i32,
    /// The subscriptions' version it was computed against.
    version: u64,
    metrics: Vec<String>,
    push_interval_ms: i32,
    last_get_ms: i64,
    last_push_ms: i64,
    terminating: bool,
    /// The error of its last push (UNKNOWN_SUBSCRIPTION_ID and UNSUPPORTED_COMPRESSION_TYPE
    /// let the next GetTelemetrySubscriptions through early, as in Kafka).
    last_error: i16,
    last_seen_ms: i64,
}

impl Instance {
    fn expired(&self, now: i64) -> bool {
        now - self.last_seen_ms > EXPIRY_MS.max(3 * self.push_interval_ms as i64)
    }
}

/// What GetTelemetrySubscriptions answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub instance_id: Uuid,
    pub subscription_id: i32,
    pub metrics: Vec<String>,
    pub push_interval_ms: i32,
}

/// A PushTelemetry as the manager checks it.
#[derive(Debug, Clone)]
pub struct Push {
    pub instance_id: Uuid,
    pub subscription_id: i32,
    pub terminating: bool,
    pub compression: i8,
    pub payload_len: usize,
}

#[derive(Default)]
struct State {
    subscriptions: Vec<Subscription>,
    /// The resources the subscriptions were parsed from, to notice a change.
    applied: BTreeMap<String, BTreeMap<String, String>>,
    version: u64,
    instances: HashMap<Uuid, Instance>,
    last_expiry_ms: i64,
}

/// The broker's client-metrics manager.
pub struct Manager {
    state: Mutex<State>,
    pub max_bytes: usize,
    pub exported: export::Series,
}

/// Kafka's subscription id: CRC-32C of the metrics and interval, XOR the id's hash.
fn subscription_id(metrics: &[String], interval_ms: i32, id: Uuid) -> i32 {
    let crc = crc32c::crc32c(format!("{metrics:?}{interval_ms}").as_bytes()) as i32;
    let (hi, lo) = id.as_u64_pair();
    let h = hi ^ lo;
    crc ^ ((h >> 32) as i32 ^ h as i32)
}

impl Manager {
    pub fn new(max_bytes: usize) -> Manager {
        Manager { state: Mutex::new(State::default()), max_bytes, exported: export::Series::default() }
    }

    /// Takes the image's `client-metrics` resources; a change re-evaluates every instance at
    /// its next request. Resources that fail the checks are skipped (they were checked when set).
    pub fn set_subscriptions(&self, resources: &BTreeMap<String, BTreeMap<String, String>>) {
        let mut st = self.state.lock();
        if st.applied == *resources {
            return;
        }
        st.subscriptions = resources.iter().filter_map(|(name, c)| subscription::parse(name, c).ok()).collect();
        st.applied = resources.clone();
        st.version += 1;
    }

    fn instance(st: &mut State, id: Uuid, info: &ClientInfo, now: i64) -> Instance {
        if let Some(i) = st.instances.get_mut(&id) {
            i.last_seen_ms = now;
            if i.version == st.version {
                return i.clone();
            }
        }
        // Kafka keeps what the instance was first known by (its metadata) across re-evaluations.
        let info = st.instances.get(&id).map_or_else(|| info.clone(), |i| i.info.clone());
        let key = id.to_string();
        let mut metrics: Vec<String> = Vec::new();
        let mut interval = INTERVAL_MS_DEFAULT;
        for s in st.subscriptions.iter().filter(|s| info.matches(&key, s)) {
            metrics.extend(s.metrics.iter().cloned());
            interval = interval.min(s.interval_ms);
        }
        metrics.sort();
        metrics.dedup();
        if metrics.iter().any(|m| m == ALL_METRICS) {
            metrics = vec![ALL_METRICS.to_string()];
        }
        // A changed subscription makes a new instance, as in Kafka: its request times start
        // afresh, so the client gets the new subscription at once.
        let inst = Instance {
            info,
            subscription_id: subscription_id(&metrics, interval, id),
            version: st.version,
            metrics,
            push_interval_ms: interval,
            last_get_ms: i64::MIN / 2,
            last_push_ms: i64::MIN / 2,
            terminating: false,
            last_error: 0,
            last_seen_ms: now,
        };
        if !st.instances.contains_key(&id) && st.instances.len() >= MAX_INSTANCES {
            st.instances.retain(|_, i| !i.expired(now));
            if st.instances.len() >= MAX_INSTANCES {
                let oldest = st.instances.iter().min_by_key(|(_, i)| i.last_seen_ms).map(|(k, _)| *k);
                oldest.map(|k| st.instances.remove(&k));
            }
        }
        st.instances.insert(id, inst.clone());
        inst
    }

    /// GetTelemetrySubscriptions: a new instance id when the client has none (zero), its
    /// subscription, or THROTTLING_QUOTA_EXCEEDED when it asks again within its interval.
    pub fn get_subscriptions(&self, requested: Uuid, info: &ClientInfo, now: i64) -> Result<Grant, Error> {
        let mut st = self.state.lock();
        let id = if requested.is_nil() {
            let mut id = Uuid::new_v4();
            while st.instances.contains_key(&id) {
                id = Uuid::new_v4();
            }
            id
        } else {
            requested
        };
        let inst = Self::instance(&mut st, id, info, now);
        let early = now - inst.last_get_ms.max(inst.last_push_ms) < inst.push_interval_ms as i64;
        let forgiven = [Error::UnknownSubscriptionId(String::new()).code(), Error::UnsupportedCompressionType(String::new()).code()];
        if early && !forgiven.contains(&inst.last_error) {
            return Err(Error::ThrottlingQuotaExceeded(format!(
                "Request from the client [{id}] arrived before the next push interval time"
            )));
        }
        if let Some(i) = st.instances.get_mut(&id) {
            i.last_get_ms = now;
            i.last_error = 0;
        }
        Ok(Grant { instance_id: id, subscription_id: inst.subscription_id, metrics: inst.metrics, push_interval_ms: inst.push_interval_ms })
    }

    /// PushTelemetry's checks, in Kafka's order; `Ok` means the payload is to be exported.
    pub fn check_push(&self, p: &Push, info: &ClientInfo, now: i64) -> Result<(), Error> {
        if p.instance_id.is_nil() || p.instance_id.as_u64_pair() == (0, 1) {
            return Err(Error::InvalidRequest(format!("Invalid request from the client [{}], invalid client instance id", p.instance_id)));
        }
        let mut st = self.state.lock();
        let inst = Self::instance(&mut st, p.instance_id, info, now);
        let result = Self::push_verdict(&inst, p, self.max_bytes, now);
        if let Some(i) = st.instances.get_mut(&p.instance_id) {
            // Kafka moves the push time whenever the push is on time, even if a later check fails.
            if Self::on_time(&inst, now) && !inst.terminating {
                i.last_push_ms = now;
            }
            i.terminating = p.terminating;
            i.last_error = result.as_ref().err().map_or(0, Error::code);
        }
        result
    }

    /// Kafka's `maybeUpdatePushRequestTimestamp`: the first push after a get is always on
    /// time (clients jitter their interval), later ones once the interval has passed.
    fn on_time(inst: &Instance, now: i64) -> bool {
        inst.last_get_ms > inst.last_push_ms || now - inst.last_push_ms >= inst.push_interval_ms as i64
    }

    fn push_verdict(inst: &Instance, p: &Push, max_bytes: usize, now: i64) -> Result<(), Error> {
        let id = p.instance_id;
        if inst.terminating {
            return Err(Error::InvalidRequest(format!(
                "Client [{id}] sent the previous request with state terminating to TRUE, can not acceptany requests after that"
            )));
        }
        if !Self::on_time(inst, now) && !p.terminating {
            return Err(Error::ThrottlingQuotaExceeded(format!(
                "Request from the client [{id}] arrived before the next push interval time"
            )));
        }
        if p.subscription_id != inst.subscription_id {
            return Err(Error::UnknownSubscriptionId(format!("Unknown client subscription id for the client [{id}]")));
        }
        if !(0..=4).contains(&p.compression) {
            return Err(Error::UnsupportedCompressionType(format!(
                "Unknown compression type [{}] is received in telemetry request from [{id}]",
                p.compression
            )));
        }
        if p.payload_len > max_bytes {
            return Err(Error::TelemetryTooLarge(format!(
                "Telemetry request from [{id}] is larger than the maximum allowed size [{max_bytes}]"
            )));
        }
        Ok(())
    }

    /// Records the outcome of exporting an accepted push (TELEMETRY_TOO_LARGE or
    /// INVALID_RECORD when its payload does not decode).
    pub fn export_failed(&self, id: Uuid, e: &Error) {
        if let Some(i) = self.state.lock().instances.get_mut(&id) {
            i.last_error = e.code();
        }
    }

    /// [`expire`](Self::expire), at most once a second: every request may call it.
    pub fn maybe_expire(&self, now: i64) {
        {
            let mut st = self.state.lock();
            if now - st.last_expiry_ms < 1000 {
                return;
            }
            st.last_expiry_ms = now;
        }
        self.expire(now);
    }

    /// Forgets instances past their expiry, and their exported series.
    pub fn expire(&self, now: i64) {
        let gone: Vec<Uuid> = {
            let mut st = self.state.lock();
            let gone = st.instances.iter().filter(|(_, i)| i.expired(now)).map(|(k, _)| *k).collect();
            st.instances.retain(|_, i| !i.expired(now));
            gone
        };
        for id in gone {
            self.exported.forget(id);
        }
    }

    /// Client instances known now.
    pub fn instances(&self) -> usize {
        self.state.lock().instances.len()
    }
}

#[cfg(test)]
mod tests;
