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

/// A SCRAM credential to write when the cluster is first formed, given as Kafka's
/// `kafka-storage format --add-scram` takes it: `SCRAM-SHA-512=[name=broker,password=secret]`
/// (optionally `iterations=N`, default 4096; a value may be in double quotes).
#[derive(Clone, PartialEq, Eq)]
pub struct AddScram {
    pub mechanism: ScramMechanism,
    pub name: String,
    password: String,
    pub iterations: i32,
}

/// Passwords stay out of logs.
impl std::fmt::Debug for AddScram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AddScram({} {} x{})", self.mechanism.name(), self.name, self.iterations)
    }
}

impl AddScram {
    /// Parses one `--add-scram` value.
    pub fn parse(s: &str) -> Result<AddScram, String> {
        let bad = |why: &str| {
            format!(
                "--add-scram '{}': {why}; expected e.g. SCRAM-SHA-512=[name=alice,password=alice-secret]",
                s.split("password").next().unwrap_or("")
            )
        };
        let (mech, rest) = s.trim().split_once('=').ok_or_else(|| bad("no '='"))?;
        let mechanism =
            ScramMechanism::from_name(mech.trim()).ok_or_else(|| bad("the mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512"))?;
        let inner = rest.trim().strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(|| bad("the options must be in [...]"))?;
        let (mut name, mut password, mut iterations) = (None, None, 4096);
        for (k, v) in split_options(inner).map_err(|e| bad(&e))? {
            match k.as_str() {
                "name" => name = Some(v),
                "password" => password = Some(v),
                "iterations" => iterations = v.parse().map_err(|_| bad("iterations is not a number"))?,
                other => return Err(bad(&format!("unknown option '{other}' (this build takes name, password, iterations)"))),
            }
        }
        if !(super::scram::MIN_ITERATIONS..=super::scram::MAX_ITERATIONS).contains(&iterations) {
            return Err(bad("iterations must be between 4096 and 16384"));
        }
        match (name.filter(|n| !n.is_empty()), password.filter(|p| !p.is_empty())) {
            (Some(name), Some(password)) => Ok(AddScram { mechanism, name, password, iterations }),
            _ => Err(bad("name and password are both needed")),
        }
    }

    /// The stored credential, with a fresh random salt.
    pub fn credential(&self) -> ScramCredential {
        let salt = super::scram::nonce().into_bytes();
        let salted = super::scram::salted_password(self.mechanism, self.password.as_bytes(), &salt, self.iterations as u32);
        super::scram::credential_from_salted(self.mechanism, &salt, &salted, self.iterations)
    }
}

/// `k=v,k="v, with commas"` into pairs.
fn split_options(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut parts = Vec::new();
    let (mut cur, mut quoted) = (String::new(), false);
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if quoted {
        return Err("an unterminated quote".into());
    }
    parts.push(cur);
    for p in parts.iter().filter(|p| !p.trim().is_empty()) {
        let (k, v) = p.split_once('=').ok_or_else(|| format!("option '{}' is not key=value", p.split('=').next().unwrap_or("")))?;
        out.push((k.trim().to_string(), v.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_scram_values() {
        let a = AddScram::parse("SCRAM-SHA-512=[name=broker,password=\"a,b=c\"]").unwrap();
        assert_eq!((a.mechanism, a.name.as_str(), a.password.as_str(), a.iterations), (ScramMechanism::Sha512, "broker", "a,b=c", 4096));
        assert!(!format!("{a:?}").contains("a,b"));
        let c = a.credential();
        let salted = super::super::scram::salted_password(a.mechanism, b"a,b=c", &c.salt, 4096);
        assert_eq!(c, super::super::scram::credential_from_salted(a.mechanism, &c.salt, &salted, 4096));
        assert_eq!(AddScram::parse("SCRAM-SHA-256=[name=x,password=y,iterations=8192]").unwrap().iterations, 8192);
        for bad in [
            "",
            "SCRAM-SHA-1=[name=x,password=y]",
            "SCRAM-SHA-256=name=x,password=y",
            "SCRAM-SHA-256=[name=x]",
            "SCRAM-SHA-256=[password=y]",
            "SCRAM-SHA-256=[name=x,password=y,iterations=10]",
            "SCRAM-SHA-256=[name=x,password=\"y]",
            "SCRAM-SHA-256=[name=x,password=y,salt=abc]",
        ] {
            let e = AddScram::parse(bad).unwrap_err();
            assert!(!e.contains("=y"), "the error shows the password: {e}");
        }
    }
}
