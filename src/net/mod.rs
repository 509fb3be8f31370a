//! The listener and the per-connection loop. Each connection handles one request
//! at a time, as Kafka does, so responses leave in request order; pipelined
//! requests wait in the socket buffer.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::api;
use crate::broker::Broker;

/// Accepts connections until `shutdown` turns true, then waits (a bounded time) for
/// open connections to finish the request they are on.
pub async fn serve(listener: TcpListener, broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let broker = broker.clone();
                    let shutdown = shutdown.clone();
                    conns.spawn(async move {
                        if let Err(e) = connection(stream, broker, shutdown).await {
                            tracing::debug!(%peer, error = %e, "connection closed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            Some(done) = conns.join_next(), if !conns.is_empty() => {
                if let Err(e) = done {
                    if e.is_panic() {
                        tracing::error!(error = %e, "a connection task panicked; only that connection was closed");
                    }
                }
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(std::time::Duration::from_secs(5), drain).await.is_err() {
        tracing::warn!("connections still busy after 5 s; shutting down anyway");
    }
}

async fn connection(stream: TcpStream, broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?.ip();
    let max_frame = broker.config().get_i64("socket.request.max.bytes").clamp(0, i32::MAX as i64) as usize;
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    loop {
        let len = tokio::select! {
            r = rd.read_i32() => match r {
                Ok(len) => len,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e.into()),
            },
            _ = shutdown.changed() => return Ok(()),
        };
        if len < 0 || len as usize > max_frame {
            anyhow::bail!("frame of {len} bytes is outside 0..={max_frame} (socket.request.max.bytes); closing");
        }
        // Read into uninitialised capacity: zeroing a large produce frame first costs a pass
        // over its bytes for nothing.
        let mut frame = BytesMut::with_capacity(len as usize);
        let mut body = (&mut rd).take(len as u64);
        while frame.len() < len as usize {
            if body.read_buf(&mut frame).await? == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
            }
        }
        match api::handle(&broker, peer, frame.freeze()).await {
            Ok(Some(chunks)) => {
                for c in chunks {
                    match c {
                        api::Chunk::Bytes(b) => wr.write_all(&b).await?,
                        api::Chunk::File(f) => send_file(&wr, &f).await?,
                    }
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::info!(error = %e, "closing connection");
                return Ok(());
            }
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
