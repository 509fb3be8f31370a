//! Listeners as Kafka configures them: `listeners`, `advertised.listeners`,
//! `listener.security.protocol.map`, `inter.broker.listener.name` (or
//! `security.inter.broker.protocol`) and `controller.listener.names`, checked together at
//! startup with Kafka's rules, and `listener.name.<name>.<key>` overrides.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::BrokerConfig;

/// How a listener's connections are secured (Kafka's `SecurityProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name of the protocol.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Parses Kafka's name (upper case, as Kafka's `SecurityProtocol.forName`).
    pub fn parse(s: &str) -> Result<SecurityProtocol, ListenerError> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Ok(SecurityProtocol::Plaintext),
            "SSL" => Ok(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Ok(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Ok(SecurityProtocol::SaslSsl),
            other => Err(ListenerError(format!("security protocol '{other}' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"))),
        }
    }

    /// Whether connections are wrapped in TLS.
    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether connections authenticate with SASL first.
    pub fn sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A listener setting that Kafka would refuse at startup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ListenerError(pub String);

/// One `NAME://host:port` entry with the protocol its name maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Upper case, as Kafka normalises listener names.
    pub name: String,
    /// Empty: every interface (or, advertised, this machine).
    pub host: String,
    pub port: u16,
    pub protocol: SecurityProtocol,
}

impl Listener {
    /// `host:port`, with brackets around an IPv6 literal.
    pub fn address(&self) -> String {
        host_port(&self.host, self.port)
    }
}

/// `host:port`, with brackets around an IPv6 literal.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One voter of `controller.quorum.voters`. The host stays a name, looked up on every
/// dial: a peer that comes back at another address (a restarted container) is found
/// again, and a name that does not resolve yet (a peer still starting) is no error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voter {
    pub host: String,
    pub port: u16,
}

impl Voter {
    /// `host:port`, with brackets around an IPv6 literal.
    pub fn address(&self) -> String {
        host_port(&self.host, self.port)
    }
}

/// `controller.quorum.voters`: `id@host:port,...`, checked as Kafka's `QuorumConfig` does.
pub fn parse_voters(value: &str) -> Result<BTreeMap<i32, Voter>, ListenerError> {
    let mut out = BTreeMap::new();
    for entry in csv(value) {
        let bad = |why: &str| ListenerError(format!("Invalid controller.quorum.voters '{value}': '{entry}' {why}"));
        let (id, hp) = entry.split_once('@').ok_or_else(|| bad("is not id@host:port"))?;
        let id = id.trim().parse::<i32>().ok().filter(|i| *i >= 0).ok_or_else(|| bad("has no valid node id"))?;
        let (host, port) = hp.trim().rsplit_once(':').ok_or_else(|| bad("has no port"))?;
        let port = port.parse::<u16>().map_err(|_| bad("has a bad port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c)) {
            return Err(bad("has a bad host"));
        }
        if out.insert(id, Voter { host, port }).is_some() {
            return Err(bad("names a node id twice"));
        }
    }
    Ok(out)
}

/// The listeners of this node and which of them carry broker and controller traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listeners {
    /// Every listener to bind, in config order, controller listeners included.
    pub bind: Vec<Listener>,
    /// The addresses a broker registers: one per non-controller listener.
    pub advertised: Vec<Listener>,
    /// The listener brokers use to reach each other.
    pub inter_broker: String,
    pub inter_broker_protocol: SecurityProtocol,
    /// `controller.listener.names`; the first is the one this node dials controllers on.
    pub controller_names: Vec<String>,
    /// The first controller listener's protocol; None when the map has no entry for it,
    /// which only a node that talks to a quorum must have (see [`Listeners::controller_protocol`]).
    pub controller_protocol: Option<SecurityProtocol>,
}

/// Kafka's default `listener.security.protocol.map`.
pub const DEFAULT_PROTOCOL_MAP: &str = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT";

