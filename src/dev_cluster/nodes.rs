//! The node processes a dev-cluster owns, and what can be done to them: SIGKILL,
//! SIGSTOP/SIGCONT, and a restart with the same data and config. Only the process that
//! spawned a node can reap it and start it again, so `sluice dev` asks the dev-cluster
//! (over [`super::control`]) rather than signalling pids itself.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// How long a node may take to print its readiness line, at startup or on restart.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts node `id`'s process, its output appended to the given log.
pub type Launch = Box<dyn Fn(u16, &std::path::Path) -> anyhow::Result<Child>>;

/// Why a node command was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("unknown node {0}; this cluster has nodes {1}")]
    UnknownNode(u16, String),
    #[error("node {0} is dead; `sluice dev restart {0}` starts it again")]
    Dead(u16),
    #[error("node {0} is paused; `sluice dev resume {0}` first")]
    Paused(u16),
    #[error("node {0} failed to start: {1}")]
    StartFailed(u16, String),
}

/// What a node is doing, as `sluice dev status` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Paused,
    Dead,
}

impl State {
    /// The lower-case name printed and sent in JSON.
    pub fn name(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Paused => "paused",
            State::Dead => "dead",
        }
    }
}

/// One node process.
pub struct Node {
    pub id: u16,
    /// Client address, HOST:PORT.
    pub listen: String,
    /// HTTP listener, HOST:PORT; empty when off.
    pub http: String,
    child: Child,
    log: PathBuf,
    /// The log's length when this process started: its readiness line comes after it.
    log_start: u64,
    paused: bool,
    exit: Option<ExitStatus>,
}

impl Node {
    /// The process id of the current (or last) process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Running, paused, or dead.
    pub fn state(&self) -> State {
        match (self.exit, self.paused) {
            (Some(_), _) => State::Dead,
            (None, true) => State::Paused,
            (None, false) => State::Running,
        }
    }

    /// The line tools parse: "node <id> pid <pid> listening <host:port>[ http <host:port>]".
    pub fn line(&self) -> String {
        let http = if self.http.is_empty() { String::new() } else { format!(" http {}", self.http) };
        format!("node {} pid {} listening {}{http}", self.id, self.pid(), self.listen)
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child, not yet reaped (exit is None), so the pid is still ours.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, sig);
        }
    }

    /// SIGKILL, and reap it, so the state is known to be dead when this returns.
    fn kill(&mut self) {
        if self.exit.is_none() {
            self.signal(libc::SIGKILL);
            self.exit = self.child.wait().ok();
            self.paused = false;
        }
    }

    /// Whether this process has printed "sluice ready:" since it started.
    fn ready(&self) -> bool {
        let Ok(mut f) = std::fs::File::open(&self.log) else { return false };
        if f.seek(SeekFrom::Start(self.log_start)).is_err() {
            return false;
        }
        BufReader::new(f).lines().map_while(Result::ok).any(|l| l.contains("sluice ready:"))
    }
}

/// Every node of the cluster and how to start one.
pub struct Nodes {
    nodes: Vec<Node>,
    launch: Launch,
    data_dir: PathBuf,
}

impl Nodes {
    /// No nodes yet; `launch` starts one.
    pub fn new(data_dir: PathBuf, launch: Launch) -> Self {
        Nodes { nodes: Vec::new(), launch, data_dir }
    }

    /// The nodes, in id order.
    pub fn list(&self) -> &[Node] {
        &self.nodes
    }

    /// Starts node `id` (its data dir created if new) without waiting for it.
    pub fn start(&mut self, id: u16, listen: String, http: String) -> anyhow::Result<()> {
        let node = self.spawn(id, listen, http)?;
        match self.nodes.iter_mut().find(|n| n.id == id) {
            Some(n) => *n = node,
            None => self.nodes.push(node),
        }
        Ok(())
    }

    fn spawn(&self, id: u16, listen: String, http: String) -> anyhow::Result<Node> {
        let dir = self.data_dir.join(format!("node-{id}"));
        std::fs::create_dir_all(&dir)?;
        let log = dir.join("sluice.log");
        let log_start = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let child = (self.launch)(id, &log)?;
        Ok(Node { id, listen, http, child, log, log_start, paused: false, exit: None })
    }

    /// Waits until every running node is ready; an error names the first that exited or timed out.
    pub fn wait_ready(&mut self, deadline: Instant) -> anyhow::Result<()> {
        let ids: Vec<u16> = self.nodes.iter().map(|n| n.id).collect();
        for id in ids {
            self.wait_one(id, deadline)?;
        }
        Ok(())
    }

