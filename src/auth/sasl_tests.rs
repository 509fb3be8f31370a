//! The SASL session driven with request frames as a client sends them.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::oauth::unsecured::Options;
use super::oauth::Validator;
use super::plain::PlainUsers;
use super::sasl::{Outcome, SaslConfig, SaslSession};
use super::scram;
use crate::auth::credential::{ScramCredential, ScramMechanism};

fn config(reauth_ms: i64) -> Arc<SaslConfig> {
    let enabled = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"].map(String::from).to_vec();
    Arc::new(SaslConfig::new(enabled, Some(PlainUsers::new([("alice", "alice-secret")])), reauth_ms, 524288).unwrap())
}

fn request(api: ApiKey, version: i16, correlation_id: i32, body: &impl Encodable) -> Vec<u8> {
    let mut out = BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("test")));
    header.encode(&mut out, api.request_header_version(version)).unwrap();
    body.encode(&mut out, version).unwrap();
    out.to_vec()
}

fn handshake(version: i16, mechanism: &str) -> Vec<u8> {
    request(ApiKey::SaslHandshake, version, 1, &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into())))
}

fn authenticate(version: i16, token: &[u8]) -> Vec<u8> {
    request(ApiKey::SaslAuthenticate, version, 2, &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token)))
}

/// The body of a response frame (length prefix and header removed).
fn decode<R: Decodable>(frame: &[u8], api: ApiKey, version: i16) -> R {
    let mut b = Bytes::copy_from_slice(&frame[4..]);
    ResponseHeader::decode(&mut b, api.response_header_version(version)).unwrap();
    R::decode(&mut b, version).unwrap()
}

/// A frame claiming another version than it was encoded at (one no client could encode).
fn with_version(mut frame: Vec<u8>, version: i16) -> Vec<u8> {
    frame[2..4].copy_from_slice(&version.to_be_bytes());
    frame
}

fn no_users(_: &str, _: ScramMechanism) -> Option<ScramCredential> {
    None
}

fn alice(m: ScramMechanism) -> ScramCredential {
    scram::credential_from_salted(m, b"salt", &scram::salted_password(m, b"alice-secret", b"salt", 4096), 4096)
}

#[test]
fn plain_over_v1_handshake_authenticates_and_then_passes_requests() {
    let mut s = SaslSession::new(config(0));
    assert_eq!(s.on_frame(&request(ApiKey::ApiVersions, 3, 0, &ApiVersionsRequest::default()), 0, &no_users), Outcome::Pass);
    let Outcome::Reply(r) = s.on_frame(&handshake(1, "PLAIN"), 0, &no_users) else { panic!() };
    let hs: SaslHandshakeResponse = decode(&r, ApiKey::SaslHandshake, 1);
    assert_eq!(hs.error_code, 0);
    assert_eq!(hs.mechanisms.len(), 3);
    let Outcome::Authenticated { reply, principal, expires_at_ms } = s.on_frame(&authenticate(2, b"\0alice\0alice-secret"), 0, &no_users)
    else {
        panic!()
    };
    assert_eq!((principal.as_str(), expires_at_ms), ("User:alice", None));
    let a: SaslAuthenticateResponse = decode(&reply, ApiKey::SaslAuthenticate, 2);
    assert_eq!((a.error_code, a.session_lifetime_ms), (0, 0));
    assert_eq!(s.principal(), Some("User:alice"));
    assert_eq!(s.on_frame(&request(ApiKey::Metadata, 12, 3, &MetadataRequest::default()), 0, &no_users), Outcome::Pass);
}

#[test]
fn a_wrong_password_answers_sasl_authentication_failed_and_closes() {
    let mut s = SaslSession::new(config(0));
    s.on_frame(&handshake(1, "PLAIN"), 0, &no_users);
    let Outcome::Close { reply: Some(r), .. } = s.on_frame(&authenticate(1, b"\0alice\0nope"), 0, &no_users) else { panic!() };
    let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 1);
    assert_eq!(a.error_code, 58);
    assert_eq!(a.error_message.as_deref(), Some("Authentication failed: Invalid username or password"));
    assert!(matches!(s.on_frame(&authenticate(1, b"\0alice\0alice-secret"), 0, &no_users), Outcome::Close { reply: None, .. }));
}

