//! `sluice dev-cluster`: a local multi-node cluster of separate processes, for trying
//! replication and failover on one machine, optionally secured (`--security`, see [`secure`]).
//! It owns the node processes ([`nodes`]) and takes `sluice dev` commands ([`dev`]) on a
//! control socket in its data dir ([`control`]).

pub mod control;
pub mod dev;
pub mod nodes;
pub mod secure;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nodes::Nodes;
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
        // So the node's HTTP listener (its console's Faults pane) can ask for node faults.
        let control = std::path::absolute(control::socket_path(&self.data_dir))?.to_string_lossy().into_owned();
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
                c.args(["--set", &format!("dev.control.socket={control}")]);
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
                s.insert("dev.control.socket".into(), control);
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

/// Starts every node, prints where they are, serves `sluice dev` on the control socket, and
/// stops them all on SIGINT or SIGTERM.
pub fn run(spec: Spec) -> anyhow::Result<()> {
    anyhow::ensure!(spec.brokers >= 1, "--brokers must be at least 1");
    std::fs::create_dir_all(&spec.data_dir)?;
    let control = control::Control::bind(&spec.data_dir)?;
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
    let addrs: Vec<(u16, String, String)> =
        (1..=spec.brokers).map(|i| (i, format!("{}:{}", spec.host, spec.client_port(i)), spec.http_listener(i))).collect();
    let data_dir = spec.data_dir.clone();
    let has_files = files.is_some();
    let launch: nodes::Launch = Box::new(move |i, log_path| {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log_path)?;
        let child =
            spec.node_command(&exe, i, &voters, files.as_ref())?.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
        Ok(child)
    });
    let mut nodes = Nodes::new(data_dir.clone(), launch);
    let started = addrs.into_iter().try_for_each(|(i, listen, http)| nodes.start(i, listen, http));
    if let Err(e) = started.and_then(|_| nodes.wait_ready(Instant::now() + nodes::READY_TIMEOUT)) {
        nodes.stop_all();
        return Err(e);
    }
    println!("bootstrap servers: {bootstrap}");
    for n in nodes.list() {
        println!("{}", n.line());
    }
    println!("logs: {}/node-<id>/sluice.log; Ctrl-C stops the cluster", data_dir.display());
    println!("control: sluice dev kill|restart|pause|resume <id> | status --cluster {}", data_dir.display());
    if has_files {
        println!("restart a node by hand: sluice serve --config {}/node-<id>/config.toml", data_dir.display());
    }
    wait_for_signal(&mut nodes, &control);
    nodes.stop_all();
    Ok(())
}

/// Blocks until SIGINT or SIGTERM, serving control commands and reporting nodes that exit
/// meanwhile.
fn wait_for_signal(nodes: &mut Nodes, control: &control::Control) {
    static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    extern "C" fn on_signal(_: libc::c_int) {
        STOP.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    while !STOP.load(std::sync::atomic::Ordering::SeqCst) {
        for (i, status) in nodes.reap() {
            println!("node {i} exited ({status})");
        }
        control.serve_pending(nodes);
        std::thread::sleep(Duration::from_millis(100));
    }
}
