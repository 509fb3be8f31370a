//! The listeners and the per-connection loop. Each connection handles one request
//! at a time, as Kafka does, except Produce requests to distinct partitions, which run
//! side by side; responses always leave in request order.
//!
//! Plain listeners send records from segment files with `sendfile`; on TLS listeners the
//! connection loop is the same code over a TLS stream, and file ranges are read and then
//! written through TLS (the kernel cannot encrypt what it sends from the page cache
//! without kTLS).

mod faults;
mod frames;
mod injected;
pub mod jwks;
mod memory;
mod quotas;
mod sockopt;

use std::collections::VecDeque;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api;
use crate::auth::sasl::{Outcome, SaslConfig, SaslSession};
use crate::broker::Broker;
use crate::transport::principal;
use crate::transport::tls::ServerTls;
use frames::{FrameReader, Source, Streamed};
pub use quotas::ConnectionLimits;
use quotas::{Admitted, Quotas};

/// How often the accept loop looks at whether a trim of freed memory is due.
const TRIM_CHECK: Duration = Duration::from_secs(1);

/// How long a client may take over its TLS handshake before its connection is closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One listener's socket, what its connections are, and its TLS server side if SSL.
pub struct Listening {
    pub socket: TcpListener,
    /// Copied into every connection; the principal is replaced once a client authenticates.
    pub session: Arc<api::Session>,
    pub tls: Option<Arc<ServerTls>>,
    /// The SASL settings of a SASL_PLAINTEXT or SASL_SSL listener: its connections log in
    /// before anything but ApiVersions.
    pub sasl: Option<Arc<SaslConfig>>,
}

/// The next connection on any of the listeners, with the listener's index.
fn accept_any(listeners: &[Listening]) -> impl Future<Output = (usize, std::io::Result<(TcpStream, std::net::SocketAddr)>)> + '_ {
    std::future::poll_fn(move |cx| {
        for (i, l) in listeners.iter().enumerate() {
            if let Poll::Ready(r) = l.socket.poll_accept(cx) {
                return Poll::Ready((i, r));
            }
        }
        Poll::Pending
    })
}

