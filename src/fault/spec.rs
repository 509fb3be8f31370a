//! What a fault is, as asked for (`POST /v1/faults` bodies, `sluice fault` flags) and as
//! listed: a kind, its target (an API or a peer) and its limits.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::names;

/// One fault's effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    /// Answer requests of `api` with `error` (every level of the response that has a code).
    Inject { api: i16, error: i16, probability: Option<f64> },
    /// Hold requests of `api` for `ms` before serving them.
    Latency { api: i16, ms: u64 },
    /// Close the connection when a request of `api` arrives, without answering it.
    Disconnect { api: i16 },
    /// Cut this node off from every other node, both ways; clients still reach it.
    Isolate,
    /// Cut the link to and from node `peer`.
    Cut { peer: i32 },
    /// Delay messages on the link to and from node `peer` by `ms`.
    Delay { peer: i32, ms: u64 },
    /// Drop each message on the link to and from node `peer` with `probability`.
    Drop { peer: i32, probability: f64 },
    /// Shift this node's wall clock by `skew_ms` (either way).
    Clock { skew_ms: i64 },
    /// Fail partition log writes or flushes (of `topic`, or every topic) as a failing disk
    /// does: the log dir goes offline.
    Disk { op: DiskOp, topic: Option<String> },
}

/// What a disk fault fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskOp {
    /// Appends to a partition's log.
    Write,
    /// fsyncs of a partition's log (`flush.messages`, `flush.ms`).
    Fsync,
}

impl DiskOp {
    fn name(self) -> &'static str {
        match self {
            DiskOp::Write => "write",
            DiskOp::Fsync => "fsync",
        }
    }
}

/// The fault kinds, as a request names them.
pub const KINDS: &[&str] = &["inject", "latency", "disconnect", "isolate", "cut", "delay", "drop", "clock", "disk"];

/// A fault as asked for: the `POST /v1/faults` body.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// A Kafka error name or a numeric code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// Requests it applies to before it clears itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<i32>,
    /// For `clock`: milliseconds to shift this node's clock by (negative: back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew_ms: Option<i64>,
    /// For `disk`: what fails, `write` or `fsync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail: Option<String>,
    /// For `disk`: only this topic's logs (default: every topic's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Seeds the fault's random draws (probability), so a run can be repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The fault clears itself this long after it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// A request checked: the effect and its limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub spec: Spec,
    pub count: Option<u32>,
    pub seed: Option<u64>,
    pub duration_ms: Option<u64>,
}

impl Request {
    /// Checks the request: names resolved, the fields its kind needs present and in range,
    /// no field its kind does not use. The message lists valid names where a name is wrong.
    pub fn check(&self) -> Result<Checked, String> {
        let kind = self.kind.trim().to_ascii_lowercase();
        let api = || -> Result<i16, String> {
            let name = self.api.as_deref().ok_or_else(|| format!("{kind} needs an api; valid names: {}", names::api_names().join(", ")))?;
            Ok(names::api_key(name)? as i16)
        };
        let peer = || self.peer.ok_or_else(|| format!("{kind} needs a peer (a node id)"));
        let ms = || self.ms.ok_or_else(|| format!("{kind} needs ms"));
        let probability = |p: Option<f64>| match p {
            Some(p) if !(p > 0.0 && p <= 1.0) => Err(format!("probability must be in (0, 1], not {p}")),
            p => Ok(p),
        };
        let spec = match kind.as_str() {
            "inject" => {
                let error = match &self.error {
                    Some(Value::String(s)) => names::error_code(s)?,
                    Some(Value::Number(n)) => names::error_code(&n.to_string())?,
                    Some(v) => return Err(format!("error must be a Kafka error name or code, not {v}")),
                    None => return Err(format!("inject needs an error; valid names: {}", names::error_names().join(", "))),
                };
                let api = api()?;
                if !names::INJECTABLE.iter().any(|k| *k as i16 == api) {
                    let can: Vec<String> = names::INJECTABLE.iter().map(|k| format!("{k:?}")).collect();
                    return Err(format!(
                        "errors cannot be injected into {} responses yet; APIs that can: {}",
                        names::api_name(api),
                        can.join(", ")
                    ));
                }
                if self.count.is_some() && self.probability.is_some() {
                    return Err("inject takes count or probability, not both".into());
                }
                Spec::Inject { api, error, probability: probability(self.probability)? }
            }
            "latency" => Spec::Latency { api: api()?, ms: ms()? },
            "disconnect" => Spec::Disconnect { api: api()? },
            "isolate" => Spec::Isolate,
            "cut" => Spec::Cut { peer: peer()? },
            "delay" => Spec::Delay { peer: peer()?, ms: ms()? },
            "drop" => {
                Spec::Drop { peer: peer()?, probability: probability(self.probability)?.ok_or("drop needs a probability in (0, 1]")? }
            }
            "clock" => {
                if self.duration_ms.is_some() {
                    // Expiry is judged on this node's clock, which this fault moves.
                    return Err("clock does not take duration_ms; clear it instead".into());
                }
                Spec::Clock { skew_ms: self.skew_ms.ok_or("clock needs skew_ms")? }
            }
            "disk" => {
                let op = match self.fail.as_deref().map(|f| f.trim().to_ascii_lowercase()) {
                    Some(f) if f == "write" => DiskOp::Write,
                    Some(f) if f == "fsync" => DiskOp::Fsync,
                    Some(f) => return Err(format!("unknown disk failure '{f}'; valid: write, fsync")),
                    None => return Err("disk needs fail: write or fsync".into()),
                };
                let topic = self.topic.as_ref().map(|t| t.trim().to_string());
                if topic.as_deref() == Some("") {
                    return Err("topic must not be empty".into());
                }
                Spec::Disk { op, topic }
            }
            other => return Err(format!("unknown fault kind '{other}'; valid kinds: {}", KINDS.join(", "))),
        };
        self.unused_fields(&spec)?;
        if self.count == Some(0) {
            return Err("count must be at least 1".into());
        }
        Ok(Checked { spec, count: self.count, seed: self.seed, duration_ms: self.duration_ms })
    }

