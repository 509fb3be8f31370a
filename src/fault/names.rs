//! Kafka's names for API keys and error codes, as a fault request spells them.
//!
//! APIs are named as Kafka's message schemas name them (`Produce`, `InitProducerId`);
//! errors as Kafka's `Errors` enum does (`NOT_LEADER_OR_FOLLOWER`). Both are matched
//! ignoring case and underscores, so `INIT_PRODUCER_ID` and `not_leader_or_follower` work too.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ApiKey;

/// The APIs whose responses an `inject` fault can fill with an error code: each has a
/// builder in the request path that puts the code wherever Kafka's response carries one.
pub const INJECTABLE: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::SyncGroup,
    ApiKey::InitProducerId,
];

/// Lower case without underscores: the form names are compared in.
fn folded(s: &str) -> String {
    s.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
}

/// The API key named `name`, or the list of valid names.
pub fn api_key(name: &str) -> Result<ApiKey, String> {
    let want = folded(name.trim());
    ApiKey::iter()
        .find(|k| folded(&format!("{k:?}")) == want)
        .ok_or_else(|| format!("unknown API '{name}'; valid names: {}", api_names().join(", ")))
}

/// Every API name, in key order.
pub fn api_names() -> Vec<String> {
    ApiKey::iter().map(|k| format!("{k:?}")).collect()
}

/// An API key's name (`Produce`), or the number for a key this build does not know.
pub fn api_name(key: i16) -> String {
    ApiKey::try_from(key).map_or_else(|_| key.to_string(), |k| format!("{k:?}"))
}

/// Kafka's name of an error code (`NOT_LEADER_OR_FOLLOWER`), if it has one.
pub fn error_name(code: i16) -> Option<String> {
    match ResponseError::try_from_code(code)? {
        ResponseError::Unknown(_) => None,
        e => Some(upper_snake(&e.to_string())),
    }
}

/// `NotLeaderOrFollower` as Kafka's `Errors` spells it: `NOT_LEADER_OR_FOLLOWER`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Every named error code, from -1 up.
fn known_errors() -> impl Iterator<Item = (i16, String)> {
    (-1..=200).filter_map(|c| error_name(c).map(|n| (c, n)))
}

/// The error code named `name` (or written as a number), or the list of valid names.
/// Zero is refused: an injected "error" that is success would be a handler answering
/// success without doing the work.
pub fn error_code(name: &str) -> Result<i16, String> {
    let name = name.trim();
    if let Ok(code) = name.parse::<i16>() {
        return match error_name(code) {
            Some(_) => Ok(code),
            None => Err(format!("{code} is not a Kafka error code; valid names: {}", error_names().join(", "))),
        };
    }
    let want = folded(name);
    known_errors()
        .find(|(_, n)| folded(n) == want)
        .map(|(c, _)| c)
        .ok_or_else(|| format!("unknown error '{name}'; valid names: {}", error_names().join(", ")))
}

/// Every error name, by code.
pub fn error_names() -> Vec<String> {
    known_errors().map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apis_are_found_by_kafka_name_in_any_case() {
        assert_eq!(api_key("Produce").unwrap(), ApiKey::Produce);
        assert_eq!(api_key("INIT_PRODUCER_ID").unwrap(), ApiKey::InitProducerId);
        assert_eq!(api_key("findcoordinator").unwrap(), ApiKey::FindCoordinator);
        let e = api_key("Produse").unwrap_err();
        assert!(e.contains("Produce") && e.contains("InitProducerId"), "{e}");
    }

    #[test]
    fn errors_are_found_by_kafka_name_or_code() {
        assert_eq!(error_code("NOT_LEADER_OR_FOLLOWER").unwrap(), 6);
        assert_eq!(error_code("coordinator_not_available").unwrap(), 15);
        assert_eq!(error_code("15").unwrap(), 15);
        assert_eq!(error_code("-1").unwrap(), -1);
        assert_eq!(error_name(6).as_deref(), Some("NOT_LEADER_OR_FOLLOWER"));
        assert_eq!(error_name(56).as_deref(), Some("KAFKA_STORAGE_ERROR"));
        assert!(error_code("0").is_err(), "success is not an error");
        assert!(error_code("9999").is_err());
        let e = error_code("NOT_A_LEADER").unwrap_err();
        assert!(e.contains("NOT_LEADER_OR_FOLLOWER"), "{e}");
    }
}
