//! Byte streams between nodes and clients: plain TCP or TLS (rustls), the TLS contexts
//! built from Kafka's `ssl.*` keys, client principals from certificates, and dialing
//! another node on a listener of the right protocol.

pub mod principal;
pub mod tls;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::config::listeners::SecurityProtocol;
use crate::config::BrokerConfig;

/// A connection this node opened: plain, or TLS over TCP.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// How this node connects to a listener of other nodes: plain TCP, or TLS with the
/// listener's `ssl.*` settings.
#[derive(Clone, Default)]
pub struct Dialer {
    tls: Option<tokio_rustls::TlsConnector>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.tls.is_some() { "Dialer(TLS)" } else { "Dialer(plain)" })
    }
}

/// A client-side setup that cannot work (a TLS setting of the listener).
pub type DialerError = tls::TlsError;

impl Dialer {
    /// Plain TCP.
    pub fn plaintext() -> Dialer {
        Dialer::default()
    }

    /// For the listener `name` whose protocol is `protocol`. This is TCP or TLS only: on a
    /// SASL listener the login runs over the stream afterwards (`cluster::login`).
    pub fn for_listener(cfg: &BrokerConfig, name: &str, protocol: SecurityProtocol) -> Result<Dialer, DialerError> {
        if !protocol.tls() {
            return Ok(Dialer::plaintext());
        }
        let config = tls::client(cfg, name)?;
        Ok(Dialer { tls: Some(tokio_rustls::TlsConnector::from(Arc::new(config))) })
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Connects to `host:port`; with TLS, the certificate must name `host`.
    pub async fn connect(&self, addr: &str) -> io::Result<Stream> {
        let tcp = TcpStream::connect(addr).await?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else { return Ok(Stream::Plain(tcp)) };
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
        let name =
            ServerName::try_from(host.to_string()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
        Ok(Stream::Tls(Box::new(tls.connect(name, tcp).await?)))
    }
}
