//! DescribeClientQuotas. Sluice stores no client quotas: AlterClientQuotas is not served
//! and no quota key is accepted, so the true answer to any valid filter is that no entity
//! has a quota. Kafka's `kafka-configs --describe --entity-type users` asks this before
//! it describes SCRAM credentials. A filter Kafka would refuse is refused the same way.

use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::error::Error;

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

pub async fn describe(_ctx: &Ctx<'_>, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    match check_filter(&req) {
        Ok(()) => DescribeClientQuotasResponse::default().with_entries(Some(Vec::new())),
        Err(e) => {
            DescribeClientQuotasResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_entries(None)
        }
    }
}
