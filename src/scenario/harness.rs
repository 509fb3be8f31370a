//! What every scenario does with its cluster: find or start the dev-cluster, run Sluice's
//! client commands against it, act on nodes through `sluice dev`, and print the event
//! journal as it grows.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::dev_cluster::dev::{self, DevCommand, DevError};

/// Settings of a dev-cluster a scenario starts: a lost node is noticed in seconds.
const FAST: &[&str] = &["broker.heartbeat.interval.ms=300", "broker.session.timeout.ms=3000", "replica.lag.time.max.ms=2000"];
/// How long a dev-cluster this command starts may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// One node of the cluster.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: u16,
    /// Its client listener, `host:port`.
    pub addr: String,
    /// Its HTTP listener (journal, faults).
    pub http: String,
}

/// A scenario's handle on its cluster.
pub struct Harness {
    dir: PathBuf,
    exe: PathBuf,
    /// The cluster's nodes, by id.
    pub nodes: Vec<Node>,
    /// Nodes this run took away (killed, paused, isolated): client commands and the
    /// narration go through the others, and [`Harness::close`] brings them back.
    away: BTreeMap<u16, Away>,
    /// Nodes this run injected faults on, cleared by [`Harness::close`].
    faulted: BTreeSet<u16>,
    /// The last journal sequence number printed.
    since: u64,
    /// Every journal event printed so far, for scenarios that count them.
    pub seen: Vec<Value>,
    /// A dev-cluster this run started, stopped by [`Harness::close`].
    started: Option<Child>,
    t0: Instant,
}

/// How a node was taken away, so [`Harness::close`] knows how to bring it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Away {
    Dead,
    Paused,
    Isolated,
}

impl Harness {
    /// Uses the dev-cluster at `dir`, starting one (client ports from `base_port`) if none runs.
    pub fn open(dir: &Path, base_port: u16) -> Result<Harness, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut h = Harness {
            dir: dir.to_path_buf(),
            exe,
            nodes: Vec::new(),
            away: BTreeMap::new(),
            faulted: BTreeSet::new(),
            since: 0,
            seen: Vec::new(),
            started: None,
            t0: Instant::now(),
        };
        let status = match dev::send(dir, &DevCommand::Status.request()) {
            Ok(v) => v,
            Err(DevError::NotRunning(..)) => h.start(base_port)?,
            Err(e) => return Err(e.to_string()),
        };
        let nodes = status["nodes"].as_array().cloned().unwrap_or_default();
        h.nodes = nodes
            .iter()
            .filter_map(|n| {
                Some(Node {
                    id: n["node"].as_u64()? as u16,
                    addr: n["listening"].as_str()?.to_string(),
                    http: n["http"].as_str()?.to_string(),
                })
            })
            .collect();
        for n in &nodes {
            let (Some(id), Some(state)) = (n["node"].as_u64(), n["state"].as_str()) else { continue };
            match state {
                "dead" => return Err(format!("node {id} of the dev-cluster is dead; `sluice dev restart {id}` first")),
                "paused" => return Err(format!("node {id} of the dev-cluster is paused; `sluice dev resume {id}` first")),
                _ => {}
            }
        }
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

