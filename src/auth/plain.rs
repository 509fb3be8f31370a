//! SASL/PLAIN (RFC 4616) against the users of a listener's PlainLoginModule JAAS config,
//! as Kafka's `PlainSaslServer` and `PlainServerCallbackHandler` check them.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::jaas::JaasConfig;

/// Kafka's PLAIN login module class.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

/// The users PLAIN accepts: `user_<name>="<password>"` options of the JAAS config.
#[derive(Clone, Default)]
pub struct PlainUsers {
    users: BTreeMap<String, String>,
}

/// Passwords stay out of logs.
impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainUsers").field("users", &self.users.keys().collect::<Vec<_>>()).finish()
    }
}

impl PlainUsers {
    /// The users of a PlainLoginModule config; any other login module is refused.
    pub fn from_jaas(c: &JaasConfig) -> Result<PlainUsers, String> {
        if c.login_module != PLAIN_LOGIN_MODULE {
            return Err(format!("the PLAIN mechanism needs {PLAIN_LOGIN_MODULE}, not {}", c.login_module));
        }
        let users = c.options.iter().filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_string(), v.clone()))).collect();
        Ok(PlainUsers { users })
    }

    /// Users from (name, password) pairs.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> PlainUsers {
        PlainUsers { users: pairs.into_iter().map(|(u, p)| (u.to_string(), p.to_string())).collect() }
    }

    /// Does `password` belong to `user`? The comparison takes the same time however much of
    /// the password is right (both sides are hashed to one length first), and an unknown
    /// user costs the same as a wrong password.
    pub fn check(&self, user: &str, password: &str) -> bool {
        let (expected, known) = match self.users.get(user) {
            Some(p) => (p.as_str(), true),
            None => ("", false),
        };
        let same: bool = Sha256::digest(expected.as_bytes()).ct_eq(&Sha256::digest(password.as_bytes())).into();
        same && known
    }
}

/// Checks one PLAIN message, `authzid NUL authcid NUL password`; the user on success,
/// else Kafka's message for the client.
pub fn authenticate(users: &PlainUsers, msg: &[u8]) -> Result<String, String> {
    let parts: Vec<&[u8]> = msg.split(|b| *b == 0).collect();
    if parts.len() != 3 {
        return Err(format!("Invalid SASL/PLAIN response: expected 3 tokens, got {}", parts.len()));
    }
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| "Invalid SASL/PLAIN response: not UTF-8".to_string());
    let (authzid, user, password) = (text(parts[0])?, text(parts[1])?, text(parts[2])?);
    if user.is_empty() {
        return Err("Authentication failed: username not specified".into());
    }
    if password.is_empty() {
        return Err("Authentication failed: password not specified".into());
    }
    if !users.check(&user, &password) {
        return Err("Authentication failed: Invalid username or password".into());
    }
    if !authzid.is_empty() && authzid != user {
        return Err("Authentication failed: Client requested an authorization id that is different from username".into());
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::jaas;

    fn users() -> PlainUsers {
        let c = jaas::parse(&format!(
            r#"{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#
        ))
        .unwrap();
        PlainUsers::from_jaas(&c).unwrap()
    }

    #[test]
    fn users_come_from_user_options_only() {
        let u = users();
        assert!(u.check("alice", "alice-secret"));
        assert!(u.check("admin", "admin-secret"));
        assert!(!u.check("alice", "alice-secreT"));
        assert!(!u.check("alice", ""));
        assert!(!u.check("username", "admin"), "username= is the broker's own login, not a user");
        assert!(!u.check("nobody", ""));
        assert!(!format!("{u:?}").contains("secret"));
        let other = jaas::parse("org.apache.kafka.common.security.scram.ScramLoginModule required;").unwrap();
        assert!(PlainUsers::from_jaas(&other).is_err());
    }

    #[test]
    fn plain_messages() {
        let u = users();
        assert_eq!(authenticate(&u, b"\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(authenticate(&u, b"alice\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(authenticate(&u, b"\0alice\0wrong"), Err("Authentication failed: Invalid username or password".into()));
        assert_eq!(authenticate(&u, b"\0nobody\0x"), Err("Authentication failed: Invalid username or password".into()));
        assert!(authenticate(&u, b"admin\0alice\0alice-secret").unwrap_err().contains("authorization id"));
        assert!(authenticate(&u, b"\0\0pw").unwrap_err().contains("username not specified"));
        assert!(authenticate(&u, b"\0alice\0").unwrap_err().contains("password not specified"));
        assert!(authenticate(&u, b"alice-secret").unwrap_err().contains("expected 3 tokens, got 1"));
        assert!(authenticate(&u, b"\0a\0b\0c").unwrap_err().contains("got 4"));
        assert!(authenticate(&u, b"\0\xff\0x").unwrap_err().contains("UTF-8"));
    }
}
