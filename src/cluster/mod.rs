//! The broker's side of the cluster: reaching the active controller, registering and
//! heartbeating, and following the metadata log when this node does not vote.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::auth::client::Login;
use crate::config::listeners::Voter;
use crate::controller::rpc::{Request, Response};
use crate::controller::{net, Controller};
use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::metadata::image::Image;
use crate::metadata::published::Published;
use crate::metadata::records::Endpoint;
use crate::transport::Dialer;

pub mod login;
pub mod peer;

/// How this node reaches the controller and sees the metadata.
pub struct Cluster {
    pub node_id: i32,
    /// Controller listener of every voter.
    pub voters: BTreeMap<i32, Voter>,
    /// Set when this node votes in the quorum.
    pub controller: Option<Arc<Controller>>,
    image: Arc<Published>,
    /// The events of the metadata this node applied.
    journal: Arc<Journal>,
    applied: watch::Receiver<u64>,
    applied_tx: Option<watch::Sender<u64>>,
    epoch: AtomicU64,
    fenced: AtomicBool,
    /// Set once this broker was first unfenced: its image is then complete.
    caught_up: watch::Sender<bool>,
    /// The controller that last answered as the active one (-1: none yet), tried first.
    last_leader: std::sync::atomic::AtomicI32,
    incarnation: Uuid,
    /// How this node reaches the controllers and the other brokers.
    pub links: Links,
}

/// The listeners other nodes are reached on, and how to dial them.
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// The first of `controller.listener.names`: the voters' addresses are on it.
    pub controller: Dialer,
    /// How this node logs in on the controller listener, when its protocol is SASL.
    pub controller_login: Option<Arc<Login>>,
    /// `inter.broker.listener.name`: replica fetches, transaction markers, peer calls.
    pub inter_broker: Dialer,
    /// How this broker logs in on the inter-broker listener, when its protocol is SASL.
    pub inter_broker_login: Option<Arc<Login>>,
}

impl Links {
    /// A link to another broker's inter-broker listener at `addr`, logged in if it is SASL.
    pub async fn open_inter_broker(&self, addr: &str, client_id: &str) -> std::io::Result<login::Link> {
        login::Link::open(&self.inter_broker, self.inter_broker_login.as_ref(), addr, client_id).await
    }
}

impl Cluster {
    /// A voter: the image is the local quorum member's.
    pub fn voter(node_id: i32, voters: BTreeMap<i32, Voter>, controller: Arc<Controller>, links: Links) -> Arc<Cluster> {
        let image = controller.quorum.published();
        let applied = controller.quorum.applied();
        let journal = controller.quorum.journal();
        Arc::new(Cluster::new(node_id, voters, Some(controller), (image, journal), applied, None, links))
    }

    /// A broker that does not vote: it fetches the metadata log from the controller.
    pub fn observer(node_id: i32, voters: BTreeMap<i32, Voter>, links: Links) -> Arc<Cluster> {
        let (tx, rx) = watch::channel(0);
        Arc::new(Cluster::new(node_id, voters, None, Default::default(), rx, Some(tx), links))
    }

    fn new(
        node_id: i32,
        voters: BTreeMap<i32, Voter>,
        controller: Option<Arc<Controller>>,
        (image, journal): (Arc<Published>, Arc<Journal>),
        applied: watch::Receiver<u64>,
        applied_tx: Option<watch::Sender<u64>>,
        links: Links,
    ) -> Cluster {
        Cluster {
            node_id,
            voters,
            controller,
            image,
            journal,
            applied,
            applied_tx,
            epoch: AtomicU64::new(0),
            fenced: AtomicBool::new(true),
            caught_up: watch::channel(false).0,
            last_leader: std::sync::atomic::AtomicI32::new(-1),
            incarnation: Uuid::new_v4(),
            links,
        }
    }

    /// The metadata image as this node has applied it.
    pub fn image(&self) -> Arc<Image> {
        self.image.load()
    }

