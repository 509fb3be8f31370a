//! The controller listener: Raft messages between voters and controller requests from
//! brokers, in length-prefixed frames `[u32 length][u8 kind][payload]`, over TCP or TLS
//! as the controller listener's protocol says; on a SASL_PLAINTEXT or SASL_SSL listener
//! every connection logs in first (`super::sasl`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use protobuf::Message as _;
use raft::eraftpb::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::rpc::{Request, Response};
use super::sasl;
use super::Controller;
use crate::auth::client::Login;
use crate::auth::sasl::SaslConfig;
use crate::clock::now_ms;
use crate::error::Error;
use crate::transport::tls::ServerTls;
use crate::transport::{Dialer, Stream};

const RAFT: u8 = 1;
const REQUEST: u8 = 2;
const RESPONSE: u8 = 3;
/// A request that names its sender: its node id (4 bytes, big-endian), then the JSON. The
/// link faults of that one peer (`cut`, `delay`, `drop`) reach it, not only `isolate`.
const REQUEST_FROM: u8 = 4;
/// Snapshots can be large; anything beyond this is not ours.
const MAX_FRAME: usize = 256 << 20;

pub(super) async fn write_frame<S: AsyncWrite + Unpin>(s: &mut S, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(payload.len() + 5);
    buf.extend_from_slice(&(payload.len() as u32 + 1).to_be_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
    s.write_all(&buf).await
}

/// Reads one frame of at most `max` bytes.
pub(super) async fn read_frame<S: AsyncRead + Unpin>(s: &mut S, max: usize) -> std::io::Result<(u8, Vec<u8>)> {
    let len = s.read_u32().await? as usize;
    if len == 0 || len > max.saturating_add(1) {
        return Err(std::io::Error::other(format!("bad controller frame length {len}")));
    }
    let mut buf = vec![0; len];
    s.read_exact(&mut buf).await?;
    let kind = buf.remove(0);
    Ok((kind, buf))
}

/// Serves the controller listener until `shutdown`; with `tls`, every connection first
/// completes a TLS handshake (one that fails closes only that connection), and with
/// `sasl` it then logs in.
pub async fn serve(
    listener: TcpListener,
    controller: Arc<Controller>,
    tls: Option<Arc<ServerTls>>,
    sasl: Option<Arc<SaslConfig>>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let (sock, peer) = tokio::select! {
            r = listener.accept() => match r { Ok(x) => x, Err(_) => continue },
            _ = shutdown.changed() => return,
        };
        let _ = sock.set_nodelay(true);
        let c = controller.clone();
        let tls = tls.clone();
        let sasl = sasl.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_conn(sock, peer, c, sasl).await,
                Some(tls) => match tokio::time::timeout(Duration::from_secs(10), tls.acceptor.accept(sock)).await {
                    Ok(Ok(s)) => serve_conn(s, peer, c, sasl).await,
                    Ok(Err(e)) => tracing::info!(%peer, error = %e, "controller listener: TLS handshake failed; closing that connection"),
                    Err(_) => tracing::info!(%peer, "controller listener: no TLS handshake within 10 s; closing that connection"),
                },
            }
        });
    }
}

