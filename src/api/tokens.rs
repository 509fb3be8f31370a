//! Delegation tokens (KIP-48, KIP-373): Create, Renew and Expire are checked here as
//! Kafka's `KafkaApis` checks them, then decided by the controller; Describe is answered
//! from this broker's metadata image, as Kafka's brokers answer it from their token cache.
//!
//! Token requests come only from connections that proved who they are with a password
//! or a client certificate: never over PLAINTEXT, one-way SSL (no client certificate), or
//! a connection that itself logged in with a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).

use bytes::Bytes;
use kafka_protocol::messages::describe_delegation_token_response::{DescribedDelegationToken, DescribedDelegationTokenRenewer};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::token::{self, DelegationToken};
use crate::auth::{Operation, Principal, ResourceType};
use crate::config::listeners::SecurityProtocol;
use crate::error::Error;

/// The expiry Kafka answers with a refusal made before the controller is asked.
const ERROR_TIMESTAMP: i64 = -1;

/// Kafka's `allowTokenRequests`.
fn token_requests_allowed(ctx: &Ctx<'_>) -> bool {
    !(ctx.token_authenticated
        || ctx.security_protocol == SecurityProtocol::Plaintext
        || (ctx.security_protocol == SecurityProtocol::Ssl && ctx.principal == Principal::anonymous()))
}

fn create_response(ctx: &Ctx<'_>, owner: &Principal, r: Result<DelegationToken, (Error, i64)>) -> CreateDelegationTokenResponse {
    let requester = &ctx.principal;
    let mut resp = CreateDelegationTokenResponse::default();
    match r {
        Ok(t) => {
            let hmac =
                ctx.broker.settings().delegation_token_secret_key.as_ref().map(|k| token::hmac(&k.0, &t.token_id)).unwrap_or_default();
            resp = resp
                .with_principal_type(sb(t.owner.kind.clone()))
                .with_principal_name(sb(t.owner.name.clone()))
                .with_issue_timestamp_ms(t.issue_ms)
                .with_expiry_timestamp_ms(t.expiry_ms)
                .with_max_timestamp_ms(t.max_ms)
                .with_token_id(sb(t.token_id))
                .with_hmac(Bytes::from(hmac));
        }
        Err((e, ts)) => {
            resp = resp
                .with_error_code(e.code())
                .with_principal_type(sb(owner.kind.clone()))
                .with_principal_name(sb(owner.name.clone()))
                .with_issue_timestamp_ms(ts)
                .with_expiry_timestamp_ms(ts)
                .with_max_timestamp_ms(ts);
        }
    }
    // The requester fields exist from v3 (KIP-373) on.
    if ctx.version >= 3 {
        resp = resp
            .with_token_requester_principal_type(sb(requester.kind.clone()))
            .with_token_requester_principal_name(sb(requester.name.clone()));
    }
    resp
}

pub async fn create(ctx: &Ctx<'_>, req: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse {
    let requester = ctx.principal.clone();
    let owner = match req.owner_principal_name.as_ref().filter(|n| !n.is_empty()) {
        Some(name) => {
            Principal { kind: req.owner_principal_type.as_ref().map(|t| t.to_string()).unwrap_or_default(), name: name.to_string() }
        }
        None => requester.clone(),
    };
    if !token_requests_allowed(ctx) {
        return create_response(ctx, &owner, Err((Error::DelegationTokenRequestNotAllowed, ERROR_TIMESTAMP)));
    }
    // KIP-373: a token for someone else needs CREATE_TOKENS on that user.
    if owner != requester && !ctx.allowed(Operation::CreateTokens, ResourceType::User, &owner.to_string()) {
        return create_response(ctx, &owner, Err((Error::DelegationTokenAuthorizationFailed, ERROR_TIMESTAMP)));
    }
    let renewers =
        req.renewers.iter().map(|r| Principal { kind: r.principal_type.to_string(), name: r.principal_name.to_string() }).collect();
    let asked_owner = (owner != requester).then(|| owner.clone());
    // The controller answers its refusals with zero timestamps, as Kafka's does.
    let r = ctx.broker.create_delegation_token(requester, asked_owner, renewers, req.max_lifetime_ms).await.map_err(|e| (e, 0));
    create_response(ctx, &owner, r)
}

