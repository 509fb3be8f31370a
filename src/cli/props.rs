//! Client settings: Kafka's Java client keys from a `.properties` file (`--config`) and
//! `-X key=value`, with librdkafka's names for the same things, turned into a dialer
//! (TCP or TLS), a SASL login and timeouts.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{CliError, Common};
use crate::auth::client::Login;
use crate::auth::jaas;
use crate::config::listeners::SecurityProtocol;
use crate::config::BrokerConfig;
use crate::transport::Dialer;

/// The client key `-b` stands for (a client key, not one of the broker's).
const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";

/// How the tool reaches brokers.
#[derive(Clone, Debug)]
pub struct Settings {
    pub bootstrap: Vec<String>,
    pub protocol: SecurityProtocol,
    pub login: Option<Login>,
    pub dialer: Dialer,
    /// `socket.connection.setup.timeout.ms` (Kafka's default 10 s).
    pub connect_timeout: Duration,
    /// `request.timeout.ms` (Kafka's default 30 s).
    pub request_timeout: Duration,
    pub client_id: String,
    /// `retries` (a producer key): how often a write is sent again after a retriable error;
    /// unset, until the tool's retry deadline. `-X retries=0` shows a broker's first answer.
    pub retries: Option<u32>,
}

/// The settings from `--config` and `-X` (which wins), with `-b` over `bootstrap.servers`
/// unless `-b` was left at its default.
pub fn settings(common: &Common) -> Result<Settings, CliError> {
    let mut kv = BTreeMap::new();
    if let Some(p) = &common.config {
        let text = std::fs::read_to_string(p).map_err(|e| CliError::Usage(format!("--config {}: {e}", p.display())))?;
        let pairs = crate::config::properties::parse(&text).map_err(|e| CliError::Usage(format!("--config {}: {e}", p.display())))?;
        kv.extend(pairs);
    }
    for x in &common.client_set {
        let (k, v) = x.split_once('=').ok_or_else(|| CliError::Usage(format!("-X wants KEY=VALUE, got '{x}'")))?;
        kv.insert(k.trim().to_string(), v.trim().to_string());
    }
    let flag_given = std::env::var_os("SLUICE_BROKERS").is_some() || common.brokers != "127.0.0.1:9092";
    let bootstrap = match kv.get(BOOTSTRAP_SERVERS) {
        Some(b) if !flag_given => b.clone(),
        _ => common.brokers.clone(),
    };
    from_map(&bootstrap, &kv)
}

/// Settings from flat client keys.
pub fn from_map(bootstrap: &str, kv: &BTreeMap<String, String>) -> Result<Settings, CliError> {
    let get = |k: &str| kv.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let bootstrap: Vec<String> = bootstrap.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    if bootstrap.is_empty() {
        return Err(CliError::Usage("no bootstrap brokers: give -b HOST:PORT".into()));
    }
    let protocol = SecurityProtocol::parse(&get("security.protocol").unwrap_or_else(|| "PLAINTEXT".into()))
        .map_err(|e| CliError::Usage(format!("security.protocol: {e}")))?;
    let ms = |k: &str, default: u64| -> Result<Duration, CliError> {
        match get(k) {
            None => Ok(Duration::from_millis(default)),
            Some(v) => v.parse::<u64>().map(Duration::from_millis).map_err(|_| CliError::Usage(format!("{k}={v} is not a number of ms"))),
        }
    };
    let login = if protocol.sasl() { Some(login(kv)?) } else { None };
    let dialer = if protocol.tls() { tls_dialer(kv)? } else { Dialer::plaintext() };
    Ok(Settings {
        bootstrap,
        protocol,
        login,
        dialer,
        connect_timeout: ms("socket.connection.setup.timeout.ms", 10_000)?,
        request_timeout: ms("request.timeout.ms", 30_000)?,
        client_id: get("client.id").unwrap_or_else(|| "sluice-cli".into()),
        retries: get("retries")
            .map(|v| v.parse::<u32>().map_err(|_| CliError::Usage(format!("retries={v} is not a count"))))
            .transpose()?,
    })
}

/// The SASL login: `sasl.jaas.config`, or librdkafka's `sasl.username`/`sasl.password`.
fn login(kv: &BTreeMap<String, String>) -> Result<Login, CliError> {
    let get = |k: &str| kv.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    // Kafka's client default is GSSAPI, which this tool does not do.
    let mechanism = get("sasl.mechanism").or_else(|| get("sasl.mechanisms")).unwrap_or_else(|| "GSSAPI".into()).to_ascii_uppercase();
    if !matches!(mechanism.as_str(), "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512") {
        return Err(CliError::Usage(format!("sasl.mechanism={mechanism}: this tool logs in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")));
    }
    if let Some(text) = get("sasl.jaas.config") {
        let c = jaas::parse(&text).map_err(|e| CliError::Usage(format!("sasl.jaas.config: {e}")))?;
        return Login::from_jaas(&mechanism, &c).map_err(|e| CliError::Usage(format!("sasl.jaas.config: {e}")));
    }
    match (get("sasl.username"), get("sasl.password")) {
        (Some(u), Some(p)) => Ok(Login::new(&mechanism, &u, &p)),
        _ => Err(CliError::Usage("SASL needs sasl.jaas.config, or sasl.username and sasl.password".into())),
    }
}

