//! Delegation tokens (KIP-48, KIP-373): what a token is, its HMAC, and the SCRAM
//! credential a client logs in with when it authenticates with one.
//!
//! The HMAC is HmacSHA512 under `delegation.token.secret.key` of the token id's UTF-8
//! bytes, as Kafka's controller computes it. It is never stored: every node that has the
//! secret recomputes it. Clients use it, base64 encoded, as the SCRAM password of the
//! token id, so the SCRAM credential is derived from that string.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha512;

use super::acl::Principal;
use super::credential::{ScramCredential, ScramMechanism};
use super::scram::{credential_from_salted, salted_password, MIN_ITERATIONS};

/// Kafka's `TokenInformation`: who owns a token, who asked for it, who may renew it, and
/// its timestamps (milliseconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationToken {
    pub token_id: String,
    pub owner: Principal,
    /// Who created it: the owner, or (KIP-373) a principal allowed CREATE_TOKENS on the owner.
    pub requester: Principal,
    pub renewers: Vec<Principal>,
    pub issue_ms: i64,
    /// The token cannot be renewed past this.
    pub max_ms: i64,
    /// The token is no longer valid after this, unless renewed before.
    pub expiry_ms: i64,
}

impl DelegationToken {
    /// Past its expiry or its max lifetime at `now_ms`, as Kafka's controller judges it.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.max_ms < now_ms || self.expiry_ms < now_ms
    }

    /// May `p` renew or expire it (Kafka's `allowedToRenew`): the owner and the renewers.
    pub fn renewable_by(&self, p: &Principal) -> bool {
        self.owner == *p || self.renewers.contains(p)
    }

    /// Does the token belong to `p` for describing (Kafka's `ownerOrRenewer`): the owner,
    /// the requester, or a renewer.
    pub fn owner_or_renewer(&self, p: &Principal) -> bool {
        self.owner == *p || self.requester == *p || self.renewers.contains(p)
    }
}

/// HmacSHA512(secret, token id), as Kafka's `DelegationTokenControlManager.createHmac`.
pub fn hmac(secret: &str, token_id: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha512>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(token_id.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The HMAC as clients use it for a password: standard base64.
pub fn hmac_base64(secret: &str, token_id: &str) -> String {
    B64.encode(hmac(secret, token_id))
}

/// What a token login is checked against.
#[derive(Debug, Clone)]
pub struct TokenCredential {
    /// The SCRAM credential whose password is the token's base64 HMAC.
    pub credential: ScramCredential,
    /// The connection acts as the token's owner.
    pub owner: Principal,
    /// The session may not outlive the token (KIP-368).
    pub expiry_ms: i64,
}

/// The SCRAM credential of a token for `mechanism`, with `salt`, at the mechanism's
/// minimum iterations, as Kafka's `DelegationTokenManager` derives the ones it caches.
pub fn scram_credential(secret: &str, token_id: &str, mechanism: ScramMechanism, salt: &[u8]) -> ScramCredential {
    let password = hmac_base64(secret, token_id);
    let salted = salted_password(mechanism, password.as_bytes(), salt, MIN_ITERATIONS as u32);
    credential_from_salted(mechanism, salt, &salted, MIN_ITERATIONS)
}

/// What a login with token `t` is checked against, if tokens are on (`secret`) and the
/// token is valid at `now_ms`. The salt is fresh per login, which a client cannot tell
/// from Kafka's one salt per cached token.
pub fn login_credential(
    secret: Option<&str>,
    t: Option<&DelegationToken>,
    mechanism: ScramMechanism,
    now_ms: i64,
) -> Option<TokenCredential> {
    let (secret, t) = (secret?, t?);
    if t.expired(now_ms) {
        return None;
    }
    Some(TokenCredential {
        credential: scram_credential(secret, &t.token_id, mechanism, &random_salt()),
        owner: t.owner.clone(),
        expiry_ms: t.expiry_ms,
    })
}

/// A random salt for a token credential, from the operating system's CSPRNG.
pub fn random_salt() -> Vec<u8> {
    let mut b = [0u8; 24];
    getrandom::getrandom(&mut b).expect("the operating system's random source works");
    b.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_hmac_sha512_of_the_token_id() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let h = hmac("Jefe", "what do ya want for nothing?");
        let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
        assert_eq!(hmac_base64("Jefe", "what do ya want for nothing?"), B64.encode(&h));
        assert_ne!(hmac("other", "what do ya want for nothing?"), h);
    }

    #[test]
    fn who_may_renew_and_describe() {
        let t = DelegationToken {
            token_id: "t".into(),
            owner: Principal::user("alice"),
            requester: Principal::user("svc"),
            renewers: vec![Principal::user("bob")],
            issue_ms: 0,
            max_ms: 100,
            expiry_ms: 50,
        };
        assert!(t.renewable_by(&Principal::user("alice")) && t.renewable_by(&Principal::user("bob")));
        assert!(!t.renewable_by(&Principal::user("svc")), "the requester may describe but not renew");
        assert!(t.owner_or_renewer(&Principal::user("svc")) && !t.owner_or_renewer(&Principal::user("eve")));
        assert!(!t.expired(50) && t.expired(51));
    }
}
