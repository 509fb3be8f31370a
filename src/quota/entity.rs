//! Quota entities and keys, with Kafka's validation rules (`ClientQuotaControlManager`):
//! an entity is a set of (type, name) pairs, types `user`, `client-id` and `ip`, a missing
//! name being the type's default; `ip` stands alone, `user` and `client-id` may combine.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Entity type names, as Kafka's `ClientQuotaEntity` spells them.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

/// The keys a quota may set.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// The name of one part of an entity: a named user, client id or address, or the default.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntityName {
    Default,
    Named(String),
}

impl EntityName {
    /// From the wire, where null is the default.
    pub fn from_wire(name: Option<&str>) -> EntityName {
        name.map_or(EntityName::Default, |n| EntityName::Named(n.to_string()))
    }

    /// For the wire: None for the default.
    pub fn as_wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Named(n) => Some(n),
        }
    }

    fn shown(&self) -> &str {
        self.as_wire().unwrap_or("<default>")
    }
}

/// What a quota applies to. At least one part is present; `ip` only alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<EntityName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<EntityName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<EntityName>,
}

impl QuotaEntity {
    /// The entity of a user and client id pair (either may be absent).
    pub fn of(user: Option<EntityName>, client_id: Option<EntityName>) -> QuotaEntity {
        QuotaEntity { user, client_id, ip: None }
    }

    /// Its (type, name) parts, in Kafka's type order.
    pub fn parts(&self) -> Vec<(&'static str, &EntityName)> {
        [(USER, &self.user), (CLIENT_ID, &self.client_id), (IP, &self.ip)]
            .into_iter()
            .filter_map(|(t, n)| n.as_ref().map(|n| (t, n)))
            .collect()
    }

    /// The part of type `t`, if the entity has one.
    pub fn part(&self, t: &str) -> Option<&EntityName> {
        match t {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }

    /// Builds an entity from the wire's (type, name) pairs with Kafka's checks; the error
    /// is the INVALID_REQUEST message.
    pub fn from_wire<'a>(parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Result<QuotaEntity, String> {
        let mut e = QuotaEntity::default();
        let mut any = false;
        for (t, name) in parts {
            any = true;
            let slot = match t {
                USER => &mut e.user,
                CLIENT_ID => &mut e.client_id,
                IP => &mut e.ip,
                _ => return Err(format!("Unhandled client quota entity type: {t}")),
            };
            if slot.is_some() {
                return Err(format!("Invalid empty client quota entity, duplicate entity entry {t}"));
            }
            if name == Some("") {
                return Err(format!("Empty {t} not supported"));
            }
            *slot = Some(EntityName::from_wire(name));
        }
        if !any {
            return Err("Invalid empty client quota entity".into());
        }
        if e.ip.is_some() && (e.user.is_some() || e.client_id.is_some()) {
            return Err("Invalid empty client quota entity".into());
        }
        if let Some(EntityName::Named(ip)) = &e.ip {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
        Ok(e)
    }

    /// The keys this kind of entity may set, with their types.
    fn keys(&self) -> &'static [(&'static str, KeyType)] {
        if self.ip.is_some() {
            &[(CONNECTION_CREATION_RATE, KeyType::Int)]
        } else {
            &[
                (PRODUCER_BYTE_RATE, KeyType::Long),
                (CONSUMER_BYTE_RATE, KeyType::Long),
                (REQUEST_PERCENTAGE, KeyType::Double),
                (CONTROLLER_MUTATION_RATE, KeyType::Double),
            ]
        }
    }

    /// Checks a value for `key` on this entity; the error is the INVALID_REQUEST message.
    pub fn check_value(&self, key: &str, value: f64) -> Result<(), String> {
        let Some((_, kind)) = self.keys().iter().find(|(k, _)| *k == key) else {
            return Err(format!("Invalid configuration key {key}"));
        };
        // Kafka's tolerance for a whole number sent as a double.
        let whole = (value - (value + 1e-6).trunc()).abs() <= 1e-6;
        match kind {
            KeyType::Long if !whole => return Err(format!("Configuration {key} must be a Long value")),
            KeyType::Int if !whole || value > i32::MAX as f64 => return Err(format!("Configuration {key} must be an Integer value")),
            _ => {}
        }
        // A rate of zero or less could never be met (and a throttle time would divide by it).
        if !(value.is_finite() && value > 0.0) {
            return Err(format!("Configuration {key} must be a positive value"));
        }
        Ok(())
    }
}

