//! Topic name rules, as Kafka enforces them.

/// Longest legal topic name.
pub const MAX_NAME_LEN: usize = 249;

/// Checks a topic name: 1–249 characters from `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("topic name is empty".into());
    }
    if name == "." || name == ".." {
        return Err(format!("topic name cannot be '{name}'"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("topic name is longer than {MAX_NAME_LEN} characters"));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(format!("topic name '{name}' has the illegal character '{c}'"));
    }
    Ok(())
}

/// The internal topic of group offsets and metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The internal topic of transaction state.
pub const TXN_TOPIC: &str = "__transaction_state";

/// The internal topic of share-group state (KIP-932's share coordinator).
pub const SHARE_STATE_TOPIC: &str = "__share_group_state";

/// Internal topics Kafka reports with is_internal.
pub fn is_internal(name: &str) -> bool {
    name == OFFSETS_TOPIC || name == TXN_TOPIC || name == SHARE_STATE_TOPIC
}

/// The partition of an internal topic that holds `key` (a group or transactional id),
/// as Kafka picks it: Java's String.hashCode, made non-negative, modulo the partition count.
pub fn coordinator_partition(key: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for c in key.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(c as i32);
    }
    (h & 0x7fff_ffff) % partitions.max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert!(super::validate("orders-1.v2_x").is_ok());
        assert!(super::validate("..").is_err());
        assert!(super::validate("a b").is_err());
        assert!(super::validate(&"x".repeat(250)).is_err());
    }

    #[test]
    fn partition_matches_java_hash() {
        // "test-group".hashCode() == 627841412 in Java.
        assert_eq!(super::coordinator_partition("test-group", 50), 627841412 % 50);
    }
}
