//! The SASL client against the server's state machines and RFC 7677's vector.

use super::*;
use crate::auth::credential::ScramCredential;
use crate::auth::plain::{self, PlainUsers};
use crate::auth::scram::{credential_from_salted, Failure, ScramServer};
use crate::auth::Step;

/// RFC 7677 section 3: user "user", password "pencil", 4096 iterations, fixed nonces.
#[test]
fn rfc7677_sha256_vector_from_the_client_side() {
    let mut c = Login::new("SCRAM-SHA-256", "user", "pencil").start("rOprNGfwEbeRWgbNEkqO");
    assert_eq!(c.first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO".to_vec());
    let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    let fin = c.next(server_first.as_bytes()).unwrap().unwrap();
    assert_eq!(
        String::from_utf8(fin).unwrap(),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    assert_eq!(c.next(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="), Ok(None));
}

#[test]
fn a_wrong_server_signature_fails_the_login() {
    let mut c = Login::new("SCRAM-SHA-256", "user", "pencil").start("rOprNGfwEbeRWgbNEkqO");
    c.first();
    let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    c.next(server_first.as_bytes()).unwrap();
    assert!(c.next(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").is_err());
}

/// Runs the client against the server; Ok(user) or the server's failure.
fn exchange(login: &Login, cred: Option<ScramCredential>) -> Result<String, String> {
    let m = ScramMechanism::from_name(&login.mechanism).unwrap();
    let lookup = move |u: &str, mm: ScramMechanism| (u == "bro,ker=1" && mm == m).then(|| cred.clone()).flatten();
    let nonce = || "servernonce".to_string();
    let mut server = ScramServer::new(m);
    let mut client = login.start("clientnonce");
    let mut msg = client.first();
    loop {
        match server.step(&msg, &lookup, &nonce).map_err(|f| format!("{f:?}"))? {
            Step::Continue(challenge) => msg = client.next(&challenge)?.expect("the client answers a challenge"),
            Step::Done { response, user } => {
                assert_eq!(client.next(&response)?, None);
                return Ok(user);
            }
        }
    }
}

#[test]
fn scram_256_and_512_against_the_server() {
    for m in ScramMechanism::ALL {
        let salted = salted_password(m, b"secret", b"salt", 4096);
        let cred = credential_from_salted(m, b"salt", &salted, 4096);
        assert_eq!(exchange(&Login::new(m.name(), "bro,ker=1", "secret"), Some(cred.clone())), Ok("bro,ker=1".into()));
        let wrong = exchange(&Login::new(m.name(), "bro,ker=1", "secreT"), Some(cred));
        assert_eq!(wrong, Err(format!("{:?}", Failure::Invalid("Invalid client credentials".into()))));
        assert!(exchange(&Login::new(m.name(), "bro,ker=1", "secret"), None).is_err(), "unknown user");
    }
}

#[test]
fn plain_against_the_server() {
    let users = PlainUsers::new([("broker", "broker-secret")]);
    for (password, ok) in [("broker-secret", true), ("wrong", false)] {
        let mut c = Login::new("PLAIN", "broker", password).start("unused");
        let r = plain::authenticate(&users, &c.first());
        assert_eq!(r.is_ok(), ok, "{r:?}");
        if ok {
            assert_eq!(c.next(b""), Ok(None));
        }
    }
}

#[test]
fn malformed_server_messages_fail() {
    for bad in [
        &b"r=othernonce,s=c2FsdA==,i=4096"[..],
        b"r=clientnonce,s=c2FsdA==,i=4096",
        b"r=clientnonceX,s=!!,i=4096",
        b"r=clientnonceX,s=c2FsdA==,i=10",
        b"r=clientnonceX,s=c2FsdA==,i=2000000000",
        b"r=clientnonceX,s=c2FsdA==",
        b"m=ext,r=clientnonceX,s=c2FsdA==,i=4096",
        b"\xff",
    ] {
        let mut c = Login::new("SCRAM-SHA-512", "u", "p").start("clientnonce");
        c.first();
        assert!(c.next(bad).is_err(), "{:?} was accepted", String::from_utf8_lossy(bad));
    }
    let mut c = Login::new("SCRAM-SHA-512", "u", "p").start("clientnonce");
    assert!(c.next(b"r=x").is_err(), "a challenge before the first message");
}

#[test]
fn logins_come_from_the_listeners_jaas_config() {
    let mut cfg = BrokerConfig::default();
    let key = "listener.name.broker.scram-sha-512.sasl.jaas.config";
    let scram_jaas = format!(r#"{SCRAM_LOGIN_MODULE} required username="broker" password="pw";"#);
    cfg.set_static(key, &scram_jaas).unwrap();
    let m = "sasl.mechanism.inter.broker.protocol";
    let e = Login::for_listener(&cfg, "BROKER", m).unwrap_err();
    assert!(e.contains("GSSAPI") && e.contains("SCRAM-SHA-512"), "{e}");
    cfg.set_static(m, "SCRAM-SHA-512").unwrap();
    let l = Login::for_listener(&cfg, "BROKER", m).unwrap();
    assert_eq!((l.mechanism.as_str(), l.username.as_str()), ("SCRAM-SHA-512", "broker"));
    assert!(!format!("{l:?}").contains("pw"));
    cfg.set_static(m, "PLAIN").unwrap();
    assert!(Login::for_listener(&cfg, "BROKER", m).unwrap_err().contains("listener.name.broker.plain.sasl.jaas.config"));
    let plain = format!(r#"{SCRAM_LOGIN_MODULE} required username="broker" password="pw";"#);
    cfg.set_static("listener.name.broker.plain.sasl.jaas.config", &plain).unwrap();
    assert!(Login::for_listener(&cfg, "BROKER", m).unwrap_err().contains("PlainLoginModule"));
    let no_password = jaas::parse(&format!("{PLAIN_LOGIN_MODULE} required username=\"b\";")).unwrap();
    assert!(Login::from_jaas("PLAIN", &no_password).is_err());
}

/// The wire exchange against the server's session, first login and re-authentication.
#[test]
fn client_session_logs_in_to_the_server_session() {
    use crate::auth::sasl::{Outcome, SaslConfig, SaslSession};
    let m = ScramMechanism::Sha512;
    let cred = credential_from_salted(m, b"salt", &salted_password(m, b"secret", b"salt", 4096), 4096);
    let lookup = move |u: &str, mm: ScramMechanism| (u == "broker" && mm == m).then(|| cred.clone());
    let config = std::sync::Arc::new(SaslConfig::new(vec!["SCRAM-SHA-512".into()], None, 60_000, 1 << 20).unwrap());
    let mut server = SaslSession::new(config);
    let run = |server: &mut SaslSession, login: &Login| -> Result<Next, String> {
        let (mut c, mut frame) = ClientSession::start(login, "sluice-replica-2", "clientnonce");
        loop {
            let reply = match server.on_frame(&frame[4..], 1_000, &lookup) {
                Outcome::Reply(r) | Outcome::Authenticated { reply: r, .. } => r,
                Outcome::Close { reply: Some(r), .. } => r,
                other => panic!("{other:?}"),
            };
            match c.on_response(&reply[4..])? {
                Next::Send(f) => frame = f,
                done => return Ok(done),
            }
        }
    };
    let good = Login::new("SCRAM-SHA-512", "broker", "secret");
    assert_eq!(run(&mut server, &good), Ok(Next::Authenticated { session_lifetime_ms: 60_000 }));
    assert_eq!(server.principal(), Some("User:broker"));
    // Re-authentication on the same session (KIP-368).
    assert_eq!(run(&mut server, &good), Ok(Next::Authenticated { session_lifetime_ms: 60_000 }));
    let wrong = Login::new("SCRAM-SHA-512", "broker", "nope");
    let e =
        run(&mut SaslSession::new(std::sync::Arc::new(SaslConfig::new(vec!["SCRAM-SHA-512".into()], None, 0, 1 << 20).unwrap())), &wrong)
            .unwrap_err();
    assert!(e.contains("refused the login") && e.contains("invalid credentials"), "{e}");
    let plain = Login::new("PLAIN", "broker", "secret");
    let e =
        run(&mut SaslSession::new(std::sync::Arc::new(SaslConfig::new(vec!["SCRAM-SHA-512".into()], None, 0, 1 << 20).unwrap())), &plain)
            .unwrap_err();
    assert!(e.contains("does not enable SASL mechanism PLAIN") && e.contains("SCRAM-SHA-512"), "{e}");
}

#[test]
fn salted_passwords_are_reused_only_for_the_same_inputs() {
    let m = ScramMechanism::Sha256;
    let a = salted_cached(m, "pw", b"salt", 4096);
    assert_eq!(a, salted_password(m, b"pw", b"salt", 4096));
    assert_eq!(salted_cached(m, "pw", b"salt", 4096), a);
    assert_ne!(salted_cached(m, "pw2", b"salt", 4096), a);
    assert_ne!(salted_cached(m, "pw", b"salt2", 4096), a);
    assert_ne!(salted_cached(m, "pw", b"salt", 4097), a);
    assert_ne!(salted_cached(ScramMechanism::Sha512, "pw", b"salt", 4096)[..32], a[..]);
}