    fn wait_one(&mut self, id: u16, deadline: Instant) -> anyhow::Result<()> {
        let n = self.node_mut(id).map_err(anyhow::Error::msg)?;
        while !n.ready() {
            if let Some(status) = n.child.try_wait()? {
                n.exit = Some(status);
                anyhow::bail!("node {id} exited during startup ({status}); see {}", n.log.display());
            }
            if Instant::now() > deadline {
                anyhow::bail!("node {id} not ready after {} s; see {}", READY_TIMEOUT.as_secs(), n.log.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn node_mut(&mut self, id: u16) -> Result<&mut Node, Refusal> {
        let known = self.nodes.iter().map(|n| n.id.to_string()).collect::<Vec<_>>().join(",");
        self.nodes.iter_mut().find(|n| n.id == id).ok_or(Refusal::UnknownNode(id, known))
    }

    /// SIGKILL to node `id` (running or paused).
    pub fn kill(&mut self, id: u16) -> Result<String, Refusal> {
        let n = self.node_mut(id)?;
        if n.state() == State::Dead {
            return Err(Refusal::Dead(id));
        }
        n.kill();
        Ok(format!("killed node {id} (pid {})", n.pid()))
    }

    /// SIGSTOP to node `id`: it keeps its sockets but answers nothing, as a stalled machine.
    pub fn pause(&mut self, id: u16) -> Result<String, Refusal> {
        let n = self.node_mut(id)?;
        match n.state() {
            State::Dead => Err(Refusal::Dead(id)),
            State::Paused => Ok(format!("node {id} (pid {}) was already paused", n.pid())),
            State::Running => {
                n.signal(libc::SIGSTOP);
                n.paused = true;
                Ok(format!("paused node {id} (pid {})", n.pid()))
            }
        }
    }

    /// SIGCONT to a paused node `id`.
    pub fn resume(&mut self, id: u16) -> Result<String, Refusal> {
        let n = self.node_mut(id)?;
        match n.state() {
            State::Dead => Err(Refusal::Dead(id)),
            State::Running => Ok(format!("node {id} (pid {}) was not paused", n.pid())),
            State::Paused => {
                n.signal(libc::SIGCONT);
                n.paused = false;
                Ok(format!("resumed node {id} (pid {})", n.pid()))
            }
        }
    }

    /// Kills node `id` if it runs, starts it again with the same data and config, and waits
    /// until it is ready.
    pub fn restart(&mut self, id: u16) -> Result<String, Refusal> {
        let n = self.node_mut(id)?;
        n.kill();
        let (listen, http) = (n.listen.clone(), n.http.clone());
        self.start(id, listen, http).map_err(|e| Refusal::StartFailed(id, e.to_string()))?;
        self.wait_one(id, Instant::now() + READY_TIMEOUT).map_err(|e| Refusal::StartFailed(id, e.to_string()))?;
        let n = self.node_mut(id)?;
        Ok(format!("restarted node {id}: {}", n.line()))
    }

    /// Nodes that exited on their own since the last call: (id, how).
    pub fn reap(&mut self) -> Vec<(u16, ExitStatus)> {
        let mut gone = Vec::new();
        for n in self.nodes.iter_mut().filter(|n| n.exit.is_none()) {
            if let Ok(Some(status)) = n.child.try_wait() {
                n.exit = Some(status);
                gone.push((n.id, status));
            }
        }
        gone
    }

    /// SIGTERM to every live node (SIGCONT first to a paused one, which could not act on
    /// it), then SIGKILL to any still running after 15 s.
    pub fn stop_all(&mut self) {
        for n in self.nodes.iter_mut().filter(|n| n.exit.is_none()) {
            if n.paused {
                n.signal(libc::SIGCONT);
                n.paused = false;
            }
            n.signal(libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        for n in self.nodes.iter_mut().filter(|n| n.exit.is_none()) {
            while Instant::now() < deadline {
                match n.child.try_wait() {
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                    Ok(status) => {
                        n.exit = status;
                        break;
                    }
                    Err(_) => break,
                }
            }
            n.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in node: prints the readiness line, then sleeps until signalled.
    fn fake_nodes(dir: &std::path::Path) -> Nodes {
        Nodes::new(
            dir.to_path_buf(),
            Box::new(|_, log| {
                let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
                Ok(std::process::Command::new("sh").args(["-c", "echo 'sluice ready: fake'; exec sleep 60"]).stdout(out).spawn()?)
            }),
        )
    }

    /// The kernel's view of a process: R, S, T (stopped), Z...
    fn proc_state(pid: u32) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()).unwrap_or('?')
    }

    #[test]
    fn kill_pause_resume_and_restart_act_on_the_processes() {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = fake_nodes(dir.path());
        for i in 1..=2 {
            nodes.start(i, format!("127.0.0.1:{i}"), String::new()).unwrap();
        }
        nodes.wait_ready(Instant::now() + READY_TIMEOUT).unwrap();
        let pid = |nodes: &Nodes, i: u16| nodes.list().iter().find(|n| n.id == i).unwrap().pid();
        let state = |nodes: &Nodes, i: u16| nodes.list().iter().find(|n| n.id == i).unwrap().state();

        nodes.pause(1).unwrap();
        assert_eq!(state(&nodes, 1), State::Paused);
        let deadline = Instant::now() + Duration::from_secs(5);
        while proc_state(pid(&nodes, 1)) != 'T' && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(proc_state(pid(&nodes, 1)), 'T', "SIGSTOP stops the process");
        nodes.resume(1).unwrap();
        assert_eq!(state(&nodes, 1), State::Running);
        assert_ne!(proc_state(pid(&nodes, 1)), 'T');

        let old = pid(&nodes, 2);
        nodes.kill(2).unwrap();
        assert_eq!(state(&nodes, 2), State::Dead);
        assert!(!std::path::Path::new(&format!("/proc/{old}")).exists(), "killed and reaped");
        assert_eq!(nodes.pause(2), Err(Refusal::Dead(2)));
        assert_eq!(nodes.kill(2), Err(Refusal::Dead(2)));
        assert_eq!(nodes.resume(9), Err(Refusal::UnknownNode(9, "1,2".into())));

        nodes.restart(2).unwrap();
        assert_eq!(state(&nodes, 2), State::Running);
        assert_ne!(pid(&nodes, 2), old);
        assert!(nodes.reap().is_empty(), "nothing exited on its own");

        nodes.pause(1).unwrap();
        nodes.stop_all();
        assert!(nodes.list().iter().all(|n| n.state() == State::Dead), "a paused node is stopped too");
    }
}
