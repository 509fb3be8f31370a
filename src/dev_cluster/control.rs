//! The dev-cluster's control socket, `<data dir>/control.sock`: `sluice dev` sends one JSON
//! line (`{"command":"kill","node":2}`) and gets one back (`{"ok":true,"message":...}` or
//! `{"ok":false,"error":...}`). A Unix socket in the data dir, so finding a cluster needs
//! only its dir, and nothing beyond the local user can reach it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::nodes::{Nodes, Refusal};

pub use crate::fault::nodes::{socket_path, Request, SOCKET};

/// The listening socket; the file is removed when this is dropped.
pub struct Control {
    listener: UnixListener,
    path: PathBuf,
}

impl Control {
    /// Listens at `<dir>/control.sock`, replacing a stale socket left by a dev-cluster that
    /// was killed, but refusing to take over from one that still answers.
    pub fn bind(dir: &Path) -> anyhow::Result<Self> {
        let path = socket_path(dir);
        if path.exists() {
            anyhow::ensure!(UnixStream::connect(&path).is_err(), "a dev-cluster is already running at {}", dir.display());
            std::fs::remove_file(&path)?;
        }
        let listener = UnixListener::bind(&path).map_err(|e| anyhow::anyhow!("control socket {}: {e}", path.display()))?;
        // Polled from the loop that also watches the nodes: one thread owns the children.
        listener.set_nonblocking(true)?;
        Ok(Control { listener, path })
    }

    /// Serves every connection waiting now, one command each, and returns.
    pub fn serve_pending(&self, nodes: &mut Nodes) {
        while let Ok((stream, _)) = self.listener.accept() {
            if let Err(e) = serve(stream, nodes) {
                println!("dev: a control connection failed: {e}");
            }
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(stream: UnixStream, nodes: &mut Nodes) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut line = String::new();
    if BufReader::new(&stream).read_line(&mut line)? == 0 {
        // Another dev-cluster checking whether this one still runs: it sends nothing.
        return Ok(());
    }
    let answer = match serde_json::from_str::<Request>(&line) {
        Ok(req) => {
            let answer = execute(&req, nodes);
            let what = req.node.map(|n| format!("{} {n}", req.command)).unwrap_or(req.command);
            let outcome = answer.get("message").or(answer.get("error")).and_then(Value::as_str).unwrap_or("listed nodes");
            println!("dev: {what}: {outcome}");
            answer
        }
        Err(e) => json!({ "ok": false, "error": format!("bad control request: {e}") }),
    };
    let mut out = serde_json::to_vec(&answer).unwrap_or_default();
    out.push(b'\n');
    (&stream).write_all(&out)
}

/// Runs one command against the nodes and builds its answer.
pub fn execute(req: &Request, nodes: &mut Nodes) -> Value {
    if req.command == "status" {
        return json!({ "ok": true, "nodes": status(nodes) });
    }
    let act: fn(&mut Nodes, u16) -> Result<String, Refusal> = match req.command.as_str() {
        "kill" => Nodes::kill,
        "restart" => Nodes::restart,
        "pause" => Nodes::pause,
        "resume" => Nodes::resume,
        other => return json!({ "ok": false, "error": format!("unknown command '{other}'; valid: kill, restart, pause, resume, status") }),
    };
    let Some(id) = req.node else { return json!({ "ok": false, "error": format!("{} needs a node id", req.command) }) };
    let result = act(nodes, id);
    if req.command == "restart" {
        // Tools follow pids by this line; a restart prints the node's new one.
        if let Some(n) = nodes.list().iter().find(|n| n.id == id && result.is_ok()) {
            println!("{}", n.line());
        }
    }
    match result {
        Ok(message) => json!({ "ok": true, "message": message }),
        Err(e) => json!({ "ok": false, "error": e.to_string() }),
    }
}

fn status(nodes: &Nodes) -> Vec<Value> {
    let row =
        |n: &super::nodes::Node| json!({ "node": n.id, "pid": n.pid(), "state": n.state().name(), "listening": n.listen, "http": n.http });
    nodes.list().iter().map(row).collect()
}