#[test]
fn scram_over_v1_handshake_with_generic_failure_message() {
    for m in ScramMechanism::ALL {
        let lookup = move |u: &str, mm: ScramMechanism| (u == "alice" && mm == m).then(|| alice(m));
        let mut s = SaslSession::new(config(60_000));
        s.on_frame(&handshake(1, m.name()), 0, &lookup);
        let Outcome::Reply(r) = s.on_frame(&authenticate(2, b"n,,n=alice,r=abcdef"), 0, &lookup) else { panic!() };
        let first: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
        let server_first = String::from_utf8(first.auth_bytes.to_vec()).unwrap();
        let nonce = server_first.split(',').next().unwrap();
        // A proof of the right length that is wrong.
        let len = if m == ScramMechanism::Sha256 { 32 } else { 64 };
        let fin = format!("c=biws,{nonce},p={}", B64.encode(vec![7u8; len]));
        let Outcome::Close { reply: Some(r), reason } = s.on_frame(&authenticate(2, fin.as_bytes()), 0, &lookup) else { panic!() };
        let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
        assert_eq!(a.error_code, 58);
        assert_eq!(
            a.error_message.unwrap().to_string(),
            format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", m.name())
        );
        assert_eq!(reason, "Invalid client credentials");
    }
}

#[test]
fn v0_handshake_exchanges_raw_tokens() {
    let lookup = |u: &str, m: ScramMechanism| (u == "alice").then(|| alice(m));
    let mut s = SaslSession::new(config(0));
    let Outcome::Reply(r) = s.on_frame(&handshake(0, "SCRAM-SHA-256"), 0, &lookup) else { panic!() };
    let hs: SaslHandshakeResponse = decode(&r, ApiKey::SaslHandshake, 0);
    assert_eq!(hs.error_code, 0);
    let Outcome::Reply(r) = s.on_frame(b"n,,n=alice,r=abcdef", 0, &lookup) else { panic!() };
    let len = i32::from_be_bytes([r[0], r[1], r[2], r[3]]) as usize;
    assert_eq!(len, r.len() - 4);
    assert!(r[4..].starts_with(b"r=abcdef"), "a raw server-first message");
    let mut p = SaslSession::new(config(0));
    p.on_frame(&handshake(0, "PLAIN"), 0, &no_users);
    let Outcome::Authenticated { reply, .. } = p.on_frame(b"\0alice\0alice-secret", 0, &no_users) else { panic!() };
    assert_eq!(reply, vec![0, 0, 0, 0], "PLAIN's empty answer, size-prefixed");
    let mut p = SaslSession::new(config(0));
    p.on_frame(&handshake(0, "PLAIN"), 0, &no_users);
    assert!(matches!(p.on_frame(b"\0alice\0bad", 0, &no_users), Outcome::Close { reply: None, .. }), "v0 cannot say why");
}

