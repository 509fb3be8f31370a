//! Client quotas on the broker: AlterClientQuotas goes to the controller; the byte rates
//! of Produce and Fetch are measured here against the quota the metadata image resolves
//! for each client, and each request learns how long its client is to be throttled.

use crate::clock::now_ms;
use crate::controller::rpc::{QuotaAlteration, Request, Response};
use crate::error::{Error, Result};
use crate::quota::entity::{CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE};
use crate::quota::resolve::{connection_rate, governing, Governing};
use crate::quota::token_bucket::Mutation;
use crate::quota::{ThrottleKind, Throttler, WindowConfig};

use super::Broker;

/// The rates of the clients under a quota, with the window settings they are measured by.
pub struct ClientRates(parking_lot::Mutex<Throttler>);

impl ClientRates {
    pub fn new(settings: &crate::config::Settings) -> ClientRates {
        ClientRates(parking_lot::Mutex::new(Throttler::new(window(settings))))
    }
}

fn window(s: &crate::config::Settings) -> WindowConfig {
    WindowConfig { samples: s.quota_window_num, window_ms: s.quota_window_size_ms }
}

fn mutation_window(s: &crate::config::Settings) -> WindowConfig {
    WindowConfig { samples: s.controller_quota_window_num, window_ms: s.controller_quota_window_size_ms }
}

/// One request's controller mutation quota (KIP-599): the client's `controller_mutation_rate`
/// if it has one, whether the request's version is held to it strictly, and the throttle
/// time earned so far.
pub struct MutationQuota<'a> {
    broker: &'a Broker,
    gov: Option<Governing>,
    mode: Mutation,
    throttle_ms: i64,
}

impl MutationQuota<'_> {
    /// Counts `partitions` created or deleted for one topic. A strict request is refused
    /// the topic (THROTTLING_QUOTA_EXCEEDED) while the client's bucket is below zero.
    pub fn record(&mut self, partitions: i32) -> Result<()> {
        let Some(gov) = &self.gov else { return Ok(()) };
        if partitions <= 0 {
            return Ok(());
        }
        let s = self.broker.settings();
        let mut rates = self.broker.client_rates.0.lock();
        rates.configure_mutations(mutation_window(&s));
        match rates.mutate(gov, partitions as f64, self.mode, now_ms()) {
            Ok(ms) => {
                self.throttle_ms = self.throttle_ms.max(ms);
                Ok(())
            }
            Err(ms) => {
                self.throttle_ms = self.throttle_ms.max(ms);
                Err(quota_exceeded())
            }
        }
    }

    /// The throttle time the request earned, in ms (counted in the throttle statistics).
    pub fn finish(self) -> i32 {
        if self.throttle_ms > 0 {
            crate::stats::quota_throttled("ControllerMutation", self.throttle_ms as u64);
        }
        self.throttle_ms as i32
    }
}

/// A topic refused for its client's controller_mutation_rate, with Kafka's message.
pub fn quota_exceeded() -> Error {
    Error::ThrottlingQuotaExceeded("The throttling quota has been exceeded.".into())
}

fn key_of(kind: ThrottleKind) -> &'static str {
    match kind {
        ThrottleKind::Produce => PRODUCER_BYTE_RATE,
        ThrottleKind::Fetch => CONSUMER_BYTE_RATE,
        ThrottleKind::ConnectionCreation => CONNECTION_CREATION_RATE,
        ThrottleKind::Request => REQUEST_PERCENTAGE,
    }
}

impl Broker {
    /// AlterClientQuotas: the controller validates and commits; one result per entry.
    pub async fn alter_client_quotas(&self, alterations: Vec<QuotaAlteration>, validate_only: bool) -> Vec<Result<()>> {
        let n = alterations.len();
        match self.submit(Request::AlterClientQuotas { alterations, validate_only }, None).await {
            Ok(Response::Each { results, .. }) => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); n],
            Err(e) => vec![Err(e); n],
        }
    }

    /// The quota of `kind` that governs `user` (a principal's name) on `client_id`, if any.
    pub fn quota_for(&self, kind: ThrottleKind, user: &str, client_id: &str) -> Option<Governing> {
        governing(&self.cluster.image().client_quotas, user, client_id, key_of(kind))
    }

    /// The controller mutation quota of one request of `user` on `client_id`; `strict` for
    /// the request versions that know THROTTLING_QUOTA_EXCEEDED.
    pub fn mutation_quota(&self, user: &str, client_id: &str, strict: bool) -> MutationQuota<'_> {
        let gov = governing(&self.cluster.image().client_quotas, user, client_id, CONTROLLER_MUTATION_RATE);
        MutationQuota { broker: self, gov, mode: if strict { Mutation::Strict } else { Mutation::Permissive }, throttle_ms: 0 }
    }

    /// Records `bytes` against the client's rate; the throttle time in ms (0: within quota).
    pub fn record_quota(&self, kind: ThrottleKind, gov: &Governing, bytes: usize) -> i32 {
        let mut rates = self.client_rates.0.lock();
        rates.configure(window(&self.settings()));
        let ms = rates.record(kind, gov, bytes as f64, now_ms());
        drop(rates);
        if ms > 0 {
            crate::stats::quota_throttled(kind.as_str(), ms as u64);
        }
        ms as i32
    }

    /// Counts a new connection from `ip` against its `connection_creation_rate`; the time
    /// to hold it before closing it if that takes the address over (KIP-612), else 0. A
    /// refused connection is taken back off the rate, as Kafka does, and the hold is at
    /// most all the windows.
    pub fn record_connection(&self, ip: std::net::IpAddr) -> i32 {
        let Some(gov) = connection_rate(&self.cluster.image().client_quotas, &ip.to_canonical().to_string()) else {
            return 0;
        };
        let s = self.settings();
        let kind = ThrottleKind::ConnectionCreation;
        let now = now_ms();
        let mut rates = self.client_rates.0.lock();
        rates.configure(window(&s));
        let ms = rates.record(kind, &gov, 1.0, now);
        if ms == 0 {
            return 0;
        }
        rates.unrecord(kind, &gov, 1.0, now);
        drop(rates);
        let ms = ms.min(s.quota_window_num as i64 * s.quota_window_size_ms);
        crate::stats::quota_throttled(kind.as_str(), ms as u64);
        ms as i32
    }

    /// Records `nanos` of a request's handling against the client's `request_percentage`;
    /// the throttle time in ms (at most one window, as in Kafka).
    pub fn record_request_time(&self, gov: &Governing, nanos: u64) -> i32 {
        let mut rates = self.client_rates.0.lock();
        rates.configure(window(&self.settings()));
        let ms = rates.record_request(gov, nanos, now_ms());
        drop(rates);
        if ms > 0 {
            crate::stats::quota_throttled(ThrottleKind::Request.as_str(), ms as u64);
        }
        ms as i32
    }

    /// Adds `nanos` spent sending a response to the client's request rate, without a
    /// throttle decision: it shows in the next one.
    pub fn record_request_time_sent(&self, gov: &Governing, nanos: u64) {
        let value = crate::quota::request_percentage(nanos);
        self.client_rates.0.lock().record_no_throttle(ThrottleKind::Request, gov, value, now_ms());
    }

    /// Takes back bytes recorded for a response that went out without them.
    pub fn unrecord_quota(&self, kind: ThrottleKind, gov: &Governing, bytes: usize) {
        self.client_rates.0.lock().unrecord(kind, gov, bytes as f64, now_ms());
    }
}