/// Accepts connections on every listener within `limits` (counted across all of them)
/// until `shutdown` turns true, then waits (a bounded time) for open connections to finish
/// the request they are on.
pub async fn serve(listeners: Vec<Listening>, broker: Arc<Broker>, limits: ConnectionLimits, mut shutdown: watch::Receiver<bool>) {
    let quotas = Quotas::new(limits);
    // Looked up once: a connection only adds to and takes from its listener's gauge.
    let open_gauges: Vec<_> = listeners.iter().map(|l| crate::stats::connections(&l.session.listener)).collect();
    let mut conns = tokio::task::JoinSet::new();
    let mut trim_check = tokio::time::interval(TRIM_CHECK);
    trim_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // As Kafka's acceptor: at max.connections, take no connection until one closes.
            accepted = async { (quotas.wait_for_slot().await, accept_any(&listeners).await) } => match accepted {
                (slot, (i, Ok((stream, peer)))) => match quotas.admit(slot, peer.ip()) {
                    Ok(admitted) => match broker.record_connection(peer.ip()) {
                        0 => {
                            let broker = broker.clone();
                            let shutdown = shutdown.clone();
                            let session = listeners[i].session.clone();
                            // Boxed: an idle plain connection's task holds only the pointer's room.
                            let sasl = listeners[i].sasl.clone().map(|c| Box::new(SaslSession::new(c)));
                            let s = broker.settings();
                            sockopt::size_buffers(&stream, s.socket_send_buffer_bytes, s.socket_receive_buffer_bytes);
                            let open = crate::stats::Open::new(&open_gauges[i]);
                            match listeners[i].tls.clone() {
                                // No wrapper future around `connection`: a nested async fn keeps its
                                // arguments beside the inner future, and idle plain connections are
                                // counted in bytes.
                                None => conns.spawn(async move {
                                    let _open = open;
                                    let r = match plain(stream) {
                                        Ok((rd, wr, ip)) => connection(rd, wr, ip, session, broker, shutdown, admitted, sasl).await,
                                        Err(e) => Err(e.into()),
                                    };
                                    if let Err(e) = r {
                                        tracing::debug!(%peer, error = %e, "connection closed");
                                    }
                                }),
                                // Boxed: only TLS connections carry the TLS state in their task.
                                Some(tls) => conns.spawn(async move {
                                    let _open = open;
                                    if let Err(e) = Box::pin(secured(stream, tls, session, broker, shutdown, admitted, sasl)).await {
                                        tracing::debug!(%peer, error = %e, "connection closed");
                                    }
                                }),
                            };
                        }
                        // Over the address's connection_creation_rate: as Kafka, the connection is
                        // closed unserved once the throttle time has passed, so that the client
                        // does not come straight back (KIP-612).
                        hold => {
                            tracing::debug!(%peer, hold_ms = hold, "connection over connection_creation_rate; closing it after the throttle");
                            // Not counted as open meanwhile, as in Kafka.
                            drop(admitted);
                            conns.spawn(async move {
                                tokio::time::sleep(Duration::from_millis(hold as u64)).await;
                                drop(stream);
                            });
                        }
                    },
                    Err(max) => {
                        tracing::info!(%peer, "rejected connection: the address already has the configured maximum of {max} connections (max.connections.per.ip)");
                        drop(stream);
                    }
                },
                (_, (_, Err(e))) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                if let Err(e) = done {
                    if e.is_panic() {
                        tracing::error!(error = %e, "a connection task panicked; only that connection was closed");
                    }
                }
            }
            _ = trim_check.tick() => {
                let (peak, open) = quotas.take_peak();
                if memory::worth_trimming(peak, open) {
                    tracing::debug!(peak, open, "connections closed; returning free memory to the system");
                    tokio::task::spawn_blocking(memory::release_free_memory);
                }
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listeners);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(5), drain).await.is_err() {
        tracing::warn!("connections still busy after 5 s; shutting down anyway");
    }
}

/// At most this many Produce requests of one connection run side by side.
const MAX_SIDE_BY_SIDE: usize = 5;

type Answer = Result<api::Reply, api::ConnError>;

/// A Produce request running: the partitions it writes, when its frame was read, its task.
type InFlight = (api::ProduceTargets, Instant, JoinHandle<Answer>);

/// Counts a request of API `key` answered, `started` being when its frame was read.
fn answered(key: i16, started: Instant) {
    if let Some(a) = crate::stats::api(key) {
        a.answered(started.elapsed());
    }
}

/// The API key of a request frame (-1 if it has none).
fn key_of(frame: &[u8]) -> i16 {
    frame.get(..2).map_or(-1, |k| i16::from_be_bytes([k[0], k[1]]))
}

const PRODUCE_KEY: i16 = kafka_protocol::messages::ApiKey::Produce as i16;

/// A plain TCP connection's halves and peer address.
fn plain(stream: TcpStream) -> std::io::Result<(tokio::net::tcp::OwnedReadHalf, OwnedWriteHalf, IpAddr)> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?.ip();
    let (rd, wr) = stream.into_split();
    Ok((rd, wr, peer))
}