/// A TLS dialer from the Java keys (`ssl.truststore.*`, `ssl.keystore.*`, `ssl.key.password`)
/// or librdkafka's (`ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`).
fn tls_dialer(kv: &BTreeMap<String, String>) -> Result<Dialer, CliError> {
    let get = |k: &str| kv.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let mut cfg = BrokerConfig::default();
    let mut set = |k: &str, v: &str| cfg.set_static(k, v).map_err(|e| CliError::Usage(format!("{k}: {e}")));
    let is_pem = |path: &str| std::fs::read(path).map(|b| b.trim_ascii_start().starts_with(b"-----")).unwrap_or(false);
    let read = |k: &str, path: &str| std::fs::read_to_string(path).map_err(|e| CliError::Usage(format!("{k} {path}: {e}")));
    if let Some(ca) = get("ssl.truststore.location").or_else(|| get("ssl.ca.location")) {
        set("ssl.truststore.location", &ca)?;
        // Kafka's default type is JKS; a PEM file is what this tool reads, so it is sniffed.
        let t = get("ssl.truststore.type").unwrap_or_else(|| if is_pem(&ca) { "PEM".into() } else { "PKCS12".into() });
        set("ssl.truststore.type", &t)?;
    }
    if let Some(p) = get("ssl.truststore.password") {
        set("ssl.truststore.password", &p)?;
    }
    if let Some(ks) = get("ssl.keystore.location") {
        set("ssl.keystore.location", &ks)?;
        let t = get("ssl.keystore.type").unwrap_or_else(|| if is_pem(&ks) { "PEM".into() } else { "PKCS12".into() });
        set("ssl.keystore.type", &t)?;
    } else if let (Some(cert), Some(key)) = (get("ssl.certificate.location"), get("ssl.key.location")) {
        set("ssl.keystore.type", "PEM")?;
        set("ssl.keystore.certificate.chain", &read("ssl.certificate.location", &cert)?)?;
        set("ssl.keystore.key", &read("ssl.key.location", &key)?)?;
    }
    for k in ["ssl.keystore.password", "ssl.key.password", "ssl.endpoint.identification.algorithm", "ssl.enabled.protocols"] {
        if let Some(v) = kv.get(k) {
            set(k, v.trim())?;
        }
    }
    Dialer::for_listener(&cfg, "client", SecurityProtocol::Ssl).map_err(|e| CliError::Usage(format!("TLS settings: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_with_comments_continuations_and_separators() {
        let text = "# a comment\n! another\nbootstrap.servers=h:1,h:2\nsecurity.protocol : SASL_SSL\nsasl.mechanism SCRAM-SHA-512\n\
                    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    username=\"admin\" \\\n    password=\"a=b\";\n\
                    path=C\\:\\\\dir\\tx\nuni=\\u0041\n";
        let p: BTreeMap<String, String> = crate::config::properties::parse(text).unwrap().into_iter().collect();
        assert_eq!(p["bootstrap.servers"], "h:1,h:2");
        assert_eq!(p["security.protocol"], "SASL_SSL");
        assert_eq!(p["sasl.mechanism"], "SCRAM-SHA-512");
        assert_eq!(
            p["sasl.jaas.config"],
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"a=b\";"
        );
        assert_eq!(p["path"], "C:\\dir\tx");
        assert_eq!(p["uni"], "A");
        assert_eq!(p.len(), 6);
    }

    #[test]
    fn sasl_login_from_jaas_or_username() {
        let mut kv = BTreeMap::new();
        kv.insert("security.protocol".to_string(), "SASL_PLAINTEXT".to_string());
        kv.insert("sasl.mechanism".to_string(), "SCRAM-SHA-256".to_string());
        kv.insert(
            "sasl.jaas.config".to_string(),
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"s3cret\";".to_string(),
        );
        let s = from_map("h:1", &kv).unwrap();
        let l = s.login.unwrap();
        assert_eq!((l.mechanism.as_str(), l.username.as_str()), ("SCRAM-SHA-256", "alice"));

        let mut kv = BTreeMap::new();
        kv.insert("security.protocol".to_string(), "sasl_plaintext".to_string());
        kv.insert("sasl.mechanisms".to_string(), "PLAIN".to_string());
        kv.insert("sasl.username".to_string(), "bob".to_string());
        kv.insert("sasl.password".to_string(), "pw".to_string());
        let l = from_map("h:1", &kv).unwrap().login.unwrap();
        assert_eq!((l.mechanism.as_str(), l.username.as_str()), ("PLAIN", "bob"));
    }

    #[test]
    fn bad_settings_are_usage_errors() {
        let mut kv = BTreeMap::new();
        kv.insert("security.protocol".to_string(), "SASL_PLAINTEXT".to_string());
        assert!(matches!(from_map("h:1", &kv), Err(CliError::Usage(m)) if m.contains("GSSAPI")));
        kv.insert("security.protocol".to_string(), "BOGUS".to_string());
        assert!(matches!(from_map("h:1", &kv), Err(CliError::Usage(_))));
        kv.clear();
        kv.insert("request.timeout.ms".to_string(), "soon".to_string());
        assert!(matches!(from_map("h:1", &kv), Err(CliError::Usage(_))));
        assert!(matches!(from_map(" , ", &BTreeMap::new()), Err(CliError::Usage(_))));
        let s = from_map("a:1, b:2", &BTreeMap::new()).unwrap();
        assert_eq!(s.bootstrap, vec!["a:1", "b:2"]);
        assert_eq!(s.request_timeout, Duration::from_secs(30));
    }
}
