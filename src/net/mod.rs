//! The listener and the per-connection loop. Each connection handles one request
//! at a time, as Kafka does, except Produce requests to distinct partitions, which run
//! side by side; responses always leave in request order.

mod frames;
mod memory;
mod quotas;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api;
use crate::auth::sasl::{Outcome, SaslConfig, SaslSession};
use crate::broker::Broker;
use frames::FrameReader;
pub use quotas::ConnectionLimits;
use quotas::{Admitted, Quotas};

/// How often the accept loop looks at whether a trim of freed memory is due.
const TRIM_CHECK: Duration = Duration::from_secs(1);

/// Accepts connections within `limits` until `shutdown` turns true, then waits (a bounded
/// time) for open connections to finish the request they are on.
/// `sasl` is the listener's SASL settings when its protocol is SASL_PLAINTEXT.
pub async fn serve(
    listener: TcpListener,
    broker: Arc<Broker>,
    limits: ConnectionLimits,
    sasl: Option<Arc<SaslConfig>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let quotas = Quotas::new(limits);
    let mut conns = tokio::task::JoinSet::new();
    let mut trim_check = tokio::time::interval(TRIM_CHECK);
    trim_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // As Kafka's acceptor: at max.connections, take no connection until one closes.
            accepted = async { (quotas.wait_for_slot().await, listener.accept().await) } => match accepted {
                (slot, Ok((stream, peer))) => match quotas.admit(slot, peer.ip()) {
                    Ok(admitted) => {
                        let broker = broker.clone();
                        let shutdown = shutdown.clone();
                        let session = sasl.clone().map(SaslSession::new);
                        conns.spawn(async move {
                            if let Err(e) = connection(stream, broker, shutdown, admitted, session).await {
                                tracing::debug!(%peer, error = %e, "connection closed");
                            }
                        });
                    }
                    Err(max) => {
                        tracing::info!(%peer, "rejected connection: the address already has the configured maximum of {max} connections (max.connections.per.ip)");
                        drop(stream);
                    }
                },
                (_, Err(e)) => {
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
    drop(listener);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(5), drain).await.is_err() {
        tracing::warn!("connections still busy after 5 s; shutting down anyway");
    }
}

/// At most this many Produce requests of one connection run side by side.
const MAX_SIDE_BY_SIDE: usize = 5;

type Answer = Result<Option<Vec<api::Chunk>>, api::ConnError>;

/// Serves one connection; `_admitted` holds its place in the connection counts until it ends.
async fn connection(
    stream: TcpStream,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
    _admitted: Admitted,
    mut session: Option<SaslSession>,
) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?.ip();
    let max_frame = broker.settings().socket_request_max_bytes;
    let (rd, mut wr) = stream.into_split();
    // Reading is cancel-safe, so it can race the answers below without cutting a frame short.
    let mut frames = FrameReader::new(rd, max_frame);
    // Produce requests in flight, oldest first, with the partitions they write.
    let mut inflight: VecDeque<(api::ProduceTargets, JoinHandle<Answer>)> = VecDeque::new();
    // Who the requests are made as: anonymous until a SASL login says otherwise.
    let mut principal = api::Principal::anonymous();
    loop {
        if let Some(s) = &session {
            frames.set_max_frame(s.max_frame(max_frame));
        }
        let frame = tokio::select! {
            // Answers leave in request order, each as soon as it and those before it are done.
            done = async {
                match inflight.front_mut() {
                    Some((_, task)) => task.await,
                    None => std::future::pending().await,
                }
            } => {
                inflight.pop_front();
                if !send_answer(&mut wr, joined(done)).await? {
                    return Ok(());
                }
                continue;
            }
            f = frames.next() => match f? {
                Some(f) => f,
                None => break,
            },
            _ = shutdown.changed() => break,
        };
        if let Some(s) = session.as_mut() {
            match sasl_gate(s, &frame, &broker) {
                Outcome::Pass => {}
                Outcome::Authenticated { reply, principal: who, .. } => {
                    match api::Principal::parse(&who) {
                        Ok(p) => principal = p,
                        Err(e) => {
                            tracing::warn!(%peer, error = %e, "SASL gave a principal that does not parse; closing connection");
                            return Ok(());
                        }
                    }
                    while let Some((_, task)) = inflight.pop_front() {
                        if !send_answer(&mut wr, joined(task.await)).await? {
                            return Ok(());
                        }
                    }
                    wr.write_all(&reply).await?;
                    continue;
                }
                Outcome::Reply(reply) => {
                    // SASL answers keep their place in the order, after what is in flight.
                    while let Some((_, task)) = inflight.pop_front() {
                        if !send_answer(&mut wr, joined(task.await)).await? {
                            return Ok(());
                        }
                    }
                    wr.write_all(&reply).await?;
                    continue;
                }
                Outcome::Close { reply, reason } => {
                    tracing::info!(%peer, reason = %reason, "SASL authentication failed; closing connection");
                    while let Some((_, task)) = inflight.pop_front() {
                        if !send_answer(&mut wr, joined(task.await)).await? {
                            return Ok(());
                        }
                    }
                    if let Some(r) = reply {
                        wr.write_all(&r).await?;
                    }
                    return Ok(());
                }
            }
        }
        // A request runs once those before it are answered, as in Kafka, except a Produce
        // request writing none of the partitions that the Produce requests in flight write:
        // it starts at once, so one producer's batches for different partitions are copied
        // into the page cache on several cores. Per partition, order is kept.
        let produce = api::decode_produce(&frame);
        if !may_start_now(inflight.iter().map(|(busy, _)| busy), produce.as_ref().map(|(t, _)| t)) {
            while let Some((_, task)) = inflight.pop_front() {
                if !send_answer(&mut wr, joined(task.await)).await? {
                    return Ok(());
                }
            }
        }
        match produce {
            Some((t, req)) => {
                let broker = broker.clone();
                let principal = principal.clone();
                inflight.push_back((t, tokio::spawn(async move { api::handle_produce_as(&broker, peer, principal, req).await })));
            }
            None => {
                // Boxed: a handler's state (about 2.5 KB) would otherwise be part of every idle
                // connection's task; boxed, it exists only while a request runs.
                let answer = Box::pin(api::handle_as(&broker, peer, principal.clone(), frame)).await;
                if !send_answer(&mut wr, answer).await? {
                    return Ok(());
                }
            }
        }
    }
    // The client is gone or the broker stops: what was started is still answered.
    while let Some((_, task)) = inflight.pop_front() {
        if !send_answer(&mut wr, joined(task.await)).await? {
            break;
        }
    }
    Ok(())
}

/// Passes one frame of a connection on a SASL listener through its session, with the
/// SCRAM credentials of the current metadata image.
fn sasl_gate(session: &mut SaslSession, frame: &[u8], broker: &Broker) -> Outcome {
    let img = broker.cluster.image();
    let lookup = |user: &str, m| img.scram_credential(user, m).cloned();
    let out = session.on_frame(frame, crate::clock::now_ms(), &lookup);
    if let Outcome::Authenticated { principal, .. } = &out {
        tracing::debug!(%principal, "SASL authentication succeeded");
    }
    out
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

/// Writes an answer; false when the connection is to be closed.
async fn send_answer(wr: &mut OwnedWriteHalf, answer: Answer) -> anyhow::Result<bool> {
    match answer {
        Ok(Some(chunks)) => {
            for c in chunks {
                match c {
                    api::Chunk::Bytes(b) => wr.write_all(&b).await?,
                    api::Chunk::File(f) => send_file(wr, &f).await?,
                }
            }
            Ok(true)
        }
        Ok(None) => Ok(true),
        Err(e) => {
            tracing::info!(error = %e, "closing connection");
            Ok(false)
        }
    }
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
