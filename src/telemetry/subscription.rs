//! Client-metrics subscriptions (KIP-714): the `client-metrics` config resources, checked
//! and parsed as Kafka 4.4's `ClientMetricsConfigs` does, and the client selectors they hold.

use std::collections::BTreeMap;

use regex::Regex;

use crate::config::ConfigType;
use crate::error::Error;

/// Metric name prefixes to collect; `*` means every metric.
pub const METRICS: &str = "metrics";
/// How often a matching client pushes (ms).
pub const INTERVAL_MS: &str = "interval.ms";
/// `selector=regex` pairs that a client must all match.
pub const MATCH: &str = "match";
/// Kafka's `INTERVAL_MS_DEFAULT`: five minutes.
pub const INTERVAL_MS_DEFAULT: i32 = 300_000;
/// Every metric (Kafka's `ALL_SUBSCRIBED_METRICS`).
pub const ALL_METRICS: &str = "*";

/// The keys of a `client-metrics` resource: name, type, default, documentation.
pub const KEYS: &[(&str, ConfigType, &str, &str)] = &[
    (METRICS, ConfigType::List, "", "Telemetry metric name prefix list"),
    (INTERVAL_MS, ConfigType::Int, "300000", "Metrics push interval in milliseconds"),
    (MATCH, ConfigType::List, "", "Client match criteria"),
];

/// The client attributes a `match` entry may select on.
pub const SELECTORS: [&str; 6] =
    ["client_instance_id", "client_id", "client_software_name", "client_software_version", "client_source_address", "client_source_port"];

/// One subscription as the manager uses it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub name: String,
    pub metrics: Vec<String>,
    pub interval_ms: i32,
    /// Every selector must fully match its attribute; none matches every client.
    pub matches: Vec<(String, Regex)>,
}

/// Kafka's LIST parsing: comma separated, trimmed, an empty string is an empty list.
fn list(v: &str) -> Vec<String> {
    if v.trim().is_empty() {
        return Vec::new();
    }
    v.split(',').map(|s| s.trim().to_string()).collect()
}

/// `selector=regex`, split as Java's `String.split("=")` does (trailing empty parts dropped,
/// exactly two parts wanted).
fn parse_match(entry: &str) -> Result<(String, Regex), Error> {
    let illegal = || Error::InvalidConfig(format!("Illegal client matching pattern: {entry}"));
    let mut parts: Vec<&str> = entry.split('=').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    let [param, pattern] = parts[..] else { return Err(illegal()) };
    let param = param.trim();
    if !SELECTORS.contains(&param) {
        return Err(illegal());
    }
    // Java's `matcher(value).matches()` is a whole-string match.
    let re = Regex::new(&format!("^(?:{})$", pattern.trim())).map_err(|_| illegal())?;
    Ok((param.to_string(), re))
}

/// Checks a resource's whole set of configs as `ClientMetricsConfigs.validate` does and
/// parses it. The messages and error types are Kafka's.
pub fn parse(name: &str, configs: &BTreeMap<String, String>) -> Result<Subscription, Error> {
    if name.is_empty() {
        return Err(Error::InvalidRequest("Subscription name can't be empty".into()));
    }
    if let Some(k) = configs.keys().find(|k| !KEYS.iter().any(|(n, ..)| n == k)) {
        return Err(Error::InvalidRequest(format!("Unknown client metrics configuration: {k}")));
    }
    let interval_ms = match configs.get(INTERVAL_MS) {
        None => INTERVAL_MS_DEFAULT,
        Some(v) => {
            let n: i32 = v.trim().parse().map_err(|_| {
                Error::InvalidConfig(format!("Invalid value {v} for configuration {INTERVAL_MS}: Not a number of type INT"))
            })?;
            if !(100..=3_600_000).contains(&n) {
                return Err(Error::InvalidRequest(format!(
                    "Invalid value {n} for {INTERVAL_MS}, interval must be between 100 and 3600000 (1 hour)"
                )));
            }
            n
        }
    };
    let matches = list(configs.get(MATCH).map_or("", String::as_str)).iter().map(|m| parse_match(m)).collect::<Result<_, _>>()?;
    Ok(Subscription { name: name.to_string(), metrics: list(configs.get(METRICS).map_or("", String::as_str)), interval_ms, matches })
}

/// What a client is known by, for matching (Kafka's `ClientMetricsInstanceMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    pub client_id: String,
    pub software_name: Option<String>,
    pub software_version: Option<String>,
    pub source_address: String,
    pub source_port: Option<u16>,
}

impl ClientInfo {
    fn attribute(&self, instance_id: &str, selector: &str) -> Option<String> {
        match selector {
            "client_instance_id" => Some(instance_id.to_string()),
            "client_id" => Some(self.client_id.clone()),
            "client_software_name" => self.software_name.clone(),
            "client_software_version" => self.software_version.clone(),
            "client_source_address" => Some(self.source_address.clone()),
            "client_source_port" => self.source_port.map(|p| p.to_string()),
            _ => None,
        }
    }

    /// Does this client (with `instance_id`) match every selector of `sub`?
    pub fn matches(&self, instance_id: &str, sub: &Subscription) -> bool {
        sub.matches.iter().all(|(sel, re)| self.attribute(instance_id, sel).is_some_and(|v| re.is_match(&v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn configs_are_checked_with_kafkas_messages() {
        let err = |kv: &[(&str, &str)]| parse("s", &configs(kv)).unwrap_err().to_string();
        assert!(err(&[("nope", "1")]).contains("Unknown client metrics configuration: nope"));
        assert!(err(&[(INTERVAL_MS, "99")]).contains("interval must be between 100 and 3600000 (1 hour)"));
        assert!(err(&[(INTERVAL_MS, "x")]).contains("Not a number of type INT"));
        assert!(err(&[(MATCH, "client_id")]).contains("Illegal client matching pattern: client_id"));
        assert!(err(&[(MATCH, "client_id=")]).contains("Illegal client matching pattern"));
        assert!(err(&[(MATCH, "colour=red")]).contains("Illegal client matching pattern: colour=red"));
        assert!(err(&[(MATCH, "client_id=(")]).contains("Illegal client matching pattern"));
        assert!(parse("", &configs(&[])).unwrap_err().to_string().contains("Subscription name can't be empty"));
        let s = parse("s", &configs(&[(METRICS, "org.apache.kafka.producer., *"), (MATCH, "client_id = app-.*")])).unwrap();
        assert_eq!((s.metrics.len(), s.interval_ms, s.matches.len()), (2, INTERVAL_MS_DEFAULT, 1));
    }

    #[test]
    fn every_selector_must_match_the_whole_attribute() {
        let s = parse("s", &configs(&[(MATCH, "client_id=app-.*,client_software_name=apache-kafka-java")])).unwrap();
        let mut c = ClientInfo { client_id: "app-1".into(), software_name: Some("apache-kafka-java".into()), ..Default::default() };
        assert!(c.matches("id", &s));
        c.client_id = "my-app-1".into();
        assert!(!c.matches("id", &s), "a partial match is no match");
        c.client_id = "app-1".into();
        c.software_name = None;
        assert!(!c.matches("id", &s), "an unknown attribute matches nothing");
        assert!(c.matches("id", &parse("all", &BTreeMap::new()).unwrap()), "no selector matches every client");
    }
}
