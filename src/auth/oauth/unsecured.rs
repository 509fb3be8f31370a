//! Unsecured JWTs (`alg: none`, RFC 7515 appendix A.5), checked as Kafka's default broker
//! callback handler, `OAuthBearerUnsecuredValidatorCallbackHandler`, checks them: a
//! principal claim, an `exp` not passed, an `iat` not in the future, `exp` after `iat`,
//! and every required scope present, with an allowed clock skew.

use std::collections::{BTreeMap, BTreeSet};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::{Map, Value};

use super::{Rejection, Token};

/// The handler's JAAS options (`unsecuredValidator*`), with Kafka's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `unsecuredValidatorPrincipalClaimName`, default `sub`.
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName`, default `scope`.
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope`: space-separated, default none.
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs`, default 0.
    pub clock_skew_ms: i64,
}

impl Default for Options {
    fn default() -> Options {
        Options { principal_claim: "sub".into(), scope_claim: "scope".into(), required_scope: Vec::new(), clock_skew_ms: 0 }
    }
}

impl Options {
    /// The options of an OAuthBearerLoginModule JAAS config. Kafka finds a bad clock skew
    /// only at the first login; here it stops the broker from starting.
    pub fn from_jaas(options: &BTreeMap<String, String>) -> Result<Options, String> {
        let opt = |k: &str| options.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let d = Options::default();
        let skew = match opt("unsecuredValidatorAllowableClockSkewMs") {
            None => 0,
            Some(v) => match v.parse::<i32>() {
                Ok(n) if n >= 0 => n as i64,
                _ => return Err(format!("unsecuredValidatorAllowableClockSkewMs must be a non-negative int, not '{v}'")),
            },
        };
        Ok(Options {
            principal_claim: opt("unsecuredValidatorPrincipalClaimName").map_or(d.principal_claim, str::to_string),
            scope_claim: opt("unsecuredValidatorScopeClaimName").map_or(d.scope_claim, str::to_string),
            required_scope: opt("unsecuredValidatorRequiredScope")
                .map(|s| s.split(' ').filter(|p| !p.is_empty()).map(str::to_string).collect())
                .unwrap_or_default(),
            clock_skew_ms: skew,
        })
    }
}

/// Decodes one base64url part of a JWT (padding optional; the standard alphabet is taken
/// too, as tokens from some tools use it).
pub(crate) fn b64(part: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const URL: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);
    const STD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
    URL.decode(part).or_else(|_| STD.decode(part)).ok()
}

/// A JWT part decoded as a JSON object.
pub(crate) fn json_object(part: &str) -> Result<Map<String, Value>, String> {
    let bytes = b64(part).ok_or("malformed Base64 URL encoded value")?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err("malformed JSON".into()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "Null",
        Value::Bool(_) => "Boolean",
        Value::Number(_) => "Number",
        Value::String(_) => "String",
        Value::Array(_) => "List",
        Value::Object(_) => "Object",
    }
}

fn number(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, Rejection> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(v) => Err(Rejection::invalid(format!("The '{name}' claim was not of type Number: {}", type_name(v)))),
    }
}

/// The scope claim: one string (taken whole, as Kafka does) or a list of strings.
pub(crate) fn scope(claims: &Map<String, Value>, name: &str) -> Result<BTreeSet<String>, Rejection> {
    match claims.get(name) {
        None => Ok(BTreeSet::new()),
        Some(Value::String(s)) => Ok(Some(s.trim()).filter(|s| !s.is_empty()).map(str::to_string).into_iter().collect()),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            })
            .filter(|s| !s.is_empty())
            .collect()),
        Some(v) => Err(Rejection::invalid(format!("The '{name}' claim was not of type List: {}", type_name(v)))),
    }
}

/// Checks an unsecured JWT at `now_ms`.
pub fn validate(o: &Options, token: &str, now_ms: i64) -> Result<Token, Rejection> {
    if token.contains("..") {
        return Err(Rejection::invalid("Malformed compact serialization contains '..'"));
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err(Rejection::invalid("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"));
    }
    let header = json_object(parts[0]).map_err(Rejection::invalid)?;
    let claims = json_object(parts[1]).map_err(Rejection::invalid)?;
    match header.get("alg") {
        Some(Value::String(a)) if a == "none" => {}
        Some(_) => return Err(Rejection::invalid("Unsecured JWS must have 'none' for an algorithm")),
        None => return Err(Rejection::invalid("JWS header must have an Algorithm value")),
    }
    if !parts[2].is_empty() {
        return Err(Rejection::invalid("Unsecured JWS must not contain a digital signature"));
    }
    let scope = scope(&claims, &o.scope_claim)?;
    let exp = number(&claims, "exp")?.ok_or_else(|| Rejection::invalid("No expiration time in JWT"))?;
    let principal = match claims.get(&o.principal_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        None | Some(Value::String(_)) => return Err(Rejection::invalid(format!("No principal name in JWT claim: {}", o.principal_claim))),
        Some(v) => return Err(Rejection::invalid(format!("The '{}' claim was not of type String: {}", o.principal_claim, type_name(v)))),
    };
    let iat = number(&claims, "iat")?;
    let skew = o.clock_skew_ms as f64;
    if let Some(iat) = iat {
        if 1000.0 * iat > now_ms as f64 + skew {
            return Err(Rejection::invalid(format!(
                "The Issued At value ({iat} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew ({} ms)",
                o.clock_skew_ms
            )));
        }
    }
    if now_ms as f64 - skew >= 1000.0 * exp {
        return Err(Rejection::invalid(format!(
            "The indicated time ({now_ms} ms) minus allowable clock skew ({} ms) was on or after the Expiration Time value ({exp} seconds)",
            o.clock_skew_ms
        )));
    }
    if let Some(iat) = iat.filter(|iat| exp <= *iat) {
        return Err(Rejection::invalid(format!(
            "The Expiration Time time ({exp} seconds) was not after the Issued At time ({iat} seconds)"
        )));
    }
    if let Some(missing) = o.required_scope.iter().find(|s| !scope.contains(*s)) {
        return Err(Rejection {
            status: "insufficient_scope",
            scope: Some(format!("[{}]", o.required_scope.join(", "))),
            detail: format!("The provided scope ({scope:?}) was missing a required scope ({missing})"),
        });
    }
    Ok(Token { principal, expires_at_ms: (exp * 1000.0).round() as i64, scope, issued_at_ms: iat.map(|i| (i * 1000.0).round() as i64) })
}