async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(mut sock: S, peer: SocketAddr, c: Arc<Controller>, sasl: Option<Arc<SaslConfig>>) {
    let mut expires_at_ms = None;
    if let Some(config) = sasl {
        let host = peer.ip().to_string();
        let lookup = |u: &str, m| c.login_credential(u, m);
        let may_join = |p: &str| c.may_join(p, &host);
        let login = sasl::accept(&mut sock, config, now_ms(), &lookup, &may_join);
        match tokio::time::timeout(Duration::from_secs(10), login).await {
            Ok(Ok(a)) => {
                tracing::debug!(%peer, principal = %a.principal, "controller listener: logged in");
                expires_at_ms = a.expires_at_ms;
            }
            Ok(Err(why)) => {
                tracing::error!(%peer, reason = %why, "controller listener: SASL login refused; closing that connection");
                return;
            }
            Err(_) => {
                tracing::info!(%peer, "controller listener: no SASL login within 10 s; closing that connection");
                return;
            }
        }
    }
    // Raft messages held by a `delay` fault, on their way to the quorum.
    let mut late: Option<mpsc::Sender<(Message, tokio::time::Instant)>> = None;
    while let Ok((kind, payload)) = read_frame(&mut sock, MAX_FRAME).await {
        // KIP-368 on this link: a session past its lifetime is closed; the dialer logs in
        // again on a new connection before that (see `peer_sender`; `call` dials per call).
        if expires_at_ms.is_some_and(|e| now_ms() >= e) {
            tracing::info!(%peer, "controller listener: the SASL session expired (connections.max.reauth.ms); closing that connection");
            return;
        }
        match kind {
            RAFT => match Message::parse_from_bytes(&payload) {
                Ok(m) => {
                    let link_fault = crate::fault::global().on_link(Some(super::quorum::node_id(m.from)), now_ms());
                    if link_fault.drop {
                        continue;
                    }
                    // Once one message was held, the rest follow it through the same line, in order.
                    if link_fault.delay_ms == 0 && late.is_none() {
                        c.quorum.step(m);
                    } else {
                        let due = tokio::time::Instant::now() + Duration::from_millis(link_fault.delay_ms);
                        let _ = late.get_or_insert_with(|| delay_line(c.clone())).try_send((m, due));
                    }
                }
                Err(_) => return,
            },
            REQUEST | REQUEST_FROM => {
                let (from, json) = match kind {
                    REQUEST_FROM if payload.len() >= 4 => {
                        (Some(i32::from_be_bytes(payload[..4].try_into().expect("4 bytes"))), &payload[4..])
                    }
                    REQUEST_FROM => return,
                    // A bare request does not name its sender: only `isolate` reaches it.
                    _ => (None, &payload[..]),
                };
                let link_fault = crate::fault::global().on_link(from, now_ms());
                if link_fault.drop {
                    // Closed unanswered, as a cut link would leave it.
                    return;
                }
                if link_fault.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(link_fault.delay_ms)).await;
                }
                let resp = match serde_json::from_slice::<Request>(json) {
                    Ok(req) => c.handle(req).await,
                    Err(e) => Response::Failed(Error::InvalidRequest(format!("bad controller request: {e}"))),
                };
                let bytes = serde_json::to_vec(&resp).expect("responses serialize");
                if write_frame(&mut sock, RESPONSE, &bytes).await.is_err() {
                    return;
                }
            }
            _ => return,
        }
    }
}

/// Steps each Raft message into the quorum at its due time. A `delay` fault makes a link
/// slow, not narrow: every message is late by the delay, and the messages behind it do not
/// wait for it as well (holding each in turn would make a 200 ms delay grow into seconds of
/// backlog, and the voters would see the leader come and go). Messages beyond what it
/// holds are dropped, as [`Quorum::step`](super::driver::Quorum::step) drops them.
fn delay_line(c: Arc<Controller>) -> mpsc::Sender<(Message, tokio::time::Instant)> {
    let (tx, mut rx) = mpsc::channel::<(Message, tokio::time::Instant)>(4096);
    tokio::spawn(async move {
        while let Some((m, due)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            c.quorum.step(m);
        }
    });
    tx
}

/// Dials the controller listener at `addr` and, with `login`, logs in. Returns the
/// stream and when to stop using it (before the session the controller granted ends).
async fn open(dialer: &Dialer, login: Option<&Login>, addr: &str) -> std::io::Result<(Stream, Option<tokio::time::Instant>)> {
    let mut s = dialer.connect(addr).await?;
    let Some(login) = login else { return Ok((s, None)) };
    let lifetime_ms = sasl::log_in(&mut s, login, &crate::auth::scram::nonce()).await?;
    // Kafka's clients re-authenticate at 85-95% of the lifetime; this link reconnects at 90%.
    let until = (lifetime_ms > 0).then(|| tokio::time::Instant::now() + Duration::from_millis(lifetime_ms as u64 * 9 / 10));
    Ok((s, until))
}

/// A Raft message on its way out, and when it may leave (later than now under a `delay` fault).
type Outgoing = (Message, tokio::time::Instant);