fn csv(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn explicitly_set(cfg: &BrokerConfig, key: &str) -> bool {
    cfg.static_set.contains_key(key) || cfg.dynamic_set.contains_key(key)
}

/// The part before `://`, upper-cased: what Kafka's `EndPoint.parseListenerName` reads.
fn listener_name(entry: &str) -> String {
    entry.split_once("://").map_or(entry, |(n, _)| n).trim().to_ascii_uppercase()
}

/// `listener.security.protocol.map` as Kafka reads it, with its KRaft rule: when the map
/// is left at its default and nothing uses SSL or SASL, controller listener names map to
/// PLAINTEXT.
pub fn protocol_map(cfg: &BrokerConfig) -> Result<BTreeMap<String, SecurityProtocol>, ListenerError> {
    let raw = cfg.get("listener.security.protocol.map");
    let mut map = BTreeMap::new();
    for entry in csv(&raw) {
        let (name, proto) = entry.split_once(':').ok_or_else(|| {
            ListenerError(format!("invalid value '{raw}' for listener.security.protocol.map: '{entry}' is not NAME:PROTOCOL"))
        })?;
        let proto = SecurityProtocol::parse(proto).map_err(|e| ListenerError(format!("listener.security.protocol.map: {e}")))?;
        if map.insert(name.trim().to_ascii_uppercase(), proto).is_some() {
            return Err(ListenerError(format!("listener.security.protocol.map names listener {} twice", name.trim())));
        }
    }
    if !explicitly_set(cfg, "listener.security.protocol.map") {
        let secured = |n: &str| matches!(n, "SSL" | "SASL_SSL" | "SASL_PLAINTEXT");
        let controllers: Vec<String> = csv(&cfg.get("controller.listener.names")).map(str::to_ascii_uppercase).collect();
        let listeners = cfg.get("listeners");
        if !controllers.iter().any(|n| secured(n)) && !csv(&listeners).any(|l| secured(&listener_name(l))) {
            for c in controllers {
                map.entry(c).or_insert(SecurityProtocol::Plaintext);
            }
        }
    }
    Ok(map)
}

/// Parses a listener list (`NAME://host:port,...`) against the protocol map.
pub fn parse_list(key: &str, value: &str, map: &BTreeMap<String, SecurityProtocol>) -> Result<Vec<Listener>, ListenerError> {
    let mut out = Vec::new();
    for entry in csv(value) {
        let bad = |why: String| ListenerError(format!("Error creating broker listeners from '{value}' ({key}): {why}"));
        let Some((name, hp)) = entry.split_once("://") else {
            return Err(bad(format!("unable to parse '{entry}' to a broker endpoint (want NAME://host:port)")));
        };
        let name = name.trim().to_ascii_uppercase();
        if name.is_empty() {
            return Err(bad(format!("'{entry}' has no listener name")));
        }
        let (host, port) = hp.rsplit_once(':').ok_or_else(|| bad(format!("'{entry}' has no port")))?;
        let port = port.trim().parse::<u16>().map_err(|_| bad(format!("bad port in '{entry}'")))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']').to_string();
        if !host.chars().all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c)) {
            return Err(bad(format!("bad host in '{entry}'")));
        }
        let protocol = *map.get(&name).ok_or_else(|| bad(format!("No security protocol defined for listener {name}")))?;
        out.push(Listener { name, host, port, protocol });
    }
    Ok(out)
}

/// Kafka's checks of one list: distinct names, and distinct ports unless one IPv4 and one
/// IPv6 listener share a port.
fn check_distinct(key: &str, list: &[Listener], value: &str) -> Result<(), ListenerError> {
    for (i, a) in list.iter().enumerate() {
        if list[..i].iter().any(|b| b.name == a.name) {
            return Err(ListenerError(format!(
                "Each listener must have a different name, {key}: {value} (listener {} is named twice)",
                a.name
            )));
        }
    }
    let mut by_port: BTreeMap<u16, Vec<&Listener>> = BTreeMap::new();
    for l in list.iter().filter(|l| l.port != 0) {
        by_port.entry(l.port).or_default().push(l);
    }
    for (port, ls) in by_port.into_iter().filter(|(_, ls)| ls.len() > 1) {
        let family = |l: &Listener| l.host.parse::<std::net::IpAddr>().ok().map(|ip| ip.is_ipv4());
        let v4_and_v6 = ls.len() == 2 && matches!((family(ls[0]), family(ls[1])), (Some(a), Some(b)) if a != b);
        if !v4_and_v6 {
            return Err(ListenerError(format!(
                "Each listener must have a different port unless exactly one is IPv4 and the other IPv6, {key}: {value}, port: {port}"
            )));
        }
    }
    Ok(())
}

