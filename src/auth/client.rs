//! The client side of SASL for this node's own links to other brokers: PLAIN and
//! SCRAM-SHA-256/512 as Kafka's broker logs in with `sasl.mechanism.inter.broker.protocol`
//! and the `username`/`password` of the inter-broker listener's JAAS config. Pure state
//! machines: the dialer sends what they return and feeds them the server's answers.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use subtle::ConstantTimeEq;

use super::jaas::{self, JaasConfig};
use super::plain::PLAIN_LOGIN_MODULE;
use super::scram::{hash, hmac, salted_password, user_to_sasl_name, MIN_ITERATIONS};
use crate::auth::credential::ScramMechanism;
use crate::config::BrokerConfig;

/// Kafka's SCRAM login module class.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The most iterations this client derives a key with: a server asking for billions
/// would stall the link (Kafka's server never asks for more than 16384).
const MAX_CLIENT_ITERATIONS: i32 = 1 << 20;

/// The salted passwords this process derived last, at most [`SALTED_CACHE`] of them.
/// A node logs in afresh on every controller call (a heartbeat, a metadata poll), and
/// PBKDF2 would otherwise run each time for the same password and salt.
fn salted_cached(m: ScramMechanism, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    static CACHE: std::sync::Mutex<Vec<(Vec<u8>, Vec<u8>)>> = std::sync::Mutex::new(Vec::new());
    // Keyed by a digest of everything that goes in, so the cache holds no password.
    let mut input = Vec::with_capacity(16 + salt.len() + password.len());
    input.push(matches!(m, ScramMechanism::Sha512) as u8);
    input.extend_from_slice(&iterations.to_be_bytes());
    input.extend_from_slice(&(salt.len() as u32).to_be_bytes());
    input.extend_from_slice(salt);
    input.extend_from_slice(password.as_bytes());
    let key = hash(ScramMechanism::Sha256, &input);
    // A poisoned lock only means another login panicked mid-push: the entries are whole.
    if let Some((_, v)) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key) {
        return v.clone();
    }
    let salted = salted_password(m, password.as_bytes(), salt, iterations);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= SALTED_CACHE {
        cache.remove(0);
    }
    cache.push((key, salted.clone()));
    salted
}

/// How many salted passwords [`salted_cached`] keeps.
const SALTED_CACHE: usize = 16;

/// Who this node logs in as, and with which mechanism.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
    pub mechanism: String,
    pub username: String,
    password: String,
}

/// Passwords stay out of logs.
impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({} as {})", self.mechanism, self.username)
    }
}

impl Login {
    /// A login with a password, for tests and tools.
    pub fn new(mechanism: &str, username: &str, password: &str) -> Login {
        Login { mechanism: mechanism.to_string(), username: username.to_string(), password: password.to_string() }
    }

    /// The login of a `sasl.jaas.config` for `mechanism`: PlainLoginModule for PLAIN,
    /// ScramLoginModule for SCRAM, each with `username` and `password` options.
    pub fn from_jaas(mechanism: &str, c: &JaasConfig) -> Result<Login, String> {
        let module = if mechanism == "PLAIN" { PLAIN_LOGIN_MODULE } else { SCRAM_LOGIN_MODULE };
        if c.login_module != module {
            return Err(format!("the {mechanism} mechanism needs {module}, not {}", c.login_module));
        }
        let opt = |k: &str| c.options.get(k).filter(|v| !v.is_empty()).cloned();
        match (opt("username"), opt("password")) {
            (Some(username), Some(password)) => Ok(Login { mechanism: mechanism.to_string(), username, password }),
            _ => Err(format!("the {mechanism} login needs username=\"...\" and password=\"...\" options in its sasl.jaas.config")),
        }
    }

    /// How this node logs in to `listener`, whose protocol is SASL: the mechanism in
    /// `mechanism_key` (`sasl.mechanism.inter.broker.protocol` or
    /// `sasl.mechanism.controller.protocol`) and the credentials of
    /// `listener.name.<listener>.<mechanism>.sasl.jaas.config`, as Kafka's broker reads them.
    pub fn for_listener(cfg: &BrokerConfig, listener: &str, mechanism_key: &str) -> Result<Login, String> {
        let mechanism = cfg.get(mechanism_key).trim().to_string();
        if mechanism == "GSSAPI" {
            return Err(format!(
                "listener {listener} uses SASL and {mechanism_key} is GSSAPI (Kafka's default), which Sluice does not build: \
                 set {mechanism_key} to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
            ));
        }
        if mechanism != "PLAIN" && ScramMechanism::from_name(&mechanism).is_none() {
            return Err(format!("{mechanism_key}={mechanism} is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"));
        }
        let key = format!("listener.name.{}.{}.sasl.jaas.config", listener.to_ascii_lowercase(), mechanism.to_ascii_lowercase());
        let (text, _) =
            cfg.lookup(&key).ok_or_else(|| format!("{mechanism_key}={mechanism} needs {key} with this node's username and password"))?;
        Login::from_jaas(&mechanism, &jaas::parse(&text)?).map_err(|e| format!("{key}: {e}"))
    }

