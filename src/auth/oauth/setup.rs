//! A listener's OAUTHBEARER settings, read as Kafka reads them: the JAAS config
//! `listener.name.<listener>.oauthbearer.sasl.jaas.config` (OAuthBearerLoginModule), the
//! server callback handler `listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class`
//! (unsecured tokens by default, `OAuthBearerValidatorCallbackHandler` for signed ones),
//! and `sasl.oauthbearer.*`, each with the `listener.name.<listener>.oauthbearer.` or
//! `listener.name.<listener>.` prefix winning over the bare key.

use std::sync::Arc;

use super::jwt::{self, Claims, KeySource, Location};
use super::unsecured::Options;
use super::Validator;
use crate::auth::jaas;
use crate::config::BrokerConfig;

/// Kafka's OAUTHBEARER login module class.
pub const LOGIN_MODULE: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
/// Kafka's default server callback handler: unsecured JWTs.
pub const UNSECURED_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";
/// The callback handler that validates signed JWTs against a JWKS.
pub const JWKS_HANDLER: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
/// The URLs a JWKS may be read from (a JVM system property in Kafka, a config key here).
pub const ALLOWED_URLS: &str = "org.apache.kafka.sasl.oauthbearer.allowed.urls";

/// The OAUTHBEARER validator of `listener`; its key source, if any, is still empty.
pub fn for_listener(cfg: &BrokerConfig, listener: &str) -> Result<Validator, String> {
    let l = listener.to_ascii_lowercase();
    let get = |k: &str| {
        [format!("listener.name.{l}.oauthbearer.{k}"), format!("listener.name.{l}.{k}")]
            .iter()
            .find_map(|p| cfg.lookup(p).map(|(v, _)| v))
            .unwrap_or_else(|| cfg.get(k))
            .trim()
            .to_string()
    };
    let jaas_key = format!("listener.name.{l}.oauthbearer.sasl.jaas.config");
    let text = cfg.lookup(&jaas_key).map(|(v, _)| v).ok_or_else(|| format!("OAUTHBEARER is enabled but the listener has no {jaas_key}"))?;
    let jaas = jaas::parse(&text)?;
    if jaas.login_module != LOGIN_MODULE {
        return Err(format!("the OAUTHBEARER mechanism needs {LOGIN_MODULE}, not {}", jaas.login_module));
    }
    let handler_key = format!("listener.name.{l}.oauthbearer.sasl.server.callback.handler.class");
    let handler = cfg.lookup(&handler_key).map(|(v, _)| v.trim().to_string()).unwrap_or_default();
    match handler.as_str() {
        "" | UNSECURED_HANDLER => Ok(Validator::Unsecured(Options::from_jaas(&jaas.options)?)),
        JWKS_HANDLER => signed(&get, cfg.get(ALLOWED_URLS).as_str(), &jaas.options).map(Validator::Signed),
        other => Err(format!("{handler_key}: {other} is not built; use {UNSECURED_HANDLER} or {JWKS_HANDLER}")),
    }
}

fn number(get: &dyn Fn(&str) -> String, key: &str, min: i64) -> Result<i64, String> {
    let v = get(key);
    match v.parse::<i64>() {
        Ok(n) if n >= min => Ok(n),
        _ => Err(format!("The OAuth configuration option {key} value must be a number of at least {min}, not '{v}'")),
    }
}

fn signed(
    get: &dyn Fn(&str) -> String,
    allowed: &str,
    jaas: &std::collections::BTreeMap<String, String>,
) -> Result<jwt::Validator, String> {
    const URL: &str = "sasl.oauthbearer.jwks.endpoint.url";
    let url = get(URL);
    if url.is_empty() {
        return Err(format!("The OAuth configuration option {URL} value is required"));
    }
    let (scheme, rest) = url
        .split_once(':')
        .ok_or_else(|| format!("The OAuth configuration option {URL} contains a URL ({url}) that is missing the protocol"))?;
    let scheme = scheme.to_ascii_lowercase();
    if !["http", "https", "file"].contains(&scheme.as_str()) {
        return Err(format!(
            "The OAuth configuration option {URL} contains a URL ({url}) that contains an invalid protocol ({scheme}); only \"http\", \"https\", and \"file\" protocol are supported"
        ));
    }
    // Kafka 4 reads no URL that is not allowed, and allows none by default.
    if !allowed.split(',').map(str::trim).any(|a| a == url) {
        return Err(format!(
            "{URL} ({url}): the URL cannot be accessed due to restrictions; add it to {ALLOWED_URLS} (a JVM system property in Kafka, a config key in Sluice) to allow it"
        ));
    }
    let location = if scheme == "file" {
        // file:/p, file:///p and file://localhost/p all name /p.
        let path = rest.strip_prefix("//localhost").or_else(|| rest.strip_prefix("//")).unwrap_or(rest);
        if !path.starts_with('/') {
            return Err(format!("{URL} ({url}): a file URL needs an absolute path"));
        }
        Location::File(path.into())
    } else {
        Location::Http {
            url: url.clone(),
            refresh_ms: number(get, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 0)? as u64,
            retry_backoff_ms: number(get, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 0)? as u64,
            retry_backoff_max_ms: number(get, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 0)? as u64,
            truststore: jaas.get("ssl.truststore.location").filter(|p| !p.trim().is_empty()).map(|p| p.trim().into()),
        }
    };
    let audience = get("sasl.oauthbearer.expected.audience");
    let required = |k: &str| {
        let v = get(k);
        if v.is_empty() {
            Err(format!("The OAuth configuration option {k} value is required"))
        } else {
            Ok(v)
        }
    };
    let claims = Claims {
        expected_audience: audience.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect(),
        expected_issuer: Some(get("sasl.oauthbearer.expected.issuer")).filter(|i| !i.is_empty()),
        sub_claim: required("sasl.oauthbearer.sub.claim.name")?,
        scope_claim: required("sasl.oauthbearer.scope.claim.name")?,
        clock_skew_s: number(get, "sasl.oauthbearer.clock.skew.seconds", i32::MIN as i64)?,
    };
    Ok(jwt::Validator { claims, keys: Arc::new(KeySource::new(location)) })
}
