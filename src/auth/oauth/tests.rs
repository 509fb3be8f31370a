//! The OAUTHBEARER message parser and both validators, with time passed in.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

use super::jwt::{Claims, JwkSet, KeySource, Location, Validator as Signed};
use super::unsecured::{self, Options};
use super::*;
use crate::auth::jaas;

const NOW_MS: i64 = 1_700_000_000_000;
const NOW: i64 = NOW_MS / 1000;

fn first(token: &str) -> Vec<u8> {
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

fn unsigned(claims: serde_json::Value) -> String {
    format!("{}.{}.", B64.encode(br#"{"alg":"none"}"#), B64.encode(claims.to_string()))
}

#[test]
fn client_first_messages() {
    let r = parse_initial(b"n,,\x01auth=Bearer abc.def.\x01\x01").unwrap();
    assert_eq!((r.authzid.as_str(), r.token.as_str(), r.extensions.len()), ("", "abc.def.", 0));
    let r = parse_initial(b"n,a=alice,\x01auth=bearer  t0k-_~+/=\x01traceId=123 x\x01logicalCluster=lkc\x01\x01").unwrap();
    assert_eq!((r.authzid.as_str(), r.token.as_str()), ("alice", "t0k-_~+/="));
    assert_eq!(r.extensions["traceId"], "123 x");
    assert_eq!(r.extensions["logicalCluster"], "lkc");
    let invalid = "Invalid OAUTHBEARER client first message";
    for bad in [
        &b""[..],
        b"\x01",
        b"garbage",
        b"n,,auth=Bearer t\x01\x01",
        b"n,,\x01auth=Bearer t\x01",
        b"y,,\x01auth=Bearer t\x01\x01",
        b"n,b=x,\x01auth=Bearer t\x01\x01",
        b"n,,\x01auth=Bearer t\x01bad key=v\x01\x01",
        b"n,,\x01auth=Bearer t\x01k=\x01\x01",
        b"n,,\x01auth=Bearer \xff\x01\x01",
    ] {
        assert!(parse_initial(bad).unwrap_err().starts_with(invalid), "{bad:?}");
    }
    assert!(parse_initial(b"n,,\x01x=y\x01\x01").unwrap_err().contains("'auth' not specified"));
    assert!(parse_initial(b"n,,\x01auth=Bearer a=b\x01\x01").unwrap_err().contains("invalid 'auth' format"));
    assert!(parse_initial(b"n,,\x01auth=Bearer\x01\x01").unwrap_err().contains("invalid 'auth' format"));
    assert_eq!(parse_initial(b"n,,\x01auth=Basic abc\x01\x01").unwrap_err(), "Invalid scheme in OAUTHBEARER client first message: Basic");
}

#[test]
fn unsecured_tokens() {
    let o = Options::default();
    let good = unsigned(json!({"sub": "alice", "iat": NOW - 10, "exp": NOW + 3600, "scope": ["a", "b"]}));
    let t = unsecured::validate(&o, &good, NOW_MS).unwrap();
    assert_eq!((t.principal.as_str(), t.expires_at_ms, t.issued_at_ms), ("alice", (NOW + 3600) * 1000, Some((NOW - 10) * 1000)));
    assert_eq!(t.scope.len(), 2);
    let bad = |claims: serde_json::Value| unsecured::validate(&o, &unsigned(claims), NOW_MS).unwrap_err().detail;
    assert!(bad(json!({"sub": "alice", "exp": NOW})).contains("on or after the Expiration Time"));
    assert!(bad(json!({"sub": "alice", "exp": NOW - 1})).contains("Expiration Time"));
    assert!(bad(json!({"sub": "alice"})).contains("No expiration time"));
    assert!(bad(json!({"sub": "alice", "exp": "soon"})).contains("not of type Number"));
    assert!(bad(json!({"exp": NOW + 60})).contains("No principal name in JWT claim: sub"));
    assert!(bad(json!({"sub": " ", "exp": NOW + 60})).contains("No principal name"));
    assert!(bad(json!({"sub": 7, "exp": NOW + 60})).contains("not of type String"));
    assert!(bad(json!({"sub": "a", "exp": NOW + 60, "iat": NOW + 1})).contains("Issued At"));
    assert!(bad(json!({"sub": "a", "exp": NOW + 60, "iat": NOW + 60})).contains("Issued At"));
    // iat after exp, both in range of now with skew.
    let skewed = Options { clock_skew_ms: 120_000, ..Options::default() };
    let d = unsecured::validate(&skewed, &unsigned(json!({"sub": "a", "exp": NOW + 30, "iat": NOW + 60})), NOW_MS).unwrap_err().detail;
    assert!(d.contains("was not after the Issued At"), "{d}");
    // The skew lets a just-expired token and a slightly-future iat through.
    assert!(unsecured::validate(&skewed, &unsigned(json!({"sub": "a", "exp": NOW - 60})), NOW_MS).is_ok());
    // Structure.
    for garbage in ["", "a", "a.b", "a.b.c.d", "..", "!!.!!.", "e30.e30.e30"] {
        assert_eq!(unsecured::validate(&o, garbage, NOW_MS).unwrap_err().status, "invalid_token", "{garbage}");
    }
    let signed = format!("{}.{}.c2ln", B64.encode(br#"{"alg":"none"}"#), B64.encode(br#"{"sub":"a","exp":9999999999}"#));
    assert!(unsecured::validate(&o, &signed, NOW_MS).unwrap_err().detail.contains("must not contain a digital signature"));
    let rs = format!("{}.{}.", B64.encode(br#"{"alg":"RS256"}"#), B64.encode(br#"{"sub":"a","exp":9999999999}"#));
    assert!(unsecured::validate(&o, &rs, NOW_MS).unwrap_err().detail.contains("'none'"));
    let arr = format!("{}.{}.", B64.encode(br#"{"alg":"none"}"#), B64.encode(b"[1]"));
    assert_eq!(unsecured::validate(&o, &arr, NOW_MS).unwrap_err().detail, "malformed JSON");
}

#[test]
fn unsecured_options_and_scope() {
    let c = jaas::parse(&format!(
        "{} required unsecuredValidatorPrincipalClaimName=\"user\" unsecuredValidatorScopeClaimName=scp unsecuredValidatorRequiredScope=\"read write\" unsecuredValidatorAllowableClockSkewMs=\"5000\";",
        setup::LOGIN_MODULE
    ))
    .unwrap();
    let o = Options::from_jaas(&c.options).unwrap();
    assert_eq!(
        o,
        Options {
            principal_claim: "user".into(),
            scope_claim: "scp".into(),
            required_scope: vec!["read".into(), "write".into()],
            clock_skew_ms: 5000
        }
    );
    let ok = unsigned(json!({"user": "bob", "exp": NOW + 60, "scp": ["read", "write", "x"]}));
    assert_eq!(unsecured::validate(&o, &ok, NOW_MS).unwrap().principal, "bob");
    let e = unsecured::validate(&o, &unsigned(json!({"user": "bob", "exp": NOW + 60, "scp": ["read"]})), NOW_MS).unwrap_err();
    assert_eq!(e.json(), r#"{"status":"insufficient_scope", "scope":"[read, write]"}"#);
    // A scope string is one scope, as Kafka takes it.
    assert!(unsecured::validate(&o, &unsigned(json!({"user": "bob", "exp": NOW + 60, "scp": "read write"})), NOW_MS).is_err());
    let mut bad = c.options.clone();
    bad.insert("unsecuredValidatorAllowableClockSkewMs".into(), "-1".into());
    assert!(Options::from_jaas(&bad).is_err());
    bad.insert("unsecuredValidatorAllowableClockSkewMs".into(), "soon".into());
    assert!(Options::from_jaas(&bad).is_err());
}

#[test]
fn the_exchange_answers_a_bad_token_with_json_then_fails_on_the_clients_0x01() {
    let v = Validator::Unsecured(Options::default());
    let mut s = OAuthServer::default();
    let expired = unsigned(json!({"sub": "alice", "exp": NOW - 1}));
    let (step, exp) = s.step(&first(&expired), &v, NOW_MS).unwrap();
    assert_eq!((step, exp), (Step::Continue(br#"{"status":"invalid_token"}"#.to_vec()), None));
    match s.step(b"\x01", &v, NOW_MS) {
        Err(Failure::Refused { message, detail }) => {
            assert_eq!(message, r#"{"status":"invalid_token"}"#);
            assert!(detail.contains("Expiration Time"));
        }
        other => panic!("{other:?}"),
    }
    // A 0x01 with no error before it is just a malformed message.
    assert!(matches!(OAuthServer::default().step(b"\x01", &v, NOW_MS), Err(Failure::Invalid(_))));
    assert!(matches!(OAuthServer::default().step(b"junk", &v, NOW_MS), Err(Failure::Invalid(_))));

    let good = unsigned(json!({"sub": "alice", "exp": NOW + 60}));
    let (step, exp) = OAuthServer::default().step(&first(&good), &v, NOW_MS).unwrap();
    assert_eq!((step, exp), (Step::Done { response: vec![], user: "alice".into() }, Some((NOW + 60) * 1000)));
    let as_bob = format!("n,a=bob,\u{1}auth=Bearer {good}\u{1}\u{1}");
    match OAuthServer::default().step(as_bob.as_bytes(), &v, NOW_MS) {
        Err(Failure::Rejected(m)) => assert!(m.contains("authorization id (bob)"), "{m}"),
        other => panic!("{other:?}"),
    }
}

struct Signer {
    key: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Signer { key: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap(), kid }
    }

    fn jwk(&self) -> serde_json::Value {
        let p = self.key.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "x": B64.encode(&p[1..33]), "y": B64.encode(&p[33..65])})
    }

    fn sign(&self, header: serde_json::Value, claims: serde_json::Value) -> String {
        let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let sig = self.key.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", B64.encode(sig.as_ref()))
    }

    fn token(&self, claims: serde_json::Value) -> String {
        self.sign(json!({"alg": "ES256", "kid": self.kid, "typ": "JWT"}), claims)
    }
}

fn signed_validator(claims: Claims, keys: &[&Signer]) -> Signed {
    let src = KeySource::new(Location::File("/dev/null".into()));
    let set = json!({"keys": keys.iter().map(|k| k.jwk()).chain([json!({"kty": "oct", "k": "c2VjcmV0"})]).collect::<Vec<_>>()});
    let parsed = JwkSet::parse(set.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.keys.len(), keys.len(), "symmetric keys are skipped");
    src.set(parsed);
    Signed { claims, keys: Arc::new(src) }
}

#[test]
fn signed_tokens_against_a_jwks() {
    let (k1, other) = (Signer::new("k1"), Signer::new("k2"));
    let v = signed_validator(Claims::default(), &[&k1]);
    let claims = json!({"sub": "alice", "iat": NOW, "exp": NOW + 600, "scope": "read"});
    let t = v.validate(&k1.token(claims.clone()), NOW_MS).unwrap();
    assert_eq!((t.principal.as_str(), t.expires_at_ms), ("alice", (NOW + 600) * 1000));
    assert!(t.scope.contains("read"));

    let bad = |v: &Signed, token: String| v.validate(&token, NOW_MS).unwrap_err().detail;
    // Another key's signature under k1's id, and a key id the set lacks.
    let forged = other.sign(json!({"alg": "ES256", "kid": "k1"}), claims.clone());
    assert!(bad(&v, forged).contains("signature is invalid"));
    assert!(bad(&v, other.token(claims.clone())).contains("Unable to find a suitable verification key"));
    // A payload changed after signing.
    let t = k1.token(claims.clone());
    let parts: Vec<&str> = t.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], B64.encode(json!({"sub": "admin", "iat": NOW, "exp": NOW + 600}).to_string()), parts[2]);
    assert!(bad(&v, tampered).contains("signature is invalid"));
    // alg none, and an RSA algorithm with an EC key.
    assert!(bad(&v, unsigned(claims.clone())).contains("'none'"));
    assert!(bad(&v, k1.sign(json!({"alg": "RS256", "kid": "k1"}), claims.clone())).contains("Unable to find"));
    // Times, with the default 30 s skew.
    assert!(v.validate(&k1.token(json!({"sub": "a", "iat": NOW - 100, "exp": NOW - 20})), NOW_MS).is_ok());
    assert!(bad(&v, k1.token(json!({"sub": "a", "iat": NOW - 100, "exp": NOW - 30}))).contains("no longer valid"));
    assert!(bad(&v, k1.token(json!({"sub": "a", "exp": NOW + 60}))).contains("No iat claim"));
    assert!(bad(&v, k1.token(json!({"sub": "a", "iat": NOW}))).contains("No exp claim"));
    assert!(bad(&v, k1.token(json!({"sub": "a", "iat": NOW, "exp": NOW + 60, "nbf": NOW + 31}))).contains("not yet valid"));
    assert!(bad(&v, k1.token(json!({"sub": " ", "iat": NOW, "exp": NOW + 60}))).contains("sub value must be non-empty"));
    // No audience expected: a token that names one is refused (jose4j's default).
    assert!(bad(&v, k1.token(json!({"sub": "a", "iat": NOW, "exp": NOW + 60, "aud": "x"}))).contains("Audience"));
    for garbage in ["", "a.b", "a.b.c", "e30.e30.", "!.!.!"] {
        assert_eq!(v.validate(garbage, NOW_MS).unwrap_err().status, "invalid_token", "{garbage}");
    }
}

#[test]
fn audience_issuer_and_claim_names() {
    let k = Signer::new("k");
    let claims = Claims {
        expected_audience: vec!["kafka".into(), "other".into()],
        expected_issuer: Some("https://idp".into()),
        sub_claim: "client_id".into(),
        ..Claims::default()
    };
    let v = signed_validator(claims, &[&k]);
    let base = json!({"client_id": "svc", "iat": NOW, "exp": NOW + 60, "iss": "https://idp", "aud": ["x", "kafka"]});
    assert_eq!(v.validate(&k.token(base.clone()), NOW_MS).unwrap().principal, "svc");
    let with = |key: &str, val: serde_json::Value| {
        let mut c = base.clone();
        if val.is_null() {
            c.as_object_mut().unwrap().remove(key);
        } else {
            c[key] = val;
        }
        v.validate(&k.token(c), NOW_MS).unwrap_err().detail
    };
    assert!(with("aud", json!("nope")).contains("Audience"));
    assert!(with("aud", serde_json::Value::Null).contains("No Audience"));
    assert!(with("iss", json!("https://evil")).contains("doesn't match expected value"));
    assert!(with("iss", serde_json::Value::Null).contains("No Issuer"));
    assert!(with("client_id", serde_json::Value::Null).contains("client_id value must be non-empty"));
}

#[test]
fn an_unknown_key_id_asks_for_a_reload_once_a_minute() {
    let (k, unknown) = (Signer::new("k"), Signer::new("new"));
    let v = signed_validator(Claims::default(), &[&k]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let wanted = |v: &Signed| {
        rt.block_on(async { tokio::time::timeout(std::time::Duration::from_millis(20), v.keys.reload_wanted()).await.is_ok() })
    };
    assert!(!wanted(&v));
    let t = unknown.token(json!({"sub": "a", "iat": NOW, "exp": NOW + 60}));
    assert!(v.validate(&t, NOW_MS).is_err());
    assert!(wanted(&v));
    assert!(v.validate(&t, NOW_MS + 1000).is_err());
    assert!(!wanted(&v), "the same id within a minute asks again");
    assert!(v.validate(&t, NOW_MS + 61_000).is_err());
    assert!(wanted(&v));
    // Once the set has the key, the token passes.
    let set = json!({"keys": [k.jwk(), unknown.jwk()]});
    v.keys.set(JwkSet::parse(set.to_string().as_bytes()).unwrap());
    assert!(v.validate(&t, NOW_MS).is_ok());
}

#[test]
fn jwks_documents() {
    assert!(JwkSet::parse(b"not json").is_err());
    assert!(JwkSet::parse(b"{}").is_err());
    assert!(JwkSet::parse(br#"{"keys": 3}"#).is_err());
    let s = JwkSet::parse(br#"{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}, {"kty": "EC", "crv": "P-521", "x": "", "y": ""}, 5]}"#)
        .unwrap();
    assert_eq!(s.keys.len(), 1);
}

#[test]
fn listener_settings() {
    use crate::config::BrokerConfig;
    let build = |extra: &[(&str, &str)]| {
        let mut c = BrokerConfig::default();
        for (k, v) in extra {
            c.set_static(k, v).unwrap();
        }
        setup::for_listener(&c, "SASL_PLAINTEXT")
    };
    let jaas = (
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope=\"a\";",
    );
    assert!(build(&[]).unwrap_err().contains("oauthbearer.sasl.jaas.config"));
    let Validator::Unsecured(o) = build(&[jaas]).unwrap() else { panic!() };
    assert_eq!(o.required_scope, vec!["a".to_string()]);
    let handler = ("listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class", setup::JWKS_HANDLER);
    assert!(build(&[jaas, handler]).unwrap_err().contains("sasl.oauthbearer.jwks.endpoint.url value is required"));
    let url = ("listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "file:///etc/jwks.json");
    assert!(build(&[jaas, handler, url]).unwrap_err().contains(setup::ALLOWED_URLS));
    let allowed = (setup::ALLOWED_URLS, "https://x/y, file:///etc/jwks.json");
    let aud = ("sasl.oauthbearer.expected.audience", "kafka,other");
    let skew = ("listener.name.sasl_plaintext.sasl.oauthbearer.clock.skew.seconds", "5");
    let Validator::Signed(v) = build(&[jaas, handler, url, allowed, aud, skew]).unwrap() else { panic!() };
    assert_eq!(v.keys.location, Location::File("/etc/jwks.json".into()));
    assert_eq!(v.claims, Claims { expected_audience: vec!["kafka".into(), "other".into()], clock_skew_s: 5, ..Claims::default() });
    let http = ("listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "https://x/y");
    let Validator::Signed(v) = build(&[jaas, handler, http, allowed]).unwrap() else { panic!() };
    assert!(matches!(&v.keys.location, Location::Http { refresh_ms: 3_600_000, retry_backoff_ms: 100, retry_backoff_max_ms: 10_000, .. }));
    let ftp = ("listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "ftp://x/y");
    assert!(build(&[jaas, handler, ftp]).unwrap_err().contains("invalid protocol"));
    let other = ("listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class", "com.example.Mine");
    assert!(build(&[jaas, other]).unwrap_err().contains("not built"));
    let plain =
        ("listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required;");
    assert!(build(&[plain]).unwrap_err().contains("OAuthBearerLoginModule"));
}

/// A 2048-bit RSA key (PKCS#1 DER), made for this test with openssl.
const RSA_KEY: &str = "MIIEowIBAAKCAQEAxkiN0cYZWbdxGVA6K6MJ0/jLSW5FmdSKVdPHlrCzAbP4QLr0nUpXAR3lxQyxC1nA61s03LOwhPRHZ7OdEbPVg7FT4lyjX303poBH6kS+/dwpy4iw2AnU+gpcuh9djmxAFYDoUpd0jZ/krH5RWjGuMV/q+YTYFff/c6EvIa8yExhpxF5upGNVA0LlndDnO0LUK0+sSx7f8qz2pqDuldmSfvq1V3cx5/rVBRI4A74ycYiiwmeN2D0DzEV6A7a2xFgPa5XkekWoOvZVhqu+s58m2Kxaa4/L/qLdOWCdJhq1bljkPIexWfY5Uwq82OvwFU4u+AIMVMrj4u36YoH6c7z4ewIDAQABAoIBADlGrgjBk4MR9U6dmSAPyX/8pyRAAUTtW0Rtl4LU6fB8/yIbnxtsZPOComOoReAEfjC+OOfj1AKj2ZiADsgVTYDsEVIa9mpX7mJfPebTEuSb20ra4lKVjHrp0V1GQC0q4dwUT4fEDjv2ywR0vKU0IqBKl8KZ+B1odNb+4XF2fR18dh8R9HdIAO+Jj+yWe4GkQtI1iP5kn/2K2UkjE2yaciJ4hyOtvbdPbCOfx2YHqDInpw5TYtztmrolSveQUoYk4H2Cop9n1g4rYYGa/nKr67VEanb8XSIk/yohTcqXYMLyLDkUZzvLIPD2jp+wqW9Y7tV1lyIoK6eUastv2zL/qnkCgYEA90IZAfBw9SdsF0c29csVO/Xjx8ir/DTkzGO6caa3oJlfVlSuHKB4R1EWWlDs8V9KZWfC4XscbgZGP3KTs3aYqWBp+Exxd7587DweW1gPUzomLQFkSA2Ru8k+sMUJGBkPMZ7C1KIunnKwFP1FSoALkIqGeKPaD62ddeQcHYHkJlcCgYEAzUsxGyu5rxhR3ubUd+8pB/fcYtA8r2D6JcyLQXOhdHJzjUGL36WxwWnhSx0v20mpXUgcbbjRq7J/MYWqX/gWv01njmlSrOVWbqV8f1dBr9JlWQG8Wz6lOmLHeG+oWS/6uOocNxaK5Ce4fvY0s7pOxf10RD+I0+MYT8+X7erzwH0CgYA7J14SP7LWg+LxQsFcVoSy/qXLAzBaO1FNsMJHNGqUCn1riwDIqn98GGMvolK9gF2tGwDdrvVjQS8HOOMrOUFWrFFN7QPscO80GUHt+ohYEf5WIBIcxtpJweC0q778O+qNpXzZIB/lGm0T6G/uXenmX63CKPkfbRrRvIwZZxztKwKBgH6jEoCrQViUTPSOOaReIFZs/ELsJ3McBFLK0WAnnwIBE+yf8VOdl4Ay+ynlsD66OsJzGC5K4vPiIPoAdS/MDuQlMGs15y0GL4IDjT/UKI334FK+cl1q0GuqwVc2sYeKxEPLDmqg+j5xjiqrX6k6lRsnFNCAzLvAC6A384Vs+L3VAoGBAJUfXw7pW2QGDTwfBcBfwbBZR8NqBHkLl1Y5qMOvZz/fIYplJfXUeYnb+h9uyoYJFK5kvTQaBP9keJOqlQYog7iaIvcakHu/P3zKh7BZ+aWFPFP3zUzipVzuJDD2KFCSAO4VhjxQiuVFbAuT/yNSQl8mTQUYtdeW5+Aq3gwRY2IK";

#[test]
fn rs256_tokens() {
    use base64::engine::general_purpose::STANDARD;
    use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
    let key = RsaKeyPair::from_der(&STANDARD.decode(RSA_KEY).unwrap()).unwrap();
    let public: ring::rsa::PublicKeyComponents<Vec<u8>> = key.public().into();
    let jwk = json!({"kty": "RSA", "kid": "r", "alg": "RS256",
        "n": B64.encode(&public.n),
        "e": B64.encode(&public.e)});
    let src = KeySource::new(Location::File("/dev/null".into()));
    src.set(JwkSet::parse(json!({"keys": [jwk]}).to_string().as_bytes()).unwrap());
    let v = Signed { claims: Claims::default(), keys: Arc::new(src) };
    let sign = |header: serde_json::Value, claims: serde_json::Value| {
        let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let mut sig = vec![0; key.public().modulus_len()];
        key.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), input.as_bytes(), &mut sig).unwrap();
        format!("{input}.{}", B64.encode(sig))
    };
    let claims = json!({"sub": "alice", "iat": NOW, "exp": NOW + 60});
    assert_eq!(v.validate(&sign(json!({"alg": "RS256", "kid": "r"}), claims.clone()), NOW_MS).unwrap().principal, "alice");
    // No kid: the one RSA key of the set is tried.
    assert!(v.validate(&sign(json!({"alg": "RS256"}), claims.clone()), NOW_MS).is_ok());
    // The key is for RS256 only.
    assert!(v.validate(&sign(json!({"alg": "RS512", "kid": "r"}), claims.clone()), NOW_MS).unwrap_err().detail.contains("Unable to find"));
    let t = sign(json!({"alg": "RS256", "kid": "r"}), claims);
    // One signature character changed, well inside the signature.
    let i = t.len() - 10;
    let c = if &t[i..i + 1] == "A" { "B" } else { "A" };
    let flipped = format!("{}{c}{}", &t[..i], &t[i + 1..]);
    assert!(v.validate(&flipped, NOW_MS).unwrap_err().detail.contains("signature is invalid"));
}
