//! Delegation token decisions of the active controller (Kafka's
//! `DelegationTokenControlManager`), as pure functions of the image, the settings and
//! the time, so the state machine is tested without sockets or clocks.
//!
//! A token is created with expiry `now + delegation.token.expiry.time.ms` and max
//! `now + delegation.token.max.lifetime.ms` (a smaller positive max lifetime from the
//! request wins); expiry never passes max. Renew moves expiry to `now` plus the renew
//! period (at most the default) and expire to `now` plus the expiry period; a negative
//! expiry period removes the token at once. Only the owner and the renewers may renew or
//! expire. Expired tokens are removed every `delegation.token.expiry.check.interval.ms`.

use super::rpc::Response;
use super::Controller;
use crate::auth::token::{self, DelegationToken};
use crate::auth::Principal;
use crate::clock::now_ms;
use crate::config::Settings;
use crate::error::{Error, Result};
use crate::metadata::image::Image;
use crate::metadata::records::Record;

/// What token decisions read from the settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct TokenConfig<'a> {
    /// `delegation.token.secret.key`; tokens are off without it.
    pub secret: Option<&'a str>,
    pub max_lifetime_ms: i64,
    pub expiry_time_ms: i64,
}

impl<'a> TokenConfig<'a> {
    pub(super) fn of(s: &'a Settings) -> TokenConfig<'a> {
        TokenConfig {
            secret: s.delegation_token_secret_key.as_ref().map(|k| k.0.as_str()),
            max_lifetime_ms: s.delegation_token_max_lifetime_ms,
            expiry_time_ms: s.delegation_token_expiry_time_ms,
        }
    }

    fn secret(&self) -> Result<&'a str> {
        self.secret.ok_or(Error::DelegationTokenAuthDisabled)
    }
}

/// What a CreateDelegationToken asks for, once the broker has checked who may ask.
#[derive(Debug, Clone)]
pub(super) struct CreateToken<'a> {
    pub requester: &'a Principal,
    /// None: the requester owns it.
    pub owner: Option<&'a Principal>,
    pub renewers: &'a [Principal],
    /// 0 or less: `delegation.token.max.lifetime.ms`.
    pub max_lifetime_ms: i64,
}

/// A new token, its record, or why not.
pub(super) fn plan_create(cfg: &TokenConfig, now: i64, req: &CreateToken, token_id: String) -> Result<(Record, DelegationToken)> {
    cfg.secret()?;
    if req.renewers.iter().any(|r| r.kind != "User") {
        return Err(Error::InvalidPrincipalType);
    }
    let max_life = if req.max_lifetime_ms > 0 { cfg.max_lifetime_ms.min(req.max_lifetime_ms) } else { cfg.max_lifetime_ms };
    let max_ms = now.saturating_add(max_life);
    let token = DelegationToken {
        token_id,
        owner: req.owner.unwrap_or(req.requester).clone(),
        requester: req.requester.clone(),
        renewers: req.renewers.to_vec(),
        issue_ms: now,
        max_ms,
        expiry_ms: max_ms.min(now.saturating_add(cfg.expiry_time_ms)),
    };
    Ok((Record::DelegationToken { token: token.clone() }, token))
}

/// The token whose HMAC is `hmac`, checked the way renew and expire check it.
fn renewable<'i>(img: &'i Image, cfg: &TokenConfig, now: i64, requester: &Principal, hmac: &[u8]) -> Result<&'i DelegationToken> {
    let secret = cfg.secret()?;
    let t = img.tokens.values().find(|t| token::hmac(secret, &t.token_id) == hmac).ok_or(Error::DelegationTokenNotFound)?;
    if t.expired(now) {
        return Err(Error::DelegationTokenExpired);
    }
    if !t.renewable_by(requester) {
        return Err(Error::DelegationTokenOwnerMismatch);
    }
    Ok(t)
}

/// RenewDelegationToken: the new expiry and its record.
pub(super) fn plan_renew(
    img: &Image,
    cfg: &TokenConfig,
    now: i64,
    requester: &Principal,
    hmac: &[u8],
    period_ms: i64,
) -> Result<(Record, i64)> {
    let t = renewable(img, cfg, now, requester, hmac)?;
    let period = if period_ms > 0 { cfg.expiry_time_ms.min(period_ms) } else { cfg.expiry_time_ms };
    let expiry = t.max_ms.min(now.saturating_add(period));
    Ok((Record::DelegationToken { token: DelegationToken { expiry_ms: expiry, ..t.clone() } }, expiry))
}

/// ExpireDelegationToken: the new expiry (the negative period itself when the token is
/// removed at once, as Kafka answers) and the record.
pub(super) fn plan_expire(
    img: &Image,
    cfg: &TokenConfig,
    now: i64,
    requester: &Principal,
    hmac: &[u8],
    period_ms: i64,
) -> Result<(Record, i64)> {
    let t = renewable(img, cfg, now, requester, hmac)?;
    if period_ms < 0 {
        return Ok((Record::RemoveDelegationToken { token_id: t.token_id.clone() }, period_ms));
    }
    let expiry = t.max_ms.min(now.saturating_add(period_ms));
    Ok((Record::DelegationToken { token: DelegationToken { expiry_ms: expiry, ..t.clone() } }, expiry))
}

