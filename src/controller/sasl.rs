//! SASL on the controller listener, as Kafka secures its controller listener: the dialing
//! node (a voter or a broker) logs in with `sasl.mechanism.controller.protocol` before it
//! sends any Raft message or controller request, and the accepting controller lets in only
//! a principal that may CLUSTER_ACTION the cluster (in practice a super user, as in Kafka).
//!
//! Sluice's controller frames are its own, so the login travels in two frame kinds of
//! its own: [`SASL`] carries a Kafka SaslHandshake/SaslAuthenticate request (the same
//! bytes a Kafka listener takes, without their length prefix) and [`SASL_REPLY`] the
//! answer. Both ends reuse the Kafka listeners' state machines (`auth::sasl` and
//! `auth::client`). After the last reply the controller sends [`READY`], or [`REFUSED`] with
//! the reason when the principal is not allowed in, so the dialer can say why in its log.
//! Any other frame before that closes the connection.

use std::io;

use tokio::io::{AsyncRead, AsyncWrite};

use super::net::{read_frame, write_frame};
use super::Controller;
use crate::auth::acl::CLUSTER_NAME;
use crate::auth::client::{ClientSession, Login, Next};
use crate::auth::credential::{ScramCredential, ScramMechanism};
use crate::auth::sasl::{Outcome, SaslConfig, SaslSession};
use crate::auth::{Authorizer, Operation, Requester, ResourceType};
use crate::config::Settings;
use crate::metadata::records::Record;

/// A Kafka SASL request frame (no length prefix), dialer to controller.
pub const SASL: u8 = 4;
/// The answer to a [`SASL`] frame.
pub const SASL_REPLY: u8 = 5;
/// The login succeeded and the principal may reach the quorum.
pub const READY: u8 = 6;
/// The login succeeded but the principal may not reach the quorum; the payload says why.
pub const REFUSED: u8 = 7;

/// The client id the SASL requests name, for the controller's logs.
const CLIENT_ID: &str = "sluice-controller-link";

/// A connection the controller let in.
#[derive(Debug, PartialEq, Eq)]
pub struct Admitted {
    pub principal: String,
    /// When the session ends (`connections.max.reauth.ms`), in ms since the epoch.
    pub expires_at_ms: Option<i64>,
}

/// Finds a user's SCRAM credential for the server side.
pub type Lookup<'a> = dyn Fn(&str, ScramMechanism) -> Option<ScramCredential> + Send + Sync + 'a;

/// How this node logs in on the SASL controller listener `listener`: the mechanism of
/// `sasl.mechanism.controller.protocol` (Kafka's default GSSAPI is refused with what to
/// set) with `listener.name.<listener>.<mechanism>.sasl.jaas.config`, as Kafka's nodes read
/// it. (The unprefixed `sasl.jaas.config` is not a key Sluice takes on a node.)
pub fn login_for(cfg: &crate::config::BrokerConfig, listener: &str) -> Result<Login, String> {
    Login::for_listener(cfg, listener, "sasl.mechanism.controller.protocol").map_err(|e| format!("controller listener {listener}: {e}"))
}

