//! DescribeClientQuotas (answered from this broker's metadata image, as Kafka's brokers
//! answer it) and AlterClientQuotas (decided by the controller), and the byte-rate quota
//! checks of Produce and Fetch (KIP-13, KIP-219).

use kafka_protocol::messages::alter_client_quotas_response as alter_resp;
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::QuotaAlteration;
use crate::error::Error;
use crate::quota::resolve::Governing;
use crate::quota::{QuotaEntity, ThrottleKind};

/// Kafka's `ClientQuotaFilterComponent` match types.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

fn check_filter(req: &DescribeClientQuotasRequest) -> Result<(), Error> {
    let mut seen = Vec::new();
    for c in &req.components {
        let t = c.entity_type.as_str();
        if !["user", "client-id", "ip"].contains(&t) {
            return Err(Error::InvalidRequest(format!("Custom entity type '{t}' not supported")));
        }
        if seen.contains(&t) {
            return Err(Error::InvalidRequest(format!("Duplicate {t} filter component entity type")));
        }
        seen.push(t);
        match c.match_type {
            MATCH_EXACT if c._match.is_none() => {
                return Err(Error::InvalidRequest("Request specified exact match type but no match".into()))
            }
            MATCH_DEFAULT if c._match.is_some() => {
                return Err(Error::InvalidRequest("Request specified default match type with a match".into()))
            }
            MATCH_EXACT | MATCH_DEFAULT | MATCH_SPECIFIED => {}
            m => return Err(Error::InvalidRequest(format!("Unknown match type {m}"))),
        }
    }
    if seen.contains(&"ip") && seen.len() > 1 {
        return Err(Error::InvalidRequest(
            "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component."
                .into(),
        ));
    }
    Ok(())
}

/// Whether `entity` passes the filter (Kafka's `ClientQuotasImage.describe`): every
/// component's type is in the entity with the name it asks for (exact: that name, default:
/// the default, specified: any); `strict` also wants no other type in the entity.
fn matches(entity: &QuotaEntity, req: &DescribeClientQuotasRequest) -> bool {
    if req.strict && entity.parts().len() != req.components.len() {
        return false;
    }
    req.components.iter().all(|c| match entity.part(c.entity_type.as_str()) {
        None => false,
        Some(name) => match c.match_type {
            MATCH_EXACT => name.as_wire() == c._match.as_deref(),
            MATCH_DEFAULT => name.as_wire().is_none(),
            _ => true,
        },
    })
}

pub async fn describe(ctx: &Ctx<'_>, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    let refuse = |e: Error| {
        DescribeClientQuotasResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_entries(None)
    };
    if let Err(e) = ctx.check_cluster(Operation::DescribeConfigs) {
        return refuse(e);
    }
    if let Err(e) = check_filter(&req) {
        return refuse(e);
    }
    let img = ctx.broker.cluster.image();
    let entries = img
        .client_quotas
        .iter()
        .filter(|(entity, _)| matches(entity, &req))
        .map(|(entity, values)| {
            let entity = entity
                .parts()
                .into_iter()
                .map(|(t, n)| EntityData::default().with_entity_type(sb(t)).with_entity_name(n.as_wire().map(sb)))
                .collect();
            let values = values.iter().map(|(k, v)| ValueData::default().with_key(sb(k.clone())).with_value(*v)).collect();
            EntryData::default().with_entity(entity).with_values(values)
        })
        .collect();
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

pub async fn alter(ctx: &Ctx<'_>, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    let alterations: Vec<QuotaAlteration> = req
        .entries
        .iter()
        .map(|e| QuotaAlteration {
            entity: e.entity.iter().map(|p| (p.entity_type.to_string(), p.entity_name.as_ref().map(|n| n.to_string()))).collect(),
            ops: e.ops.iter().map(|o| (o.key.to_string(), (!o.remove).then_some(o.value))).collect(),
        })
        .collect();
    let results = match ctx.check_cluster(Operation::AlterConfigs) {
        Ok(()) if !alterations.is_empty() => ctx.broker.alter_client_quotas(alterations, req.validate_only).await,
        Ok(()) => Vec::new(),
        Err(e) => vec![Err(e); alterations.len()],
    };
    let entries = req
        .entries
        .into_iter()
        .zip(results)
        .map(|(e, r)| {
            let entity = e
                .entity
                .into_iter()
                .map(|p| alter_resp::EntityData::default().with_entity_type(p.entity_type).with_entity_name(p.entity_name))
                .collect();
            // Kafka sends a null message on success (the crate's default is empty).
            let out = alter_resp::EntryData::default().with_entity(entity).with_error_message(None);
            match r {
                Ok(()) => out,
                Err(e) => out.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            }
        })
        .collect();
    AlterClientQuotasResponse::default().with_entries(entries)
}

impl Ctx<'_> {
    /// The byte-rate quota of `kind` that governs this request's client, if any.
    pub(super) fn quota(&self, kind: ThrottleKind) -> Option<Governing> {
        self.broker.quota_for(kind, &self.principal.name, &self.client_id)
    }

    /// Records `bytes` against the client's quota of `kind` and throttles it if it went
    /// over; the throttle time in ms.
    pub(super) fn record_quota(&self, kind: ThrottleKind, gov: &Governing, bytes: usize) -> i32 {
        let ms = self.broker.record_quota(kind, gov, bytes);
        self.throttle(ms);
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::EntityName;
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;

    fn filter(strict: bool, comps: &[(&str, i8, Option<&str>)]) -> DescribeClientQuotasRequest {
        DescribeClientQuotasRequest::default().with_strict(strict).with_components(
            comps
                .iter()
                .map(|(t, m, n)| ComponentData::default().with_entity_type(sb(*t)).with_match_type(*m).with_match(n.map(sb)))
                .collect(),
        )
    }

    #[test]
    fn exact_default_and_specified_matching() {
        let named = |s: &str| Some(EntityName::Named(s.into()));
        let alice_app = QuotaEntity::of(named("alice"), named("app"));
        let alice = QuotaEntity::of(named("alice"), None);
        let default_user = QuotaEntity::of(Some(EntityName::Default), None);
        let all = [&alice_app, &alice, &default_user];
        let hits = |f: DescribeClientQuotasRequest| all.iter().filter(|e| matches(e, &f)).count();
        assert_eq!(hits(filter(false, &[])), 3);
        assert_eq!(hits(filter(true, &[])), 0);
        assert_eq!(hits(filter(false, &[("user", MATCH_EXACT, Some("alice"))])), 2);
        assert_eq!(hits(filter(true, &[("user", MATCH_EXACT, Some("alice"))])), 1);
        assert_eq!(hits(filter(false, &[("user", MATCH_DEFAULT, None)])), 1);
        assert_eq!(hits(filter(false, &[("user", MATCH_SPECIFIED, None)])), 3);
        assert_eq!(hits(filter(false, &[("client-id", MATCH_SPECIFIED, None)])), 1);
        assert_eq!(hits(filter(true, &[("user", MATCH_SPECIFIED, None), ("client-id", MATCH_EXACT, Some("app"))])), 1);
    }
}
