//! One connection to one broker: dialed within the connect timeout, ApiVersions first,
//! then the SASL login if the listener wants one; every request bounded by the request
//! timeout, at the highest version both sides know.

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::props::Settings;
use super::CliError;
use crate::auth::client::{ClientSession, Next};
use crate::auth::scram;
use crate::transport::Stream;

/// The largest response taken: a fetch answers at most its max_bytes (50 MiB here).
const MAX_RESPONSE: i32 = 100 << 20;
/// ApiVersions v3: flexible, and carries the client's name.
const API_VERSIONS_VERSION: i16 = 3;
/// Kafka's code for a version the broker does not know.
const UNSUPPORTED_VERSION: i16 = 35;

/// A connection, ready for requests.
pub struct Conn {
    stream: Stream,
    /// Per API key, the broker's (min, max).
    versions: HashMap<i16, (i16, i16)>,
    correlation: i32,
    /// HOST:PORT, for messages.
    pub addr: String,
    settings: Settings,
}

fn encode_request<R: Request>(req: &R, version: i16, correlation: i32, client_id: &str) -> Result<Vec<u8>, CliError> {
    let key = ApiKey::try_from(R::KEY).map_err(|_| CliError::Protocol(format!("unknown API key {}", R::KEY)))?;
    let mut out = BytesMut::new();
    out.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())))
        .encode(&mut out, key.request_header_version(version))
        .and_then(|_| req.encode(&mut out, version))
        .map_err(|e| CliError::Protocol(format!("cannot encode {key:?} v{version}: {e}")))?;
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(out.to_vec())
}

impl Conn {
    /// Dials `addr` and gets it ready: ApiVersions, then SASL when configured.
    pub async fn open(addr: &str, settings: &Settings) -> Result<Conn, CliError> {
        let stream = tokio::time::timeout(settings.connect_timeout, settings.dialer.connect(addr))
            .await
            .map_err(|_| CliError::Timeout(format!("cannot connect to {addr}: no answer within {:?}", settings.connect_timeout)))?
            .map_err(|e| CliError::Io(format!("cannot connect to {addr}: {e}")))?;
        let mut c = Conn { stream, versions: HashMap::new(), correlation: 100, addr: addr.to_string(), settings: settings.clone() };
        c.api_versions().await?;
        if let Some(login) = settings.login.clone() {
            c.log_in(&login).await?;
        }
        Ok(c)
    }

