//! SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka's `OAuthBearerSaslServer` runs it, with
//! no I/O. The client's one message carries a bearer token; the listener's validator
//! checks it: unsecured `alg: none` JWTs (Kafka's default server callback handler) or
//! signed JWTs against a JWKS (`OAuthBearerValidatorCallbackHandler`). A token that fails
//! gets RFC 7628's JSON error; the client then sends a lone 0x01 and the login fails.

pub mod jwt;
pub mod setup;
pub mod unsecured;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use super::scram::Failure;
use super::Step;

/// The mechanism's name in `sasl.enabled.mechanisms`.
pub const MECHANISM: &str = "OAUTHBEARER";
/// RFC 7628's separator (kvsep), and the whole of a client's answer to an error.
const SEP: char = '\u{1}';

/// A client's first message: `n,[a=<authzid>],^Aauth=Bearer <token>^A[key=value^A...]^A`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialResponse {
    /// The authorization id, as sent (Kafka does not unescape =2C or =3D); empty if none.
    pub authzid: String,
    pub token: String,
    /// SASL extensions (KIP-342): every key=value pair but `auth`.
    pub extensions: BTreeMap<String, String>,
}

fn is_sasl_name(s: &str) -> bool {
    // RFC 5802's saslname: UTF8 without '=' and ',' but for the =2C and =3D escapes; Kafka
    // limits it to 7-bit characters.
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' if b.get(i + 1..i + 3).is_some_and(|e| e == b"2C" || e == b"3D") => i += 3,
            b'=' | b',' | 0 | 0x80.. => return false,
            _ => i += 1,
        }
    }
    !b.is_empty()
}

fn is_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphabetic())
}

fn is_value(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|c| (0x21..=0x7e).contains(&c) || matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Parses a client's first message as Kafka's `OAuthBearerClientInitialResponse` does;
/// the error is its message.
pub fn parse_initial(msg: &[u8]) -> Result<InitialResponse, String> {
    const INVALID: &str = "Invalid OAUTHBEARER client first message";
    let text = std::str::from_utf8(msg).map_err(|_| INVALID.to_string())?;
    let rest = text.strip_prefix("n,").ok_or(INVALID)?;
    let (gs2_authzid, rest) = rest.split_once(',').ok_or(INVALID)?;
    let authzid = match gs2_authzid {
        "" => "",
        a => a.strip_prefix("a=").filter(|n| is_sasl_name(n)).ok_or(INVALID)?,
    };
    // What follows the GS2 header is ^A, then key=value^A pairs, then a closing ^A.
    let pairs = rest.strip_prefix(SEP).and_then(|r| r.strip_suffix(SEP)).ok_or(INVALID)?;
    let mut props = BTreeMap::new();
    if !pairs.is_empty() {
        let pairs = pairs.strip_suffix(SEP).ok_or(INVALID)?;
        for kv in pairs.split(SEP) {
            let (k, v) = kv.split_once('=').ok_or(INVALID)?;
            if !is_key(k) || !is_value(v) {
                return Err(INVALID.into());
            }
            props.insert(k.to_string(), v.to_string());
        }
    }
    let auth = props.remove("auth").ok_or_else(|| format!("{INVALID}: 'auth' not specified"))?;
    let (scheme, token) = auth.split_once(' ').ok_or_else(|| format!("{INVALID}: invalid 'auth' format"))?;
    let token = token.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let scheme_ok = !scheme.is_empty() && scheme.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    let token_ok = !body.is_empty() && body.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_~+/.".contains(&c));
    if !scheme_ok || !token_ok {
        return Err(format!("{INVALID}: invalid 'auth' format"));
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(format!("Invalid scheme in OAUTHBEARER client first message: {scheme}"));
    }
    Ok(InitialResponse { authzid: authzid.to_string(), token: token.to_string(), extensions: props })
}

/// A token that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The principal claim's value: the connection becomes `User:<principal>`.
    pub principal: String,
    /// When the token expires (its `exp`), in ms since the epoch.
    pub expires_at_ms: i64,
    pub scope: BTreeSet<String>,
    /// Its `iat`, in ms since the epoch, if it has one.
    pub issued_at_ms: Option<i64>,
}

/// Why a token was refused: what RFC 7628's error tells the client, and the reason for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// `invalid_token` or `insufficient_scope`.
    pub status: &'static str,
    /// The scope that was required, for `insufficient_scope`.
    pub scope: Option<String>,
    pub detail: String,
}

impl Rejection {
    /// An `invalid_token` rejection.
    pub fn invalid(detail: impl Into<String>) -> Rejection {
        Rejection { status: "invalid_token", scope: None, detail: detail.into() }
    }

    /// The server's error message, in the exact form Kafka sends: `{"status":"invalid_token"}`.
    pub fn json(&self) -> String {
        match &self.scope {
            None => format!("{{\"status\":\"{}\"}}", self.status),
            Some(s) => format!("{{\"status\":\"{}\", \"scope\":{}}}", self.status, serde_json::Value::String(s.clone())),
        }
    }
}

/// How a listener checks tokens.
#[derive(Debug)]
pub enum Validator {
    /// Kafka's default: unsecured (`alg: none`) JWTs, options from the JAAS config.
    Unsecured(unsecured::Options),
    /// Signed JWTs against the keys of a JWKS.
    Signed(jwt::Validator),
}

impl Validator {
    /// Checks `token` at `now_ms`.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<Token, Rejection> {
        match self {
            Validator::Unsecured(o) => unsecured::validate(o, token, now_ms),
            Validator::Signed(v) => v.validate(token, now_ms),
        }
    }

    /// The key set a signed-token validator reads, which something must load.
    pub fn key_source(&self) -> Option<&std::sync::Arc<jwt::KeySource>> {
        match self {
            Validator::Signed(v) => Some(&v.keys),
            Validator::Unsecured(_) => None,
        }
    }
}

/// The server's side of one OAUTHBEARER exchange.
#[derive(Debug, Default)]
pub struct OAuthServer {
    /// The JSON error sent for a refused token, until the client acknowledges it.
    error: Option<Rejection>,
}

impl OAuthServer {
    /// Takes one client message at `now_ms`. On success the step's user is the token's
    /// principal and the second value its expiry (the session may not outlive it).
    pub fn step(&mut self, msg: &[u8], validator: &Validator, now_ms: i64) -> Result<(Step, Option<i64>), Failure> {
        if msg == [SEP as u8] {
            if let Some(e) = self.error.take() {
                return Err(Failure::Refused { message: e.json(), detail: e.detail });
            }
        }
        self.error = None;
        let first = parse_initial(msg).map_err(Failure::Invalid)?;
        match validator.validate(&first.token, now_ms) {
            Err(e) => {
                let json = e.json();
                self.error = Some(e);
                Ok((Step::Continue(json.into_bytes()), None))
            }
            Ok(t) if !first.authzid.is_empty() && first.authzid != t.principal => Err(Failure::Rejected(format!(
                "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                first.authzid, t.principal
            ))),
            // Both of Kafka's validating handlers accept every extension.
            Ok(t) => Ok((Step::Done { response: Vec::new(), user: t.principal }, Some(t.expires_at_ms))),
        }
    }
}