    /// The journal after the last printed event, from the first node still with the cluster
    /// whose HTTP listener answers (an isolated node's journal stalls).
    fn events(&self) -> Result<Vec<Value>, String> {
        let mut last = "no node has an HTTP listener".to_string();
        for n in self.present() {
            let since = self.since.to_string();
            match self.sluice(&["events", "--http", &n.http, "--since", &since, "--format", "json"]) {
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
            self.seen.push(e);
        }
    }

    /// The events printed so far of type `kind` whose fields include `fields`.
    pub fn seen(&self, kind: &str, fields: &[(&str, Value)]) -> Vec<&Value> {
        self.seen.iter().filter(|e| e["type"] == kind && fields.iter().all(|(k, v)| e[*k] == *v)).collect()
    }

    /// Runs `sluice dev CMD` on the cluster, says what it did, and narrates.
    pub fn dev(&mut self, cmd: DevCommand) -> Result<(), String> {
        let answer = dev::send(&self.dir, &cmd.request()).map_err(|e| e.to_string())?;
        match cmd {
            DevCommand::Kill { node } => _ = self.away.insert(node, Away::Dead),
            DevCommand::Pause { node } => _ = self.away.insert(node, Away::Paused),
            DevCommand::Restart { node } => {
                // A restart starts clean: faults live in the process.
                self.away.remove(&node);
                self.faulted.remove(&node);
            }
            DevCommand::Resume { node } => _ = self.away.remove(&node),
            DevCommand::Status => {}
        }
        self.say(&format!("sluice dev: {}", answer["message"].as_str().unwrap_or_default()));
        Ok(())
    }

    /// Notes that `node` left the cluster on its own (it halted), so it is restarted at the end.
    pub fn gone(&mut self, node: u16) {
        self.away.insert(node, Away::Dead);
    }

    /// Whether the dev-cluster reports `node` dead (exited).
    pub fn is_dead(&self, node: u16) -> bool {
        let Ok(v) = dev::send(&self.dir, &DevCommand::Status.request()) else { return false };
        v["nodes"].as_array().is_some_and(|ns| ns.iter().any(|n| n["node"] == node && n["state"] == "dead"))
    }

    /// Runs `sluice fault --http NODE ARGS` (`isolate`, `cut --peer 2`, `clear`, ...) and says
    /// what the node answered; an isolated node counts as away until its faults are cleared.
    pub fn fault(&mut self, node: u16, args: &[&str]) -> Result<(), String> {
        let http = self.node(node)?.http.clone();
        let mut all = vec!["fault", "--http", &http];
        all.extend(args);
        let out = self.sluice(&all).map_err(|e| format!("sluice fault on node {node}: {e}"))?;
        match args.first() {
            Some(&"isolate") => _ = self.away.insert(node, Away::Isolated),
            Some(&"clear") if self.away.get(&node) == Some(&Away::Isolated) => _ = self.away.remove(&node),
            _ => {}
        }
        if args.first() == Some(&"clear") {
            self.faulted.remove(&node);
        } else {
            self.faulted.insert(node);
        }
        self.say(&format!("sluice fault {} on node {node}: {}", args.join(" "), out.trim()));
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

    /// The path of this binary, for commands run in the background (see [`super::load`]).
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// Node `id`.
    pub fn node(&self, id: u16) -> Result<&Node, String> {
        self.nodes.iter().find(|n| n.id == id).ok_or_else(|| format!("no node {id} in the dev-cluster"))
    }

    /// The nodes not taken away.
    pub fn present(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| !self.away.contains_key(&n.id))
    }

    /// The client addresses of the nodes not taken away, or of all but `except`.
    pub fn bootstrap(&self, except: &[u16]) -> String {
        self.present().filter(|n| !except.contains(&n.id)).map(|n| n.addr.as_str()).collect::<Vec<_>>().join(",")
    }

    /// A client command (`topic`, `produce`, `consume`) against the nodes not taken away.
    pub fn client(&self, args: &[&str]) -> Result<String, String> {
        let mut all = args.to_vec();
        let b = self.bootstrap(&[]);
        all.extend(["-b", &b]);
        self.sluice(&all)
    }

    /// The active controller: the metadata quorum's leader, as DescribeQuorum names it
    /// (Metadata's `controller_id` is only a broker that forwards to it, KIP-590).
    pub fn controller(&self) -> Result<i64, String> {
        let v: Value = serde_json::from_str(&self.client(&["cluster", "info", "--format", "json"])?).map_err(|e| e.to_string())?;
        v["quorum"]["leader_id"].as_i64().filter(|l| *l >= 0).ok_or_else(|| "the metadata quorum has no leader".into())
    }

    /// The fenced flag of each broker Metadata lists.
    pub fn fenced(&self) -> Result<BTreeMap<i64, bool>, String> {
        let v: Value = serde_json::from_str(&self.client(&["cluster", "info", "--format", "json"])?).map_err(|e| e.to_string())?;
        let brokers = v["brokers"].as_array().cloned().unwrap_or_default();
        Ok(brokers.iter().filter_map(|b| Some((b["node_id"].as_i64()?, b["is_fenced"].as_bool()?))).collect())
    }

    /// Creates `topic` with `partitions` partitions, `rf` replicas and `configs` (KEY=VALUE),
    /// and waits until every replica of every partition is in sync.
    pub fn create_topic(&mut self, topic: &str, partitions: u16, rf: u16, configs: &[&str]) -> Result<Vec<Value>, String> {
        let (n, rf) = (partitions.to_string(), rf.to_string());
        let mut args = vec!["topic", "create", topic, "-p", &n, "-r", &rf];
        for c in configs {
            args.extend(["-c", c]);
        }
        self.client(&args)?;
        let ps = self.wait_for("every replica in sync", Duration::from_secs(30), |h| {
            let ps = h.partitions(topic).ok()?;
            (ps.len() == partitions as usize && ps.iter().all(|p| ids(p, "isr").len() == ids(p, "replicas").len())).then_some(ps)
        })?;
        for p in &ps {
            self.say(&format!("created {topic}-{}: leader {}, replicas {}, isr {}", p["partition"], p["leader"], p["replicas"], p["isr"]));
        }
        Ok(ps)
    }

    /// The first of the partitions `ps` for which `ok(partition, active controller)` holds:
    /// scenarios that cut or fail a leader keep the controller out of it, since losing the
    /// controller too is another story (`controller-failover`).
    pub fn pick(&mut self, ps: &[Value], why: &str, ok: impl Fn(&Value, i64) -> bool) -> Result<(u16, Value), String> {
        let controller = self.controller()?;
        let (i, p) = ps
            .iter()
            .enumerate()
            .find(|(_, p)| ok(p, controller))
            .ok_or_else(|| format!("no partition {why} (controller {controller})"))?;
        self.say(&format!("picked partition {i}: {why} (the active controller is node {controller})"));
        Ok((i as u16, p.clone()))
    }

    /// Every partition of `topic` as `sluice topic describe` shows it.
    pub fn partitions(&self, topic: &str) -> Result<Vec<Value>, String> {
        let out = self.client(&["topic", "describe", topic, "--format", "json"])?;
        let v: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
        Ok(v["partitions"].as_array().cloned().unwrap_or_default())
    }

    /// Partition `p` of `topic` as `sluice topic describe` shows it.
    pub fn partition(&self, topic: &str, p: u16) -> Result<Value, String> {
        self.partitions(topic)?.into_iter().nth(p as usize).ok_or_else(|| format!("{topic} has no partition {p}"))
    }

    /// Produces `values` to partition `p` of `topic` with `acks`; the error names Kafka's code.
    pub fn produce(&self, topic: &str, p: u16, values: &[String], acks: &str) -> Result<(), String> {
        self.produce_with(topic, p, values, acks, &[])
    }

    /// [`Harness::produce`] with more `sluice produce` arguments (`-X retries=0`, say).
    pub fn produce_with(&self, topic: &str, p: u16, values: &[String], acks: &str, extra: &[&str]) -> Result<(), String> {
        let file = self.dir.join(format!("scenario-{topic}.txt"));
        std::fs::write(&file, values.join("\n") + "\n").map_err(|e| e.to_string())?;
        let (path, p) = (file.to_string_lossy().into_owned(), p.to_string());
        let mut args = vec!["produce", topic, "-p", &p, "--acks", acks, "--file", &path, "--format", "json"];
        args.extend_from_slice(extra);
        let r = self.client(&args);
        let _ = std::fs::remove_file(&file);
        r.map(|_| ())
    }

    /// Every value in partition `p` of `topic`, from the start to the high watermark, in offset order.
    pub fn consume(&self, topic: &str, p: u16) -> Result<Vec<String>, String> {
        let p = p.to_string();
        let out = self.client(&["consume", topic, "-p", &p, "--from-beginning", "-e", "--format", "json"])?;
        Ok(out
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|r| r["value"].as_str().map(str::to_string))
            .collect())
    }

