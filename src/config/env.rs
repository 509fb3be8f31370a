//! Configuration from the environment, the way the apache/kafka image takes it: `KAFKA_`
//! followed by the key upper-cased, with `.` as `_`, `_` as `__` and `-` as `___`. Only
//! the Docker image turns it on (`SLUICE_KAFKA_ENV`), so the `KAFKA_*` variables of a
//! developer's shell never reach a broker started by hand.

use std::collections::BTreeMap;

/// Set (to anything) to read `KAFKA_*` variables and `CLUSTER_ID`; the image sets it.
pub const SWITCH: &str = "SLUICE_KAFKA_ENV";

/// The apache/kafka image's variables that are not broker keys (the JVM's and log4j's).
const NOT_KEYS: &[&str] = &[
    "KAFKA_VERSION",
    "KAFKA_HEAP_OPTS",
    "KAFKA_LOG4J_OPTS",
    "KAFKA_OPTS",
    "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_GC_LOG_OPTS",
    "KAFKA_LOG4J_ROOT_LOGLEVEL",
    "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL",
];

/// The key a variable names, `None` for a variable that names none.
pub fn key_of(var: &str) -> Result<Option<String>, String> {
    let Some(rest) = var.strip_prefix("KAFKA_") else { return Ok(None) };
    if NOT_KEYS.contains(&var) || rest.is_empty() {
        return Ok(None);
    }
    let mut key = String::with_capacity(rest.len());
    let mut run = 0;
    // A trailing NUL flushes the last run of underscores.
    for c in rest.chars().chain(std::iter::once('\0')) {
        if c == '_' {
            run += 1;
            continue;
        }
        match run {
            0 => {}
            1 => key.push('.'),
            2 => key.push('_'),
            3 => key.push('-'),
            n => return Err(format!("{var}: {n} underscores in a row name no character (_ is '.', __ is '_', ___ is '-')")),
        }
        run = 0;
        if c != '\0' {
            key.push(c.to_ascii_lowercase());
        }
    }
    Ok(Some(key))
}

/// One setting taken from the environment: the variable, its key, its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSetting {
    pub var: String,
    pub key: String,
    pub value: String,
}

/// The settings `vars` make, sorted by key. As in the apache/kafka image, `listeners`
/// defaults to `advertised.listeners` with every host made `0.0.0.0` (a container must
/// listen on all its interfaces to be reached through a published port), and with
/// neither given the node listens on `:9092` and advertises `localhost:9092`.
pub fn settings(vars: impl IntoIterator<Item = (String, String)>) -> Result<Vec<EnvSetting>, String> {
    let mut out: BTreeMap<String, EnvSetting> = BTreeMap::new();
    for (var, value) in vars {
        if let Some(key) = key_of(&var)? {
            out.insert(key.clone(), EnvSetting { var, key, value });
        }
    }
    let controller_only = out.get("process.roles").is_some_and(|r| r.value.trim() == "controller");
    if !out.contains_key("listeners") && !controller_only {
        let value = match out.get("advertised.listeners") {
            Some(a) => listen_on_all(&a.value),
            None => {
                let adv = EnvSetting {
                    var: "(image default)".into(),
                    key: "advertised.listeners".into(),
                    value: "PLAINTEXT://localhost:9092".into(),
                };
                out.insert(adv.key.clone(), adv);
                "PLAINTEXT://0.0.0.0:9092".into()
            }
        };
        out.insert("listeners".into(), EnvSetting { var: "(from advertised.listeners)".into(), key: "listeners".into(), value });
    }
    Ok(out.into_values().collect())
}

/// `NAME://host:port,...` with every host replaced by `0.0.0.0`.
fn listen_on_all(advertised: &str) -> String {
    advertised
        .split(',')
        .map(|e| match e.trim().split_once("://") {
            Some((name, hp)) => match hp.rsplit_once(':') {
                Some((_, port)) => format!("{name}://0.0.0.0:{port}"),
                None => e.trim().to_string(),
            },
            None => e.trim().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn names_map_as_in_the_apache_kafka_image() {
        assert_eq!(key_of("KAFKA_NODE_ID").unwrap().as_deref(), Some("node.id"));
        assert_eq!(key_of("KAFKA_LOG_DIRS").unwrap().as_deref(), Some("log.dirs"));
        assert_eq!(
            key_of("KAFKA_LISTENER_NAME_SASL__SSL_SCRAM___SHA___512_SASL_JAAS_CONFIG").unwrap().as_deref(),
            Some("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config")
        );
        assert_eq!(key_of("KAFKA_HEAP_OPTS").unwrap(), None);
        assert_eq!(key_of("CLUSTER_ID").unwrap(), None);
        assert_eq!(key_of("KAFKAESQUE").unwrap(), None);
        assert!(key_of("KAFKA_A____B").is_err());
    }

    #[test]
    fn listeners_follow_the_advertised_ones_unless_given() {
        let s = settings(vars(&[("KAFKA_ADVERTISED_LISTENERS", "PLAINTEXT://kafka-1:19092,HOST://localhost:29092"), ("PATH", "/bin")]))
            .unwrap();
        let l = s.iter().find(|e| e.key == "listeners").unwrap();
        assert_eq!(l.value, "PLAINTEXT://0.0.0.0:19092,HOST://0.0.0.0:29092");
        let s = settings(vars(&[("KAFKA_ADVERTISED_LISTENERS", "PLAINTEXT://h:1"), ("KAFKA_LISTENERS", "PLAINTEXT://:1")])).unwrap();
        assert_eq!(s.iter().find(|e| e.key == "listeners").unwrap().value, "PLAINTEXT://:1");
        let s = settings(vars(&[])).unwrap();
        let got: Vec<(&str, &str)> = s.iter().map(|e| (e.key.as_str(), e.value.as_str())).collect();
        assert_eq!(got, [("advertised.listeners", "PLAINTEXT://localhost:9092"), ("listeners", "PLAINTEXT://0.0.0.0:9092")]);
        let s = settings(vars(&[("KAFKA_PROCESS_ROLES", "controller")])).unwrap();
        assert!(s.iter().all(|e| e.key != "listeners"));
    }
}
