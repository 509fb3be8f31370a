//! The controller-listener login, both ends over an in-memory stream.

use std::sync::Arc;

use super::*;
use crate::auth::plain::PlainUsers;
use crate::auth::scram::{credential_from_salted, salted_password};

fn config(mechanisms: &[&str]) -> Arc<SaslConfig> {
    let jaas = crate::auth::jaas::parse(&format!("{} required user_ctl=\"secret\";", crate::auth::plain::PLAIN_LOGIN_MODULE)).unwrap();
    let plain = PlainUsers::from_jaas(&jaas).unwrap();
    Arc::new(SaslConfig::new(mechanisms.iter().map(|m| m.to_string()).collect(), Some(plain), 0, 1 << 19).unwrap())
}

fn scram_lookup(u: &str, m: ScramMechanism) -> Option<ScramCredential> {
    let salted = salted_password(m, b"secret", b"salt", 4096);
    (u == "ctl").then(|| credential_from_salted(m, b"salt", &salted, 4096))
}

/// Runs both ends; the server's result and the client's.
async fn run(login: Login, config: Arc<SaslConfig>, admit: bool) -> (Result<Admitted, String>, io::Result<i64>) {
    let (mut a, mut b) = tokio::io::duplex(1 << 16);
    let server = async move { accept(&mut a, config, 1_000, &scram_lookup, &move |_p: &str| admit).await };
    let client = async move { log_in(&mut b, &login, "clientnonce").await };
    tokio::join!(server, client)
}

#[tokio::test]
async fn plain_and_scram_logins_are_admitted() {
    for m in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let (s, c) = run(Login::new(m, "ctl", "secret"), config(&["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]), true).await;
        assert_eq!(s, Ok(Admitted { principal: "User:ctl".into(), expires_at_ms: None }), "{m}");
        assert_eq!(c.unwrap(), 0, "{m}");
    }
}

#[tokio::test]
async fn a_wrong_password_is_refused_on_both_sides() {
    for m in ["PLAIN", "SCRAM-SHA-512"] {
        let (s, c) = run(Login::new(m, "ctl", "wrong"), config(&["PLAIN", "SCRAM-SHA-512"]), true).await;
        assert!(s.is_err(), "{m}");
        let e = c.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{m}: {e}");
        assert!(e.to_string().contains("refused the login"), "{m}: {e}");
    }
}

#[tokio::test]
async fn a_principal_without_cluster_action_is_refused_with_the_reason() {
    let (s, c) = run(Login::new("PLAIN", "ctl", "secret"), config(&["PLAIN"]), false).await;
    assert!(s.unwrap_err().contains("super.users"));
    let e = c.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("may not CLUSTER_ACTION"), "{e}");
}

#[tokio::test]
async fn a_mechanism_the_listener_does_not_enable_is_refused() {
    let (s, c) = run(Login::new("SCRAM-SHA-256", "ctl", "secret"), config(&["PLAIN"]), true).await;
    assert!(s.unwrap_err().contains("Unsupported SASL mechanism"));
    assert!(c.unwrap_err().to_string().contains("does not enable"));
}

#[tokio::test]
async fn a_raft_frame_before_the_login_closes_the_connection() {
    let (mut a, mut b) = tokio::io::duplex(1 << 16);
    write_frame(&mut b, 1, b"raft message").await.unwrap();
    let r = accept(&mut a, config(&["PLAIN"]), 0, &scram_lookup, &|_: &str| true).await;
    assert!(r.unwrap_err().contains("before SASL authentication"));
}

#[tokio::test]
async fn an_oversized_login_frame_closes_the_connection() {
    let (mut a, mut b) = tokio::io::duplex(1 << 21);
    let big = vec![0u8; 1 << 20];
    tokio::spawn(async move { write_frame(&mut b, SASL, &big).await });
    let r = accept(&mut a, config(&["PLAIN"]), 0, &scram_lookup, &|_: &str| true).await;
    assert!(r.is_err());
}

#[tokio::test]
async fn garbage_in_a_sasl_frame_closes_the_connection() {
    let (mut a, mut b) = tokio::io::duplex(1 << 16);
    write_frame(&mut b, SASL, &[0xff; 3]).await.unwrap();
    let r = accept(&mut a, config(&["PLAIN"]), 0, &scram_lookup, &|_: &str| true).await;
    assert!(r.is_err());
}

#[test]
fn gssapi_is_refused_with_what_to_set() {
    let mut cfg = crate::config::BrokerConfig::default();
    cfg.set_static(
        "listener.name.controller.plain.sasl.jaas.config",
        &format!("{} required username=\"a\" password=\"b\";", crate::auth::plain::PLAIN_LOGIN_MODULE),
    )
    .unwrap();
    let e = login_for(&cfg, "CONTROLLER").unwrap_err();
    assert!(e.contains("GSSAPI") && e.contains("sasl.mechanism.controller.protocol"), "{e}");
    cfg.set_static("sasl.mechanism.controller.protocol", "PLAIN").unwrap();
    let l = login_for(&cfg, "CONTROLLER").unwrap();
    assert_eq!((l.mechanism.as_str(), l.username.as_str()), ("PLAIN", "a"));
}
