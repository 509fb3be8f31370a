//! Client quota decisions of the active controller (Kafka's `ClientQuotaControlManager`).
//!
//! Each entity's changes are checked on their own: an entity with a bad part, key or
//! value gets INVALID_REQUEST and none of its changes, the others go through together.
//! Setting a value a key already has, or removing a key that is not set, writes nothing.

use std::collections::BTreeMap;

use super::rpc::{QuotaAlteration, Response};
use super::Controller;
use crate::error::{Error, Result};
use crate::metadata::image::Image;
use crate::metadata::records::{QuotaEntity, Record};

impl Controller {
    pub(super) async fn alter_client_quotas(&self, alterations: Vec<QuotaAlteration>, validate_only: bool) -> Result<Response> {
        let img = self.image();
        let (recs, results) = plan(&img, &alterations);
        let offset = if recs.is_empty() || validate_only { img.offset } else { self.quorum.propose(recs).await? };
        if !validate_only {
            for (a, r) in alterations.iter().zip(&results) {
                if r.is_ok() {
                    tracing::info!(entity = ?a.entity, "client quotas changed");
                }
            }
        }
        Ok(Response::Each { results, offset })
    }
}

/// The records for a request and each alteration's result, in request order.
pub(super) fn plan(img: &Image, alterations: &[QuotaAlteration]) -> (Vec<Record>, Vec<Result<()>>) {
    let entities: Vec<std::result::Result<QuotaEntity, String>> =
        alterations.iter().map(|a| QuotaEntity::from_wire(a.entity.iter().map(|(t, n)| (t.as_str(), n.as_deref())))).collect();
    let mut count: BTreeMap<&QuotaEntity, usize> = BTreeMap::new();
    for e in entities.iter().flatten() {
        *count.entry(e).or_default() += 1;
    }
    let mut recs = Vec::new();
    let results = alterations
        .iter()
        .zip(&entities)
        .map(|(a, entity)| {
            let entity = entity.as_ref().map_err(|m| Error::InvalidRequest(m.clone()))?;
            if count[entity] > 1 {
                return Err(Error::InvalidRequest(format!("Ignoring duplicate entity {entity}")));
            }
            recs.extend(entity_changes(img, entity, a).map_err(Error::InvalidRequest)?);
            Ok(())
        })
        .collect();
    (recs, results)
}

/// The records one entity's changes come to, or the reason they are refused.
fn entity_changes(img: &Image, entity: &QuotaEntity, a: &QuotaAlteration) -> std::result::Result<Vec<Record>, String> {
    let mut seen = Vec::new();
    let current = img.client_quotas.get(entity);
    let mut recs = Vec::new();
    for (key, value) in &a.ops {
        if seen.contains(&key) {
            return Err(format!("Duplicate quota key {key} not updating quota for this entity {entity}"));
        }
        seen.push(key);
        let now = current.and_then(|c| c.get(key)).copied();
        match value {
            Some(v) => {
                entity.check_value(key, *v)?;
                if now != Some(*v) {
                    recs.push(Record::ClientQuota { entity: entity.clone(), key: key.clone(), value: Some(*v) });
                }
            }
            None if now.is_some() => recs.push(Record::ClientQuota { entity: entity.clone(), key: key.clone(), value: None }),
            None => {}
        }
    }
    Ok(recs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> QuotaAlteration {
        QuotaAlteration {
            entity: entity.iter().map(|(t, n)| (t.to_string(), n.map(str::to_string))).collect(),
            ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    /// Each result's INVALID_REQUEST message ("" for success).
    fn messages(results: &[Result<()>]) -> Vec<String> {
        results
            .iter()
            .map(|r| match r {
                Ok(()) => String::new(),
                Err(Error::InvalidRequest(m)) => m.clone(),
                Err(e) => panic!("not INVALID_REQUEST: {e}"),
            })
            .collect()
    }

    #[test]
    fn good_changes_commit_and_bad_entities_are_refused_alone() {
        let mut img = Image::default();
        let (recs, results) = plan(
            &img,
            &[
                alt(&[("client-id", Some("app"))], &[("producer_byte_rate", Some(1024.0)), ("consumer_byte_rate", None)]),
                alt(&[("user", None)], &[("request_percentage", Some(50.0))]),
                alt(&[("client-id", Some("x"))], &[("producer_byte_rate", Some(5.0)), ("bogus", Some(1.0))]),
                alt(&[("group", Some("g"))], &[("producer_byte_rate", Some(1.0))]),
                alt(&[("ip", Some("10.0.0.1"))], &[("producer_byte_rate", Some(1.0))]),
                alt(&[("user", Some("u"))], &[("producer_byte_rate", Some(1.0)), ("producer_byte_rate", Some(2.0))]),
            ],
        );
        assert_eq!(
            messages(&results),
            [
                "",
                "",
                "Invalid configuration key bogus",
                "Unhandled client quota entity type: group",
                "Invalid configuration key producer_byte_rate",
                "Duplicate quota key producer_byte_rate not updating quota for this entity ClientQuotaEntity(entries={user=u})",
            ]
        );
        assert!(results[2..].iter().all(|r| crate::error::code_of(r) == 42), "INVALID_REQUEST");
        assert_eq!(recs.len(), 2, "the removal of an unset key writes nothing; refused entities write nothing");
        for (i, r) in recs.iter().enumerate() {
            img.apply(i as u64 + 1, r);
        }
        assert_eq!(img.client_quotas.len(), 2);

        // The same value again writes nothing; a removal writes a removal.
        let (recs, _) = plan(&img, &[alt(&[("client-id", Some("app"))], &[("producer_byte_rate", Some(1024.0))])]);
        assert!(recs.is_empty());
        let (recs, _) = plan(&img, &[alt(&[("client-id", Some("app"))], &[("producer_byte_rate", None)])]);
        img.apply(10, &recs[0]);
        assert_eq!(img.client_quotas.len(), 1, "an entity without keys is gone");
    }

    #[test]
    fn an_entity_twice_in_one_request_is_refused_both_times() {
        let img = Image::default();
        let a = alt(&[("user", Some("u")), ("client-id", None)], &[("producer_byte_rate", Some(1.0))]);
        let b = alt(&[("client-id", None), ("user", Some("u"))], &[("consumer_byte_rate", Some(1.0))]);
        let (recs, results) = plan(&img, &[a, b]);
        assert!(recs.is_empty());
        assert_eq!(messages(&results)[1], "Ignoring duplicate entity ClientQuotaEntity(entries={user=u, client-id=<default>})");
    }
}