    async fn api_versions(&mut self) -> Result<(), CliError> {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("sluice-cli"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let frame = encode_request(&req, API_VERSIONS_VERSION, self.next_correlation(), &self.settings.client_id.clone())?;
        let mut body = self.round_trip(&frame, "ApiVersions").await?;
        // The response header is always v0 here, so an older broker can answer in v0.
        ResponseHeader::decode(&mut body, 0).map_err(|e| CliError::Protocol(format!("{}: malformed ApiVersions: {e}", self.addr)))?;
        let code = if body.len() >= 2 { i16::from_be_bytes([body[0], body[1]]) } else { -1 };
        let version = if code == UNSUPPORTED_VERSION { 0 } else { API_VERSIONS_VERSION };
        let r = ApiVersionsResponse::decode(&mut body, version)
            .map_err(|e| CliError::Protocol(format!("{}: malformed ApiVersions response: {e}", self.addr)))?;
        if r.error_code != 0 && r.error_code != UNSUPPORTED_VERSION {
            CliError::check(r.error_code, || format!("ApiVersions to {}", self.addr), None)?;
        }
        self.versions = r.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect();
        Ok(())
    }

    async fn log_in(&mut self, login: &crate::auth::client::Login) -> Result<(), CliError> {
        let client_id = self.settings.client_id.clone();
        let (mut session, mut frame) = ClientSession::start(login, &client_id, &scram::nonce());
        loop {
            let body = self.round_trip_raw(&frame, "SASL login").await?;
            match session.on_response(&body) {
                Ok(Next::Send(f)) => frame = f,
                Ok(Next::Authenticated { .. }) => return Ok(()),
                // Kafka's SASL_AUTHENTICATION_FAILED (58): the tool's answer to a refused login.
                Err(why) => {
                    return Err(CliError::Kafka {
                        code: 58,
                        context: format!("login to {} as {} ({})", self.addr, login.username, login.mechanism),
                        message: Some(why),
                    })
                }
            }
        }
    }

    fn next_correlation(&mut self) -> i32 {
        self.correlation = self.correlation.wrapping_add(1);
        self.correlation
    }

    /// The version to send `R` at: the highest that this build, `cap` and the broker share.
    pub fn version<R: Request>(&self, cap: i16) -> Result<i16, CliError> {
        let key = ApiKey::try_from(R::KEY).map(|k| format!("{k:?}")).unwrap_or_else(|_| R::KEY.to_string());
        let (bmin, bmax) =
            *self.versions.get(&R::KEY).ok_or_else(|| CliError::Protocol(format!("broker {} does not support {key}", self.addr)))?;
        let hi = bmax.min(R::VERSIONS.max).min(cap);
        let lo = bmin.max(R::VERSIONS.min);
        if hi < lo {
            return Err(CliError::Protocol(format!(
                "broker {} serves {key} v{bmin}-{bmax}, this tool v{}-{}",
                self.addr,
                R::VERSIONS.min,
                R::VERSIONS.max.min(cap)
            )));
        }
        Ok(hi)
    }

    /// Whether the broker serves `R` at all.
    pub fn supports<R: Request>(&self) -> bool {
        self.versions.contains_key(&R::KEY)
    }

    /// Sends `req` at the best version up to `cap`; returns the response and that version.
    pub async fn send<R: Request>(&mut self, req: &R, cap: i16) -> Result<(R::Response, i16), CliError> {
        let version = self.version::<R>(cap)?;
        let key = ApiKey::try_from(R::KEY).map_err(|_| CliError::Protocol(format!("unknown API key {}", R::KEY)))?;
        let correlation = self.next_correlation();
        let frame = encode_request(req, version, correlation, &self.settings.client_id.clone())?;
        let what = format!("{key:?}");
        let mut body = self.round_trip(&frame, &what).await?;
        let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .map_err(|e| CliError::Protocol(format!("{}: malformed {what} response header: {e}", self.addr)))?;
        if header.correlation_id != correlation {
            return Err(CliError::Protocol(format!(
                "{}: {what} answered for correlation {} not {correlation}",
                self.addr, header.correlation_id
            )));
        }
        let r = <R::Response as Decodable>::decode(&mut body, version)
            .map_err(|e| CliError::Protocol(format!("{}: malformed {what} v{version} response: {e}", self.addr)))?;
        Ok((r, version))
    }

    /// Sends `req` expecting no response (Produce with acks=0).
    pub async fn send_oneway<R: Request>(&mut self, req: &R, cap: i16) -> Result<i16, CliError> {
        let version = self.version::<R>(cap)?;
        let correlation = self.next_correlation();
        let frame = encode_request(req, version, correlation, &self.settings.client_id.clone())?;
        let timeout = self.settings.request_timeout;
        let io = async {
            self.stream.write_all(&frame).await?;
            self.stream.flush().await
        };
        match tokio::time::timeout(timeout, io).await {
            Err(_) => Err(CliError::Timeout(format!("write to {}: not done within {timeout:?}", self.addr))),
            Ok(Err(e)) => Err(CliError::Io(format!("write to {}: {e}", self.addr))),
            Ok(Ok(())) => Ok(version),
        }
    }

    /// Writes a frame and reads one response frame, within the request timeout.
    async fn round_trip(&mut self, frame: &[u8], what: &str) -> Result<Bytes, CliError> {
        self.round_trip_raw(frame, what).await.map(Bytes::from)
    }

    async fn round_trip_raw(&mut self, frame: &[u8], what: &str) -> Result<Vec<u8>, CliError> {
        let timeout = self.settings.request_timeout;
        let addr = self.addr.clone();
        let io = async {
            self.stream.write_all(frame).await?;
            self.stream.flush().await?;
            let len = self.stream.read_i32().await?;
            if !(0..=MAX_RESPONSE).contains(&len) {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a {len}-byte response frame")));
            }
            let mut buf = vec![0u8; len as usize];
            self.stream.read_exact(&mut buf).await?;
            Ok(buf)
        };
        match tokio::time::timeout(timeout, io).await {
            Err(_) => Err(CliError::Timeout(format!("{what} to {addr}: no response within {timeout:?} (request.timeout.ms)"))),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(CliError::Io(format!(
                "{what} to {addr}: the broker closed the connection (wrong security.protocol, or not authorized?)"
            ))),
            Ok(Err(e)) => Err(CliError::Io(format!("{what} to {addr}: {e}"))),
            Ok(Ok(b)) => Ok(b),
        }
    }
}
