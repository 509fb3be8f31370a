//! `sluice dev kill|restart|pause|resume N` and `sluice dev status`: node control for a
//! running `sluice dev-cluster`, which it finds by its data dir and asks over the control
//! socket (see [`super::control`]) to act on its own children.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::control::Request;

/// `sluice dev ...`.
#[derive(Args, Debug)]
pub struct DevArgs {
    /// The dev-cluster's data dir (its --data-dir).
    #[arg(long, value_name = "DIR", default_value = "./dev-cluster", global = true)]
    pub cluster: PathBuf,
    /// text (for people) or json (the dev-cluster's answer).
    #[arg(long, default_value = "text", value_parser = ["text", "json"], global = true)]
    pub format: String,
    #[command(subcommand)]
    pub command: DevCommand,
}

/// What to do to a node.
#[derive(Subcommand, Debug, Clone, Copy)]
pub enum DevCommand {
    /// SIGKILL the node, as a crash.
    Kill { node: u16 },
    /// Kill the node if it runs, start it again with the same data and config, and wait until it is ready.
    Restart { node: u16 },
    /// SIGSTOP the node: it holds its sockets but answers nothing, as a stalled machine.
    Pause { node: u16 },
    /// SIGCONT a paused node.
    Resume { node: u16 },
    /// List the nodes with their pids and states (running, paused, dead).
    Status,
}

impl DevCommand {
    /// The request sent for this command.
    pub fn request(self) -> Request {
        let (command, node) = match self {
            DevCommand::Kill { node } => ("kill", Some(node)),
            DevCommand::Restart { node } => ("restart", Some(node)),
            DevCommand::Pause { node } => ("pause", Some(node)),
            DevCommand::Resume { node } => ("resume", Some(node)),
            DevCommand::Status => ("status", None),
        };
        Request { command: command.to_string(), node }
    }
}

pub use crate::fault::nodes::{send, DevError};

/// Runs `sluice dev ...`; the result is the exit code.
pub fn run(args: &DevArgs) -> i32 {
    let answer = match send(&args.cluster, &args.command.request()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if args.format == "json" {
        println!("{answer}");
    } else if let Some(nodes) = answer["nodes"].as_array() {
        print!("{}", status_table(nodes));
    } else {
        println!("{}", answer["message"].as_str().unwrap_or_default());
    }
    0
}

fn status_table(nodes: &[Value]) -> String {
    let cell = |n: &Value, k: &str| match &n[k] {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let mut out = format!("{:<6} {:<9} {:<9} {:<22} {}\n", "NODE", "PID", "STATE", "LISTENING", "HTTP");
    for n in nodes {
        let row = [cell(n, "node"), cell(n, "pid"), cell(n, "state"), cell(n, "listening"), cell(n, "http")];
        out.push_str(format!("{:<6} {:<9} {:<9} {:<22} {}", row[0], row[1], row[2], row[3], row[4]).trim_end());
        out.push('\n');
    }
    out
}