    /// Refuses a field the kind does not read, so a typo'd request does not silently mean less.
    fn unused_fields(&self, spec: &Spec) -> Result<(), String> {
        let (api, error, count, probability, ms, peer) = match spec {
            Spec::Inject { .. } => (true, true, true, true, false, false),
            Spec::Latency { .. } => (true, false, false, false, true, false),
            Spec::Disconnect { .. } => (true, false, true, false, false, false),
            Spec::Isolate | Spec::Clock { .. } | Spec::Disk { .. } => (false, false, false, false, false, false),
            Spec::Cut { .. } => (false, false, false, false, false, true),
            Spec::Delay { .. } => (false, false, false, false, true, true),
            Spec::Drop { .. } => (false, false, false, true, false, true),
        };
        if self.skew_ms.is_some() && !matches!(spec, Spec::Clock { .. }) {
            return Err(format!("{} does not take skew_ms", spec.kind()));
        }
        if (self.fail.is_some() || self.topic.is_some()) && !matches!(spec, Spec::Disk { .. }) {
            let field = if self.fail.is_some() { "fail" } else { "topic" };
            return Err(format!("{} does not take {field}", spec.kind()));
        }
        let given = [
            ("api", self.api.is_some(), api),
            ("error", self.error.is_some(), error),
            ("count", self.count.is_some(), count),
            ("probability", self.probability.is_some(), probability),
            ("ms", self.ms.is_some(), ms),
            ("peer", self.peer.is_some(), peer),
        ];
        match given.iter().find(|(_, set, used)| *set && !*used) {
            Some((field, _, _)) => Err(format!("{} does not take {field}", spec.kind())),
            None => Ok(()),
        }
    }
}

impl Spec {
    /// The kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::Inject { .. } => "inject",
            Spec::Latency { .. } => "latency",
            Spec::Disconnect { .. } => "disconnect",
            Spec::Isolate => "isolate",
            Spec::Cut { .. } => "cut",
            Spec::Delay { .. } => "delay",
            Spec::Drop { .. } => "drop",
            Spec::Clock { .. } => "clock",
            Spec::Disk { .. } => "disk",
        }
    }

    /// A request fault (client requests).
    pub fn is_request(&self) -> bool {
        matches!(self, Spec::Inject { .. } | Spec::Latency { .. } | Spec::Disconnect { .. })
    }

    /// A link fault (messages between nodes).
    pub fn is_link(&self) -> bool {
        matches!(self, Spec::Isolate | Spec::Cut { .. } | Spec::Delay { .. } | Spec::Drop { .. })
    }

    /// One line for logs and the journal: `inject Produce NOT_LEADER_OR_FOLLOWER`.
    pub fn describe(&self) -> String {
        let err = |c: i16| names::error_name(c).unwrap_or_else(|| c.to_string());
        match self {
            Spec::Inject { api, error, probability: Some(p) } => {
                format!("inject {} {} with probability {p}", names::api_name(*api), err(*error))
            }
            Spec::Inject { api, error, probability: None } => format!("inject {} {}", names::api_name(*api), err(*error)),
            Spec::Latency { api, ms } => format!("latency {} {ms} ms", names::api_name(*api)),
            Spec::Disconnect { api } => format!("disconnect {}", names::api_name(*api)),
            Spec::Isolate => "isolate".into(),
            Spec::Cut { peer } => format!("cut peer {peer}"),
            Spec::Delay { peer, ms } => format!("delay peer {peer} {ms} ms"),
            Spec::Drop { peer, probability } => format!("drop peer {peer} with probability {probability}"),
            Spec::Clock { skew_ms } => format!("clock skew {skew_ms} ms"),
            Spec::Disk { op, topic: Some(t) } => format!("disk {} fails for topic {t}", op.name()),
            Spec::Disk { op, topic: None } => format!("disk {} fails", op.name()),
        }
    }

    /// The spec's fields as JSON, named as a request names them.
    pub fn fields(&self) -> Value {
        let err = |c: i16| names::error_name(c).unwrap_or_else(|| c.to_string());
        match self {
            Spec::Inject { api, error, probability } => json!({
                "api": names::api_name(*api), "error": err(*error), "error_code": error, "probability": probability,
            }),
            Spec::Latency { api, ms } => json!({ "api": names::api_name(*api), "ms": ms }),
            Spec::Disconnect { api } => json!({ "api": names::api_name(*api) }),
            Spec::Isolate => json!({}),
            Spec::Cut { peer } => json!({ "peer": peer }),
            Spec::Delay { peer, ms } => json!({ "peer": peer, "ms": ms }),
            Spec::Drop { peer, probability } => json!({ "peer": peer, "probability": probability }),
            Spec::Clock { skew_ms } => json!({ "skew_ms": skew_ms }),
            Spec::Disk { op, topic } => json!({ "fail": op.name(), "topic": topic }),
        }
    }
}