pub async fn renew(ctx: &Ctx<'_>, req: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse {
    if !token_requests_allowed(ctx) {
        return RenewDelegationTokenResponse::default()
            .with_error_code(Error::DelegationTokenRequestNotAllowed.code())
            .with_expiry_timestamp_ms(ERROR_TIMESTAMP);
    }
    match ctx.broker.change_delegation_token(ctx.principal.clone(), req.hmac.to_vec(), req.renew_period_ms, false).await {
        Ok(expiry) => RenewDelegationTokenResponse::default().with_expiry_timestamp_ms(expiry),
        Err(e) => RenewDelegationTokenResponse::default().with_error_code(e.code()),
    }
}

pub async fn expire(ctx: &Ctx<'_>, req: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse {
    if !token_requests_allowed(ctx) {
        return ExpireDelegationTokenResponse::default()
            .with_error_code(Error::DelegationTokenRequestNotAllowed.code())
            .with_expiry_timestamp_ms(ERROR_TIMESTAMP);
    }
    match ctx.broker.change_delegation_token(ctx.principal.clone(), req.hmac.to_vec(), req.expiry_time_period_ms, true).await {
        Ok(expiry) => ExpireDelegationTokenResponse::default().with_expiry_timestamp_ms(expiry),
        Err(e) => ExpireDelegationTokenResponse::default().with_error_code(e.code()),
    }
}

pub async fn describe(ctx: &Ctx<'_>, req: DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse {
    let refuse = |e: Error| DescribeDelegationTokenResponse::default().with_error_code(e.code());
    if !token_requests_allowed(ctx) {
        return refuse(Error::DelegationTokenRequestNotAllowed);
    }
    let settings = ctx.broker.settings();
    let Some(secret) = settings.delegation_token_secret_key.as_ref() else {
        return refuse(Error::DelegationTokenAuthDisabled);
    };
    // Null asks for every token; an empty list for none.
    let owners: Option<Vec<Principal>> = req
        .owners
        .as_ref()
        .map(|os| os.iter().map(|o| Principal { kind: o.principal_type.to_string(), name: o.principal_name.to_string() }).collect());
    if owners.as_ref().is_some_and(|o| o.is_empty()) {
        return DescribeDelegationTokenResponse::default();
    }
    let img = ctx.broker.cluster.image();
    let me = &ctx.principal;
    // Kafka's `DelegationTokenManager.filterToken`: asked for, and the requester's own, or
    // DESCRIBE on the token, or DESCRIBE_TOKENS on its owner (KIP-373).
    let visible = |t: &DelegationToken| {
        if owners.as_ref().is_some_and(|os| !os.iter().any(|o| t.owner_or_renewer(o))) {
            return false;
        }
        t.owner_or_renewer(me)
            || ctx.allowed(Operation::Describe, ResourceType::DelegationToken, &t.token_id)
            || ctx.allowed(Operation::DescribeTokens, ResourceType::User, &t.owner.to_string())
    };
    let v3 = ctx.version >= 3;
    let tokens = img
        .tokens
        .values()
        .filter(|t| visible(t))
        .map(|t| {
            let d = DescribedDelegationToken::default()
                .with_principal_type(sb(t.owner.kind.clone()))
                .with_principal_name(sb(t.owner.name.clone()))
                .with_issue_timestamp(t.issue_ms)
                .with_expiry_timestamp(t.expiry_ms)
                .with_max_timestamp(t.max_ms)
                .with_token_id(sb(t.token_id.clone()))
                .with_hmac(Bytes::from(token::hmac(&secret.0, &t.token_id)))
                .with_renewers(
                    t.renewers
                        .iter()
                        .map(|r| {
                            DescribedDelegationTokenRenewer::default()
                                .with_principal_type(sb(r.kind.clone()))
                                .with_principal_name(sb(r.name.clone()))
                        })
                        .collect(),
                );
            if v3 {
                d.with_token_requester_principal_type(sb(t.requester.kind.clone()))
                    .with_token_requester_principal_name(sb(t.requester.name.clone()))
            } else {
                d
            }
        })
        .collect();
    DescribeDelegationTokenResponse::default().with_tokens(tokens)
}
