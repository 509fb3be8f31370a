//! Which stored quota governs a client (Kafka's `DefaultQuotaCallback`): the most specific
//! entity that sets the key wins, in this order:
//!
//! 1. `/config/users/<user>/clients/<client-id>`
//! 2. `/config/users/<user>/clients/<default>`
//! 3. `/config/users/<user>`
//! 4. `/config/users/<default>/clients/<client-id>`
//! 5. `/config/users/<default>/clients/<default>`
//! 6. `/config/users/<default>`
//! 7. `/config/clients/<client-id>`
//! 8. `/config/clients/<default>`
//!
//! Clients that share the matched entity share one measured rate: its key is the user and
//! the client id as far as the entity names them (a default stands for each name alone).

use std::collections::BTreeMap;

use super::entity::{EntityName, QuotaEntity, CONNECTION_CREATION_RATE};

/// The quota that applies to a client, and the key of the rate it is measured by.
#[derive(Debug, Clone, PartialEq)]
pub struct Governing {
    pub bound: f64,
    /// (user, client id) as Kafka's quota metric tags: empty for a part the entity leaves out.
    pub tags: (String, String),
}

/// The quota `key` that applies to `user` (the principal's name) on `client_id`.
pub fn governing(quotas: &BTreeMap<QuotaEntity, BTreeMap<String, f64>>, user: &str, client_id: &str, key: &str) -> Option<Governing> {
    if quotas.is_empty() {
        return None;
    }
    let named = |s: &str| Some(EntityName::Named(s.to_string()));
    let default = || Some(EntityName::Default);
    let order = [
        (named(user), named(client_id)),
        (named(user), default()),
        (named(user), None),
        (default(), named(client_id)),
        (default(), default()),
        (default(), None),
        (None, named(client_id)),
        (None, default()),
    ];
    order.into_iter().find_map(|(u, c)| {
        let tags =
            (if u.is_some() { user.to_string() } else { String::new() }, if c.is_some() { client_id.to_string() } else { String::new() });
        let bound = *quotas.get(&QuotaEntity::of(u, c))?.get(key)?;
        Some(Governing { bound, tags })
    })
}

/// The `connection_creation_rate` that governs connections from `ip`: its own, else the
/// default address's (Kafka's `ConnectionQuotas.connectionRateForIp`). Each address has
/// its own rate either way.
pub fn connection_rate(quotas: &BTreeMap<QuotaEntity, BTreeMap<String, f64>>, ip: &str) -> Option<Governing> {
    if quotas.is_empty() {
        return None;
    }
    [EntityName::Named(ip.to_string()), EntityName::Default].into_iter().find_map(|name| {
        let entity = QuotaEntity { ip: Some(name), ..Default::default() };
        let bound = *quotas.get(&entity)?.get(CONNECTION_CREATION_RATE)?;
        Some(Governing { bound, tags: (ip.to_string(), String::new()) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::entity::PRODUCER_BYTE_RATE;

    fn set(m: &mut BTreeMap<QuotaEntity, BTreeMap<String, f64>>, u: Option<&str>, c: Option<&str>, v: f64) {
        let part = |p: Option<&str>| p.map(|s| if s == "*" { EntityName::Default } else { EntityName::Named(s.into()) });
        m.entry(QuotaEntity::of(part(u), part(c))).or_default().insert(PRODUCER_BYTE_RATE.into(), v);
    }

    fn bound(m: &BTreeMap<QuotaEntity, BTreeMap<String, f64>>, u: &str, c: &str) -> Option<(f64, String, String)> {
        governing(m, u, c, PRODUCER_BYTE_RATE).map(|g| (g.bound, g.tags.0, g.tags.1))
    }

    #[test]
    fn the_most_specific_entity_wins_in_kafkas_order() {
        let mut m = BTreeMap::new();
        assert_eq!(bound(&m, "alice", "app"), None);
        // Each step adds a more specific entity, which takes over.
        let steps: [(Option<&str>, Option<&str>, (&str, &str)); 8] = [
            (None, Some("*"), ("", "app")),
            (None, Some("app"), ("", "app")),
            (Some("*"), None, ("alice", "")),
            (Some("*"), Some("*"), ("alice", "app")),
            (Some("*"), Some("app"), ("alice", "app")),
            (Some("alice"), None, ("alice", "")),
            (Some("alice"), Some("*"), ("alice", "app")),
            (Some("alice"), Some("app"), ("alice", "app")),
        ];
        for (i, (u, c, (tu, tc))) in steps.into_iter().enumerate() {
            set(&mut m, u, c, i as f64 + 1.0);
            assert_eq!(bound(&m, "alice", "app"), Some((i as f64 + 1.0, tu.to_string(), tc.to_string())), "step {i}");
        }
        // Another user on another client falls back to the defaults.
        assert_eq!(bound(&m, "bob", "other"), Some((4.0, "bob".into(), "other".into())));
    }

    #[test]
    fn an_address_has_its_own_rate_or_the_default() {
        let mut m: BTreeMap<QuotaEntity, BTreeMap<String, f64>> = BTreeMap::new();
        assert_eq!(connection_rate(&m, "10.0.0.1"), None);
        let ip = |n: EntityName| QuotaEntity { ip: Some(n), ..Default::default() };
        m.entry(ip(EntityName::Default)).or_default().insert(CONNECTION_CREATION_RATE.into(), 10.0);
        m.entry(ip(EntityName::Named("10.0.0.1".into()))).or_default().insert(CONNECTION_CREATION_RATE.into(), 2.0);
        let bound = |a: &str| connection_rate(&m, a).map(|g| (g.bound, g.tags.0));
        assert_eq!(bound("10.0.0.1"), Some((2.0, "10.0.0.1".into())));
        assert_eq!(bound("10.0.0.2"), Some((10.0, "10.0.0.2".into())));
    }

    #[test]
    fn other_keys_do_not_count() {
        let mut m: BTreeMap<QuotaEntity, BTreeMap<String, f64>> = BTreeMap::new();
        m.entry(QuotaEntity::of(None, Some(EntityName::Named("app".into())))).or_default().insert("consumer_byte_rate".to_string(), 5.0);
        assert_eq!(bound(&m, "alice", "app"), None);
    }
}