/// Serves one TLS connection: the handshake (a failed one closes only this connection),
/// the principal of the client certificate, then the same loop as a plain connection.
async fn secured(
    stream: TcpStream,
    tls: Arc<ServerTls>,
    session: Arc<api::Session>,
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
    admitted: Admitted,
    sasl: Option<Box<SaslSession>>,
) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?.ip();
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::info!(%peer, listener = %session.listener, error = %e, "TLS handshake failed; closing that connection");
            return Ok(());
        }
        Err(_) => {
            tracing::info!(%peer, listener = %session.listener, "no TLS handshake within {HANDSHAKE_TIMEOUT:?}; closing that connection");
            return Ok(());
        }
    };
    let session = match stream.get_ref().1.peer_certificates().and_then(|c| c.first()) {
        None => session,
        Some(cert) => {
            let Some(dn) = principal::subject_dn(cert) else {
                tracing::info!(%peer, "the client certificate's subject does not parse; closing that connection");
                return Ok(());
            };
            let Some(name) = tls.mapper.map(&dn) else {
                tracing::info!(%peer, %dn, "no rule of ssl.principal.mapping.rules applies to the client certificate; closing that connection");
                return Ok(());
            };
            tracing::debug!(%peer, listener = %session.listener, principal = %format!("User:{name}"), "TLS client certificate accepted");
            Arc::new(api::Session { principal: format!("User:{name}").into(), ..(*session).clone() })
        }
    };
    let (rd, wr) = tokio::io::split(stream);
    connection(Streamed(rd), wr, peer, session, broker, shutdown, admitted, sasl).await
}

/// Serves one connection's requests; `_admitted` holds its place in the connection counts
/// until it ends.
async fn connection<R: Source, W: Sink>(
    rd: R,
    mut wr: W,
    peer: IpAddr,
    mut session: Arc<api::Session>,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
    _admitted: Admitted,
    mut sasl: Option<Box<SaslSession>>,
) -> anyhow::Result<()> {
    let max_frame = broker.settings().socket_request_max_bytes;
    // Reading is cancel-safe, so it can race the answers below without cutting a frame short.
    let mut frames = FrameReader::new(rd, max_frame);
    // Produce requests in flight, oldest first, with the partitions they write.
    let mut inflight: VecDeque<InFlight> = VecDeque::new();
    // Until when the client is throttled: no request is read from it (KIP-219's muting).
    let mut muted = Muted::default();
    loop {
        if let Some(s) = &sasl {
            frames.set_max_frame(s.max_frame(max_frame));
        }
        let frame = tokio::select! {
            // Answers leave in request order, each as soon as it and those before it are done.
            done = async {
                match inflight.front_mut() {
                    Some((_, _, task)) => task.await,
                    None => std::future::pending().await,
                }
            } => {
                let started = inflight.pop_front().map(|(_, t, _)| t);
                let sent = send_answer(&mut wr, joined(done), &mut muted).await?;
                answered(PRODUCE_KEY, started.unwrap_or_else(Instant::now));
                if !sent {
                    return Ok(());
                }
                continue;
            }
            f = muted.then(frames.next()) => match f? {
                Some(f) => f,
                None => break,
            },
            _ = shutdown.changed() => break,
        };
        let started = Instant::now();
        if let Some(s) = sasl.as_mut() {
            // Boxed, as the handlers are: the login's state is no part of an idle connection.
            match Box::pin(sasl_turn(s, &frame, &broker, &mut session, &mut inflight, &mut wr, peer, &mut muted)).await? {
                Turn::Pass => {}
                Turn::Answered => continue,
                Turn::Close => return Ok(()),
            }
        }
        let key = key_of(&frame);
        if let Some(sw) = api::client_software(&frame) {
            // Per connection: the listener's shared session gets a copy of its own.
            session = Arc::new(api::Session { client_software: Some(sw), ..(*session).clone() });
        }
        match faults::consult(&frame, key).await {
            faults::Verdict::Serve => {}
            faults::Verdict::Close => {
                drain(&mut inflight, &mut wr, &mut muted).await?;
                return Ok(());
            }
            faults::Verdict::Answer(a) => {
                if !drain(&mut inflight, &mut wr, &mut muted).await? {
                    return Ok(());
                }
                let sent = send_answer(&mut wr, Ok(api::Reply::now(a)), &mut muted).await?;
                answered(key, started);
                if !sent {
                    return Ok(());
                }
                continue;
            }
        }
        // A request runs once those before it are answered, as in Kafka, except a Produce
        // request writing none of the partitions that the Produce requests in flight write:
        // it starts at once, so one producer's batches for different partitions are copied
        // into the page cache on several cores. Per partition, order is kept.
        let produce = api::decode_produce(&frame);
        if !may_start_now(inflight.iter().map(|(busy, _, _)| busy), produce.as_ref().map(|(t, _)| t)) {
            if !drain(&mut inflight, &mut wr, &mut muted).await? {
                return Ok(());
            }
        }
        match produce {
            Some((t, req)) => {
                let broker = broker.clone();
                let session = session.clone();
                inflight.push_back((t, started, tokio::spawn(async move { api::handle_produce(&broker, &session, peer, req).await })));
            }
            None => {
                // Boxed: a handler's state (about 2.5 KB) would otherwise be part of every idle
                // connection's task; boxed, it exists only while a request runs.
                let from_peer = faults::peer_of(&frame);
                let answer = Box::pin(api::handle(&broker, &session, peer, frame)).await;
                if faults::cut_meanwhile(from_peer) {
                    return Ok(());
                }
                let sent = send_answer(&mut wr, answer, &mut muted).await?;
                answered(key, started);
                if !sent {
                    return Ok(());
                }
            }
        }
    }
    // The client is gone or the broker stops: what was started is still answered.
    drain(&mut inflight, &mut wr, &mut muted).await?;
    Ok(())
}

