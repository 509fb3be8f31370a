//! The controller listener: Raft messages between voters and controller requests from
//! brokers, in length-prefixed frames `[u32 length][u8 kind][payload]`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use protobuf::Message as _;
use raft::eraftpb::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::rpc::{Request, Response};
use super::Controller;
use crate::error::Error;

const RAFT: u8 = 1;
const REQUEST: u8 = 2;
const RESPONSE: u8 = 3;
/// Snapshots can be large; anything beyond this is not ours.
const MAX_FRAME: usize = 256 << 20;

async fn write_frame(s: &mut TcpStream, kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(payload.len() + 5);
    buf.extend_from_slice(&(payload.len() as u32 + 1).to_be_bytes());
    buf.push(kind);
    buf.extend_from_slice(payload);
    s.write_all(&buf).await
}

async fn read_frame(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let len = s.read_u32().await? as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(std::io::Error::other(format!("bad controller frame length {len}")));
    }
    let mut buf = vec![0; len];
    s.read_exact(&mut buf).await?;
    let kind = buf.remove(0);
    Ok((kind, buf))
}

/// Serves the controller listener until `shutdown`.
pub async fn serve(listener: TcpListener, controller: Arc<Controller>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        let (mut sock, _) = tokio::select! {
            r = listener.accept() => match r { Ok(x) => x, Err(_) => continue },
            _ = shutdown.changed() => return,
        };
        let _ = sock.set_nodelay(true);
        let c = controller.clone();
        tokio::spawn(async move {
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
        });
    }
}

/// A sender of Raft messages to one peer. Messages that cannot be sent at once are dropped:
/// Raft retransmits what matters, and a dead peer must not hold up the others.
pub fn peer_sender(addr: SocketAddr) -> mpsc::Sender<Message> {
    let (tx, mut rx) = mpsc::channel::<Message>(4096);
    tokio::spawn(async move {
        let mut conn: Option<TcpStream> = None;
        let mut down_until = tokio::time::Instant::now();
        while let Some(m) = rx.recv().await {
            if conn.is_none() {
                if tokio::time::Instant::now() < down_until {
                    continue;
                }
                match tokio::time::timeout(Duration::from_millis(500), TcpStream::connect(addr)).await {
                    Ok(Ok(s)) => {
                        let _ = s.set_nodelay(true);
                        conn = Some(s);
                    }
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
pub async fn call(addr: SocketAddr, req: &Request, timeout: Duration) -> Result<Response, Error> {
    let fut = async {
        let mut s = TcpStream::connect(addr).await?;
        let _ = s.set_nodelay(true);
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
