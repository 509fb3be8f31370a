//! One connection's SASL session, as Kafka's `SaslServerAuthenticator` runs it: request
//! frames in, what to send and do out. No sockets and no clock: the caller passes the
//! time and a credential lookup.
//!
//! Before authentication a connection may send ApiVersions (once, first), then
//! SaslHandshake (v0 or v1), then the mechanism's tokens: with a v1 handshake each token
//! is a SaslAuthenticate request (v0–2); with v0 the tokens travel raw, each in a 4-byte
//! length-prefixed frame with no Kafka header, as Kafka still accepts from old clients.
//! Any other request closes the connection without an answer, as in Kafka. A failed
//! login answers SASL_AUTHENTICATION_FAILED (v1) and closes; the session's state is
//! dropped with the connection, so repeated failures hold no memory. After
//! authentication a SaslHandshake starts a re-authentication (KIP-368), which must keep
//! the mechanism and the principal.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::oauth::{self, OAuthServer, Validator};
use super::plain::{self, PlainUsers};
use super::scram::{self, Failure, ScramServer};
use super::token::TokenCredential;
use super::Step;
use crate::auth::credential::{ScramCredential, ScramMechanism};
use crate::error::Error;

/// What a listener's SASL accepts.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// `sasl.enabled.mechanisms`, in order: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
    pub enabled: Vec<String>,
    /// PLAIN's users, when PLAIN is enabled.
    pub plain: PlainUsers,
    /// `connections.max.reauth.ms`: 0 means sessions never expire.
    pub reauth_ms: i64,
    /// `sasl.server.max.receive.size`: the largest frame taken before authentication.
    pub max_receive_size: usize,
    /// OAUTHBEARER's token validator, when OAUTHBEARER is enabled.
    pub oauth: Option<std::sync::Arc<Validator>>,
}

/// The mechanisms this build serves.
pub const MECHANISMS: [&str; 4] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", oauth::MECHANISM];

impl SaslConfig {
    /// Checks that every enabled mechanism is built and has what it needs.
    pub fn new(enabled: Vec<String>, plain: Option<PlainUsers>, reauth_ms: i64, max_receive_size: usize) -> Result<SaslConfig, String> {
        if enabled.is_empty() {
            return Err("sasl.enabled.mechanisms is empty: a SASL listener needs at least one mechanism".into());
        }
        if let Some(m) = enabled.iter().find(|m| !MECHANISMS.contains(&m.as_str())) {
            return Err(format!("SASL mechanism {m} is not supported; sasl.enabled.mechanisms may hold {}", MECHANISMS.join(", ")));
        }
        let plain = match plain {
            Some(p) => p,
            None if enabled.iter().any(|m| m == "PLAIN") => {
                return Err("PLAIN is enabled but the listener has no listener.name.<listener>.plain.sasl.jaas.config".into())
            }
            None => PlainUsers::default(),
        };
        Ok(SaslConfig { enabled, plain, reauth_ms, max_receive_size, oauth: None })
    }
}

impl SaslConfig {
    /// The SASL settings of `listener`, with its `listener.name.<listener>.` overrides
    /// (the listener name lowercased, as Kafka prefixes it). PLAIN's users come from
    /// `listener.name.<listener>.plain.sasl.jaas.config`; an unprefixed `sasl.jaas.config`
    /// is not read for a broker, as in Kafka.
    pub fn for_listener(cfg: &crate::config::BrokerConfig, listener: &str) -> Result<SaslConfig, String> {
        let prefix = format!("listener.name.{}.", listener.to_ascii_lowercase());
        let get = |k: &str| cfg.lookup(&format!("{prefix}{k}")).map(|(v, _)| v).unwrap_or_else(|| cfg.get(k));
        let enabled: Vec<String> =
            get("sasl.enabled.mechanisms").split(',').map(|m| m.trim().to_string()).filter(|m| !m.is_empty()).collect();
        let plain = match cfg.lookup(&format!("{prefix}plain.sasl.jaas.config")) {
            Some((text, _)) => Some(PlainUsers::from_jaas(&super::jaas::parse(&text)?)?),
            None => None,
        };
        let reauth_ms =
            get("connections.max.reauth.ms").trim().parse().map_err(|_| "connections.max.reauth.ms is not a number".to_string())?;
        let max_receive = cfg.get_i64("sasl.server.max.receive.size").max(1) as usize;
        let mut config = SaslConfig::new(enabled, plain, reauth_ms, max_receive).map_err(|e| format!("listener {listener}: {e}"))?;
        if config.enabled.iter().any(|m| m == oauth::MECHANISM) {
            let v = oauth::setup::for_listener(cfg, listener).map_err(|e| format!("listener {listener}: {e}"))?;
            config.oauth = Some(std::sync::Arc::new(v));
        }
        Ok(config)
    }

