//! Delegation token changes: decided by the controller, then applied here before the
//! client hears the answer, so a token works on this broker as soon as it is returned.

use super::Broker;
use crate::auth::token::DelegationToken;
use crate::auth::Principal;
use crate::controller::rpc::{Hmac, Request, Response};
use crate::error::{Error, Result};

impl Broker {
    /// CreateDelegationToken, once the API layer has checked who may ask.
    pub async fn create_delegation_token(
        &self,
        requester: Principal,
        owner: Option<Principal>,
        renewers: Vec<Principal>,
        max_lifetime_ms: i64,
    ) -> Result<DelegationToken> {
        match self.submit(Request::CreateToken { requester, owner, renewers, max_lifetime_ms }, None).await? {
            Response::Token { result, .. } => result,
            other => Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))),
        }
    }

    /// RenewDelegationToken (`expire` false) or ExpireDelegationToken: the new expiry.
    pub async fn change_delegation_token(&self, requester: Principal, hmac: Vec<u8>, period_ms: i64, expire: bool) -> Result<i64> {
        let hmac = Hmac(hmac);
        let req =
            if expire { Request::ExpireToken { requester, hmac, period_ms } } else { Request::RenewToken { requester, hmac, period_ms } };
        match self.submit(req, None).await? {
            Response::TokenExpiry { result, .. } => result,
            other => Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))),
        }
    }
}
