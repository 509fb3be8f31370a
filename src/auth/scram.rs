//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the key derivations Kafka's
//! `ScramFormatter` makes, and the server side of the exchange, with no I/O.
//!
//! The exchange is client-first → server-first → client-final → server-final. Kafka adds
//! extensions to the client-first message (`tokenauth=true` for delegation tokens);
//! channel binding is never used, so the GS2 header is always `n,,` or `n,a=<authzid>,`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::token::TokenCredential;
use super::Step;
use crate::auth::credential::{ScramCredential, ScramMechanism};

/// The fewest iterations Kafka accepts for either mechanism.
pub const MIN_ITERATIONS: i32 = 4096;
/// The most iterations Kafka's controller accepts (`ScramControlManager.MAX_ITERATIONS`).
pub const MAX_ITERATIONS: i32 = 16384;

/// HMAC of `data` under `key` with the mechanism's hash.
pub fn hmac(m: ScramMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    match m {
        ScramMechanism::Sha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        ScramMechanism::Sha512 => {
            let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes keys of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

/// The mechanism's hash of `data`.
pub fn hash(m: ScramMechanism, data: &[u8]) -> Vec<u8> {
    match m {
        ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
        ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
    }
}

/// `Hi(password, salt, i)` of RFC 5802: PBKDF2 with the mechanism's HMAC.
pub fn salted_password(m: ScramMechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    match m {
        ScramMechanism::Sha256 => pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec(),
        ScramMechanism::Sha512 => pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec(),
    }
}

/// The credential the server stores for a salted password (what Kafka's controller
/// derives from an AlterUserScramCredentials upsertion).
pub fn credential_from_salted(m: ScramMechanism, salt: &[u8], salted: &[u8], iterations: i32) -> ScramCredential {
    let client_key = hmac(m, salted, b"Client Key");
    ScramCredential { salt: salt.to_vec(), stored_key: hash(m, &client_key), server_key: hmac(m, salted, b"Server Key"), iterations }
}

/// A random printable nonce, from the operating system's CSPRNG.
pub fn nonce() -> String {
    let mut b = [0u8; 24];
    getrandom::getrandom(&mut b).expect("the operating system's random source works");
    B64.encode(b).replace(['+', '/', '='], "x")
}

/// Why a SCRAM exchange failed. `Rejected` carries Kafka's message for the client; a
/// plain `Invalid` is reported with the generic "invalid credentials" message, as Kafka
/// does for its `SaslException`s, so a client learns nothing about which part was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Rejected(String),
    Invalid(String),
    /// Refused with `message` for the client and `detail`, which only the log sees.
    Refused {
        message: String,
        detail: String,
    },
}

/// The server's view of one SCRAM exchange.
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
    /// Set once a `tokenauth=true` client-first names a token: its expiry.
    token_expiry: Option<i64>,
}

enum State {
    ClientFirst,
    ClientFinal {
        user: String,
        credential: ScramCredential,
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    Done,
}

/// The client-first message's parts.
struct ClientFirst<'a> {
    authzid: &'a str,
    user: String,
    nonce: &'a str,
    token_auth: bool,
    gs2_header: &'a str,
    bare: &'a str,
}

fn parse_client_first(msg: &str) -> Result<ClientFirst<'_>, String> {
    let rest = msg.strip_prefix("n,").ok_or("the client-first message must start with 'n,' (Kafka supports no channel binding)")?;
    let (authzid, bare) = rest.split_once(',').ok_or("the client-first message has no GS2 header end")?;
    let authzid = if authzid.is_empty() {
        ""
    } else {
        authzid.strip_prefix("a=").ok_or("the client-first message's authorization id must be 'a=<name>'")?
    };
    let mut parts = bare.split(',');
    let name = parts.next().and_then(|p| p.strip_prefix("n=")).ok_or("the client-first message names no user")?;
    let nonce = parts.next().and_then(|p| p.strip_prefix("r=")).ok_or("the client-first message has no nonce")?;
    if nonce.is_empty() || !nonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',') {
        return Err("the client nonce must be printable characters".into());
    }
    let mut token_auth = false;
    for ext in parts {
        let (k, v) = ext.split_once('=').ok_or("a client-first extension must be key=value")?;
        match k {
            "tokenauth" => token_auth = v.eq_ignore_ascii_case("true"),
            _ => return Err(format!("unsupported SCRAM extension '{k}'")),
        }
    }
    let gs2_header = &msg[..msg.len() - bare.len()];
    Ok(ClientFirst { authzid, user: sasl_name_to_user(name)?, nonce, token_auth, gs2_header, bare })
}