/// Until when a connection reads no request: a client over its quota is muted for the
/// throttle time once its response is out (KIP-219), as Kafka mutes its channel.
#[derive(Default, Clone, Copy)]
struct Muted(Option<tokio::time::Instant>);

impl Muted {
    /// Extends the mute to `ms` from now.
    fn extend(&mut self, ms: i32) {
        if ms > 0 {
            let until = tokio::time::Instant::now() + Duration::from_millis(ms as u64);
            self.0 = Some(self.0.map_or(until, |t| t.max(until)));
        }
    }

    /// `read`, once the mute is over. Cancel-safe if `read` is: the wait holds no data.
    async fn then<T>(self, read: impl Future<Output = T>) -> T {
        if let Some(t) = self.0 {
            tokio::time::sleep_until(t).await;
        }
        read.await
    }
}

/// Answers every Produce request in flight, in order; false when the connection is to close.
async fn drain<W: Sink>(inflight: &mut VecDeque<InFlight>, wr: &mut W, muted: &mut Muted) -> anyhow::Result<bool> {
    while let Some((_, started, task)) = inflight.pop_front() {
        let sent = send_answer(wr, joined(task.await), muted).await?;
        answered(PRODUCE_KEY, started);
        if !sent {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What a frame on a SASL listener came to.
enum Turn {
    /// An ordinary request of an authenticated connection (or ApiVersions): serve it.
    Pass,
    /// A SASL request, answered.
    Answered,
    /// The login failed or was out of order: the connection ends.
    Close,
}

/// Runs one frame through the connection's SASL session. Its answer keeps its place in the
/// order, after the Produce requests in flight; a login sets the connection's principal.
async fn sasl_turn<W: Sink>(
    sasl: &mut SaslSession,
    frame: &[u8],
    broker: &Broker,
    session: &mut Arc<api::Session>,
    inflight: &mut VecDeque<InFlight>,
    wr: &mut W,
    peer: IpAddr,
    muted: &mut Muted,
) -> anyhow::Result<Turn> {
    let (reply, close) = match sasl_gate(sasl, frame, broker) {
        Outcome::Pass => return Ok(Turn::Pass),
        Outcome::Reply(reply) => (Some(reply), false),
        Outcome::Authenticated { reply, principal, .. } => {
            tracing::debug!(%peer, listener = %session.listener, %principal, "SASL authentication succeeded");
            let token_authenticated = sasl.token_authenticated();
            *session = Arc::new(api::Session { principal: principal.into(), token_authenticated, ..(**session).clone() });
            (Some(reply), false)
        }
        Outcome::Close { reply, reason } => {
            tracing::info!(%peer, listener = %session.listener, %reason, "SASL authentication failed or out of order; closing connection");
            (reply, true)
        }
    };
    if !drain(inflight, wr, muted).await? {
        return Ok(Turn::Close);
    }
    if let Some(r) = reply {
        wr.write_all(&r).await?;
        wr.flush().await?;
    }
    Ok(if close { Turn::Close } else { Turn::Answered })
}

/// Passes one frame of a connection on a SASL listener through its session, with the
/// SCRAM credentials and the delegation tokens of the current metadata image.
fn sasl_gate(session: &mut SaslSession, frame: &[u8], broker: &Broker) -> Outcome {
    let img = broker.cluster.image();
    let settings = broker.settings();
    let now = crate::clock::now_ms();
    let lookup = |user: &str, m| img.scram_credential(user, m).cloned();
    let secret = settings.delegation_token_secret_key.as_ref().map(|k| k.0.as_str());
    let tokens = |id: &str, m| crate::auth::token::login_credential(secret, img.tokens.get(id), m, now);
    session.on_frame_with_tokens(frame, now, &lookup, &tokens)
}

/// Whether a request may start while the `busy` Produce requests run: only a Produce request
/// (`targets`) that writes none of their partitions, and at most [`MAX_SIDE_BY_SIDE`] at once.
fn may_start_now<'a>(mut busy: impl ExactSizeIterator<Item = &'a api::ProduceTargets>, targets: Option<&api::ProduceTargets>) -> bool {
    match targets {
        Some(t) => busy.len() < MAX_SIDE_BY_SIDE && busy.all(|b| b.disjoint(t)),
        None => busy.len() == 0,
    }
}

/// A request task's answer; a task that panicked answers with the connection's end.
fn joined(r: Result<Answer, tokio::task::JoinError>) -> Answer {
    r.unwrap_or_else(|e| {
        tracing::error!(error = %e, "a request task panicked; closing its connection");
        Err(api::ConnError::Malformed("the broker failed on this request".into()))
    })
}

/// Where a connection's answers go: a socket that sends file ranges itself, or a stream
/// (TLS) that file ranges are copied into.
trait Sink: AsyncWrite + Unpin + Send {
    fn send_file<'a>(&'a mut self, slice: &'a crate::log::FileSlice) -> impl Future<Output = std::io::Result<()>> + Send + 'a;
}

impl Sink for OwnedWriteHalf {
    async fn send_file<'a>(&'a mut self, slice: &'a crate::log::FileSlice) -> std::io::Result<()> {
        send_file(self, slice).await
    }
}

impl<S: tokio::io::AsyncRead + AsyncWrite + Unpin + Send> Sink for tokio::io::WriteHalf<S> {
    async fn send_file<'a>(&'a mut self, slice: &'a crate::log::FileSlice) -> std::io::Result<()> {
        copy_file(self, slice).await
    }
}