    /// A fresh exchange; `nonce` is SCRAM's client nonce (random but for the RFC vectors).
    pub fn start(&self, nonce: &str) -> SaslClient {
        match ScramMechanism::from_name(&self.mechanism) {
            Some(m) => SaslClient::Scram(ScramClient::new(m, &self.username, &self.password, nonce)),
            None => SaslClient::Plain { message: Some(format!("\0{}\0{}", self.username, self.password).into_bytes()) },
        }
    }
}

/// One exchange of the client side.
pub enum SaslClient {
    /// PLAIN: one message, and an empty answer.
    Plain {
        message: Option<Vec<u8>>,
    },
    Scram(ScramClient),
}

impl SaslClient {
    /// The first message to send.
    pub fn first(&mut self) -> Vec<u8> {
        match self {
            SaslClient::Plain { message } => message.take().unwrap_or_default(),
            SaslClient::Scram(s) => s.first(),
        }
    }

    /// Takes the server's answer to the last message: `Some(next)` to send, `None` when the
    /// exchange is over and the server proved itself (SCRAM).
    pub fn next(&mut self, challenge: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self {
            SaslClient::Plain { .. } => Ok(None),
            SaslClient::Scram(s) => s.next(challenge),
        }
    }
}

/// The client's view of one SCRAM exchange (RFC 5802): client-first, then client-final
/// with the proof, then the check of the server's signature.
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    bare: String,
    nonce: String,
    state: ClientState,
}

enum ClientState {
    First,
    ServerFirst,
    ServerFinal { server_signature: Vec<u8> },
    Done,
}

impl ScramClient {
    /// An exchange for `user` with the client nonce `nonce`.
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str, nonce: &str) -> ScramClient {
        let bare = format!("n={},r={nonce}", user_to_sasl_name(user));
        ScramClient { mechanism, password: password.to_string(), bare, nonce: nonce.to_string(), state: ClientState::First }
    }

    /// The client-first message (no channel binding, no authorization id).
    pub fn first(&mut self) -> Vec<u8> {
        self.state = ClientState::ServerFirst;
        format!("n,,{}", self.bare).into_bytes()
    }

    /// Takes server-first (answers client-final) or server-final (answers nothing).
    pub fn next(&mut self, input: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let msg = std::str::from_utf8(input).map_err(|_| "the server's SCRAM message is not UTF-8".to_string())?;
        match std::mem::replace(&mut self.state, ClientState::Done) {
            ClientState::First => Err("the SCRAM exchange has not started".into()),
            ClientState::Done => Err("the SCRAM exchange is already over".into()),
            ClientState::ServerFirst => {
                let mut nonce = None;
                let mut salt = None;
                let mut iterations = None;
                for part in msg.split(',') {
                    let v = part.get(2..).unwrap_or("");
                    match part.get(..2) {
                        Some("r=") => nonce = Some(v),
                        Some("s=") => salt = B64.decode(v).ok(),
                        Some("i=") => iterations = v.parse::<i32>().ok(),
                        Some("m=") => return Err("the server asked for a SCRAM extension this client does not know".into()),
                        _ => {}
                    }
                }
                let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
                    return Err(format!("malformed server-first message {msg:?}"));
                };
                if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
                    return Err("the server's nonce does not extend the client's".into());
                }
                if !(MIN_ITERATIONS..=MAX_CLIENT_ITERATIONS).contains(&iterations) {
                    return Err(format!("the server asked for {iterations} iterations"));
                }
                let m = self.mechanism;
                let salted = salted_cached(m, &self.password, &salt, iterations as u32);
                let client_key = hmac(m, &salted, b"Client Key");
                let stored_key = hash(m, &client_key);
                let without_proof = format!("c=biws,r={nonce}");
                let auth_message = format!("{},{msg},{without_proof}", self.bare);
                let signature = hmac(m, &stored_key, auth_message.as_bytes());
                let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
                let server_key = hmac(m, &salted, b"Server Key");
                self.state = ClientState::ServerFinal { server_signature: hmac(m, &server_key, auth_message.as_bytes()) };
                Ok(Some(format!("{without_proof},p={}", B64.encode(proof)).into_bytes()))
            }
            ClientState::ServerFinal { server_signature } => {
                if let Some(e) = msg.strip_prefix("e=") {
                    return Err(format!("the server refused the login: {e}"));
                }
                let got = msg.strip_prefix("v=").and_then(|v| B64.decode(v.split(',').next().unwrap_or("")).ok());
                match got {
                    Some(sig) if bool::from(sig.ct_eq(&server_signature)) => Ok(None),
                    _ => Err("the server's SCRAM signature is wrong: it does not know this user's credential".into()),
                }
            }
        }
    }
}

