//! `client-metrics` config resources (ConfigResource type 16, KIP-714): describing and
//! altering a subscription, which lives in the metadata log like every config.

use std::collections::BTreeMap;

use super::configs::ConfigEntry;
use super::Broker;
use crate::config::Source;
use crate::controller::rpc::{ConfigTarget, Request};
use crate::error::{Error, Result};
use crate::telemetry::subscription::{self, KEYS};

impl Broker {
    /// The resource's configs in the metadata image (empty when it has none).
    pub(super) fn client_metrics_overrides(&self, name: &str) -> BTreeMap<String, String> {
        self.cluster.image().client_metrics.get(name).cloned().unwrap_or_default()
    }

    /// DescribeConfigs for a `client-metrics` resource: its three keys, set or default, as
    /// Kafka's ConfigHelper describes them.
    pub fn describe_client_metrics_configs(&self, name: &str, keys: Option<&[String]>) -> Result<Vec<ConfigEntry>> {
        if name.is_empty() {
            return Err(Error::InvalidRequest("Subscription name can't be empty".into()));
        }
        let set = self.client_metrics_overrides(name);
        Ok(KEYS
            .iter()
            .filter(|(k, ..)| keys.is_none_or(|want| want.iter().any(|x| x == k)))
            .map(|&(k, kind, default, doc)| {
                let (value, source) = match set.get(k) {
                    Some(v) => (v.clone(), Source::ClientMetrics),
                    None => (default.to_string(), Source::Default),
                };
                let synonyms = vec![(k.to_string(), value.clone(), source)];
                ConfigEntry { name: k.into(), value: Some(value), source, read_only: false, kind, doc, synonyms }
            })
            .collect())
    }

    /// Replaces a resource's configs after Kafka's checks; an empty set removes the resource.
    pub(super) fn replace_client_metrics_configs(&self, name: &str, new: BTreeMap<String, String>, validate_only: bool) -> Result<()> {
        subscription::parse(name, &new)?;
        if validate_only {
            return Ok(());
        }
        self.submit_blocking(Request::SetConfigs { target: ConfigTarget::ClientMetrics(name.to_string()), configs: new }).map(|_| ())
    }
}