    /// Reads partition `p` of `topic` back and compares it with the `acked` values.
    pub fn read_back(&self, topic: &str, p: u16, acked: &[String]) -> Result<Readback, String> {
        let got = self.consume(topic, p)?;
        let mut count: HashMap<&str, usize> = HashMap::new();
        for v in &got {
            *count.entry(v).or_default() += 1;
        }
        let acked_set: HashSet<&str> = acked.iter().map(String::as_str).collect();
        Ok(Readback {
            read: got.len(),
            lost: acked.iter().filter(|v| !count.contains_key(v.as_str())).cloned().collect(),
            doubled: count.iter().filter(|(v, n)| **n > 1 && acked_set.contains(*v)).map(|(_, n)| n - 1).sum(),
            unacknowledged: got.iter().filter(|v| !acked_set.contains(v.as_str())).cloned().collect(),
        })
    }

    /// Reads partition `p` back: every acknowledged value must be there once, and nothing else
    /// unless `maybe` allows it (values whose write failed, so their fate is unknown).
    pub fn expect_intact(&mut self, topic: &str, p: u16, acked: &[String], maybe: &[String], when: &str) -> Result<Readback, String> {
        let r = self.read_back(topic, p, acked)?;
        let strays: Vec<&String> = r.unacknowledged.iter().filter(|v| !maybe.contains(v)).collect();
        if !r.lost.is_empty() || r.doubled > 0 || !strays.is_empty() {
            return Err(format!(
                "{when}: read {} records; of the {} acknowledged {} lost (e.g. {:?}), {} doubled; {} never written (e.g. {:?})",
                r.read,
                acked.len(),
                r.lost.len(),
                r.lost.iter().take(3).collect::<Vec<_>>(),
                r.doubled,
                strays.len(),
                strays.iter().take(3).collect::<Vec<_>>()
            ));
        }
        self.say(&format!("a consumer read all {} acknowledged records {when}: none lost, none doubled", acked.len()));
        Ok(r)
    }

