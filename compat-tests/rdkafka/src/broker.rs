//! Sluice processes for the scenarios: one `sluice serve` on a free loopback port, or a
//! `sluice dev-cluster` with its nodes' pids; each with its data in a temp dir, stopped by pid.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running sluice process and everything it has printed.
pub struct Broker {
    /// The bootstrap servers, comma-separated.
    pub addr: String,
    /// dev-cluster's nodes: id -> pid (empty for `serve`).
    pub pids: BTreeMap<i32, u32>,
    /// dev-cluster --security: the admin password and the CA file.
    pub admin_password: Option<String>,
    pub ca_file: PathBuf,
    child: Child,
    dir: PathBuf,
    log: Arc<Mutex<String>>,
}

fn bin() -> String {
    std::env::var("SLUICE_BIN").unwrap_or_else(|_| "../../target/release/sluice".into())
}

/// A base port P whose client (P+i), controller (P+100+i) and HTTP (P+200+i) ports are free.
fn free_base_port(n: u16) -> Result<u16, String> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    for attempt in 0..500u32 {
        let base = 20000 + ((nanos / 7 + attempt * 7919) % 40000) as u16;
        let free = [0u16, 100, 200].iter().all(|off| (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + off + i)).is_ok()));
        if free {
            return Ok(base);
        }
    }
    Err(format!("no free base port for {n} nodes"))
}

impl Broker {
    /// `sluice serve` with the key=value settings, once it serves.
    pub async fn start(settings: &[&str]) -> Result<Broker, String> {
        let dir = std::env::temp_dir().join(crate::unique("sluice-rdkafka"));
        let mut args: Vec<String> = vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into(), "--data-dir".into()];
        args.push(dir.display().to_string());
        for s in settings {
            args.extend(["--set".to_string(), s.to_string()]);
        }
        let mut b = Broker::spawn(dir, &args, |log| log.contains("serving Kafka on ")).await?;
        let log = b.log();
        let rest = log.split("serving Kafka on ").nth(1).unwrap_or_default();
        b.addr = rest.split_whitespace().next().unwrap_or_default().to_string();
        Ok(b)
    }

    /// `sluice dev-cluster --brokers n` with extra arguments, once every node listens.
    pub async fn dev_cluster(n: u16, extra: &[&str]) -> Result<Broker, String> {
        let dir = std::env::temp_dir().join(crate::unique("sluice-rdkafka-dev"));
        let mut args: Vec<String> = ["dev-cluster", "--brokers", &n.to_string(), "--base-port", &free_base_port(n)?.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(["--data-dir".into(), dir.join("data").display().to_string()]);
        args.extend(["--set".into(), "group.initial.rebalance.delay.ms=0".into()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let last = format!("node {n} pid ");
        let mut b = Broker::spawn(dir.clone(), &args, move |log| log.contains(&last)).await?;
        let log = b.log();
        for line in log.lines() {
            if let Some(rest) = line.split("bootstrap servers: ").nth(1) {
                b.addr = rest.split_whitespace().next().unwrap_or_default().to_string();
            }
            if let Some(rest) = line.split("admin user: admin password: ").nth(1) {
                b.admin_password = rest.split_whitespace().next().map(str::to_string);
            }
            // "node N pid P listening ..."
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(i) = words.windows(4).position(|w| w[0] == "node" && w[2] == "pid" && w[3].parse::<u32>().is_ok()) {
                if let (Ok(id), Ok(pid)) = (words[i + 1].parse(), words[i + 3].parse()) {
                    b.pids.insert(id, pid);
                }
            }
        }
        b.ca_file = dir.join("data").join("tls").join("ca.pem");
        if b.addr.is_empty() || b.pids.len() != n as usize {
            let _ = b.stop().await;
            return Err(format!("dev-cluster printed bootstrap {:?} and nodes {:?}:\n{log}", b.addr, b.pids));
        }
        Ok(b)
    }

    async fn spawn(dir: PathBuf, args: &[String], ready: impl Fn(&str) -> bool + Send + Sync + 'static) -> Result<Broker, String> {
        let bin = bin();
        let mut child =
            Command::new(&bin).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| format!("start {bin}: {e}"))?;
        let log = Arc::new(Mutex::new(String::new()));
        let ready = Arc::new(ready);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        for reader in [Box::new(out) as Box<dyn tokio::io::AsyncRead + Unpin + Send>, Box::new(err)] {
            let (log, tx, ready) = (log.clone(), tx.clone(), ready.clone());
            tokio::spawn(async move {
                let mut lines = BufReader::new(reader).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                    if ready(&l) {
                        let _ = tx.send(());
                    }
                }
            });
        }
        let up = tokio::time::timeout(Duration::from_secs(90), rx.recv()).await;
        let mut b = Broker { addr: String::new(), pids: BTreeMap::new(), admin_password: None, ca_file: PathBuf::new(), child, dir, log };
        if !matches!(up, Ok(Some(()))) {
            let _ = b.stop().await;
            return Err(format!("{bin} {} did not come up:\n{}", args.join(" "), b.log()));
        }
        Ok(b)
    }

    /// Everything the process printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGKILL to one dev-cluster node.
    pub fn kill_node(&self, node: i32) -> Result<(), String> {
        let pid = self.pids.get(&node).ok_or(format!("no node {node} in {:?}", self.pids))?;
        // SAFETY: kill(2) on a pid dev-cluster reported as its node.
        if unsafe { kill(*pid as i32, 9) } != 0 {
            return Err(format!("kill node {node} (pid {pid}) failed"));
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after 20 s; Err unless it exited cleanly. Removes its data.
    pub async fn stop(&mut self) -> Result<(), String> {
        let result = match self.child.id() {
            Some(pid) => {
                // SAFETY: kill(2) on our own child's pid.
                unsafe { kill(pid as i32, 15) };
                match tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await {
                    Ok(Ok(status)) if status.success() => Ok(()),
                    Ok(Ok(status)) => Err(format!("sluice exited with {status}")),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => {
                        let _ = self.child.kill().await;
                        Err("sluice ignored SIGTERM for 20 s; killed".into())
                    }
                }
            }
            None => Ok(()),
        };
        let _ = std::fs::remove_dir_all(&self.dir);
        result
    }
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}