impl Listeners {
    /// This node's listeners, with every rule Kafka checks at startup for the given roles.
    pub fn from_config(cfg: &BrokerConfig, is_broker: bool, is_controller: bool) -> Result<Listeners, ListenerError> {
        let map = protocol_map(cfg)?;
        // At its default (a PLAINTEXT client listener; config.toml spells the default out),
        // `listeners` means nothing to a controller-only node: it serves the quorum on its
        // voter address (Sluice's shorthand).
        let raw = cfg.get("listeners");
        let default = super::broker_key("listeners").and_then(|d| d.default).unwrap_or_default();
        let raw = if is_controller && !is_broker && raw == default { String::new() } else { raw };
        let bind = parse_list("listeners", &raw, &map)?;
        check_distinct("listeners", &bind, &raw)?;
        let controller_names: Vec<String> = csv(&cfg.get("controller.listener.names")).map(str::to_ascii_uppercase).collect();
        if controller_names.is_empty() {
            return Err(ListenerError("controller.listener.names must contain at least one value when running KRaft".into()));
        }
        let is_ctl = |n: &str| controller_names.iter().any(|c| c == n);
        if is_broker && !is_controller && bind.iter().any(|l| is_ctl(&l.name)) {
            return Err(ListenerError(
                "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role".into(),
            ));
        }
        if is_controller && !is_broker {
            if let Some(l) = bind.iter().find(|l| !is_ctl(&l.name)) {
                return Err(ListenerError(format!(
                    "The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller; {} is not one",
                    l.name
                )));
            }
        }
        let controller_protocol = map.get(&controller_names[0]).copied();

        let advertised = if explicitly_set(cfg, "advertised.listeners") {
            let raw_adv = cfg.get("advertised.listeners");
            let adv = parse_list("advertised.listeners", &raw_adv, &map)?;
            check_distinct("advertised.listeners", &adv, &raw_adv)?;
            if adv.iter().any(|l| l.host == "0.0.0.0") {
                return Err(ListenerError(
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.".into(),
                ));
            }
            if let Some(l) = adv.iter().find(|l| !bind.iter().any(|b| b.name == l.name)) {
                let names: Vec<&str> = bind.iter().map(|b| b.name.as_str()).collect();
                return Err(ListenerError(format!(
                    "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found {}. The valid options based on the current configuration are {}",
                    l.name,
                    names.join(",")
                )));
            }
            if is_broker && adv.iter().any(|l| is_ctl(&l.name)) {
                return Err(ListenerError(
                    "The advertised.listeners config must not contain KRaft controller listeners from controller.listener.names when process.roles contains the broker role because Kafka clients that send requests via advertised listeners do not send requests to KRaft controllers -- they only send requests to KRaft brokers.".into(),
                ));
            }
            // A listener left out of advertised.listeners is advertised as it is bound, as Kafka does.
            let mut all = adv;
            for b in bind.iter().filter(|b| !is_ctl(&b.name)) {
                if !all.iter().any(|a| a.name == b.name) {
                    all.push(b.clone());
                }
            }
            all
        } else {
            bind.iter().filter(|l| !is_ctl(&l.name)).cloned().collect()
        };

        let by_name = explicitly_set(cfg, "inter.broker.listener.name");
        if by_name && explicitly_set(cfg, "security.inter.broker.protocol") {
            return Err(ListenerError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.".into()));
        }
        let (inter_broker, inter_broker_protocol) = if by_name {
            let name = cfg.get("inter.broker.listener.name").trim().to_ascii_uppercase();
            let p = *map.get(&name).ok_or_else(|| {
                ListenerError(format!(
                    "Listener with name {name} defined in inter.broker.listener.name not found in listener.security.protocol.map."
                ))
            })?;
            (name, p)
        } else {
            let p = SecurityProtocol::parse(&cfg.get("security.inter.broker.protocol"))
                .map_err(|e| ListenerError(format!("security.inter.broker.protocol: {e}")))?;
            // The listener named after the protocol is secured as the map says (a map of
            // PLAINTEXT:SSL makes the PLAINTEXT listener, and so the brokers' links, TLS).
            (p.name().to_string(), map.get(p.name()).copied().unwrap_or(p))
        };
        if is_ctl(&inter_broker) {
            return Err(ListenerError(format!(
                "inter.broker.listener.name {inter_broker} is a controller listener (controller.listener.names); brokers cannot reach each other on it"
            )));
        }
        if is_broker && !advertised.iter().any(|l| l.name == inter_broker) {
            let names: Vec<&str> = advertised.iter().map(|l| l.name.as_str()).collect();
            return Err(ListenerError(format!(
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are {}",
                names.join(",")
            )));
        }
        Ok(Listeners { bind, advertised, inter_broker, inter_broker_protocol, controller_names, controller_protocol })
    }

    /// The controller listener's protocol, for a node that serves or dials the quorum: as
    /// in Kafka, its name must be in the protocol map (a single node with no voters has no
    /// controller traffic, so Sluice asks only then).
    pub fn controller_protocol(&self) -> Result<SecurityProtocol, ListenerError> {
        self.controller_protocol.ok_or_else(|| {
            ListenerError(format!("No security protocol defined for listener {} (controller.listener.names)", self.controller_names[0]))
        })
    }

    /// The listener serving controller traffic on this node, if `listeners` has one.
    pub fn controller_listener(&self) -> Option<&Listener> {
        self.controller_names.iter().find_map(|n| self.bind.iter().find(|l| &l.name == n))
    }

    /// The listeners serving clients and brokers (every one that is not a controller's).
    pub fn broker_listeners(&self) -> impl Iterator<Item = &Listener> {
        self.bind.iter().filter(|l| !self.controller_names.contains(&l.name))
    }
}

/// A key's value for one listener: `listener.name.<name>.<key>` (name in lower case) if
/// set, else the key itself, as Kafka's per-listener configs work.
pub fn for_listener(cfg: &BrokerConfig, listener: &str, key: &str) -> String {
    let scoped = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
    match cfg.lookup(&scoped) {
        Some((v, _)) => v,
        None => cfg.get(key),
    }
}

/// Whether `key` or its override for `listener` was given at all (not left at its default).
pub fn is_set_for_listener(cfg: &BrokerConfig, listener: &str, key: &str) -> bool {
    explicitly_set(cfg, &format!("listener.name.{}.{key}", listener.to_ascii_lowercase())) || explicitly_set(cfg, key)
}

/// Splits `listener.name.<name>.<key>` into its listener and key.
pub fn split_listener_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (name, inner) = rest.split_once('.')?;
    (!name.is_empty() && !inner.is_empty()).then_some((name, inner))
}

#[cfg(test)]
#[path = "listeners_tests.rs"]
mod tests;