/// SaslHandshake v1: the tokens then travel in SaslAuthenticate requests.
const HANDSHAKE_VERSION: i16 = 1;
/// SaslAuthenticate v2 (flexible; v1+ carries the session lifetime).
const AUTHENTICATE_VERSION: i16 = 2;

/// What the link does after one response.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Send this frame (length prefix included) and read its response.
    Send(Vec<u8>),
    /// Logged in; the server ends the session after `session_lifetime_ms` (0: never),
    /// so the link must log in again before then (KIP-368).
    Authenticated { session_lifetime_ms: i64 },
}

/// One login over the wire, as Kafka's `SaslClientAuthenticator` runs it: SaslHandshake
/// v1 naming the mechanism, then the mechanism's tokens in SaslAuthenticate v2. Frames in
/// and out, no socket: the same exchange serves the first login and re-authentication.
pub struct ClientSession {
    mechanism: String,
    client: SaslClient,
    client_id: String,
    correlation: i32,
    handshaken: bool,
}

fn request(api: ApiKey, version: i16, correlation: i32, client_id: &str, body: &impl Encodable) -> Vec<u8> {
    let mut out = BytesMut::new();
    out.put_i32(0);
    let encoded = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())))
        .encode(&mut out, api.request_header_version(version))
        .and_then(|_| body.encode(&mut out, version));
    encoded.expect("SASL requests are built for the versions they are sent at");
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    out.to_vec()
}

fn decode<T: Decodable>(frame: &[u8], api: ApiKey, version: i16, correlation: i32) -> Result<T, String> {
    let mut b = Bytes::copy_from_slice(frame);
    let header =
        ResponseHeader::decode(&mut b, api.response_header_version(version)).map_err(|e| format!("malformed {api:?} response: {e}"))?;
    if header.correlation_id != correlation {
        return Err(format!("{api:?} response for correlation id {} instead of {correlation}", header.correlation_id));
    }
    T::decode(&mut b, version).map_err(|e| format!("malformed {api:?} response: {e}"))
}

impl ClientSession {
    /// A login as `login`, and the SaslHandshake frame to send first.
    pub fn start(login: &Login, client_id: &str, nonce: &str) -> (ClientSession, Vec<u8>) {
        let s = ClientSession {
            mechanism: login.mechanism.clone(),
            client: login.start(nonce),
            client_id: client_id.to_string(),
            correlation: 1,
            handshaken: false,
        };
        let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(login.mechanism.clone()));
        let frame = request(ApiKey::SaslHandshake, HANDSHAKE_VERSION, s.correlation, client_id, &req);
        (s, frame)
    }

    fn authenticate(&mut self, token: Vec<u8>) -> Next {
        self.correlation += 1;
        let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        Next::Send(request(ApiKey::SaslAuthenticate, AUTHENTICATE_VERSION, self.correlation, &self.client_id, &req))
    }

    /// Takes the response (without its length prefix) to the last frame sent.
    pub fn on_response(&mut self, frame: &[u8]) -> Result<Next, String> {
        if !self.handshaken {
            let r: SaslHandshakeResponse = decode(frame, ApiKey::SaslHandshake, HANDSHAKE_VERSION, self.correlation)?;
            if r.error_code != 0 {
                let offered: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
                return Err(format!(
                    "the listener does not enable SASL mechanism {} (error {}; it offers {})",
                    self.mechanism,
                    r.error_code,
                    offered.join(", ")
                ));
            }
            self.handshaken = true;
            let first = self.client.first();
            return Ok(self.authenticate(first));
        }
        let r: SaslAuthenticateResponse = decode(frame, ApiKey::SaslAuthenticate, AUTHENTICATE_VERSION, self.correlation)?;
        if r.error_code != 0 {
            let why = r.error_message.as_ref().map_or_else(|| "no message".to_string(), |m| m.to_string());
            return Err(format!("the server refused the login (error {}): {why}", r.error_code));
        }
        match self.client.next(&r.auth_bytes)? {
            Some(token) => Ok(self.authenticate(token)),
            None => Ok(Next::Authenticated { session_lifetime_ms: r.session_lifetime_ms }),
        }
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
