//! Client quotas on the broker: AlterClientQuotas goes to the controller; the byte rates
//! of Produce and Fetch are measured here against the quota the metadata image resolves
//! for each client, and each request learns how long its client is to be throttled.

use crate::clock::now_ms;
use crate::controller::rpc::{QuotaAlteration, Request, Response};
use crate::error::{Error, Result};
use crate::quota::entity::{CONNECTION_CREATION_RATE, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE};
use crate::quota::resolve::{connection_rate, governing, Governing};
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

fn key_of(kind: ThrottleKind) -> &'static str {
    match kind {
        ThrottleKind::Produce => PRODUCER_BYTE_RATE,
        ThrottleKind::Fetch => CONSUMER_BYTE_RATE,
        ThrottleKind::ConnectionCreation => CONNECTION_CREATION_RATE,
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

    /// Takes back bytes recorded for a response that went out without them.
    pub fn unrecord_quota(&self, kind: ThrottleKind, gov: &Governing, bytes: usize) {
        self.client_rates.0.lock().unrecord(kind, gov, bytes as f64, now_ms());
    }
}
