//! Links to other brokers' inter-broker listener: dialed (TCP or TLS), then logged in
//! with SASL when the listener asks for it, and logged in again before the session the
//! server granted runs out (KIP-368), so a long-lived link is never cut for expiry.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::auth::client::{ClientSession, Login, Next};
use crate::auth::scram;
use crate::transport::{Dialer, Stream};

/// The largest SASL response taken from a peer.
const MAX_SASL_RESPONSE: i32 = 1 << 20;

/// A connection to another broker, authenticated if its listener wants SASL.
pub struct Link {
    pub stream: Stream,
    login: Option<Arc<Login>>,
    client_id: String,
    /// When to log in again: within the server's session lifetime, with a margin.
    relogin_at: Option<Instant>,
}

/// Is `e` a refused login (rather than an unreachable peer)? Callers log these loudly.
pub fn is_login_failure(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

impl Link {
    /// Dials `addr` and, with `login`, authenticates as it.
    pub async fn open(dialer: &Dialer, login: Option<&Arc<Login>>, addr: &str, client_id: &str) -> io::Result<Link> {
        let stream = dialer.connect(addr).await?;
        let mut link = Link { stream, login: login.cloned(), client_id: client_id.to_string(), relogin_at: None };
        link.log_in(addr).await?;
        Ok(link)
    }

    /// Logs in again if the session is due to expire; call before each request.
    pub async fn refresh(&mut self, addr: &str) -> io::Result<()> {
        if self.relogin_at.is_some_and(|t| Instant::now() >= t) {
            self.log_in(addr).await?;
        }
        Ok(())
    }

    async fn log_in(&mut self, addr: &str) -> io::Result<()> {
        let Some(login) = self.login.clone() else { return Ok(()) };
        let refused = |why: String| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("SASL login to {addr} as {} ({}) failed: {why}", login.username, login.mechanism),
            )
        };
        let (mut session, mut frame) = ClientSession::start(&login, &self.client_id, &scram::nonce());
        loop {
            self.stream.write_all(&frame).await?;
            let len = self.stream.read_i32().await?;
            if !(0..=MAX_SASL_RESPONSE).contains(&len) {
                return Err(refused(format!("a {len}-byte SASL response")));
            }
            let mut buf = vec![0u8; len as usize];
            self.stream.read_exact(&mut buf).await?;
            match session.on_response(&buf).map_err(&refused)? {
                Next::Send(f) => frame = f,
                Next::Authenticated { session_lifetime_ms } => {
                    // Kafka's client re-authenticates at 85-95% of the lifetime; 90% here.
                    self.relogin_at = (session_lifetime_ms > 0)
                        .then(|| Instant::now() + Duration::from_millis((session_lifetime_ms as u64).saturating_mul(9) / 10));
                    return Ok(());
                }
            }
        }
    }
}
