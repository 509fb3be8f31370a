//! The controller listener: Raft messages between voters and controller requests from
//! brokers, in length-prefixed frames `[u32 length][u8 kind][payload]`, over TCP or TLS
//! as the controller listener's protocol says.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use protobuf::Message as _;
use raft::eraftpb::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::rpc::{Request, Response};
use super::Controller;
use crate::error::Error;
use crate::transport::tls::ServerTls;
use crate::transport::{Dialer, Stream};

const RAFT: u8 = 1;
const REQUEST: u8 = 2;
const RESPONSE: u8 = 3;
/// Snapshots can be large; anything beyond this is not ours.
const MAX_FRAME: usize = 256 << 20;

async fn write_frame<S: AsyncWrite + Unpin>(s: &mut S, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(payload.len() + 5);
    buf.extend_from_slice(&(payload.len() as u32 + 1).to_be_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
    s.write_all(&buf).await
}

async fn read_frame<S: AsyncRead + Unpin>(s: &mut S) -> std::io::Result<(u8, Vec<u8>)> {
    let len = s.read_u32().await? as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(std::io::Error::other(format!("bad controller frame length {len}")));
    }
    let mut buf = vec![0; len];
    s.read_exact(&mut buf).await?;
    let kind = buf.remove(0);
    Ok((kind, buf))
}

/// Serves the controller listener until `shutdown`; with `tls`, every connection first
/// completes a TLS handshake (one that fails closes only that connection).
pub async fn serve(
    listener: TcpListener,
    controller: Arc<Controller>,
    tls: Option<Arc<ServerTls>>,
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
        tokio::spawn(async move {
            match tls {
                None => serve_conn(sock, c).await,
                Some(tls) => match tokio::time::timeout(Duration::from_secs(10), tls.acceptor.accept(sock)).await {
                    Ok(Ok(s)) => serve_conn(s, c).await,
                    Ok(Err(e)) => tracing::info!(%peer, error = %e, "controller listener: TLS handshake failed; closing that connection"),
                    Err(_) => tracing::info!(%peer, "controller listener: no TLS handshake within 10 s; closing that connection"),
                },
            }
        });
    }
}

async fn serve_conn<S: AsyncRead + AsyncWrite + Unpin>(mut sock: S, c: Arc<Controller>) {
    while let Ok((kind, payload)) = read_frame(&mut sock).await {
        match kind {
            RAFT => match Message::parse_from_bytes(&payload) {
                Ok(m) => c.quorum.step(m),
                Err(_) => return,
            },
            REQUEST => {
                let resp = match serde_json::from_slice::<Request>(&payload) {
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

/// A sender of Raft messages to one peer. Messages that cannot be sent at once are dropped:
/// Raft retransmits what matters, and a dead peer must not hold up the others.
pub fn peer_sender(addr: SocketAddr, dialer: Dialer) -> mpsc::Sender<Message> {
    let (tx, mut rx) = mpsc::channel::<Message>(4096);
    tokio::spawn(async move {
        let mut conn: Option<Stream> = None;
        let addr = addr.to_string();
        let mut down_until = tokio::time::Instant::now();
        while let Some(m) = rx.recv().await {
            if conn.is_none() {
                if tokio::time::Instant::now() < down_until {
                    continue;
                }
                match tokio::time::timeout(Duration::from_millis(500), dialer.connect(&addr)).await {
                    Ok(Ok(s)) => conn = Some(s),
                    _ => {
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

/// Sends one request to the controller listener at `addr` and waits for the answer.
pub async fn call(dialer: &Dialer, addr: SocketAddr, req: &Request, timeout: Duration) -> Result<Response, Error> {
    let fut = async {
        let mut s = dialer.connect(&addr.to_string()).await?;
        write_frame(&mut s, REQUEST, &serde_json::to_vec(req).expect("requests serialize")).await?;
        loop {
            let (kind, payload) = read_frame(&mut s).await?;
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
