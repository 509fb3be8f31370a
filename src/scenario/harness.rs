//! What every scenario does with its cluster: find or start the dev-cluster, run Sluice's
//! client commands against it, act on nodes through `sluice dev`, and print the event
//! journal as it grows.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::dev_cluster::dev::{self, DevCommand, DevError};

/// Settings of a dev-cluster a scenario starts: a lost node is noticed in seconds.
const FAST: &[&str] = &["broker.heartbeat.interval.ms=300", "broker.session.timeout.ms=3000", "replica.lag.time.max.ms=2000"];
/// How long a dev-cluster this command starts may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// A scenario's handle on its cluster.
pub struct Harness {
    dir: PathBuf,
    exe: PathBuf,
    /// Every node's client address, comma-separated.
    pub bootstrap: String,
    /// (node id, HTTP listener) of each node.
    http: Vec<(u16, String)>,
    /// The last journal sequence number printed.
    since: u64,
    /// A dev-cluster this run started, stopped by [`Harness::close`].
    started: Option<Child>,
    t0: Instant,
}

impl Harness {
    /// Uses the dev-cluster at `dir`, starting one (client ports from `base_port`) if none runs.
    pub fn open(dir: &Path, base_port: u16) -> Result<Harness, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut h = Harness {
            dir: dir.to_path_buf(),
            exe,
            bootstrap: String::new(),
            http: Vec::new(),
            since: 0,
            started: None,
            t0: Instant::now(),
        };
        let nodes = match dev::send(dir, &DevCommand::Status.request()) {
            Ok(v) => v,
            Err(DevError::NotRunning(..)) => h.start(base_port)?,
            Err(e) => return Err(e.to_string()),
        };
        let nodes = nodes["nodes"].as_array().cloned().unwrap_or_default();
        let addrs: Vec<&str> = nodes.iter().filter_map(|n| n["listening"].as_str()).collect();
        h.bootstrap = addrs.join(",");
        h.http = nodes.iter().filter_map(|n| Some((n["node"].as_u64()? as u16, n["http"].as_str()?.to_string()))).collect();
        h.since =
            h.events().map_err(|e| format!("reading the event journal: {e}"))?.iter().filter_map(|e| e["seq"].as_u64()).max().unwrap_or(0);
        Ok(h)
    }

    fn start(&mut self, base_port: u16) -> Result<Value, String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let log_path = self.dir.join("dev-cluster.log");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|e| e.to_string())?;
        let mut c = Command::new(&self.exe);
        c.arg("dev-cluster").arg("--data-dir").arg(&self.dir).args(["--base-port", &base_port.to_string()]);
        for s in FAST {
            c.args(["--set", s]);
        }
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = c.stdin(Stdio::null()).stdout(log).stderr(err).spawn().map_err(|e| e.to_string())?;
        self.say(&format!("no dev-cluster at {}: started one (pid {}, output in {})", self.dir.display(), child.id(), log_path.display()));
        self.started = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match dev::send(&self.dir, &DevCommand::Status.request()) {
                Ok(v) => return Ok(v),
                Err(DevError::NotRunning(..)) if Instant::now() < deadline => {}
                Err(e) => return Err(format!("the dev-cluster did not start: {e}; see {}", log_path.display())),
            }
            if let Some(Ok(Some(status))) = self.started.as_mut().map(Child::try_wait) {
                return Err(format!("the dev-cluster exited ({status}); see {}", log_path.display()));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Prints a step of the story, with the seconds since the scenario began, after the
    /// journal's events that led to it.
    pub fn say(&mut self, msg: &str) {
        self.narrate();
        println!("[{:>6.1}s] {msg}", self.t0.elapsed().as_secs_f64());
    }

    /// The journal after the last printed event, from the first node whose HTTP listener answers.
    fn events(&self) -> Result<Vec<Value>, String> {
        let mut last = "no node has an HTTP listener".to_string();
        for (_, addr) in &self.http {
            let since = self.since.to_string();
            match self.sluice(&["events", "--http", addr, "--since", &since, "--format", "json"]) {
                Ok(out) => return Ok(out.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Prints the journal's new events.
    pub fn narrate(&mut self) {
        let Ok(events) = self.events() else { return };
        for e in events {
            self.since = self.since.max(e["seq"].as_u64().unwrap_or(0));
            println!("           event: {}", crate::cli::events::render(&e, false));
        }
    }

    /// Runs `sluice dev CMD` on the cluster, says what it did, and narrates.
    pub fn dev(&mut self, cmd: DevCommand) -> Result<(), String> {
        let answer = dev::send(&self.dir, &cmd.request()).map_err(|e| e.to_string())?;
        self.say(&format!("sluice dev: {}", answer["message"].as_str().unwrap_or_default()));
        Ok(())
    }

    /// Runs a `sluice` command; its stdout, or its stderr when it fails.
    pub fn sluice(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.exe).args(args).stdin(Stdio::null()).output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }

    /// A client command (`topic`, `produce`, `consume`) against this cluster.
    pub fn client(&self, args: &[&str]) -> Result<String, String> {
        let mut all = args.to_vec();
        all.extend(["-b", &self.bootstrap]);
        self.sluice(&all)
    }

    /// Creates `topic` with one partition, `rf` replicas and `configs` (KEY=VALUE), and waits
    /// until every replica is in sync.
    pub fn create_topic(&mut self, topic: &str, rf: u16, configs: &[&str]) -> Result<(), String> {
        let rf = rf.to_string();
        let mut args = vec!["topic", "create", topic, "-p", "1", "-r", &rf];
        for c in configs {
            args.extend(["-c", c]);
        }
        self.client(&args)?;
        let p = self.wait_for("every replica in sync", Duration::from_secs(30), |h| {
            h.partition(topic).ok().filter(|p| p["isr"].as_array().map(Vec::len) == p["replicas"].as_array().map(Vec::len))
        })?;
        self.say(&format!("created {topic}: leader {}, replicas {}, isr {}", p["leader"], p["replicas"], p["isr"]));
        Ok(())
    }

    /// Partition 0 of `topic` as `sluice topic describe` shows it.
    pub fn partition(&self, topic: &str) -> Result<Value, String> {
        let out = self.client(&["topic", "describe", topic, "--format", "json"])?;
        let v: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
        Ok(v["partitions"][0].clone())
    }

    /// Produces `values` to partition 0 of `topic` with `acks`; the error names Kafka's code.
    pub fn produce(&self, topic: &str, values: &[String], acks: &str) -> Result<(), String> {
        let file = self.dir.join(format!("scenario-{topic}.txt"));
        std::fs::write(&file, values.join("\n") + "\n").map_err(|e| e.to_string())?;
        let path = file.to_string_lossy().into_owned();
        let r = self.client(&["produce", topic, "-p", "0", "--acks", acks, "--file", &path, "--format", "json"]);
        let _ = std::fs::remove_file(&file);
        r.map(|_| ())
    }

    /// Every value in partition 0 of `topic`, from the start to the high watermark, in offset order.
    pub fn consume(&self, topic: &str) -> Result<Vec<String>, String> {
        let out = self.client(&["consume", topic, "-p", "0", "--from-beginning", "-e", "--format", "json"])?;
        Ok(out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|r| r["value"].as_str().map(str::to_string))
            .collect())
    }

    /// Calls `f` until it gives something (narrating meanwhile), or fails after `timeout`.
    pub fn wait_for<T>(&mut self, what: &str, timeout: Duration, mut f: impl FnMut(&mut Harness) -> Option<T>) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = f(self) {
                return Ok(v);
            }
            self.narrate();
            if Instant::now() > deadline {
                return Err(format!("{what}: not within {} s", timeout.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Stops a dev-cluster this run started (SIGTERM to it; it stops its nodes).
    pub fn close(&mut self) {
        if let Some(mut c) = self.started.take() {
            self.say(&format!("stopping the dev-cluster this scenario started (pid {})", c.id()));
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
            }
            let _ = c.wait();
        }
    }
}

/// `n` values `prefix-0`, `prefix-1`, ...
pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// A partition's replica list (`replicas` or `isr`) as node ids.
pub fn ids(p: &Value, key: &str) -> Vec<i64> {
    p[key].as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default()
}