/// Bytes of a segment file read at a time for a TLS connection.
const COPY_CHUNK: usize = 64 * 1024;

/// Copies a range of a segment file into `wr` (for TLS). The reads come from the page
/// cache, where the fetch just found the records.
async fn copy_file<W: AsyncWrite + Unpin>(wr: &mut W, slice: &crate::log::FileSlice) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; slice.len.min(COPY_CHUNK)];
    let mut done = 0usize;
    while done < slice.len {
        let n = (slice.len - done).min(buf.len());
        match slice.file.read_at(&mut buf[..n], slice.pos + done as u64)? {
            0 => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "segment file shrank during a fetch")),
            got => {
                wr.write_all(&buf[..got]).await?;
                done += got;
            }
        }
    }
    Ok(())
}

/// Writes an answer and mutes the connection for its throttle; false when the connection
/// is to be closed.
async fn send_answer<W: Sink>(wr: &mut W, answer: Answer, muted: &mut Muted) -> anyhow::Result<bool> {
    let (answer, request_quota) = match answer {
        Ok(reply) if reply.delay_response => {
            // A client that predates KIP-219 gets its response once the throttle is over.
            tokio::time::sleep(Duration::from_millis(reply.throttle_ms as u64)).await;
            (Ok(reply.frame), reply.request_quota)
        }
        Ok(reply) => {
            muted.extend(reply.throttle_ms);
            (Ok(reply.frame), reply.request_quota)
        }
        Err(e) => (Err(e), None),
    };
    match answer {
        Ok(Some(chunks)) => {
            // The time spent sending counts against the client's request quota, if any.
            let (written, nanos) = api::timed(write_chunks(wr, chunks)).await;
            if let Some(q) = request_quota {
                q.record_sent(nanos);
            }
            written?;
            Ok(true)
        }
        Ok(None) => Ok(true),
        Err(e) => {
            tracing::info!(error = %e, "closing connection");
            Ok(false)
        }
    }
}

