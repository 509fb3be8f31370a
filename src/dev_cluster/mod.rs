//! `sluice dev-cluster`: a local multi-node cluster of separate processes, for trying
//! replication and failover on one machine, optionally secured (`--security`, see [`secure`]).

pub mod secure;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use secure::Security;

/// What `dev-cluster` was asked for.
pub struct Spec {
    pub brokers: u16,
    pub base_port: u16,
    pub data_dir: PathBuf,
    pub host: String,
    /// Extra `--set KEY=VALUE` passed to every node; `{node.id}` in a value becomes the
    /// node's id (e.g. `broker.rack=rack-{node.id}`).
    pub set: Vec<String>,
    pub security: Security,
}

impl Spec {
    /// Client port of node `i` (1-based).
    fn client_port(&self, i: u16) -> u16 {
        self.base_port + i - 1
    }
    /// Controller port of node `i`: a hundred above its client port.
    fn controller_port(&self, i: u16) -> u16 {
        self.base_port + 100 + i - 1
    }

    /// HTTP listener of node `i`: two hundred above its client port, unless `--set
    /// http.listener=...` (or its older name metrics.listener) says otherwise; empty is off.
    fn http_listener(&self, i: u16) -> String {
        let given = self.set.iter().rev().find_map(|s| {
            let (k, v) = s.split_once('=')?;
            matches!(k.trim(), "http.listener" | "metrics.listener").then(|| v.trim().replace("{node.id}", &i.to_string()))
        });
        given.unwrap_or_else(|| format!("{}:{}", self.host, self.base_port + 200 + i - 1))
    }

    fn node_command(&self, exe: &Path, i: u16, voters: &str, files: Option<&secure::Files>) -> anyhow::Result<Command> {
        let mut c = Command::new(exe);
        let listen = format!("{}:{}", self.host, self.client_port(i));
        let dir = self.data_dir.join(format!("node-{i}"));
        // Three copies (or as many as there are nodes) unless told otherwise, as a
        // replicated cluster is what this command is for.
        let rf = self.brokers.min(3).to_string();
        // Fault injection is on: breaking a local cluster on purpose is what it is for.
        let defaults = [
            ("default.replication.factor", rf.clone()),
            ("offsets.topic.replication.factor", rf),
            ("fault.injection.enable", "true".to_string()),
        ];
        let sets: Vec<String> = self.set.iter().map(|s| s.replace("{node.id}", &i.to_string())).collect();
        c.arg("serve");
        match files {
            None => {
                c.args(["--node-id", &i.to_string(), "--listen", &listen, "--advertise", &listen])
                    .arg("--data-dir")
                    .arg(&dir)
                    .args(["--set", &format!("controller.quorum.voters={voters}")]);
                for (k, v) in defaults {
                    if !self.set.iter().any(|s| s.starts_with(&format!("{k}="))) {
                        c.args(["--set", &format!("{k}={v}")]);
                    }
                }
                for s in &sets {
                    c.args(["--set", s]);
                }
                c.args(["--set", &format!("http.listener={}", self.http_listener(i))]);
            }
            Some(f) => {
                // Everything in one config file, so `sluice serve --config <it>` restarts the node.
                let controller = format!("{}:{}", self.host, self.controller_port(i));
                let mut s = secure::node_settings(self.security, f, i, &listen, &controller, self.brokers);
                s.insert("node.id".into(), i.to_string());
                s.insert("log.dirs".into(), f.dir.join(format!("node-{i}")).to_string_lossy().into_owned());
                s.insert("controller.quorum.voters".into(), voters.to_string());
                for (k, v) in defaults {
                    s.insert(k.into(), v);
                }
                for kv in &sets {
                    let (k, v) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("--set wants KEY=VALUE, got '{kv}'"))?;
                    s.insert(k.trim().into(), v.trim().into());
                }
                s.insert("http.listener".into(), self.http_listener(i));
                let path = f.dir.join(format!("node-{i}")).join("config.toml");
                std::fs::write(&path, secure::toml(&s))?;
                c.arg("--config").arg(path);
                for a in secure::seed_users(self.security, f) {
                    c.args(["--add-scram", &a]);
                }
            }
        }
        // A node outlives nothing: if dev-cluster itself is killed (even with SIGKILL,
        // which it cannot catch), the kernel sends each node SIGTERM.
        // SAFETY: only prctl, which is async-signal-safe, runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut c, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        Ok(c)
    }
}

