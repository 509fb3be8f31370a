//! `sluice fault`: injects, lists and clears faults on one node over its HTTP listener
//! (`/v1/faults`; the node must run with `fault.injection.enable=true`). The node checks
//! every request and names the valid choices when one is wrong; this command prints that
//! and exits 1. Plain HTTP/1.1 over std's `TcpStream`, one request per connection.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use super::CliError;

const TIMEOUT: Duration = Duration::from_secs(10);

/// `sluice fault ...`.
#[derive(Args, Debug)]
pub struct FaultArgs {
    /// The node's HTTP listener, HOST:PORT. Default: env SLUICE_HTTP, else 127.0.0.1:9644.
    #[arg(long, env = "SLUICE_HTTP", default_value = "127.0.0.1:9644", global = true)]
    pub http: String,
    /// text (one line per fault) or json (the node's answer).
    #[arg(long, default_value = "text", value_parser = ["text", "json"], global = true)]
    pub format: String,
    #[command(subcommand)]
    pub command: FaultCommand,
}

/// How long a fault lasts and how its random draws are seeded.
#[derive(Args, Debug, Clone, Default)]
pub struct Limits {
    /// The fault clears itself after this many milliseconds.
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// Seed of the fault's random draws (with --probability), to repeat a run.
    #[arg(long)]
    pub seed: Option<u64>,
}

/// The faults, and list/clear.
#[derive(Subcommand, Debug)]
pub enum FaultCommand {
    /// Cut this node off from every other node, both ways (clients still reach it).
    Isolate {
        #[command(flatten)]
        limits: Limits,
    },
    /// Cut the link between this node and node PEER.
    Cut {
        #[arg(long)]
        peer: i32,
        #[command(flatten)]
        limits: Limits,
    },
    /// Delay messages between this node and node PEER.
    Delay {
        #[arg(long)]
        peer: i32,
        #[arg(long)]
        ms: u64,
        #[command(flatten)]
        limits: Limits,
    },
    /// Drop messages between this node and node PEER with a probability.
    Drop {
        #[arg(long)]
        peer: i32,
        #[arg(long)]
        probability: f64,
        #[command(flatten)]
        limits: Limits,
    },
    /// Answer client requests of an API with a Kafka error.
    Inject {
        /// Kafka's API name: Produce, Fetch, InitProducerId, ...
        #[arg(long)]
        api: String,
        /// Kafka's error name (NOT_LEADER_OR_FOLLOWER) or code (6).
        #[arg(long)]
        error: String,
        /// Only the next COUNT requests.
        #[arg(long, conflicts_with = "probability")]
        count: Option<u32>,
        /// Each request with this probability.
        #[arg(long)]
        probability: Option<f64>,
        #[command(flatten)]
        limits: Limits,
    },
    /// Hold client requests of an API before serving them.
    Latency {
        #[arg(long)]
        api: String,
        #[arg(long)]
        ms: u64,
        #[command(flatten)]
        limits: Limits,
    },
    /// Close the connection when a client request of an API arrives.
    Disconnect {
        #[arg(long)]
        api: String,
        /// Only the next COUNT requests.
        #[arg(long)]
        count: Option<u32>,
        #[command(flatten)]
        limits: Limits,
    },
    /// Shift this node's wall clock (negative: back) until cleared.
    Clock {
        #[arg(long, allow_negative_numbers = true)]
        skew_ms: i64,
    },
    /// Fail partition log writes or fsyncs as a failing disk does: the node takes its log dir
    /// offline (KAFKA_STORAGE_ERROR) and, its only log dir gone, halts as Kafka's broker does.
    Disk {
        /// write or fsync.
        #[arg(long, value_parser = ["write", "fsync"])]
        fail: String,
        /// Only this topic's logs (default: every topic's).
        #[arg(long)]
        topic: Option<String>,
        #[command(flatten)]
        limits: Limits,
    },
    /// The active faults.
    List,
    /// Clear one fault by id, or all of them.
    Clear { id: Option<u64> },
}

/// The `POST /v1/faults` body for a fault command (None for list and clear).
fn body(c: &FaultCommand) -> Option<Value> {
    let none = Limits::default();
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        if !v.is_null() {
            m.insert(k.to_string(), v);
        }
    };
    let limits = match c {
        FaultCommand::Isolate { limits } => {
            put("kind", json!("isolate"));
            limits
        }
        FaultCommand::Cut { peer, limits } => {
            put("kind", json!("cut"));
            put("peer", json!(peer));
            limits
        }
        FaultCommand::Delay { peer, ms, limits } => {
            put("kind", json!("delay"));
            put("peer", json!(peer));
            put("ms", json!(ms));
            limits
        }
        FaultCommand::Drop { peer, probability, limits } => {
            put("kind", json!("drop"));
            put("peer", json!(peer));
            put("probability", json!(probability));
            limits
        }
        FaultCommand::Inject { api, error, count, probability, limits } => {
            put("kind", json!("inject"));
            put("api", json!(api));
            // A number is sent as a number, so the node reads it as a code.
            put("error", error.trim().parse::<i64>().map_or_else(|_| json!(error), |n| json!(n)));
            put("count", json!(count));
            put("probability", json!(probability));
            limits
        }
        FaultCommand::Latency { api, ms, limits } => {
            put("kind", json!("latency"));
            put("api", json!(api));
            put("ms", json!(ms));
            limits
        }
        FaultCommand::Disconnect { api, count, limits } => {
            put("kind", json!("disconnect"));
            put("api", json!(api));
            put("count", json!(count));
            limits
        }
        FaultCommand::Clock { skew_ms } => {
            put("kind", json!("clock"));
            put("skew_ms", json!(skew_ms));
            &none
        }
        FaultCommand::Disk { fail, topic, limits } => {
            put("kind", json!("disk"));
            put("fail", json!(fail));
            put("topic", json!(topic));
            limits
        }
        FaultCommand::List | FaultCommand::Clear { .. } => return None,
    };
    put("duration_ms", json!(limits.duration_ms));
    put("seed", json!(limits.seed));
    Some(Value::Object(m))
}

