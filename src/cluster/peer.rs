//! Requests from this broker to another one: transaction markers and transaction
//! verification. One connection per peer, reused; requests to a peer go one at a time,
//! on the inter-broker listener (TLS when it is SSL, logged in when it is SASL).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Mutex;

use super::login::{is_login_failure, Link};
use super::Links;
use crate::error::{Error, Result};

/// Largest response accepted from a peer.
const MAX_RESPONSE: i32 = 64 << 20;

/// Connections to the other brokers of the cluster.
#[derive(Default)]
pub struct Peers {
    conns: parking_lot::Mutex<HashMap<String, Arc<Mutex<Conn>>>>,
    links: Links,
}

#[derive(Default)]
struct Conn {
    sock: Option<Link>,
    correlation: i32,
}

impl Peers {
    /// Connections made on the inter-broker listener of `links`.
    pub fn new(links: Links) -> Peers {
        Peers { conns: Default::default(), links }
    }

    /// Sends `req` at `version` to broker `to` at `addr` and waits up to `timeout` for the answer.
    pub async fn call<R: Request>(&self, to: i32, addr: &str, me: i32, version: i16, req: &R, timeout: Duration) -> Result<R::Response> {
        // An injected fault on the link to `to` loses the request (the caller sees the
        // broker unreachable, as with a cut cable) or holds it first.
        let link_fault = crate::fault::global().on_link(Some(to), crate::clock::now_ms());
        if link_fault.drop {
            return Err(Error::BrokerNotAvailable(format!("{addr}: the link is cut by an injected fault")));
        }
        if link_fault.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(link_fault.delay_ms).min(timeout)).await;
        }
        let conn = self.conns.lock().entry(addr.to_string()).or_default().clone();
        let mut conn = conn.lock().await;
        let r = tokio::time::timeout(timeout, exchange(&self.links, &mut conn, addr, me, version, req)).await;
        match r {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => {
                if e.downcast_ref::<std::io::Error>().is_some_and(is_login_failure) {
                    tracing::error!(peer = addr, error = %e, "cannot log in to the other broker; check this broker's inter-broker credentials");
                }
                conn.sock = None;
                Err(Error::BrokerNotAvailable(format!("{addr}: {e}")))
            }
            Err(_) => {
                conn.sock = None;
                Err(Error::RequestTimedOut(format!("no answer from {addr} within {timeout:?}")))
            }
        }
    }
}

async fn exchange<R: Request>(links: &Links, conn: &mut Conn, addr: &str, me: i32, version: i16, req: &R) -> anyhow::Result<R::Response> {
    if conn.sock.is_none() {
        conn.sock = Some(links.open_inter_broker(addr, &format!("sluice-broker-{me}")).await?);
    }
    conn.sock.as_mut().expect("connected").refresh(addr).await?;
    conn.correlation = conn.correlation.wrapping_add(1);
    let correlation = conn.correlation;
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_string(format!("sluice-broker-{me}"))))
        .encode(&mut body, R::header_version(version))?;
    req.encode(&mut body, version)?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    let sock = &mut conn.sock.as_mut().expect("connected").stream;
    sock.write_all(&frame).await?;
    let len = sock.read_i32().await?;
    anyhow::ensure!((0..=MAX_RESPONSE).contains(&len), "bad response length {len}");
    let mut buf = vec![0u8; len as usize];
    sock.read_exact(&mut buf).await?;
    let mut b = bytes::Bytes::from(buf);
    let header = ResponseHeader::decode(&mut b, R::Response::header_version(version))?;
    anyhow::ensure!(header.correlation_id == correlation, "response out of order");
    let resp = R::Response::decode(&mut b, version)?;
    anyhow::ensure!(!b.has_remaining(), "trailing bytes in response");
    Ok(resp)
}
