//! What the server keeps of a SCRAM password, and the mechanisms: the values the metadata
//! log's credential records carry and the SCRAM exchange checks against.

use serde::{Deserialize, Serialize};

/// A SCRAM mechanism Kafka knows, with its type code in the SCRAM admin APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

impl ScramMechanism {
    /// Both, in type-code order.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism of a type code (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512), as the APIs send it.
    pub fn from_type(code: i8) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.type_code() == code)
    }

    /// Kafka's type code.
    pub fn type_code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL mechanism name.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What the server keeps of a SCRAM password (RFC 5802 section 3): enough to check a
/// client's proof and to prove itself, never the password or the salted password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// Keys stay out of logs, as in Kafka's `ScramCredentialValue`.
impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramCredential([hidden])")
    }
}