/// The removals of every token expired at `now`.
pub(super) fn plan_sweep(img: &Image, now: i64) -> Vec<Record> {
    img.tokens.values().filter(|t| t.expired(now)).map(|t| Record::RemoveDelegationToken { token_id: t.token_id.clone() }).collect()
}

impl Controller {
    pub(super) async fn create_token(
        &self,
        requester: Principal,
        owner: Option<Principal>,
        renewers: Vec<Principal>,
        max_lifetime_ms: i64,
    ) -> Result<Response> {
        let img = self.image();
        let settings = self.settings_from(&img);
        let req = CreateToken { requester: &requester, owner: owner.as_ref(), renewers: &renewers, max_lifetime_ms };
        let (result, offset) = match plan_create(&TokenConfig::of(&settings), now_ms(), &req, uuid::Uuid::new_v4().to_string()) {
            Ok((rec, t)) => {
                let offset = self.quorum.propose(vec![rec]).await?;
                tracing::info!(token = %t.token_id, owner = %t.owner, requester = %t.requester, "delegation token created");
                (Ok(t), offset)
            }
            Err(e) => (Err(e), img.offset),
        };
        Ok(Response::Token { result, offset })
    }

    /// Renew (`expire` false) or expire a token.
    pub(super) async fn change_token(&self, requester: Principal, hmac: Vec<u8>, period_ms: i64, expire: bool) -> Result<Response> {
        let img = self.image();
        let settings = self.settings_from(&img);
        let cfg = TokenConfig::of(&settings);
        let plan = if expire {
            plan_expire(&img, &cfg, now_ms(), &requester, &hmac, period_ms)
        } else {
            plan_renew(&img, &cfg, now_ms(), &requester, &hmac, period_ms)
        };
        let (result, offset) = match plan {
            Ok((rec, expiry)) => (Ok(expiry), self.quorum.propose(vec![rec]).await?),
            Err(e) => (Err(e), img.offset),
        };
        Ok(Response::TokenExpiry { result, offset })
    }