/// Starts every node, prints where they are, and stops them all on SIGINT or SIGTERM.
pub fn run(spec: Spec) -> anyhow::Result<()> {
    anyhow::ensure!(spec.brokers >= 1, "--brokers must be at least 1");
    let exe = std::env::current_exe()?;
    let voters: Vec<String> = (1..=spec.brokers).map(|i| format!("{i}@{}:{}", spec.host, spec.controller_port(i))).collect();
    let voters = voters.join(",");
    let bootstrap: Vec<String> = (1..=spec.brokers).map(|i| format!("{}:{}", spec.host, spec.client_port(i))).collect();
    let bootstrap = bootstrap.join(",");
    let files = match spec.security {
        Security::Plaintext => None,
        s => {
            let f = secure::prepare(&spec.data_dir, spec.brokers, &spec.host)?;
            let (java, rdkafka) = secure::write_client_files(s, &f, &bootstrap)?;
            println!("security: {s:?}; CA and node certificates (made with openssl) in {}", f.dir.join("tls").display());
            if s == Security::SaslSsl {
                println!("admin user: {} password: {} (SCRAM-SHA-512, a super user)", secure::ADMIN_USER, f.admin_password);
            } else {
                println!("admin client certificate: {} (User:CN=admin, a super user)", f.dir.join("tls/client.pem").display());
            }
            println!(
                "client settings: {} (Java, Kafka tools: --command-config), {} (kcat -F, librdkafka)",
                java.display(),
                rdkafka.display()
            );
            Some(f)
        }
    };
    let mut children: Vec<(u16, Child, PathBuf)> = Vec::new();
    for i in 1..=spec.brokers {
        let dir = spec.data_dir.join(format!("node-{i}"));
        std::fs::create_dir_all(&dir)?;
        let log_path = dir.join("sluice.log");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path)?;
        let child =
            spec.node_command(&exe, i, &voters, files.as_ref())?.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
        children.push((i, child, log_path));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let started = wait_ready(&mut children, deadline);
    if let Err(e) = started {
        let mut kids: Vec<&mut Child> = children.iter_mut().map(|(_, c, _)| c).collect();
        stop_all(&mut kids);
        return Err(e);
    }
    println!("bootstrap servers: {bootstrap}");
    for (i, child, _) in &children {
        // Tools parse this line: "node <id> pid <pid> listening <host:port>[ http <host:port>]".
        let http = spec.http_listener(*i);
        let http = if http.is_empty() { String::new() } else { format!(" http {http}") };
        println!("node {i} pid {} listening {}:{}{http}", child.id(), spec.host, spec.client_port(*i));
    }
    println!("logs: {}/node-<id>/sluice.log; Ctrl-C stops the cluster", spec.data_dir.display());
    if files.is_some() {
        println!("restart a node by hand: sluice serve --config {}/node-<id>/config.toml", spec.data_dir.display());
    }
    wait_for_signal(&mut children);
    let mut kids: Vec<&mut Child> = children.iter_mut().map(|(_, c, _)| c).collect();
    stop_all(&mut kids);
    Ok(())
}

fn wait_ready(children: &mut [(u16, Child, PathBuf)], deadline: Instant) -> anyhow::Result<()> {
    for (i, child, log) in children.iter_mut() {
        while !ready(log) {
            if let Some(status) = child.try_wait()? {
                anyhow::bail!("node {i} exited during startup ({status}); see {}", log.display());
            }
            if Instant::now() > deadline {
                anyhow::bail!("node {i} not ready after 60 s; see {}", log.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

fn ready(log: &Path) -> bool {
    std::fs::File::open(log).map(|f| BufReader::new(f).lines().map_while(Result::ok).any(|l| l.contains("sluice ready:"))).unwrap_or(false)
}

/// Blocks until SIGINT or SIGTERM, reporting nodes that exit meanwhile.
fn wait_for_signal(children: &mut [(u16, Child, PathBuf)]) {
    static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut reported = vec![false; children.len()];
    while !STOP.load(std::sync::atomic::Ordering::SeqCst) {
        for (k, (i, child, _)) in children.iter_mut().enumerate() {
            if !reported[k] {
                if let Ok(Some(status)) = child.try_wait() {
                    println!("node {i} exited ({status})");
                    reported[k] = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGTERM to every node, then SIGKILL to any still running after 15 s.
fn stop_all(children: &mut [&mut Child]) {
    for c in children.iter_mut() {
        // SAFETY: kill(2) on a child's pid that we have not reaped yet.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    for c in children.iter_mut() {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}
