//! What a client command can fail with; a Kafka error prints its Kafka name
//! (`UNKNOWN_TOPIC_OR_PARTITION`), as Kafka's own tools do.

use crate::error::code_name;

/// A failed client command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CliError {
    /// A broker answered a Kafka error code.
    #[error("{context}: {} ({code}){}", code_name(*.code), .message.as_ref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka { code: i16, context: String, message: Option<String> },
    /// The network: refused, reset, closed.
    #[error("{0}")]
    Io(String),
    /// A connect or request timeout ran out.
    #[error("{0}")]
    Timeout(String),
    /// A response that cannot be decoded, or a broker that lacks an API.
    #[error("{0}")]
    Protocol(String),
    /// Bad flags, settings or input.
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// The error for a Kafka code in `context` (None for 0).
    pub fn check(code: i16, context: impl FnOnce() -> String, message: Option<&str>) -> Result<(), CliError> {
        if code == 0 {
            return Ok(());
        }
        Err(CliError::Kafka { code, context: context(), message: message.filter(|m| !m.is_empty()).map(str::to_string) })
    }

    /// The Kafka code, if this is a Kafka error.
    pub fn code(&self) -> Option<i16> {
        match self {
            CliError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Errors worth a metadata refresh and another try: leadership moved, a topic still
    /// being created, a coordinator loading or moved, a broker gone.
    pub fn retriable(&self) -> bool {
        match self {
            CliError::Kafka { code, .. } => is_retriable(*code),
            CliError::Io(_) | CliError::Timeout(_) => true,
            _ => false,
        }
    }
}

/// Kafka codes a client retries after refreshing metadata.
pub fn is_retriable(code: i16) -> bool {
    // UNKNOWN_TOPIC_OR_PARTITION(3), LEADER_NOT_AVAILABLE(5), NOT_LEADER_OR_FOLLOWER(6),
    // REQUEST_TIMED_OUT(7), COORDINATOR_LOAD_IN_PROGRESS(14), COORDINATOR_NOT_AVAILABLE(15),
    // NOT_COORDINATOR(16), NOT_ENOUGH_REPLICAS(19), NOT_ENOUGH_REPLICAS_AFTER_APPEND(20),
    // NOT_CONTROLLER(41), KAFKA_STORAGE_ERROR(56: Kafka's clients treat it as stale metadata,
    // since the partition's leadership moves off the failed log dir), FENCED_LEADER_EPOCH(74),
    // UNKNOWN_LEADER_EPOCH(75), OFFSET_NOT_AVAILABLE(78).
    matches!(code, 3 | 5 | 6 | 7 | 14 | 15 | 16 | 19 | 20 | 41 | 56 | 74 | 75 | 78)
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Io(e.to_string())
    }
}