    /// Removes expired tokens, at most every `delegation.token.expiry.check.interval.ms`.
    pub(super) async fn sweep_tokens(&self, now: i64) {
        let img = self.image();
        let interval = self.settings_from(&img).delegation_token_expiry_check_interval_ms;
        {
            let mut last = self.last_token_sweep.lock();
            if now - *last < interval {
                return;
            }
            *last = now;
        }
        let recs = plan_sweep(&img, now);
        if recs.is_empty() {
            return;
        }
        tracing::info!(tokens = recs.len(), "removing expired delegation tokens");
        if let Err(e) = self.quorum.propose(recs).await {
            tracing::warn!(error = %e, "could not remove expired delegation tokens");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "the-secret";
    const DAY: i64 = 86_400_000;

    fn cfg() -> TokenConfig<'static> {
        TokenConfig { secret: Some(SECRET), max_lifetime_ms: 7 * DAY, expiry_time_ms: DAY }
    }

    fn alice() -> Principal {
        Principal::user("alice")
    }

    /// Creates a token owned by alice with bob as renewer, applied to `img`.
    fn create(img: &mut Image, now: i64, id: &str, max_lifetime_ms: i64) -> DelegationToken {
        let renewers = [Principal::user("bob")];
        let req = CreateToken { requester: &alice(), owner: None, renewers: &renewers, max_lifetime_ms };
        let (rec, t) = plan_create(&cfg(), now, &req, id.into()).unwrap();
        img.apply(img.offset + 1, &rec);
        t
    }

    fn apply(img: &mut Image, rec: &Record) {
        img.apply(img.offset + 1, rec);
    }

    #[test]
    fn create_caps_expiry_by_max_lifetime() {
        let mut img = Image::default();
        let t = create(&mut img, 1000, "t1", -1);
        assert_eq!((t.issue_ms, t.expiry_ms, t.max_ms), (1000, 1000 + DAY, 1000 + 7 * DAY));
        assert_eq!((t.owner.clone(), t.requester.clone()), (alice(), alice()));
        assert_eq!(img.tokens["t1"], t);
        // A shorter max lifetime than the expiry time caps the expiry too; a longer one
        // than the broker's is cut to the broker's.
        let t = create(&mut img, 1000, "t2", 60_000);
        assert_eq!((t.expiry_ms, t.max_ms), (61_000, 61_000));
        let t = create(&mut img, 1000, "t3", 30 * DAY);
        assert_eq!(t.max_ms, 1000 + 7 * DAY);
    }

    #[test]
    fn create_for_another_owner_keeps_the_requester() {
        let owner = Principal::user("carol");
        let req = CreateToken { requester: &alice(), owner: Some(&owner), renewers: &[], max_lifetime_ms: 0 };
        let (_, t) = plan_create(&cfg(), 5, &req, "t".into()).unwrap();
        assert_eq!((t.owner, t.requester), (owner, alice()));
    }

    #[test]
    fn create_refuses_without_a_secret_and_non_user_renewers() {
        let off = TokenConfig { secret: None, ..cfg() };
        let req = CreateToken { requester: &alice(), owner: None, renewers: &[], max_lifetime_ms: 0 };
        assert_eq!(plan_create(&off, 0, &req, "t".into()).unwrap_err(), Error::DelegationTokenAuthDisabled);
        let renewers = [Principal { kind: "Group".into(), name: "ops".into() }];
        let req = CreateToken { renewers: &renewers, ..req };
        assert_eq!(plan_create(&cfg(), 0, &req, "t".into()).unwrap_err(), Error::InvalidPrincipalType);
    }

    #[test]
    fn renew_extends_up_to_max_and_only_for_owner_and_renewers() {
        let mut img = Image::default();
        let t = create(&mut img, 0, "t1", 2 * DAY);
        let hmac = token::hmac(SECRET, "t1");
        // Half a day in, the default period: a day from now.
        let (rec, expiry) = plan_renew(&img, &cfg(), DAY / 2, &alice(), &hmac, -1).unwrap();
        assert_eq!(expiry, DAY / 2 + DAY);
        apply(&mut img, &rec);
        assert_eq!(img.tokens["t1"].expiry_ms, DAY / 2 + DAY);
        // A shorter period is taken; a longer one is cut to the default; never past max.
        assert_eq!(plan_renew(&img, &cfg(), DAY, &Principal::user("bob"), &hmac, 1000).unwrap().1, DAY + 1000);
        assert_eq!(plan_renew(&img, &cfg(), DAY, &alice(), &hmac, 5 * DAY).unwrap().1, t.max_ms);
        assert_eq!(plan_renew(&img, &cfg(), DAY, &Principal::user("eve"), &hmac, -1).unwrap_err(), Error::DelegationTokenOwnerMismatch);
        assert_eq!(plan_renew(&img, &cfg(), DAY, &alice(), b"not-a-token", -1).unwrap_err(), Error::DelegationTokenNotFound);
        // The HMAC of the token under another secret names no token.
        assert_eq!(plan_renew(&img, &cfg(), DAY, &alice(), &token::hmac("other", "t1"), -1).unwrap_err(), Error::DelegationTokenNotFound);
        // Past its expiry it cannot be renewed.
        assert_eq!(plan_renew(&img, &cfg(), 3 * DAY, &alice(), &hmac, -1).unwrap_err(), Error::DelegationTokenExpired);
        let off = TokenConfig { secret: None, ..cfg() };
        assert_eq!(plan_renew(&img, &off, DAY, &alice(), &hmac, -1).unwrap_err(), Error::DelegationTokenAuthDisabled);
    }

    #[test]
    fn expire_now_removes_and_a_period_moves_expiry() {
        let mut img = Image::default();
        create(&mut img, 0, "t1", -1);
        let hmac = token::hmac(SECRET, "t1");
        let (rec, expiry) = plan_expire(&img, &cfg(), 100, &alice(), &hmac, 5000).unwrap();
        assert_eq!(expiry, 5100);
        apply(&mut img, &rec);
        assert_eq!(img.tokens["t1"].expiry_ms, 5100);
        assert_eq!(plan_expire(&img, &cfg(), 100, &Principal::user("eve"), &hmac, -1).unwrap_err(), Error::DelegationTokenOwnerMismatch);
        let (rec, expiry) = plan_expire(&img, &cfg(), 200, &Principal::user("bob"), &hmac, -1).unwrap();
        assert_eq!((rec.clone(), expiry), (Record::RemoveDelegationToken { token_id: "t1".into() }, -1));
        apply(&mut img, &rec);
        assert!(img.tokens.is_empty());
        assert_eq!(plan_expire(&img, &cfg(), 300, &alice(), &hmac, -1).unwrap_err(), Error::DelegationTokenNotFound);
    }

    #[test]
    fn sweep_removes_only_expired_tokens() {
        let mut img = Image::default();
        create(&mut img, 0, "short", 1000);
        create(&mut img, 0, "long", -1);
        assert!(plan_sweep(&img, 1000).is_empty(), "expired means strictly past");
        let recs = plan_sweep(&img, 1001);
        assert_eq!(recs, [Record::RemoveDelegationToken { token_id: "short".into() }]);
        for r in &recs {
            apply(&mut img, r);
        }
        assert_eq!(img.tokens.keys().collect::<Vec<_>>(), ["long"]);
        assert_eq!(plan_sweep(&img, DAY + 1).len(), 1);
    }

    #[test]
    fn tokens_survive_a_snapshot() {
        let mut img = Image::default();
        let t = create(&mut img, 7, "t1", -1);
        let back = Image::from_snapshot(&img.to_snapshot()).unwrap();
        assert_eq!(back.tokens["t1"], t);
    }
}
