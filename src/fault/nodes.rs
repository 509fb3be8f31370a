//! Node faults of a dev-cluster (kill, pause, resume, restart a node), asked of the
//! `sluice dev-cluster` that owns the node processes over its control socket,
//! `<data dir>/control.sock`: one JSON line out (`{"command":"kill","node":2}`), one back
//! (`{"ok":true,"message":...}` or `{"ok":false,"error":...}`). `sluice dev`, the scenarios
//! and the HTTP listener's `/v1/nodes` are its clients; `dev_cluster::control` its server.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The socket's file name inside the dev-cluster's data dir.
pub const SOCKET: &str = "control.sock";

/// The node commands, as the socket takes them (and `status`, which lists the nodes).
pub const COMMANDS: &[&str] = &["kill", "restart", "pause", "resume"];

/// How long an answer may take: a restart waits for the node to be ready (60 s at most).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(70);

/// Where the control socket of the dev-cluster with data dir `dir` is.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

/// One command on the socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// kill, restart, pause, resume or status.
    pub command: String,
    /// The node, for every command but status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u16>,
}

/// Why a command got no success.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("no dev-cluster running at {0} (no {1}); start one with `sluice dev-cluster --data-dir {0}`")]
    NotRunning(String, String),
    #[error("dev-cluster at {0}: {1}")]
    Io(String, String),
    /// The dev-cluster refused the command.
    #[error("{0}")]
    Refused(String),
}

/// Sends one command to the dev-cluster at `dir`; its answer when it did it. Blocking.
pub fn send(dir: &Path, req: &Request) -> Result<Value, DevError> {
    send_to(&socket_path(dir), req)
}

/// Sends one command to the control socket at `path`; its answer when it did it. Blocking.
pub fn send_to(path: &Path, req: &Request) -> Result<Value, DevError> {
    let dir = path.parent().unwrap_or(path);
    let shown = dir.display().to_string();
    let not_running = || DevError::NotRunning(shown.clone(), path.display().to_string());
    let io = |e: std::io::Error| DevError::Io(shown.clone(), e.to_string());
    // A socket file nobody listens on is what a SIGKILLed dev-cluster leaves behind.
    let stream = UnixStream::connect(path).map_err(|_| not_running())?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(io)?;
    let mut line = serde_json::to_vec(req).map_err(|e| DevError::Io(shown.clone(), e.to_string()))?;
    line.push(b'\n');
    (&stream).write_all(&line).map_err(io)?;
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer).map_err(io)?;
    let v: Value = serde_json::from_str(&answer).map_err(|e| DevError::Io(shown.clone(), format!("bad answer: {e}")))?;
    if v["ok"].as_bool() == Some(true) {
        Ok(v)
    } else {
        Err(DevError::Refused(v["error"].as_str().unwrap_or("refused").to_string()))
    }
}