/// Runs `fault`.
pub fn run(a: &FaultArgs) -> Result<i32, CliError> {
    let json_out = a.format == "json";
    let (method, path, sent) = match &a.command {
        FaultCommand::List => ("GET", "/v1/faults".to_string(), None),
        FaultCommand::Clear { id: None } => ("DELETE", "/v1/faults".to_string(), None),
        FaultCommand::Clear { id: Some(id) } => ("DELETE", format!("/v1/faults/{id}"), None),
        c => ("POST", "/v1/faults".to_string(), body(c)),
    };
    let answer = request(&a.http, method, &path, sent.as_ref())?;
    if json_out {
        println!("{answer}");
        return Ok(0);
    }
    match &a.command {
        FaultCommand::List if answer["faults"].as_array().is_some_and(|f| f.is_empty()) => println!("no active faults"),
        FaultCommand::List => answer["faults"].as_array().into_iter().flatten().for_each(|f| println!("{}", line(f))),
        FaultCommand::Clear { .. } => answer["faults"].as_array().into_iter().flatten().for_each(|f| println!("cleared {}", line(f))),
        _ => println!("injected {}", line(&answer)),
    }
    Ok(0)
}

/// One fault for people: `3  inject Produce NOT_LEADER_OR_FOLLOWER  (2 left)`.
fn line(f: &Value) -> String {
    let left = f["remaining"].as_u64().map(|n| format!("  ({n} left)")).unwrap_or_default();
    format!("{}  {}{left}", f["id"], f["description"].as_str().unwrap_or("?"))
}

/// Sends one HTTP request and returns the JSON answer; a status other than 2xx is an
/// error carrying the node's message.
fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Value, CliError> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| CliError::Usage(format!("--http {addr}: {e}")))?
        .next()
        .ok_or_else(|| CliError::Usage(format!("--http {addr}: no address")))?;
    let mut s = TcpStream::connect_timeout(&sock, TIMEOUT).map_err(|e| CliError::Io(format!("cannot connect to {addr}: {e}")))?;
    s.set_read_timeout(Some(TIMEOUT))?;
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: sluice-cli\r\n\r\n{payload}",
        payload.len()
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n").ok_or_else(|| CliError::Protocol(format!("{addr}: not an HTTP answer")))?;
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok()).unwrap_or(0);
    let chunked =
        head.lines().any(|h| h.to_ascii_lowercase().starts_with("transfer-encoding:") && h.to_ascii_lowercase().contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_string() };
    let v: Value = serde_json::from_str(body.trim()).unwrap_or_else(|_| json!({ "error": body.trim() }));
    if !(200..300).contains(&code) {
        let msg = v["error"].as_str().map_or_else(|| v.to_string(), str::to_string);
        return Err(CliError::Protocol(format!("{method} http://{addr}{path}: HTTP {code}: {msg}")));
    }
    Ok(v)
}

/// A chunked body's data.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_become_the_nodes_fault_requests() {
        let inject = FaultCommand::Inject {
            api: "Produce".into(),
            error: "NOT_LEADER_OR_FOLLOWER".into(),
            count: Some(3),
            probability: None,
            limits: Limits::default(),
        };
        assert_eq!(body(&inject).unwrap(), json!({"kind": "inject", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}));
        let by_code = FaultCommand::Inject {
            api: "Fetch".into(),
            error: "15".into(),
            count: None,
            probability: Some(0.5),
            limits: Limits { duration_ms: Some(9), seed: Some(4) },
        };
        assert_eq!(
            body(&by_code).unwrap(),
            json!({"kind": "inject", "api": "Fetch", "error": 15, "probability": 0.5, "duration_ms": 9, "seed": 4})
        );
        assert_eq!(body(&FaultCommand::Isolate { limits: Limits::default() }).unwrap(), json!({"kind": "isolate"}));
        assert_eq!(
            body(&FaultCommand::Delay { peer: 2, ms: 50, limits: Limits::default() }).unwrap(),
            json!({"kind": "delay", "peer": 2, "ms": 50})
        );
        assert_eq!(body(&FaultCommand::Clock { skew_ms: -500 }).unwrap(), json!({"kind": "clock", "skew_ms": -500}));
        let disk = FaultCommand::Disk { fail: "fsync".into(), topic: Some("t".into()), limits: Limits::default() };
        assert_eq!(body(&disk).unwrap(), json!({"kind": "disk", "fail": "fsync", "topic": "t"}));
        assert!(body(&FaultCommand::List).is_none());
    }

    #[test]
    fn chunked_bodies_are_joined() {
        assert_eq!(dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), "hello world");
    }

    #[test]
    fn a_refused_request_is_an_error() {
        assert!(request("127.0.0.1:1", "GET", "/v1/faults", None).is_err());
    }
}