/// A sender of Raft messages to one voter, logged in as `login` on a SASL controller
/// listener. Messages that cannot be sent at once are dropped: Raft retransmits what
/// matters, and a dead peer must not hold up the others.
fn peer_sender(addr: String, dialer: Dialer, login: Option<Arc<Login>>) -> mpsc::Sender<Outgoing> {
    let (tx, mut rx) = mpsc::channel::<Outgoing>(4096);
    tokio::spawn(async move {
        let mut conn: Option<Stream> = None;
        let mut conn_until: Option<tokio::time::Instant> = None;
        let mut down_until = tokio::time::Instant::now();
        // A refused login is logged once per streak, not once per Raft message.
        let mut refused_logged = false;
        while let Some((m, due)) = rx.recv().await {
            // Each message is held until its own due time, not for a delay of its own after
            // the one before it (see `delay_line`).
            tokio::time::sleep_until(due).await;
            if conn_until.is_some_and(|t| tokio::time::Instant::now() >= t) {
                conn = None;
            }
            if conn.is_none() {
                if tokio::time::Instant::now() < down_until {
                    continue;
                }
                match tokio::time::timeout(Duration::from_secs(2), open(&dialer, login.as_deref(), &addr)).await {
                    Ok(Ok((s, until))) => {
                        conn = Some(s);
                        conn_until = until;
                        refused_logged = false;
                    }
                    Ok(Err(e)) => {
                        if e.kind() == std::io::ErrorKind::PermissionDenied {
                            if !refused_logged {
                                tracing::error!(peer = %addr, error = %e, "cannot reach a controller quorum peer");
                                refused_logged = true;
                            }
                            down_until = tokio::time::Instant::now() + Duration::from_secs(1);
                        } else {
                            down_until = tokio::time::Instant::now() + Duration::from_millis(100);
                        }
                        continue;
                    }
                    Err(_) => {
                        down_until = tokio::time::Instant::now() + Duration::from_millis(100);
                        continue;
                    }
                }
            }
            let Ok(bytes) = m.write_to_bytes() else { continue };
            let s = conn.as_mut().expect("connected above");
            if write_frame(s, RAFT, &bytes).await.is_err() {
                conn = None;
            }
        }
    });
    tx
}

/// Sends one request from node `from` to the controller listener at `addr`, logged in as
/// `login` on a SASL listener, and waits for the answer.
pub async fn call(
    dialer: &Dialer,
    login: Option<&Login>,
    addr: &str,
    from: i32,
    req: &Request,
    timeout: Duration,
) -> Result<Response, Error> {
    let fut = async {
        let (mut s, _) = open(dialer, login, addr).await.inspect_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                tracing::error!(controller = %addr, error = %e, "cannot reach the controller");
            }
        })?;
        let mut payload = from.to_be_bytes().to_vec();
        serde_json::to_writer(&mut payload, req).expect("requests serialize");
        write_frame(&mut s, REQUEST_FROM, &payload).await?;
        loop {
            let (kind, payload) = read_frame(&mut s, MAX_FRAME).await?;
            if kind == RESPONSE {
                return serde_json::from_slice::<Response>(&payload).map_err(std::io::Error::other);
            }
        }
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(Error::BrokerNotAvailable(format!("controller at {addr}: {e}"))),
        Err(_) => Err(Error::RequestTimedOut(format!("controller at {addr} did not answer"))),
    }
}

/// The links to the quorum's peers: the configured voters, and the voters and learners
/// the log added since (dialed on their first message, at the address the log gives, and
/// dialed anew when the log moves them: UpdateRaftVoter).
pub struct Peers {
    dialer: Dialer,
    login: Option<Arc<Login>>,
    /// Per raft id: the address the log gave (None: configured), and the link.
    links: parking_lot::Mutex<std::collections::HashMap<u64, (Option<String>, mpsc::Sender<Outgoing>)>>,
}

impl Peers {
    /// Links to `configured` (raft id, address) peers.
    pub fn new(dialer: Dialer, login: Option<Arc<Login>>, configured: Vec<(u64, String)>) -> Peers {
        let links = configured.into_iter().map(|(id, addr)| (id, (None, peer_sender(addr, dialer.clone(), login.clone())))).collect();
        Peers { dialer, login, links: parking_lot::Mutex::new(links) }
    }

    /// Sends `m` (best effort) to the address `lookup(m.to)` the log gives, else to the
    /// configured one. An injected link fault to that peer loses the message here or sets
    /// when it leaves.
    pub fn send(&self, m: Message, lookup: impl FnOnce(u64) -> Option<String>) {
        let link_fault = crate::fault::global().on_link(Some(super::quorum::node_id(m.to)), now_ms());
        if link_fault.drop {
            return;
        }
        let due = tokio::time::Instant::now() + Duration::from_millis(link_fault.delay_ms);
        let mut links = self.links.lock();
        let logged = lookup(m.to);
        let stale = match (links.get(&m.to), &logged) {
            (None, _) => true,
            (Some((known, _)), Some(addr)) => known.as_ref() != Some(addr),
            (Some(_), None) => false,
        };
        if stale {
            let Some(addr) = logged.clone() else { return };
            links.insert(m.to, (logged, peer_sender(addr, self.dialer.clone(), self.login.clone())));
        }
        if let Some((_, tx)) = links.get(&m.to) {
            let _ = tx.try_send((m, due));
        }
    }
}