    /// The length of node `id`'s log file now, to read what it logs from here on.
    pub fn log_mark(&self, id: u16) -> u64 {
        std::fs::metadata(self.node_log(id)).map_or(0, |m| m.len())
    }

    /// Node `id`'s log lines after `mark` that contain every one of `needles`.
    pub fn log_lines(&self, id: u16, mark: u64, needles: &[&str]) -> Vec<String> {
        let Ok(bytes) = std::fs::read(self.node_log(id)) else { return Vec::new() };
        let text = String::from_utf8_lossy(bytes.get(mark as usize..).unwrap_or_default()).into_owned();
        text.lines().filter(|l| needles.iter().all(|n| l.contains(n))).map(str::to_string).collect()
    }

    fn node_log(&self, id: u16) -> PathBuf {
        self.dir.join(format!("node-{id}")).join("sluice.log")
    }

    /// A broker setting's value in milliseconds, as broker `id` answers DescribeConfigs
    /// (a broker describes only itself).
    pub fn broker_ms(&self, id: u16, key: &str) -> Result<u64, String> {
        let settings = crate::cli::props::from_map(&self.node(id)?.addr, &BTreeMap::new()).map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let v = rt.block_on(async {
            let mut client = crate::cli::client::Client::connect(settings).await?;
            crate::cli::topic::broker_configs(&mut client, &id.to_string(), &[key]).await
        });
        let v = v.map_err(|e| e.to_string())?;
        v.into_iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v?.parse().ok())
            .ok_or_else(|| format!("broker {id} did not describe {key}"))
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

    /// Waits until partition `p` of `topic` satisfies `ok`, and returns it.
    pub fn wait_partition(
        &mut self,
        topic: &str,
        p: u16,
        what: &str,
        timeout: Duration,
        ok: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        self.wait_for(what, timeout, |h| h.partition(topic, p).ok().filter(|v| ok(v)))
    }

    /// Gives back what this run took from a cluster it did not start (clears its faults,
    /// restarts or resumes its nodes), and stops a dev-cluster it started.
    pub fn close(&mut self) {
        if self.started.is_none() {
            for id in std::mem::take(&mut self.faulted) {
                let _ = self.fault(id, &["clear"]);
            }
            for (id, how) in std::mem::take(&mut self.away) {
                let cmd = if how == Away::Paused { DevCommand::Resume { node: id } } else { DevCommand::Restart { node: id } };
                if how != Away::Isolated {
                    let _ = self.dev(cmd);
                }
            }
        }
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

/// What reading a partition back found, against the acknowledged values.
#[derive(Debug)]
pub struct Readback {
    /// Records read.
    pub read: usize,
    /// Acknowledged values not read back.
    pub lost: Vec<String>,
    /// Extra copies of acknowledged values.
    pub doubled: usize,
    /// Values read that were never acknowledged.
    pub unacknowledged: Vec<String>,
}

/// `n` values `prefix-0`, `prefix-1`, ...
pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// A partition's replica list (`replicas` or `isr`) as node ids.
pub fn ids(p: &Value, key: &str) -> Vec<i64> {
    p[key].as_array().map(|a| a.iter().filter_map(Value::as_i64).collect()).unwrap_or_default()
}

/// A partition's leader (-1 when it has none).
pub fn leader(p: &Value) -> i64 {
    p["leader"].as_i64().unwrap_or(-1)
}