#[test]
fn an_unknown_mechanism_answers_the_enabled_list_and_closes() {
    let mut s = SaslSession::new(config(0));
    let Outcome::Close { reply: Some(r), .. } = s.on_frame(&handshake(1, "GSSAPI"), 0, &no_users) else { panic!() };
    let hs: SaslHandshakeResponse = decode(&r, ApiKey::SaslHandshake, 1);
    assert_eq!(hs.error_code, 33);
    let names: Vec<String> = hs.mechanisms.iter().map(|m| m.to_string()).collect();
    assert_eq!(names, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
}

#[test]
fn requests_out_of_order_close_without_an_answer() {
    let api_versions = request(ApiKey::ApiVersions, 3, 0, &ApiVersionsRequest::default());
    let metadata = request(ApiKey::Metadata, 12, 3, &MetadataRequest::default());
    let cases: Vec<Vec<Vec<u8>>> = vec![
        vec![metadata.clone()],
        vec![authenticate(1, b"\0alice\0alice-secret")],
        vec![api_versions.clone(), api_versions.clone()],
        vec![api_versions.clone(), metadata.clone()],
        vec![handshake(1, "PLAIN"), handshake(1, "PLAIN")],
        vec![handshake(1, "PLAIN"), metadata.clone()],
        vec![with_version(handshake(1, "PLAIN"), 2)],
        vec![vec![0, 17]],
        vec![handshake(1, "PLAIN")[..12].to_vec()],
        vec![handshake(1, "PLAIN"), with_version(authenticate(2, b"\0alice\0alice-secret"), 3)],
    ];
    for frames in cases {
        let mut s = SaslSession::new(config(0));
        let last = frames.len() - 1;
        for (i, f) in frames.iter().enumerate() {
            let out = s.on_frame(f, 0, &no_users);
            if i == last {
                assert!(matches!(out, Outcome::Close { reply: None, .. }), "{frames:?} ended with {out:?}");
            } else {
                assert!(!matches!(out, Outcome::Close { .. }), "{frames:?} closed early");
            }
        }
        assert_eq!(s.principal(), None);
    }
}

#[test]
fn oversized_frames_before_authentication_close() {
    let cfg = Arc::new(SaslConfig::new(vec!["PLAIN".into()], Some(PlainUsers::default()), 0, 64).unwrap());
    let mut s = SaslSession::new(cfg);
    assert_eq!(s.max_frame(1 << 20), 64);
    s.on_frame(&handshake(1, "PLAIN"), 0, &no_users);
    assert!(matches!(s.on_frame(&authenticate(1, &[b'x'; 100]), 0, &no_users), Outcome::Close { reply: None, .. }));
}

#[test]
fn reauthentication_keeps_mechanism_and_principal_and_sessions_expire() {
    let mut s = SaslSession::new(config(1000));
    s.on_frame(&handshake(1, "PLAIN"), 0, &no_users);
    let Outcome::Authenticated { reply, expires_at_ms, .. } = s.on_frame(&authenticate(1, b"\0alice\0alice-secret"), 5, &no_users) else {
        panic!()
    };
    assert_eq!(expires_at_ms, Some(1005));
    let a: SaslAuthenticateResponse = decode(&reply, ApiKey::SaslAuthenticate, 1);
    assert_eq!(a.session_lifetime_ms, 1000);
    let metadata = request(ApiKey::Metadata, 12, 3, &MetadataRequest::default());
    assert_eq!(s.on_frame(&metadata, 1004, &no_users), Outcome::Pass);
    // Re-authentication after expiry is still allowed; anything else is not.
    assert!(matches!(s.on_frame(&handshake(1, "PLAIN"), 2000, &no_users), Outcome::Reply(_)));
    let Outcome::Authenticated { expires_at_ms, .. } = s.on_frame(&authenticate(1, b"\0alice\0alice-secret"), 2000, &no_users) else {
        panic!()
    };
    assert_eq!(expires_at_ms, Some(3000));
    assert!(matches!(s.on_frame(&metadata, 3000, &no_users), Outcome::Close { .. }));

    let mut s = SaslSession::new(config(0));
    s.on_frame(&handshake(1, "PLAIN"), 0, &no_users);
    s.on_frame(&authenticate(1, b"\0alice\0alice-secret"), 0, &no_users);
    let Outcome::Close { reply: Some(r), .. } = s.on_frame(&handshake(1, "SCRAM-SHA-256"), 0, &no_users) else { panic!() };
    let hs: SaslHandshakeResponse = decode(&r, ApiKey::SaslHandshake, 1);
    assert_eq!(hs.error_code, 33, "re-authentication must keep the mechanism");
}

#[test]
fn configs_that_cannot_work_are_refused() {
    assert!(SaslConfig::new(vec![], None, 0, 1).is_err());
    assert!(SaslConfig::new(vec!["GSSAPI".into()], None, 0, 1).unwrap_err().contains("GSSAPI"));
    assert!(SaslConfig::new(vec!["PLAIN".into()], None, 0, 1).unwrap_err().contains("plain.sasl.jaas.config"));
    assert!(SaslConfig::new(vec!["SCRAM-SHA-512".into()], None, 0, 1).is_ok());
    assert!(SaslConfig::new(vec!["OAUTHBEARER".into()], None, 0, 1).is_ok());
}

fn oauth_config(reauth_ms: i64) -> Arc<SaslConfig> {
    let mut c = SaslConfig::new(vec!["OAUTHBEARER".into()], None, reauth_ms, 524288).unwrap();
    c.oauth = Some(Arc::new(Validator::Unsecured(Options::default())));
    Arc::new(c)
}

const NOW_MS: i64 = 1_700_000_000_000;

/// An OAUTHBEARER client-first message with an unsecured token for `sub` expiring at `exp_s`.
fn bearer(sub: &str, exp_s: i64) -> Vec<u8> {
    let b64 = |s: String| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let token = format!("{}.{}.", b64(r#"{"alg":"none"}"#.into()), b64(format!(r#"{{"sub":"{sub}","exp":{exp_s}}}"#)));
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

#[test]
fn oauthbearer_sessions_end_at_the_tokens_expiry_or_reauth_ms_whichever_is_sooner() {
    for (reauth_ms, lifetime) in [(0, 60_000), (10_000, 10_000), (120_000, 60_000)] {
        let mut s = SaslSession::new(oauth_config(reauth_ms));
        assert!(matches!(s.on_frame(&handshake(1, "OAUTHBEARER"), NOW_MS, &no_users), Outcome::Reply(_)));
        let Outcome::Authenticated { reply, principal, expires_at_ms } =
            s.on_frame(&authenticate(1, &bearer("alice", NOW_MS / 1000 + 60)), NOW_MS, &no_users)
        else {
            panic!()
        };
        assert_eq!((principal.as_str(), expires_at_ms), ("User:alice", Some(NOW_MS + lifetime)));
        let a: SaslAuthenticateResponse = decode(&reply, ApiKey::SaslAuthenticate, 1);
        assert_eq!((a.error_code, a.session_lifetime_ms), (0, lifetime), "reauth {reauth_ms}");
        // Re-authentication must keep the principal.
        assert!(matches!(s.on_frame(&handshake(1, "OAUTHBEARER"), NOW_MS + 1, &no_users), Outcome::Reply(_)));
        let Outcome::Close { reply: Some(r), .. } = s.on_frame(&authenticate(1, &bearer("bob", NOW_MS / 1000 + 60)), NOW_MS + 1, &no_users)
        else {
            panic!()
        };
        let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 1);
        assert_eq!(a.error_code, 58);
    }
    // The session expires with the token: a request after it closes the connection.
    let mut s = SaslSession::new(oauth_config(0));
    s.on_frame(&handshake(1, "OAUTHBEARER"), NOW_MS, &no_users);
    s.on_frame(&authenticate(2, &bearer("alice", NOW_MS / 1000 + 60)), NOW_MS, &no_users);
    let metadata = request(ApiKey::Metadata, 12, 3, &MetadataRequest::default());
    assert_eq!(s.on_frame(&metadata, NOW_MS + 59_999, &no_users), Outcome::Pass);
    assert!(matches!(s.on_frame(&metadata, NOW_MS + 60_000, &no_users), Outcome::Close { .. }));
}

#[test]
fn a_refused_oauthbearer_token_gets_the_json_error_then_authentication_failed() {
    let mut s = SaslSession::new(oauth_config(0));
    s.on_frame(&handshake(1, "OAUTHBEARER"), NOW_MS, &no_users);
    let Outcome::Reply(r) = s.on_frame(&authenticate(2, &bearer("alice", NOW_MS / 1000 - 1)), NOW_MS, &no_users) else { panic!() };
    let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
    assert_eq!((a.error_code, &a.auth_bytes[..]), (0, &br#"{"status":"invalid_token"}"#[..]));
    let Outcome::Close { reply: Some(r), reason } = s.on_frame(&authenticate(2, b"\x01"), NOW_MS, &no_users) else { panic!() };
    let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
    assert_eq!((a.error_code, a.error_message.as_deref()), (58, Some(r#"{"status":"invalid_token"}"#)));
    assert!(reason.contains("Expiration Time"), "{reason}");
    // Garbage instead of a client-first message: Kafka's generic message, and close.
    let mut s = SaslSession::new(oauth_config(0));
    s.on_frame(&handshake(1, "OAUTHBEARER"), NOW_MS, &no_users);
    let Outcome::Close { reply: Some(r), .. } = s.on_frame(&authenticate(2, b"\xff\x00garbage"), NOW_MS, &no_users) else { panic!() };
    let a: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
    assert_eq!(a.error_code, 58);
    assert!(a.error_message.unwrap().contains("invalid credentials with SASL mechanism OAUTHBEARER"));
}

/// The client's final message for `password`, RFC 5802 without channel binding.
fn scram_final(m: ScramMechanism, password: &str, client_first_bare: &str, server_first: &str) -> String {
    let fields: Vec<&str> = server_first.split(',').collect();
    let salt = B64.decode(&fields[1][2..]).unwrap();
    let iterations: u32 = fields[2][2..].parse().unwrap();
    let salted = scram::salted_password(m, password.as_bytes(), &salt, iterations);
    let client_key = scram::hmac(m, &salted, b"Client Key");
    let without_proof = format!("c=biws,{}", fields[0]);
    let auth = format!("{client_first_bare},{server_first},{without_proof}");
    let sig = scram::hmac(m, &scram::hash(m, &client_key), auth.as_bytes());
    let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
    format!("{without_proof},p={}", B64.encode(proof))
}

#[test]
fn a_token_login_acts_as_the_owner_and_ends_with_the_token() {
    use crate::auth::token::{self, TokenCredential};
    use crate::auth::Principal;
    let m = ScramMechanism::Sha512;
    let salt = token::random_salt();
    let cred = token::scram_credential("secret", "tok-1", m, &salt);
    let tokens = move |id: &str, mm: ScramMechanism| {
        (id == "tok-1" && mm == m).then(|| TokenCredential { credential: cred.clone(), owner: Principal::user("alice"), expiry_ms: 5000 })
    };
    for (reauth_ms, lifetime) in [(0, 4000), (60_000, 4000), (1000, 1000)] {
        let mut s = SaslSession::new(config(reauth_ms));
        s.on_frame_with_tokens(&handshake(1, m.name()), 1000, &no_users, &tokens);
        let bare = "n=tok-1,r=clientnonce,tokenauth=true";
        let first = format!("n,,{bare}");
        let Outcome::Reply(r) = s.on_frame_with_tokens(&authenticate(2, first.as_bytes()), 1000, &no_users, &tokens) else { panic!() };
        let server_first: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
        let server_first = String::from_utf8(server_first.auth_bytes.to_vec()).unwrap();
        let fin = scram_final(m, &token::hmac_base64("secret", "tok-1"), bare, &server_first);
        let Outcome::Authenticated { reply, principal, expires_at_ms } =
            s.on_frame_with_tokens(&authenticate(2, fin.as_bytes()), 1000, &no_users, &tokens)
        else {
            panic!()
        };
        assert_eq!(principal, "User:alice");
        assert!(s.token_authenticated());
        assert_eq!(expires_at_ms, Some(1000 + lifetime), "reauth {reauth_ms}");
        let a: SaslAuthenticateResponse = decode(&reply, ApiKey::SaslAuthenticate, 2);
        assert_eq!(a.session_lifetime_ms, lifetime, "the session may not outlive the token (KIP-368)");
    }
    // The wrong password, and a token id without tokenauth, are failed logins.
    let mut s = SaslSession::new(config(0));
    s.on_frame_with_tokens(&handshake(1, m.name()), 0, &no_users, &tokens);
    let bare = "n=tok-1,r=clientnonce,tokenauth=true";
    let Outcome::Reply(r) = s.on_frame_with_tokens(&authenticate(2, format!("n,,{bare}").as_bytes()), 0, &no_users, &tokens) else {
        panic!()
    };
    let server_first: SaslAuthenticateResponse = decode(&r, ApiKey::SaslAuthenticate, 2);
    let fin = scram_final(m, "not-the-hmac", bare, std::str::from_utf8(&server_first.auth_bytes).unwrap());
    assert!(matches!(
        s.on_frame_with_tokens(&authenticate(2, fin.as_bytes()), 0, &no_users, &tokens),
        Outcome::Close { reply: Some(_), .. }
    ));
    let mut s = SaslSession::new(config(0));
    s.on_frame_with_tokens(&handshake(1, m.name()), 0, &no_users, &tokens);
    assert!(matches!(
        s.on_frame_with_tokens(&authenticate(2, b"n,,n=tok-1,r=clientnonce"), 0, &no_users, &tokens),
        Outcome::Close { reply: Some(_), .. }
    ));
    assert!(!s.token_authenticated());
}
