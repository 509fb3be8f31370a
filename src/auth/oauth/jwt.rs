//! Signed JWTs checked against a JWKS, as Kafka's `BrokerJwtValidator` (with jose4j)
//! checks them: a signature by a key of the set (RS256/384/512, PS256/384/512,
//! ES256/384; never `none`), `exp` and `iat` present, `exp` not passed and `nbf` reached
//! within `sasl.oauthbearer.clock.skew.seconds`, the audience and issuer when expected
//! (and no `aud` at all when no audience is expected, as jose4j's default), a subject
//! claim and an optional scope claim.
//!
//! The key set is swapped in whole by whoever loads it (see `net::jwks`); a login only
//! reads the current one, and asks for an early reload when a token names a key id the
//! set lacks, as Kafka's `RefreshingHttpsJwks` does.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use ring::signature;
use serde_json::{Map, Value};

use super::unsecured::{b64, json_object, scope};
use super::{Rejection, Token};

/// The claims settings (`sasl.oauthbearer.*`), with Kafka's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// `sasl.oauthbearer.expected.audience`: empty means none expected.
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name`, default `sub`.
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name`, default `scope`.
    pub scope_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds`, default 30.
    pub clock_skew_s: i64,
}

impl Default for Claims {
    fn default() -> Claims {
        Claims {
            expected_audience: Vec::new(),
            expected_issuer: None,
            sub_claim: "sub".into(),
            scope_claim: "scope".into(),
            clock_skew_s: 30,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (0x04 || x || y).
    Ec {
        curve: Curve,
        point: Vec<u8>,
    },
}

/// One verification key of a JWKS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    kid: Option<String>,
    alg: Option<String>,
    usage: Option<String>,
    key: PublicKey,
}

/// A JWKS's usable keys (others, such as symmetric ones, are skipped as jose4j skips keys
/// it cannot use).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JwkSet {
    pub keys: Vec<Jwk>,
}

/// The most keys a set may hold: a JWKS is a handful, and each costs a signature check.
const MAX_KEYS: usize = 100;

fn b64_field(o: &Map<String, Value>, k: &str) -> Option<Vec<u8>> {
    o.get(k).and_then(Value::as_str).and_then(b64)
}

fn parse_key(o: &Map<String, Value>) -> Option<Jwk> {
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let key = match s("kty")?.as_str() {
        "RSA" => PublicKey::Rsa { n: b64_field(o, "n")?, e: b64_field(o, "e")? },
        "EC" => {
            let (curve, len) = match s("crv")?.as_str() {
                "P-256" => (Curve::P256, 32),
                "P-384" => (Curve::P384, 48),
                _ => return None,
            };
            let (x, y) = (b64_field(o, "x")?, b64_field(o, "y")?);
            if x.len() != len || y.len() != len {
                return None;
            }
            PublicKey::Ec { curve, point: [&[4u8][..], &x, &y].concat() }
        }
        _ => return None,
    };
    Some(Jwk { kid: s("kid"), alg: s("alg"), usage: s("use"), key })
}

impl JwkSet {
    /// Parses a JWKS document (`{"keys": [...]}`).
    pub fn parse(json: &[u8]) -> Result<JwkSet, String> {
        let v: Value = serde_json::from_slice(json).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
        let keys = v.get("keys").and_then(Value::as_array).ok_or("the JWKS has no \"keys\" array")?;
        if keys.len() > MAX_KEYS {
            return Err(format!("the JWKS holds {} keys; at most {MAX_KEYS} are taken", keys.len()));
        }
        Ok(JwkSet { keys: keys.iter().filter_map(Value::as_object).filter_map(parse_key).collect() })
    }
}

/// Where a key set comes from, and how often it is reloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A `file:` URL: read once, at startup.
    File(std::path::PathBuf),
    /// An `http:` or `https:` URL, reloaded every `refresh_ms`.
    Http {
        url: String,
        refresh_ms: u64,
        retry_backoff_ms: u64,
        retry_backoff_max_ms: u64,
        /// A PEM file of the CAs an `https` endpoint is checked against (the JAAS option
        /// `ssl.truststore.location`); without one, the system's.
        truststore: Option<std::path::PathBuf>,
    },
}

/// How long a key id that was not found waits before it may ask for another reload.
const MISSING_KEY_RETRY_MS: i64 = 60_000;
/// Missing key ids remembered at once.
const MISSING_KEYS_MAX: usize = 16;
/// Longer key ids are taken as garbage and never trigger a reload.
const KEY_ID_MAX_LEN: usize = 1000;

/// The current key set of a listener, shared by its logins and its loader.
#[derive(Debug)]
pub struct KeySource {
    pub location: Location,
    keys: ArcSwap<JwkSet>,
    reload: tokio::sync::Notify,
    missing: parking_lot::Mutex<HashMap<String, i64>>,
}

impl KeySource {
    /// An empty source; its loader fills it before the listener serves.
    pub fn new(location: Location) -> KeySource {
        KeySource {
            location,
            keys: ArcSwap::from_pointee(JwkSet::default()),
            reload: tokio::sync::Notify::new(),
            missing: Default::default(),
        }
    }

    /// Replaces the key set.
    pub fn set(&self, keys: JwkSet) {
        let mut missing = self.missing.lock();
        for k in keys.keys.iter().filter_map(|k| k.kid.as_ref()) {
            missing.remove(k);
        }
        self.keys.store(Arc::new(keys));
    }

    /// The key set now.
    pub fn current(&self) -> Arc<JwkSet> {
        self.keys.load_full()
    }

    /// Resolves when a login asked for an early reload.
    pub async fn reload_wanted(&self) {
        self.reload.notified().await
    }

    /// A token named `kid`, which the set lacks: ask for a reload, at most once a minute per id.
    fn missing_key(&self, kid: &str, now_ms: i64) {
        if kid.len() > KEY_ID_MAX_LEN {
            return;
        }
        let mut missing = self.missing.lock();
        if missing.get(kid).is_some_and(|next| *next > now_ms) {
            return;
        }
        if missing.len() >= MISSING_KEYS_MAX && !missing.contains_key(kid) {
            let oldest = missing.iter().min_by_key(|(_, t)| **t).map(|(k, _)| k.clone());
            if let Some(o) = oldest {
                missing.remove(&o);
            }
        }
        missing.insert(kid.to_string(), now_ms + MISSING_KEY_RETRY_MS);
        self.reload.notify_one();
    }
}

/// Checks signed tokens.
#[derive(Debug)]
pub struct Validator {
    pub claims: Claims,
    pub keys: Arc<KeySource>,
}

fn verify(alg: &str, key: &PublicKey, msg: &[u8], sig: &[u8]) -> Option<bool> {
    use signature::*;
    let rsa: Option<&'static RsaParameters> = match alg {
        "RS256" => Some(&RSA_PKCS1_2048_8192_SHA256),
        "RS384" => Some(&RSA_PKCS1_2048_8192_SHA384),
        "RS512" => Some(&RSA_PKCS1_2048_8192_SHA512),
        "PS256" => Some(&RSA_PSS_2048_8192_SHA256),
        "PS384" => Some(&RSA_PSS_2048_8192_SHA384),
        "PS512" => Some(&RSA_PSS_2048_8192_SHA512),
        _ => None,
    };
    match (rsa, alg, key) {
        (Some(params), _, PublicKey::Rsa { n, e }) => Some(RsaPublicKeyComponents { n, e }.verify(params, msg, sig).is_ok()),
        (None, "ES256", PublicKey::Ec { curve: Curve::P256, point }) => {
            Some(UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).verify(msg, sig).is_ok())
        }
        (None, "ES384", PublicKey::Ec { curve: Curve::P384, point }) => {
            Some(UnparsedPublicKey::new(&ECDSA_P384_SHA384_FIXED, point).verify(msg, sig).is_ok())
        }
        // The key does not fit the algorithm.
        _ => None,
    }
}

const ALGORITHMS: [&str; 8] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"];

/// A NumericDate claim in whole seconds (jose4j truncates fractions).
fn date(claims: &Map<String, Value>, name: &str, required: bool) -> Result<Option<i64>, Rejection> {
    match claims.get(name) {
        None if required => Err(Rejection::invalid(format!("No {name} claim present"))),
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))),
        Some(_) => Err(Rejection::invalid(format!("Could not extract the '{name}' claim from the access token"))),
    }
}

impl Validator {
    /// Checks `token` at `now_ms` against the current key set.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<Token, Rejection> {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(Rejection::invalid(format!(
                "Malformed JWT provided; expected three sections (header, payload, and signature), got {}",
                parts.len()
            )));
        }
        let header = json_object(parts[0]).map_err(|e| Rejection::invalid(format!("JWS header: {e}")))?;
        let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
        if alg == "none" || alg.is_empty() {
            return Err(Rejection::invalid("'none' is not a permitted algorithm; the token must be signed"));
        }
        if !ALGORITHMS.contains(&alg) {
            return Err(Rejection::invalid(format!("the JWS algorithm {alg} is not supported")));
        }
        if header.contains_key("crit") {
            return Err(Rejection::invalid("the JWS header has critical extensions this server does not understand"));
        }
        let sig = b64(parts[2]).filter(|s| !s.is_empty()).ok_or_else(|| Rejection::invalid("the JWS signature is not base64url"))?;
        let kid = header.get("kid").and_then(Value::as_str);
        let signed = &token.as_bytes()[..parts[0].len() + 1 + parts[1].len()];
        let keys = self.keys.current();
        let candidates: Vec<&Jwk> = keys
            .keys
            .iter()
            .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
            .filter(|k| k.alg.as_deref().is_none_or(|a| a == alg))
            .filter(|k| k.usage.as_deref().is_none_or(|u| u == "sig"))
            .collect();
        let mut fits = false;
        let mut verified = false;
        for k in candidates {
            if let Some(ok) = verify(alg, &k.key, signed, &sig) {
                fits = true;
                if ok {
                    verified = true;
                    break;
                }
            }
        }
        if !fits {
            if let Some(kid) = kid {
                self.keys.missing_key(kid, now_ms);
            }
            return Err(Rejection::invalid(format!("Unable to find a suitable verification key for the JWS (alg {alg}, kid {kid:?})")));
        }
        if !verified {
            return Err(Rejection::invalid("JWS signature is invalid"));
        }
        let claims = json_object(parts[1]).map_err(|e| Rejection::invalid(format!("JWT claims: {e}")))?;
        self.check_claims(&claims, now_ms)
    }

    fn check_claims(&self, claims: &Map<String, Value>, now_ms: i64) -> Result<Token, Rejection> {
        let c = &self.claims;
        let now_s = now_ms.div_euclid(1000);
        let exp = date(claims, "exp", true)?.expect("required");
        let iat = date(claims, "iat", true)?.expect("required");
        if now_s.saturating_sub(c.clock_skew_s) >= exp {
            return Err(Rejection::invalid(format!("The JWT is no longer valid: now ({now_s} s) is on or after its exp ({exp} s)")));
        }
        if let Some(nbf) = date(claims, "nbf", false)? {
            if now_s.saturating_add(c.clock_skew_s) < nbf {
                return Err(Rejection::invalid(format!("The JWT is not yet valid: now ({now_s} s) is before its nbf ({nbf} s)")));
            }
        }
        let aud: Vec<&str> = match claims.get("aud") {
            None => Vec::new(),
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(Rejection::invalid("Could not extract the 'aud' claim from the access token")),
        };
        if !c.expected_audience.is_empty() && aud.is_empty() {
            return Err(Rejection::invalid("No Audience (aud) claim present"));
        }
        if claims.contains_key("aud") && !aud.iter().any(|a| c.expected_audience.iter().any(|e| e == a)) {
            return Err(Rejection::invalid(format!(
                "Audience (aud) claim {aud:?} doesn't contain an acceptable identifier; expected one of {:?}",
                c.expected_audience
            )));
        }
        if let Some(want) = &c.expected_issuer {
            match claims.get("iss").and_then(Value::as_str) {
                Some(iss) if iss == want => {}
                Some(iss) => {
                    return Err(Rejection::invalid(format!("Issuer (iss) claim value ({iss}) doesn't match expected value of {want}")))
                }
                None => return Err(Rejection::invalid(format!("No Issuer (iss) claim present but was expecting {want}"))),
            }
        }
        let sub = match claims.get(&c.sub_claim) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            None | Some(Value::String(_)) => return Err(Rejection::invalid(format!("{} value must be non-empty", c.sub_claim))),
            Some(_) => return Err(Rejection::invalid(format!("Could not extract the '{}' claim from the access token", c.sub_claim))),
        };
        if exp < 0 || iat < 0 {
            return Err(Rejection::invalid("exp and iat must not be negative"));
        }
        Ok(Token {
            principal: sub,
            expires_at_ms: exp.saturating_mul(1000),
            scope: scope(claims, &c.scope_claim)?,
            issued_at_ms: Some(iat.saturating_mul(1000)),
        })
    }
}