    /// The key set OAUTHBEARER checks signed tokens against, which must be loaded before
    /// the listener serves.
    pub fn jwks(&self) -> Option<&std::sync::Arc<oauth::jwt::KeySource>> {
        self.oauth.as_ref().and_then(|v| v.key_source())
    }
}

/// What the connection does with one frame.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Not for SASL: handle the request as usual (ApiVersions first, anything once authenticated).
    Pass,
    /// Send this (a whole frame, length prefix included) and read on.
    Reply(Vec<u8>),
    /// Send this; the connection is now authenticated as `principal` until `expires_at_ms`.
    Authenticated { reply: Vec<u8>, principal: String, expires_at_ms: Option<i64> },
    /// Send `reply` if there is one, then close.
    Close { reply: Option<Vec<u8>>, reason: String },
}

enum Mech {
    Plain,
    Scram(Box<ScramServer>),
    OAuth(OAuthServer),
}

enum State {
    /// Nothing yet: ApiVersions or SaslHandshake may come.
    Initial,
    /// ApiVersions was answered: only SaslHandshake may come.
    Handshake,
    /// Exchanging tokens; `framed` after a v1 handshake.
    Authenticate {
        mech: Mech,
        name: String,
        framed: bool,
    },
    Authenticated,
    /// A failure was answered; nothing more is read.
    Failed,
}

/// One connection's SASL state.
pub struct SaslSession {
    config: std::sync::Arc<SaslConfig>,
    state: State,
    /// The principal and mechanism of the last successful authentication.
    authenticated: Option<(String, String)>,
    expires_at_ms: Option<i64>,
    /// The last login was with a delegation token.
    token_authenticated: bool,
}

/// Finds a user's SCRAM credential.
type Lookup<'a> = dyn Fn(&str, ScramMechanism) -> Option<ScramCredential> + 'a;
/// Finds a delegation token's login credential by token id.
type Tokens<'a> = dyn Fn(&str, ScramMechanism) -> Option<TokenCredential> + 'a;

/// A request's fixed header fields, read without trusting the frame.
struct Header {
    key: i16,
    version: i16,
    correlation_id: i32,
}

fn header(frame: &[u8]) -> Option<Header> {
    (frame.len() >= 8).then(|| Header {
        key: i16::from_be_bytes([frame[0], frame[1]]),
        version: i16::from_be_bytes([frame[2], frame[3]]),
        correlation_id: i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]),
    })
}

/// The body of a request frame whose key and version are known to be SASL's.
fn body(frame: &[u8], api: ApiKey, version: i16) -> Result<Bytes, String> {
    let mut b = Bytes::copy_from_slice(frame);
    RequestHeader::decode(&mut b, api.request_header_version(version)).map_err(|e| format!("malformed {api:?} header: {e}"))?;
    Ok(b)
}

fn response(api: ApiKey, version: i16, correlation_id: i32, msg: &impl Encodable) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.put_i32(0);
    let encoded = ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, api.response_header_version(version))
        .and_then(|_| msg.encode(&mut out, version));
    // Both messages are built field by field for `version`, which is in their range.
    encoded.expect("SASL responses encode at the versions checked on the way in");
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    out.to_vec()
}

fn raw(token: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(token.len() + 4);
    out.extend_from_slice(&(token.len() as i32).to_be_bytes());
    out.extend_from_slice(token);
    out
}

fn close(reason: impl Into<String>) -> Outcome {
    Outcome::Close { reply: None, reason: reason.into() }
}

fn api_name(key: i16) -> String {
    ApiKey::try_from(key).map_or_else(|_| format!("key {key}"), |a| format!("{a:?}"))
}

impl SaslSession {
    /// A session for a new connection.
    pub fn new(config: std::sync::Arc<SaslConfig>) -> SaslSession {
        SaslSession { config, state: State::Initial, authenticated: None, expires_at_ms: None, token_authenticated: false }
    }

    /// Did the connection log in with a delegation token?
    pub fn token_authenticated(&self) -> bool {
        self.token_authenticated
    }

    /// The authenticated principal (`User:<name>`), if any.
    pub fn principal(&self) -> Option<&str> {
        self.authenticated.as_ref().map(|(p, _)| p.as_str())
    }

    /// The largest frame to read next: `sasl.server.max.receive.size` until authenticated.
    pub fn max_frame(&self, otherwise: usize) -> usize {
        if matches!(self.state, State::Authenticated) {
            otherwise
        } else {
            self.config.max_receive_size
        }
    }

