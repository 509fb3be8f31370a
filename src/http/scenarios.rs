//! `/v1/scenarios`: the scenarios (`sluice scenario list`) as one-click runs for the
//! console, under the same conditions as `/v1/nodes` (fault injection on, started by a
//! dev-cluster). A run is `sluice scenario run NAME --cluster DIR`, a child of this node, as
//! a person would type it; each line of its story becomes a `scenario_step` event in this
//! node's journal, so the timeline shows the narration among the events it causes.
//!
//! - `GET /v1/scenarios`: `{"scenarios": [{"name", "summary"}], "running": NAME | null}`.
//! - `POST /v1/scenarios/{name}`: 202 once started; 404 for an unknown name, 409 while one runs.
//!
//! A scenario may kill or pause this very node (it picks its victims by role); its run
//! then ends with the node, as it would in a terminal that closed.

use std::io::{BufRead, BufReader, Read};
use std::path::Path as FsPath;
use std::process::{Command, Stdio};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::nodes::control;
use super::{error, Ctx};
use crate::journal::{Journal, Kind};

/// The scenario this node runs now, if any.
static RUNNING: Mutex<Option<String>> = Mutex::new(None);

/// `sluice scenario list`, parsed: (name, summary); asked once per process.
fn catalogue() -> Result<Vec<(String, String)>, String> {
    static KNOWN: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    if let Some(k) = KNOWN.get() {
        return Ok(k.clone());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe).args(["scenario", "list"]).stdin(Stdio::null()).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`sluice scenario list` failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let list: Vec<_> = text.lines().filter_map(|l| l.split_once(' ').map(|(n, s)| (n.to_string(), s.trim().to_string()))).collect();
    Ok(KNOWN.get_or_init(|| list).clone())
}

pub(super) async fn list(State(ctx): State<Ctx>) -> Response {
    if let Err(r) = control(&ctx) {
        return r;
    }
    match tokio::task::spawn_blocking(catalogue).await {
        Ok(Ok(list)) => {
            let scenarios: Vec<Value> = list.iter().map(|(n, s)| json!({ "name": n, "summary": s })).collect();
            Json(json!({ "scenarios": scenarios, "running": *RUNNING.lock() })).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub(super) async fn run(State(ctx): State<Ctx>, Path(name): Path<String>) -> Response {
    let socket = match control(&ctx) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let known = match tokio::task::spawn_blocking(catalogue).await {
        Ok(Ok(list)) => list,
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    if !known.iter().any(|(n, _)| *n == name) {
        let names: Vec<&str> = known.iter().map(|(n, _)| n.as_str()).collect();
        return error(StatusCode::NOT_FOUND, format!("unknown scenario '{name}'; valid: {}", names.join(", ")));
    }
    {
        let mut running = RUNNING.lock();
        if let Some(other) = running.as_ref() {
            return error(StatusCode::CONFLICT, format!("scenario {other} is still running on this node"));
        }
        *running = Some(name.clone());
    }
    let dir = socket.parent().unwrap_or(FsPath::new(".")).to_path_buf();
    let journal = ctx.broker.cluster.journal();
    // The child is started by the thread that follows it: a child asks to be ended with
    // the thread that spawned it (PR_SET_PDEATHSIG), so a node that stops ends its run too.
    let (tx, rx) = std::sync::mpsc::channel();
    let who = name.clone();
    std::thread::spawn(move || match spawn(&who, &dir) {
        Ok(child) => {
            let _ = tx.send(Ok(child.id()));
            narrate(child, &who, &journal);
        }
        Err(e) => {
            *RUNNING.lock() = None;
            let _ = tx.send(Err(e));
        }
    });
    match tokio::task::spawn_blocking(move || rx.recv()).await {
        Ok(Ok(Ok(pid))) => (StatusCode::ACCEPTED, Json(json!({ "scenario": name, "pid": pid }))).into_response(),
        Ok(Ok(Err(e))) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("could not start the scenario: {e}")),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "the scenario's thread ended before starting it".into()),
    }
}

/// `sluice scenario run NAME --cluster DIR`, its output piped here.
fn spawn(name: &str, dir: &FsPath) -> std::io::Result<std::process::Child> {
    let mut c = Command::new(std::env::current_exe()?);
    c.args(["scenario", "run", name, "--cluster"]).arg(dir).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: only prctl, which is async-signal-safe, runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    c.spawn()
}

/// Turns the run's story into journal events until it exits. The events it prints itself
/// ("event: ...") are in the journal already and are skipped.
fn narrate(mut child: std::process::Child, name: &str, journal: &Arc<Journal>) {
    let step = |message: String| {
        journal.push_local(Kind::ScenarioStep { scenario: name.to_string(), message }, crate::clock::now_ms());
    };
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let line = line.trim();
            if line.is_empty() || line.starts_with("event:") {
                continue;
            }
            // "[  12.3s] what happened": the elapsed time is the event's own time.
            let message = line.strip_prefix('[').and_then(|l| l.split_once("] ")).map_or(line, |(_, m)| m);
            step(message.to_string());
        }
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    for line in err.lines().filter(|l| !l.trim().is_empty()) {
        step(line.trim().to_string());
    }
    let status = child.wait();
    if !matches!(&status, Ok(s) if s.success()) {
        step(format!("the run ended: {}", status.map_or_else(|e| e.to_string(), |s| s.to_string())));
    }
    *RUNNING.lock() = None;
}