/// Runs the server side of the login on `sock`: Ok once authenticated and admitted by
/// `may_join`, Err with the reason (already answered to the peer where it can be) otherwise.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    sock: &mut S,
    config: std::sync::Arc<SaslConfig>,
    now_ms: i64,
    lookup: &Lookup<'_>,
    may_join: &(dyn Fn(&str) -> bool + Send + Sync),
) -> Result<Admitted, String> {
    let max = config.max_receive_size;
    let mut session = SaslSession::new(config);
    loop {
        let (kind, payload) = read_frame(sock, max).await.map_err(|e| format!("connection closed during SASL login: {e}"))?;
        if kind != SASL {
            return Err(format!("a frame of kind {kind} before SASL authentication"));
        }
        match session.on_frame(&payload, now_ms, lookup) {
            // ApiVersions is for Kafka listeners; a controller link never needs it.
            Outcome::Pass => return Err("a request other than SaslHandshake/SaslAuthenticate before authentication".into()),
            Outcome::Reply(reply) => write_frame(sock, SASL_REPLY, &reply[4..]).await.map_err(|e| e.to_string())?,
            Outcome::Close { reply, reason } => {
                if let Some(reply) = reply {
                    let _ = write_frame(sock, SASL_REPLY, &reply[4..]).await;
                }
                return Err(reason);
            }
            Outcome::Authenticated { reply, principal, expires_at_ms } => {
                write_frame(sock, SASL_REPLY, &reply[4..]).await.map_err(|e| e.to_string())?;
                if !may_join(&principal) {
                    let why = format!("{principal} may not CLUSTER_ACTION the cluster: name it in super.users to let it reach the quorum");
                    let _ = write_frame(sock, REFUSED, why.as_bytes()).await;
                    return Err(why);
                }
                write_frame(sock, READY, &[]).await.map_err(|e| e.to_string())?;
                return Ok(Admitted { principal, expires_at_ms });
            }
        }
    }
}

/// Runs the client side of the login on `sock` as `login`. Returns the session lifetime
/// the controller granted (0: no limit). A refusal is `PermissionDenied`, with the reason.
pub async fn log_in<S: AsyncRead + AsyncWrite + Unpin>(sock: &mut S, login: &Login, nonce: &str) -> io::Result<i64> {
    let refused = |why: String| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("SASL login to the controller listener as {} ({}) failed: {why}", login.username, login.mechanism),
        )
    };
    let (mut session, mut frame) = ClientSession::start(login, CLIENT_ID, nonce);
    loop {
        write_frame(sock, SASL, &frame[4..]).await?;
        let (kind, payload) = read_frame(sock, 1 << 20).await?;
        if kind != SASL_REPLY {
            return Err(refused(format!("the controller answered with a frame of kind {kind}")));
        }
        match session.on_response(&payload).map_err(refused)? {
            Next::Send(f) => frame = f,
            Next::Authenticated { session_lifetime_ms } => {
                let (kind, payload) = read_frame(sock, 1 << 20).await?;
                return match kind {
                    READY => Ok(session_lifetime_ms),
                    REFUSED => Err(refused(String::from_utf8_lossy(&payload).into_owned())),
                    k => Err(refused(format!("the controller answered with a frame of kind {k}"))),
                };
            }
        }
    }
}

impl Controller {
    /// A user's SCRAM credential for a controller-listener login: from the image, or, while
    /// this node has not yet seen the cluster formed, from its own `--add-scram` records (as
    /// Kafka's controllers read `kafka-storage format --add-scram` credentials from their
    /// bootstrap metadata before the quorum has a leader).
    pub fn login_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        let img = self.image();
        if img.cluster_id.is_some() {
            return img.scram_credential(user, mechanism).cloned();
        }
        self.formation.lock().iter().find_map(|r| match r {
            Record::UserScramCredential { name, mechanism: m, credential } if name == user && *m == mechanism => Some(credential.clone()),
            _ => None,
        })
    }

    /// May `principal`, connecting from `host`, reach the quorum? Without an authorizer
    /// anyone who logged in may; with one, CLUSTER_ACTION on the cluster is needed, which
    /// Kafka checks on every controller request.
    pub fn may_join(&self, principal: &str, host: &str) -> bool {
        let img = self.image();
        let settings: Settings = self.settings_from(&img);
        if !settings.authorizer_enabled {
            return true;
        }
        let a =
            Authorizer { acls: &img.acls, super_users: &settings.super_users, allow_if_no_acl: settings.allow_everyone_if_no_acl_found };
        a.authorize(&Requester { principal, host }, Operation::ClusterAction, ResourceType::Cluster, CLUSTER_NAME)
    }
}

#[cfg(test)]
#[path = "sasl_tests.rs"]
mod tests;