    /// Takes one frame (without its length prefix) at `now_ms`, where no delegation token exists.
    pub fn on_frame(&mut self, frame: &[u8], now_ms: i64, lookup: &Lookup<'_>) -> Outcome {
        self.on_frame_with_tokens(frame, now_ms, lookup, &|_, _| None)
    }

    /// Takes one frame at `now_ms`; SCRAM logins with `tokenauth=true` are checked against `tokens`.
    pub fn on_frame_with_tokens(&mut self, frame: &[u8], now_ms: i64, lookup: &Lookup<'_>, tokens: &Tokens<'_>) -> Outcome {
        if frame.len() > self.config.max_receive_size && !matches!(self.state, State::Authenticated) {
            self.state = State::Failed;
            return close(format!("a {}-byte frame during SASL authentication is over sasl.server.max.receive.size", frame.len()));
        }
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Failed => close("the SASL session has failed"),
            State::Authenticate { mech, name, framed: false } => self.token(mech, name, false, frame, 0, 0, now_ms, lookup, tokens),
            State::Authenticate { mech, name, framed: true } => {
                let Some(h) = header(frame) else { return close("a frame too short for a request header") };
                if h.key != ApiKey::SaslAuthenticate as i16 {
                    return close(format!("Unexpected Kafka request of type {} during SASL authentication.", api_name(h.key)));
                }
                if !(0..=2).contains(&h.version) {
                    return close(format!("SaslAuthenticate v{} is not supported", h.version));
                }
                let req = body(frame, ApiKey::SaslAuthenticate, h.version)
                    .and_then(|mut b| SaslAuthenticateRequest::decode(&mut b, h.version).map_err(|e| e.to_string()));
                match req {
                    Ok(req) => self.token(mech, name, true, &req.auth_bytes, h.version, h.correlation_id, now_ms, lookup, tokens),
                    Err(e) => close(format!("malformed SaslAuthenticate: {e}")),
                }
            }
            State::Authenticated => {
                let h = header(frame);
                if h.as_ref().is_some_and(|h| h.key == ApiKey::SaslHandshake as i16 && h.version >= 1) {
                    return self.handshake(frame, h.expect("checked"), true);
                }
                if self.expires_at_ms.is_some_and(|e| now_ms >= e) {
                    return close(
                        "the SASL session expired (connections.max.reauth.ms or the token's expiry) and the client did not re-authenticate",
                    );
                }
                self.state = State::Authenticated;
                Outcome::Pass
            }
            state @ (State::Initial | State::Handshake) => {
                let Some(h) = header(frame) else { return close("a frame too short for a request header") };
                if h.key == ApiKey::ApiVersions as i16 && matches!(state, State::Initial) {
                    self.state = State::Handshake;
                    return Outcome::Pass;
                }
                if h.key != ApiKey::SaslHandshake as i16 {
                    return close(format!("Unexpected Kafka request of type {} during SASL handshake.", api_name(h.key)));
                }
                self.handshake(frame, h, false)
            }
        }
    }

    fn handshake(&mut self, frame: &[u8], h: Header, reauth: bool) -> Outcome {
        if !(0..=1).contains(&h.version) {
            return close(format!("SaslHandshake v{} is not supported", h.version));
        }
        let req = match body(frame, ApiKey::SaslHandshake, h.version)
            .and_then(|mut b| SaslHandshakeRequest::decode(&mut b, h.version).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => return close(format!("malformed SaslHandshake: {e}")),
        };
        let name = req.mechanism.to_string();
        let enabled: Vec<StrBytes> = self.config.enabled.iter().map(|m| StrBytes::from_string(m.clone())).collect();
        let previous = self.authenticated.as_ref().map(|(_, m)| m.as_str());
        let refused = if !self.config.enabled.contains(&name) {
            Some(format!("Unsupported SASL mechanism {name}"))
        } else if reauth && previous != Some(name.as_str()) {
            Some(format!(
                "SASL mechanism '{name}' requested by client is not supported for re-authentication of mechanism '{}'",
                previous.unwrap_or("")
            ))
        } else {
            None
        };
        if let Some(reason) = refused {
            let resp = SaslHandshakeResponse::default()
                .with_error_code(Error::UnsupportedSaslMechanism(reason.clone()).code())
                .with_mechanisms(enabled);
            return Outcome::Close { reply: Some(response(ApiKey::SaslHandshake, h.version, h.correlation_id, &resp)), reason };
        }
        let mech = match ScramMechanism::from_name(&name) {
            Some(m) => Mech::Scram(Box::new(ScramServer::new(m))),
            None if name == oauth::MECHANISM => Mech::OAuth(OAuthServer::default()),
            None => Mech::Plain,
        };
        self.state = State::Authenticate { mech, name, framed: h.version >= 1 };
        Outcome::Reply(response(
            ApiKey::SaslHandshake,
            h.version,
            h.correlation_id,
            &SaslHandshakeResponse::default().with_mechanisms(enabled),
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn token(
        &mut self,
        mut mech: Mech,
        name: String,
        framed: bool,
        token: &[u8],
        version: i16,
        correlation_id: i32,
        now_ms: i64,
        lookup: &Lookup<'_>,
        tokens: &Tokens<'_>,
    ) -> Outcome {
        let reauth = self.authenticated.is_some();
        // When the credential itself expires (an OAUTHBEARER token's exp), in ms since the epoch.
        let mut credential_expires = None;
        let step = match &mut mech {
            Mech::Plain => plain::authenticate(&self.config.plain, token)
                .map(|user| Step::Done { response: Vec::new(), user })
                .map_err(Failure::Rejected),
            Mech::Scram(s) => s.step_with_tokens(token, lookup, tokens, &scram::nonce),
            Mech::OAuth(o) => match &self.config.oauth {
                Some(v) => o.step(token, v, now_ms).map(|(step, expires)| {
                    credential_expires = expires;
                    step
                }),
                None => Err(Failure::Invalid("OAUTHBEARER has no validator on this listener".into())),
            },
        };
        let step = step.and_then(|s| match (&s, &self.authenticated) {
            (Step::Done { user, .. }, Some((before, _))) if *before != format!("User:{user}") => {
                Err(Failure::Rejected(format!("Cannot change principals during re-authentication from {before}: User:{user}")))
            }
            _ => Ok(s),
        });
        let frame_for = |bytes: Vec<u8>, lifetime: i64| {
            if framed {
                let resp = SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(bytes));
                let resp = if version >= 1 { resp.with_session_lifetime_ms(lifetime) } else { resp };
                response(ApiKey::SaslAuthenticate, version, correlation_id, &resp)
            } else {
                raw(&bytes)
            }
        };
        match step {
            Ok(Step::Continue(bytes)) => {
                self.state = State::Authenticate { mech, name, framed };
                Outcome::Reply(frame_for(bytes, 0))
            }
            Ok(Step::Done { response: bytes, user }) => {
                // Kafka's rule: the session lasts connections.max.reauth.ms, or until the
                // credential expires if that is sooner; with neither it never expires.
                let reauth_ms = self.config.reauth_ms;
                let by_reauth = (reauth_ms > 0).then(|| now_ms.saturating_add(reauth_ms));
                // KIP-368: a session ends with its credential (an OAUTHBEARER token's exp, a
                // delegation token's expiry), or after connections.max.reauth.ms if sooner.
                let token_expiry = match &mech {
                    Mech::Scram(s) => s.token_expiry(),
                    Mech::Plain | Mech::OAuth(_) => None,
                };
                let credential_end = match (credential_expires, token_expiry) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.expires_at_ms = match (by_reauth, credential_end) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.token_authenticated = token_expiry.is_some();
                let lifetime = self.expires_at_ms.map_or(0, |e| e.saturating_sub(now_ms).max(0));
                let principal = format!("User:{user}");
                self.authenticated = Some((principal.clone(), name));
                self.state = State::Authenticated;
                Outcome::Authenticated { reply: frame_for(bytes, lifetime), principal, expires_at_ms: self.expires_at_ms }
            }
            Err(f) => {
                // The client hears Kafka's words; the log keeps what was actually wrong.
                let (message, reason) = match f {
                    Failure::Rejected(m) => (m.clone(), m),
                    Failure::Refused { message, detail } => (message, detail),
                    Failure::Invalid(detail) => (
                        format!(
                            "Authentication failed during {} due to invalid credentials with SASL mechanism {name}",
                            if reauth { "re-authentication" } else { "authentication" }
                        ),
                        detail,
                    ),
                };
                // With raw v0 tokens there is no way to say why: the connection just closes.
                let reply = framed.then(|| {
                    let resp = SaslAuthenticateResponse::default()
                        .with_error_code(Error::SaslAuthenticationFailed(message.clone()).code())
                        .with_error_message(Some(StrBytes::from_string(message)));
                    response(ApiKey::SaslAuthenticate, version, correlation_id, &resp)
                });
                Outcome::Close { reply, reason }
            }
        }
    }
}