/// RFC 5802's saslname: `=2C` is a comma and `=3D` an equals sign; any other `=` is malformed.
fn sasl_name_to_user(name: &str) -> Result<String, String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err("the user name has an '=' that is not =2C or =3D".into()),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A user name as RFC 5802's saslname: `=` as `=3D` and `,` as `=2C`.
pub fn user_to_sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

impl ScramServer {
    /// A new exchange for `mechanism`.
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer { mechanism, state: State::ClientFirst, token_expiry: None }
    }

    /// The expiry of the delegation token this exchange logs in with, if it does.
    pub fn token_expiry(&self) -> Option<i64> {
        self.token_expiry
    }

    /// The mechanism this exchange uses.
    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Takes one client message. `lookup` finds a user's stored credential; `nonce` is the
    /// server's nonce part (random in production, fixed in the RFC vector tests).
    pub fn step(
        &mut self,
        input: &[u8],
        lookup: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
        nonce: &dyn Fn() -> String,
    ) -> Result<Step, Failure> {
        self.step_with_tokens(input, lookup, &|_, _| None, nonce)
    }

    /// [`step`](Self::step), where a `tokenauth=true` client-first names a delegation token
    /// that `tokens` finds by id: the password is the token's HMAC, and the exchange ends
    /// authenticated as the token's owner, as Kafka's `ScramSaslServer` does.
    pub fn step_with_tokens(
        &mut self,
        input: &[u8],
        lookup: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
        tokens: &dyn Fn(&str, ScramMechanism) -> Option<TokenCredential>,
        nonce: &dyn Fn() -> String,
    ) -> Result<Step, Failure> {
        let msg = std::str::from_utf8(input).map_err(|_| Failure::Invalid("a SCRAM message must be UTF-8".into()))?;
        match std::mem::replace(&mut self.state, State::Done) {
            State::ClientFirst => {
                let first = parse_client_first(msg).map_err(Failure::Invalid)?;
                // A token login proves the token id and acts as the token's owner.
                let (credential, authorized) = if first.token_auth {
                    let t = tokens(&first.user, self.mechanism)
                        .ok_or_else(|| Failure::Invalid(format!("Token Authentication failed: Invalid tokenId : {}", first.user)))?;
                    self.token_expiry = Some(t.expiry_ms);
                    (t.credential, t.owner.name)
                } else {
                    let c = lookup(&first.user, self.mechanism)
                        .ok_or_else(|| Failure::Invalid("Authentication failed: Invalid user credentials".into()))?;
                    (c, first.user.clone())
                };
                if !first.authzid.is_empty() && sasl_name_to_user(first.authzid).ok().as_deref() != Some(first.user.as_str()) {
                    return Err(Failure::Rejected(
                        "Authentication failed: Client requested an authorization id that is different from username".into(),
                    ));
                }
                if credential.iterations < MIN_ITERATIONS {
                    return Err(Failure::Invalid(format!(
                        "Iterations {} is less than the minimum {MIN_ITERATIONS}",
                        credential.iterations
                    )));
                }
                let full_nonce = format!("{}{}", first.nonce, nonce());
                let server_first = format!("r={full_nonce},s={},i={}", B64.encode(&credential.salt), credential.iterations);
                let out = server_first.clone().into_bytes();
                self.state = State::ClientFinal {
                    user: authorized,
                    credential,
                    gs2_header: first.gs2_header.to_string(),
                    client_first_bare: first.bare.to_string(),
                    server_first,
                    nonce: full_nonce,
                };
                Ok(Step::Continue(out))
            }
            State::ClientFinal { user, credential, gs2_header, client_first_bare, server_first, nonce } => {
                let (without_proof, proof) =
                    msg.rsplit_once(",p=").ok_or_else(|| Failure::Invalid("the client-final message has no proof".into()))?;
                let mut parts = without_proof.split(',');
                let binding = parts.next().and_then(|p| p.strip_prefix("c="));
                let got_nonce = parts.next().and_then(|p| p.strip_prefix("r="));
                if parts.any(|p| !p.contains('=')) {
                    return Err(Failure::Invalid("the client-final message is malformed".into()));
                }
                // Without channel binding the binding data is the client-first message's GS2 header.
                if binding.and_then(|b| B64.decode(b).ok()).as_deref() != Some(gs2_header.as_bytes()) {
                    return Err(Failure::Invalid("the client-final message's channel binding is invalid".into()));
                }
                if got_nonce != Some(nonce.as_str()) {
                    return Err(Failure::Invalid("Invalid client nonce in the final client message.".into()));
                }
                let proof = B64.decode(proof).map_err(|_| Failure::Invalid("the client proof is not base64".into()))?;
                let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
                let m = self.mechanism;
                let signature = hmac(m, &credential.stored_key, auth_message.as_bytes());
                if proof.len() != signature.len() {
                    return Err(Failure::Invalid("Invalid client credentials".into()));
                }
                let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
                if !bool::from(hash(m, &client_key).ct_eq(&credential.stored_key)) {
                    return Err(Failure::Invalid("Invalid client credentials".into()));
                }
                let server_signature = hmac(m, &credential.server_key, auth_message.as_bytes());
                Ok(Step::Done { response: format!("v={}", B64.encode(server_signature)).into_bytes(), user })
            }
            State::Done => Err(Failure::Invalid("the SCRAM exchange is already over".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3: user "user", password "pencil", 4096 iterations.
    const RFC7677_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const RFC7677_SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const RFC7677_SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const RFC7677_CLIENT_FINAL: &str =
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const RFC7677_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn pencil(m: ScramMechanism, salt: &[u8], iterations: i32) -> ScramCredential {
        credential_from_salted(m, salt, &salted_password(m, b"pencil", salt, iterations as u32), iterations)
    }

    #[test]
    fn rfc7677_sha256_vector() {
        let salt = B64.decode(RFC7677_SALT).unwrap();
        let cred = pencil(ScramMechanism::Sha256, &salt, 4096);
        let lookup = move |u: &str, _m: ScramMechanism| (u == "user").then(|| cred.clone());
        let fixed = || RFC7677_SERVER_NONCE.to_string();
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        let first = s.step(RFC7677_CLIENT_FIRST.as_bytes(), &lookup, &fixed).unwrap();
        let want_first = format!("r=rOprNGfwEbeRWgbNEkqO{RFC7677_SERVER_NONCE},s={RFC7677_SALT},i=4096");
        assert_eq!(first, Step::Continue(want_first.into_bytes()));
        let done = s.step(RFC7677_CLIENT_FINAL.as_bytes(), &lookup, &fixed).unwrap();
        assert_eq!(done, Step::Done { response: RFC7677_SERVER_FINAL.as_bytes().to_vec(), user: "user".into() });
    }

    #[test]
    fn rfc7677_sha256_vector_with_a_wrong_password_fails() {
        let salt = B64.decode(RFC7677_SALT).unwrap();
        let m = ScramMechanism::Sha256;
        let cred = credential_from_salted(m, &salt, &salted_password(m, b"pencil2", &salt, 4096), 4096);
        let lookup = move |_: &str, _m: ScramMechanism| Some(cred.clone());
        let fixed = || RFC7677_SERVER_NONCE.to_string();
        let mut s = ScramServer::new(m);
        s.step(RFC7677_CLIENT_FIRST.as_bytes(), &lookup, &fixed).unwrap();
        assert_eq!(s.step(RFC7677_CLIENT_FINAL.as_bytes(), &lookup, &fixed), Err(Failure::Invalid("Invalid client credentials".into())));
    }

    /// A client as RFC 5802 describes it, for both mechanisms.
    fn client_final(m: ScramMechanism, password: &str, client_first_bare: &str, server_first: &str) -> (String, Vec<u8>) {
        let fields: Vec<&str> = server_first.split(',').collect();
        let salt = B64.decode(&fields[1][2..]).unwrap();
        let iterations: u32 = fields[2][2..].parse().unwrap();
        let salted = salted_password(m, password.as_bytes(), &salt, iterations);
        let client_key = hmac(m, &salted, b"Client Key");
        let stored = hash(m, &client_key);
        let without_proof = format!("c=biws,{}", fields[0]);
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let sig = hmac(m, &stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let server_sig = hmac(m, &hmac(m, &salted, b"Server Key"), auth.as_bytes());
        (format!("{without_proof},p={}", B64.encode(proof)), server_sig)
    }

    #[test]
    fn round_trip_with_a_client_for_both_mechanisms() {
        for m in ScramMechanism::ALL {
            let salt = b"some salt".to_vec();
            let cred = credential_from_salted(m, &salt, &salted_password(m, b"alice-secret", &salt, 8192), 8192);
            let lookup = move |u: &str, mm: ScramMechanism| (u == "al,ice" && mm == m).then(|| cred.clone());
            for (password, ok) in [("alice-secret", true), ("wrong", false)] {
                let mut s = ScramServer::new(m);
                let bare = "n=al=2Cice,r=clientnonce";
                let Step::Continue(first) = s.step(format!("n,,{bare}").as_bytes(), &lookup, &nonce).unwrap() else { panic!() };
                let first = String::from_utf8(first).unwrap();
                assert!(first.starts_with("r=clientnonce") && first.len() > "r=clientnonce".len() + 20, "{first}");
                let (fin, server_sig) = client_final(m, password, bare, &first);
                match s.step(fin.as_bytes(), &lookup, &nonce) {
                    Ok(Step::Done { response, user }) => {
                        assert!(ok);
                        assert_eq!(user, "al,ice");
                        assert_eq!(response, format!("v={}", B64.encode(server_sig)).into_bytes());
                    }
                    Err(Failure::Invalid(msg)) => assert!(!ok && msg == "Invalid client credentials"),
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn malformed_and_unknown_and_token_messages_fail() {
        let lookup = |_: &str, _m: ScramMechanism| None;
        for bad in [
            &b""[..],
            b"y,,n=u,r=abc",
            b"p=tls-unique,,n=u,r=abc",
            b"n,,r=abc",
            b"n,,n=u",
            b"n,,n=u=,r=abc",
            b"n,,n=u,r=abc,foo=bar",
            b"n,x,n=u,r=abc",
            b"\xff\xfe",
        ] {
            let r = ScramServer::new(ScramMechanism::Sha256).step(bad, &lookup, &nonce);
            assert!(matches!(r, Err(Failure::Invalid(_))), "{:?} gave {r:?}", String::from_utf8_lossy(bad));
        }
        let r = ScramServer::new(ScramMechanism::Sha256).step(b"n,,n=nobody,r=abc", &lookup, &nonce);
        assert_eq!(r, Err(Failure::Invalid("Authentication failed: Invalid user credentials".into())));
        let r = ScramServer::new(ScramMechanism::Sha512).step(b"n,,n=tokenid,r=abc,tokenauth=true", &lookup, &nonce);
        assert!(matches!(r, Err(Failure::Invalid(m)) if m.contains("Token Authentication failed")));
    }

    #[test]
    fn a_token_login_proves_the_hmac_and_acts_as_the_owner() {
        use crate::auth::token::{self, TokenCredential};
        use crate::auth::Principal;
        let no_users = |_: &str, _: ScramMechanism| None;
        for m in ScramMechanism::ALL {
            let cred = token::scram_credential("secret", "tok-1", m, b"token salt");
            let tokens = move |id: &str, mm: ScramMechanism| {
                (id == "tok-1" && mm == m).then(|| TokenCredential {
                    credential: cred.clone(),
                    owner: Principal::user("alice"),
                    expiry_ms: 99,
                })
            };
            let hmac = token::hmac_base64("secret", "tok-1");
            for (password, ok) in [(hmac.as_str(), true), ("wrong", false), (token::hmac_base64("other", "tok-1").as_str(), false)] {
                let mut s = ScramServer::new(m);
                let bare = "n=tok-1,r=clientnonce,tokenauth=true";
                let Step::Continue(first) = s.step_with_tokens(format!("n,,{bare}").as_bytes(), &no_users, &tokens, &nonce).unwrap() else {
                    panic!()
                };
                assert_eq!(s.token_expiry(), Some(99));
                let (fin, _) = client_final(m, password, bare, &String::from_utf8(first).unwrap());
                match s.step_with_tokens(fin.as_bytes(), &no_users, &tokens, &nonce) {
                    Ok(Step::Done { user, .. }) => assert!(ok && user == "alice", "{password}: {user}"),
                    Err(Failure::Invalid(m)) => assert!(!ok && m == "Invalid client credentials"),
                    other => panic!("{other:?}"),
                }
            }
            // Without tokenauth a token id is just an unknown user; an unknown token fails at once.
            let r = ScramServer::new(m).step_with_tokens(b"n,,n=tok-1,r=abc", &no_users, &tokens, &nonce);
            assert_eq!(r, Err(Failure::Invalid("Authentication failed: Invalid user credentials".into())));
            let r = ScramServer::new(m).step_with_tokens(b"n,,n=tok-2,r=abc,tokenauth=true", &no_users, &tokens, &nonce);
            assert_eq!(r, Err(Failure::Invalid("Token Authentication failed: Invalid tokenId : tok-2".into())));
        }
    }

    #[test]
    fn an_authzid_other_than_the_user_is_rejected() {
        let cred = pencil(ScramMechanism::Sha256, b"salt", 4096);
        let lookup = move |_: &str, _m: ScramMechanism| Some(cred.clone());
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert!(matches!(s.step(b"n,a=admin,n=user,r=abc", &lookup, &nonce), Err(Failure::Rejected(_))));
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert!(matches!(s.step(b"n,a=user,n=user,r=abc", &lookup, &nonce), Ok(Step::Continue(_))));
        // A final message with the wrong nonce, then anything after the exchange ended.
        assert!(s.step(b"c=biws,r=other,p=AAAA", &lookup, &nonce).is_err());
        assert!(s.step(b"n,,n=user,r=abc", &lookup, &nonce).is_err());
    }
}