impl std::fmt::Display for QuotaEntity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.parts().into_iter().map(|(t, n)| format!("{t}={}", n.shown())).collect();
        write!(f, "ClientQuotaEntity(entries={{{}}})", parts.join(", "))
    }
}

#[derive(Debug, Clone, Copy)]
enum KeyType {
    Long,
    Int,
    Double,
}

/// Serde for a map keyed by entities: JSON objects want string keys, so a list of pairs.
pub mod as_pairs {
    use super::*;

    pub fn serialize<S: serde::Serializer, V: Serialize>(m: &BTreeMap<QuotaEntity, V>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>, V: Deserialize<'de>>(d: D) -> Result<BTreeMap<QuotaEntity, V>, D::Error> {
        Ok(Vec::<(QuotaEntity, V)>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_entity_rules() {
        let ok = QuotaEntity::from_wire([(USER, Some("alice")), (CLIENT_ID, None)]).unwrap();
        assert_eq!(ok, QuotaEntity::of(Some(EntityName::Named("alice".into())), Some(EntityName::Default)));
        assert_eq!(ok.to_string(), "ClientQuotaEntity(entries={user=alice, client-id=<default>})");
        let err = |parts: &[(&str, Option<&str>)]| QuotaEntity::from_wire(parts.iter().copied()).unwrap_err();
        assert_eq!(err(&[]), "Invalid empty client quota entity");
        assert_eq!(err(&[("group", Some("g"))]), "Unhandled client quota entity type: group");
        assert_eq!(err(&[(USER, Some("a")), (USER, Some("b"))]), "Invalid empty client quota entity, duplicate entity entry user");
        assert_eq!(err(&[(CLIENT_ID, Some(""))]), "Empty client-id not supported");
        assert_eq!(err(&[(IP, Some("1.2.3.4")), (USER, None)]), "Invalid empty client quota entity");
        assert_eq!(err(&[(IP, Some("not an ip"))]), "not an ip is not a valid IP or resolvable host.");
        assert!(QuotaEntity::from_wire([(IP, None)]).is_ok());
    }

    #[test]
    fn keys_belong_to_their_entity_types_and_values_to_their_types() {
        let client = QuotaEntity::of(None, Some(EntityName::Named("c".into())));
        let ip = QuotaEntity { ip: Some(EntityName::Default), ..Default::default() };
        assert!(client.check_value(PRODUCER_BYTE_RATE, 1024.0).is_ok());
        assert!(client.check_value(REQUEST_PERCENTAGE, 12.5).is_ok());
        assert_eq!(client.check_value(PRODUCER_BYTE_RATE, 10.5).unwrap_err(), "Configuration producer_byte_rate must be a Long value");
        assert_eq!(client.check_value("bogus", 1.0).unwrap_err(), "Invalid configuration key bogus");
        assert_eq!(client.check_value(CONNECTION_CREATION_RATE, 1.0).unwrap_err(), "Invalid configuration key connection_creation_rate");
        assert_eq!(ip.check_value(PRODUCER_BYTE_RATE, 1.0).unwrap_err(), "Invalid configuration key producer_byte_rate");
        assert!(ip.check_value(CONNECTION_CREATION_RATE, 10.0).is_ok());
        assert!(ip.check_value(CONNECTION_CREATION_RATE, 3e9).is_err());
        assert!(client.check_value(CONSUMER_BYTE_RATE, -5.0).is_err());
        assert!(client.check_value(REQUEST_PERCENTAGE, f64::NAN).is_err());
    }

    #[test]
    fn maps_keyed_by_entity_round_trip_through_json() {
        let mut m = BTreeMap::new();
        m.insert(QuotaEntity::of(Some(EntityName::Default), None), 1.5);
        let json = serde_json::to_string(&Wrap(m.clone())).unwrap();
        let back: Wrap = serde_json::from_str(&json).unwrap();
        assert_eq!(back.0, m);
    }

    #[derive(Serialize, Deserialize)]
    struct Wrap(#[serde(with = "as_pairs")] BTreeMap<QuotaEntity, f64>);
}