/// Writes a response's pieces; an error ends the connection.
async fn write_chunks<W: Sink>(wr: &mut W, chunks: Vec<api::Chunk>) -> std::io::Result<()> {
    for c in chunks {
        match c {
            api::Chunk::Bytes(b) => wr.write_all(&b).await?,
            api::Chunk::File(f) => wr.send_file(&f).await?,
        }
    }
    // A TLS stream holds the last records until flushed; a socket has nothing to flush.
    wr.flush().await
}

/// Sends a range of a segment file straight from the page cache to the socket.
async fn send_file(wr: &tokio::net::tcp::OwnedWriteHalf, slice: &crate::log::FileSlice) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = wr.as_ref();
    let mut off = slice.pos as libc::off_t;
    let end = off + slice.len as libc::off_t;
    while off < end {
        sock.writable().await?;
        let sent = sock.try_io(tokio::io::Interest::WRITABLE, || {
            // SAFETY: both descriptors stay open for the call (the socket is borrowed,
            // the file is held by the slice), and `off` is a valid in/out offset.
            let n = unsafe { libc::sendfile(sock.as_raw_fd(), slice.file.as_raw_fd(), &mut off, (end - off) as usize) };
            if n < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(n)
            }
        });
        match sent {
            // The file is shorter than the range: the frame can't be completed.
            Ok(0) => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "segment file shrank during a fetch")),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::ProduceTargets;

    fn writes(by_id: bool, parts: &[(&str, i32)]) -> ProduceTargets {
        ProduceTargets { by_id, partitions: parts.iter().map(|(t, p)| (t.to_string(), *p)).collect() }
    }

    #[test]
    fn produce_to_other_partitions_starts_at_once_and_nothing_else_does() {
        let busy = [writes(false, &[("a", 0)]), writes(false, &[("a", 1), ("b", 0)])];
        let ok = |t: Option<&ProduceTargets>| may_start_now(busy.iter(), t);
        assert!(ok(Some(&writes(false, &[("a", 2), ("b", 1)]))));
        assert!(!ok(Some(&writes(false, &[("a", 2), ("b", 0)]))), "b-0 is being written");
        assert!(!ok(Some(&writes(false, &[("a", 0)]))), "a-0 is being written");
        assert!(!ok(Some(&writes(true, &[("c", 0)]))), "topics named by id are not compared with names");
        assert!(!ok(None), "other requests wait for all before them");
        assert!(may_start_now([].iter(), None));
        let full: Vec<ProduceTargets> = (0..MAX_SIDE_BY_SIDE as i32).map(|p| writes(false, &[("a", p)])).collect();
        assert!(!may_start_now(full.iter(), Some(&writes(false, &[("z", 0)]))), "at most MAX_SIDE_BY_SIDE at once");
    }
}
