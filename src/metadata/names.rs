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

/// Internal topics Kafka reports with is_internal.
pub fn is_internal(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
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
}