    /// What happened to the cluster, as this node applied it.
    pub fn journal(&self) -> Arc<Journal> {
        self.journal.clone()
    }

    /// Signalled whenever more metadata is applied.
    pub fn applied(&self) -> watch::Receiver<u64> {
        self.applied.clone()
    }

    /// Waits until this node has applied `offset` (bounded by `timeout`).
    pub async fn wait_applied(&self, offset: u64, timeout: Duration) -> Result<()> {
        let mut rx = self.applied.clone();
        let ok = matches!(tokio::time::timeout(timeout, rx.wait_for(|&a| a >= offset)).await, Ok(Ok(_)));
        if ok {
            Ok(())
        } else {
            Err(Error::RequestTimedOut(format!("metadata offset {offset} not applied in time")))
        }
    }

    /// This broker's epoch (0 before it registered).
    pub fn broker_epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Relaxed)
    }

    /// Becomes true once this broker was unfenced at least once.
    pub fn caught_up(&self) -> watch::Receiver<bool> {
        self.caught_up.subscribe()
    }

    /// The active controller's id, if known.
    pub fn active_controller(&self) -> Option<i32> {
        match &self.controller {
            Some(c) => c.quorum.status().leader_node(),
            None => self.image.load().brokers.values().find(|b| b.controller && !b.fenced).map(|b| b.id),
        }
    }

    /// Sends a request to the active controller, following redirects until `timeout`.
    pub async fn call(&self, req: Request, timeout: Duration) -> Result<Response> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut hint: Option<i32> = None;
        let mut round_robin = self.voters.keys().copied().cycle();
        loop {
            // The remote controller this attempt asked (None: the local one).
            let mut tried: Option<i32> = None;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(Error::RequestTimedOut("no active controller answered in time".into()));
            }
            let local_leader = self.controller.as_ref().filter(|c| c.quorum.status().is_leader);
            let resp = if let Some(c) = local_leader {
                match tokio::time::timeout(left, c.handle(req.clone())).await {
                    Ok(r) => Ok(r),
                    Err(_) => Err(Error::RequestTimedOut("the controller did not decide in time".into())),
                }
            } else {
                let remembered = Some(self.last_leader.swap(-1, Ordering::Relaxed)).filter(|l| *l >= 0);
                let target = hint
                    .take()
                    .or_else(|| self.controller.as_ref().and_then(|c| c.quorum.status().leader_node()))
                    .or(remembered)
                    .filter(|t| *t != self.node_id || self.controller.is_none())
                    .or_else(|| round_robin.next());
                tried = target;
                let link_fault = target.map(|t| crate::fault::global().on_link(Some(t), crate::clock::now_ms())).unwrap_or_default();
                if link_fault.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(link_fault.delay_ms).min(left)).await;
                }
                match target.and_then(|t| self.voters.get(&t)) {
                    Some(_) if link_fault.drop => {
                        Err(Error::BrokerNotAvailable("the link to the controller is cut by an injected fault".into()))
                    }
                    Some(addr) => {
                        net::call(
                            &self.links.controller,
                            self.links.controller_login.as_deref(),
                            &addr.address(),
                            self.node_id,
                            &req,
                            left.min(Duration::from_secs(30)),
                        )
                        .await
                    }
                    None => Err(Error::NotController),
                }
            };
            match resp {
                Ok(Response::NotController { leader }) => hint = leader.filter(|l| Some(*l) != Some(self.node_id)),
                Ok(r) => {
                    if let Some(t) = tried {
                        self.last_leader.store(t, Ordering::Relaxed);
                    }
                    return Ok(r);
                }
                Err(Error::RequestTimedOut(m)) => return Err(Error::RequestTimedOut(m)),
                Err(_) => {}
            }
            let pause = tokio::time::sleep(Duration::from_millis(50).min(left));
            match &self.controller {
                // A voter learns of an election at once: no need to sleep through it.
                Some(c) => {
                    let mut status = c.quorum.status_watch();
                    tokio::select! {
                        _ = pause => {}
                        _ = status.changed() => {}
                    }
                }
                None => pause.await,
            }
        }
    }

    /// Registers with the controller and heartbeats forever; re-registers if the controller
    /// forgot this broker (a stale epoch). `host`/`port` are the inter-broker listener's
    /// advertised address; `endpoints` every listener's; `http` the HTTP listener's.
    pub async fn run_membership(
        self: Arc<Self>,
        host: String,
        port: i32,
        endpoints: Vec<Endpoint>,
        http: Option<String>,
        rack: Option<String>,
        interval: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let is_voter = self.controller.is_some();
        'register: loop {
            let req = Request::Register {
                id: self.node_id,
                incarnation: self.incarnation,
                host: host.clone(),
                port,
                rack: rack.clone(),
                controller: is_voter,
                endpoints: endpoints.clone(),
                http: http.clone(),
            };
            let epoch = match self.call(req, Duration::from_secs(5)).await {
                Ok(Response::Registered { epoch }) => epoch,
                other => {
                    tracing::debug!(result = ?other.err(), "registration not accepted yet");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(200)) => continue 'register,
                        _ = shutdown.changed() => return,
                    }
                }
            };
            self.epoch.store(epoch, Ordering::Relaxed);
            tracing::info!(epoch, "registered with the controller");
            loop {
                let applied = *self.applied.borrow();
                let req = Request::Heartbeat { id: self.node_id, epoch, applied, shutting_down: false };
                match self.call(req, interval.max(Duration::from_secs(2))).await {
                    Ok(Response::Heartbeat { fenced, .. }) => {
                        let was = self.fenced.swap(fenced, Ordering::Relaxed);
                        if was != fenced {
                            tracing::info!(fenced, "broker fencing changed");
                        }
                        if !fenced {
                            self.caught_up.send_if_modified(|c| !std::mem::replace(c, true));
                        }
                    }
                    Ok(Response::Failed(Error::StaleBrokerEpoch)) => {
                        self.fenced.store(true, Ordering::Relaxed);
                        continue 'register;
                    }
                    _ => {}
                }
                // Until unfenced, ask again soon: startup waits on it.
                let wait = if self.is_fenced() { Duration::from_millis(50) } else { interval };
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }

    /// Controlled shutdown: asks the controller to move leadership away and fence us.
    pub async fn controlled_shutdown(&self, timeout: Duration) {
        let epoch = self.broker_epoch();
        if epoch == 0 {
            return;
        }
        let req = Request::Heartbeat { id: self.node_id, epoch, applied: *self.applied.borrow(), shutting_down: true };
        match self.call(req, timeout).await {
            Ok(Response::Heartbeat { shutdown_ready: true, .. }) => tracing::info!("controlled shutdown acknowledged"),
            other => tracing::warn!(result = ?other, "controlled shutdown not acknowledged; stopping anyway"),
        }
    }

    /// For a non-voting broker: fetches committed metadata from the controller forever.
    pub async fn follow_metadata(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let Some(tx) = self.applied_tx.as_ref() else { return };
        loop {
            let from = self.image.load().offset + 1;
            let r = tokio::select! {
                r = self.call(Request::FetchMetadata { from, node: Some(self.node_id) }, Duration::from_secs(5)) => r,
                _ = shutdown.changed() => return,
            };
            match r {
                Ok(Response::Batches { batches }) => {
                    let mut events = Vec::new();
                    let o = self.image.update(|img| {
                        for (offset, b) in batches {
                            events.extend(crate::journal::apply_batch(img, offset, &b));
                        }
                        img.offset
                    });
                    self.journal.push(events);
                    tx.send_if_modified(|v| std::mem::replace(v, o) != o);
                }
                Ok(Response::Snapshot { image }) => match Image::from_snapshot(&image) {
                    Ok(i) => {
                        let o = i.offset;
                        self.image.publish(i);
                        tx.send_if_modified(|v| std::mem::replace(v, o) != o);
                    }
                    Err(e) => tracing::warn!(error = %e, "bad metadata snapshot from the controller"),
                },
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
}
