//! The `sluice` command: serve a Kafka-compatible broker.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use sluice::auth::client::Login;
use sluice::auth::credential::AddScram;
use sluice::broker::{Broker, Identity};
use sluice::cluster::{Cluster, Links};
use sluice::config::listeners::Listeners;
use sluice::config::{self, BrokerConfig};
use sluice::metadata::records::{Endpoint, Record};
use sluice::transport::{tls, Dialer};
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "sluice", version, about = "A Kafka wire-protocol compatible broker")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the broker (the default).
    Serve(ServeArgs),
    /// Run a local cluster of separate broker processes (combined broker+controller nodes).
    DevCluster(DevClusterArgs),
    /// Kill, restart, pause or resume a node of a running dev-cluster, or list them (status).
    Dev(sluice::dev_cluster::dev::DevArgs),
    /// The seed's failure scenarios against a dev-cluster: list them, or run one.
    Scenario(sluice::scenario::ScenarioArgs),
    /// Exit 0 once a broker answers ApiVersions (a container healthcheck), 1 otherwise.
    Ping(PingArgs),
    #[command(flatten)]
    Tool(sluice::cli::Tool),
}

#[derive(Args, Clone)]
struct PingArgs {
    /// The broker, HOST:PORT. Default: in the image, this node's first PLAINTEXT listener; else 127.0.0.1:9092.
    #[arg(short = 'b', long = "broker", value_name = "HOST:PORT")]
    broker: Option<String>,
    /// How long to wait for the answer, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
}

#[derive(Args, Clone)]
struct DevClusterArgs {
    /// How many nodes.
    #[arg(long, default_value_t = 3)]
    brokers: u16,
    /// Client port of node 1; node i listens on base+i-1, its controller on base+100+i-1, its HTTP listener on base+200+i-1.
    #[arg(long, default_value_t = 19092)]
    base_port: u16,
    /// Parent of the nodes' data dirs (node-1, node-2, ...).
    #[arg(long, value_name = "DIR", default_value = "./dev-cluster")]
    data_dir: PathBuf,
    /// Host to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// A config key for every node, e.g. --set min.insync.replicas=2; {node.id} in a value becomes the node's id. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// plaintext; sasl_ssl: TLS everywhere, SCRAM-SHA-512 for clients and brokers, ACLs on, an admin user; ssl: mutual TLS.
    #[arg(long, default_value = "plaintext", value_parser = ["plaintext", "ssl", "sasl_ssl"])]
    security: String,
}

#[derive(Args, Clone, Default)]
struct ServeArgs {
    /// Config file: TOML with Kafka key names, or a Kafka server.properties (by its .properties extension). Default: ./config.toml if present.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// Address clients are told to connect to, HOST:PORT. Default: the listen address.
    #[arg(long, value_name = "HOST:PORT")]
    advertise: Option<String>,
    /// Data directory.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// This broker's node id.
    #[arg(long, value_name = "N")]
    node_id: Option<i32>,
    /// Any config key by its Kafka name, e.g. --set num.partitions=3. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// The id a new cluster takes, as `kafka-storage format --cluster-id` (a base64 UUID,
    /// e.g. from `kafka-storage random-uuid`). Default: a random one. Ignored once the cluster exists.
    #[arg(long, value_name = "ID")]
    cluster_id: Option<String>,
    /// A SCRAM credential a new cluster starts with, as kafka-storage format takes it:
    /// 'SCRAM-SHA-512=[name=alice,password=alice-secret]'. Ignored once the cluster exists. Repeatable.
    #[arg(long = "add-scram", value_name = "MECHANISM=[name=U,password=P]")]
    add_scram: Vec<String>,
}

fn split_host_port(s: &str) -> anyhow::Result<(String, u16)> {
    let (h, p) = s.rsplit_once(':').with_context(|| format!("'{s}' is not HOST:PORT"))?;
    let port = p.parse::<u16>().with_context(|| format!("bad port in '{s}'"))?;
    let host = h.trim_start_matches('[').trim_end_matches(']');
    Ok((if host.is_empty() { "0.0.0.0".into() } else { host.to_string() }, port))
}

/// Where the apache/kafka image takes a mounted server.properties from.
const MOUNTED_PROPERTIES: &str = "/mnt/shared/config/server.properties";

/// The cluster id a new cluster is formed with: `--cluster-id`, else (in the image)
/// `CLUSTER_ID`; a base64 UUID, as Kafka's storage tool wants it.
fn formation_cluster_id(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let env = std::env::var_os(config::env::SWITCH).and_then(|_| std::env::var("CLUSTER_ID").ok()).filter(|v| !v.is_empty());
    let Some(id) = args.cluster_id.clone().or(env) else { return Ok(None) };
    use base64::Engine;
    match base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(id.trim()) {
        Ok(b) if b.len() == 16 => Ok(Some(id.trim().to_string())),
        _ => bail!("cluster id '{id}' is not a base64 UUID (22 characters, e.g. from kafka-storage random-uuid)"),
    }
}

fn build_config(args: &ServeArgs) -> anyhow::Result<BrokerConfig> {
    let mut cfg = BrokerConfig::default();
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("config.toml")).filter(|p| p.exists()),
    };
    let from_env = std::env::var_os(config::env::SWITCH).is_some();
    // The apache/kafka image's file input: a server.properties mounted at /mnt/shared/config.
    let path = path.or_else(|| Some(PathBuf::from(MOUNTED_PROPERTIES)).filter(|p| from_env && p.exists()));
    if let Some(p) = path {
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let pairs = if p.extension().is_some_and(|e| e == "properties") {
            config::properties::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?
        } else {
            config::parse_toml(&text).map_err(anyhow::Error::msg)?
        };
        for (k, v) in pairs {
            cfg.set_static(&k, &v).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        }
    }
    if from_env {
        for e in config::env::settings(std::env::vars()).map_err(anyhow::Error::msg)? {
            cfg.set_static(&e.key, &e.value).map_err(|err| anyhow::anyhow!("{} ({}): {err}", e.var, e.key))?;
        }
    }
    for kv in &args.set {
        let Some((k, v)) = kv.split_once('=') else { bail!("--set wants KEY=VALUE, got '{kv}'") };
        cfg.set_static(k.trim(), v.trim()).map_err(|e| anyhow::anyhow!("--set {kv}: {e}"))?;
    }
    if let Some(l) = &args.listen {
        cfg.set_static("listeners", &format!("PLAINTEXT://{l}")).map_err(anyhow::Error::msg)?;
    }
    if let Some(a) = &args.advertise {
        cfg.set_static("advertised.listeners", &format!("PLAINTEXT://{a}")).map_err(anyhow::Error::msg)?;
    }
    if let Some(d) = &args.data_dir {
        cfg.set_static("log.dirs", &d.to_string_lossy()).map_err(anyhow::Error::msg)?;
    }
    if let Some(n) = args.node_id {
        cfg.set_static("node.id", &n.to_string()).map_err(anyhow::Error::msg)?;
    }
    Ok(cfg)
}

/// Logs to stderr, as text for people or (`log.format=json`) one JSON object per line.
fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    if format == "json" {
        // Event fields at the top level, beside "message", so a line reads as the event does.
        builder.json().flatten_event(true).with_current_span(false).init();
    } else {
        builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => a,
        Some(Command::DevCluster(d)) => {
            init_logging("text");
            return sluice::dev_cluster::run(sluice::dev_cluster::Spec {
                brokers: d.brokers,
                base_port: d.base_port,
                data_dir: d.data_dir,
                host: d.host,
                set: d.set,
                security: d.security.parse().map_err(anyhow::Error::msg)?,
            });
        }
        Some(Command::Dev(d)) => std::process::exit(sluice::dev_cluster::dev::run(&d)),
        Some(Command::Scenario(s)) => std::process::exit(sluice::scenario::run(&s)),
        Some(Command::Ping(p)) => return ping(&p),
        Some(Command::Tool(t)) => {
            let code = sluice::cli::run(t).unwrap_or_else(|e| {
                eprintln!("error: {e}");
                1
            });
            std::process::exit(code);
        }
        None => cli.serve,
    };
    let started = std::time::Instant::now();
    raise_fd_limit();
    // Read before logging starts, since it decides the format (a bad config is printed plainly).
    let cfg = build_config(&args)?;
    init_logging(&cfg.get("log.format"));
    let formation = args.add_scram.iter().map(|s| AddScram::parse(s)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?;
    let cluster_id = formation_cluster_id(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve(cfg, started, formation, cluster_id))
}

/// Sends ApiVersions v0 and checks the answer: a broker answers only once it serves (its
/// listeners are bound, and connections wait, while it starts).
fn ping(args: &PingArgs) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let target = match &args.broker {
        Some(b) => b.clone(),
        None => ping_default().unwrap_or_else(|| "127.0.0.1:9092".into()),
    };
    let timeout = std::time::Duration::from_millis(args.timeout_ms.max(1));
    let addr = resolve(&target)?;
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout).with_context(|| format!("ping {target}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let client = b"sluice-ping";
    let mut req = Vec::new();
    req.extend_from_slice(&18i16.to_be_bytes()); // ApiVersions
    req.extend_from_slice(&0i16.to_be_bytes());
    req.extend_from_slice(&7i32.to_be_bytes()); // correlation id
    req.extend_from_slice(&(client.len() as i16).to_be_bytes());
    req.extend_from_slice(client);
    s.write_all(&(req.len() as i32).to_be_bytes())?;
    s.write_all(&req)?;
    let mut head = [0u8; 10];
    s.read_exact(&mut head).with_context(|| format!("ping {target}: no answer"))?;
    let correlation = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let error = i16::from_be_bytes([head[8], head[9]]);
    if correlation != 7 || error != 0 {
        bail!("ping {target}: unexpected answer (correlation id {correlation}, error code {error})");
    }
    println!("{target} answered ApiVersions");
    Ok(())
}

/// In the image, the address of this node's first PLAINTEXT broker listener.
fn ping_default() -> Option<String> {
    std::env::var_os(config::env::SWITCH)?;
    let cfg = build_config(&ServeArgs::default()).ok()?;
    let is_controller = cfg.get("process.roles").split(',').any(|r| r.trim() == "controller");
    let listeners = Listeners::from_config(&cfg, true, is_controller).ok()?;
    let l = listeners.broker_listeners().find(|l| l.protocol == sluice::config::listeners::SecurityProtocol::Plaintext)?;
    let host = if l.host.is_empty() || l.host == "0.0.0.0" { "127.0.0.1".to_string() } else { l.host.clone() };
    Some(format!("{host}:{}", l.port))
}

fn resolve(hp: &str) -> anyhow::Result<SocketAddr> {
    let (h, p) = split_host_port(hp)?;
    (h.as_str(), p).to_socket_addrs()?.next().with_context(|| format!("cannot resolve {h}"))
}

async fn serve(cfg: BrokerConfig, started: std::time::Instant, formation: Vec<AddScram>, cluster_id: Option<String>) -> anyhow::Result<()> {
    let node_id: i32 = cfg.get("node.id").parse().context("node.id")?;
    // Every role decides by the typed settings: a value that does not parse stops startup.
    sluice::config::Settings::from_config(&cfg).map_err(anyhow::Error::msg)?;
    let roles: Vec<String> = cfg.get("process.roles").split(',').map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect();
    if roles.is_empty() || roles.iter().any(|r| r != "broker" && r != "controller") {
        bail!("process.roles must be broker, controller, or both; got '{}'", cfg.get("process.roles"));
    }
    let is_broker = roles.iter().any(|r| r == "broker");
    let is_controller = roles.iter().any(|r| r == "controller");
    if cluster_id.is_some() && !is_controller && std::env::var_os(config::env::SWITCH).is_none() {
        bail!("--cluster-id names a new cluster in its metadata log: give it to the controllers, not to a broker-only node");
    }
    if !formation.is_empty() && !is_controller {
        bail!("--add-scram seeds the metadata log of a new cluster: give it to the controllers, not to a broker-only node");
    }
    // The first log dir also holds the metadata log and the broker's own state, as Kafka's
    // `metadata.log.dir` defaults to it.
    let log_dirs = sluice::log::dirs::parse(&cfg.get("log.dirs"));
    let data_dir = log_dirs.first().cloned().context("log.dirs names no directory")?;
    std::fs::create_dir_all(&data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let voters = sluice::config::listeners::parse_voters(&cfg.get("controller.quorum.voters")).map_err(anyhow::Error::msg)?;
    let listeners = Listeners::from_config(&cfg, is_broker, is_controller).map_err(anyhow::Error::msg)?;
    // Without a controller listener in `listeners`, a voter serves the quorum on its own
    // address in controller.quorum.voters (Sluice's shorthand; Kafka wants it listed).
    let controller_addr = match listeners.controller_listener() {
        Some(l) => Some(resolve(&l.address())?),
        None => voters.get(&node_id).map(|v| resolve(&v.address())).transpose()?,
    };
    let controller_name = listeners.controller_listener().map_or(listeners.controller_names[0].clone(), |l| l.name.clone());
    let controller_protocol = if voters.is_empty() && listeners.controller_listener().is_none() {
        // One node alone: there is no controller traffic to secure.
        sluice::config::listeners::SecurityProtocol::Plaintext
    } else {
        listeners.controller_protocol().map_err(anyhow::Error::msg)?
    };
    // Nodes log in to the controller listener when it is SASL, as Kafka's do.
    let controller_login = if controller_protocol.sasl() {
        Some(Arc::new(sluice::controller::sasl::login_for(&cfg, &controller_name).map_err(anyhow::Error::msg)?))
    } else {
        None
    };
    // Brokers log in to each other on a SASL inter-broker listener, as Kafka's do; a single
    // node has no such links.
    let inter_broker_login = if is_broker && listeners.inter_broker_protocol.sasl() && !voters.is_empty() {
        let login =
            Login::for_listener(&cfg, &listeners.inter_broker, "sasl.mechanism.inter.broker.protocol").map_err(anyhow::Error::msg)?;
        let served = sluice::auth::sasl::SaslConfig::for_listener(&cfg, &listeners.inter_broker).map_err(anyhow::Error::msg)?;
        if !served.enabled.contains(&login.mechanism) {
            bail!(
                "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication ({} is not enabled on listener {})",
                login.mechanism,
                listeners.inter_broker
            );
        }
        tracing::info!(listener = %listeners.inter_broker, mechanism = %login.mechanism, user = %login.username, "brokers log in to each other with SASL");
        Some(Arc::new(login))
    } else {
        None
    };
    let links = Links {
        controller: Dialer::for_listener(&cfg, &listeners.controller_names[0], controller_protocol)?,
        controller_login: controller_login.clone(),
        inter_broker: if is_broker {
            Dialer::for_listener(&cfg, &listeners.inter_broker, listeners.inter_broker_protocol)?
        } else {
            Dialer::plaintext()
        },
        inter_broker_login,
    };
    let connection_limits = sluice::net::ConnectionLimits::from_config(&cfg).map_err(anyhow::Error::msg)?;
    if voters.is_empty() && !(is_broker && is_controller) {
        bail!("a node that is not both broker and controller needs controller.quorum.voters");
    }
    if is_controller && !voters.is_empty() && !voters.contains_key(&node_id) {
        // KIP-853: a controller outside the voter set starts as an observer, for
        // AddRaftVoter (`kafka-metadata-quorum add-controller`) to add.
        if listeners.controller_listener().is_none() {
            bail!("node {node_id} is a controller outside controller.quorum.voters (an observer): it needs its controller listener in listeners");
        }
        tracing::info!(node_id, "this controller is not in controller.quorum.voters: it starts as an observer until it is added");
    }
    if !is_controller && voters.contains_key(&node_id) {
        bail!("node {node_id} is a voter in controller.quorum.voters but lacks the controller role");
    }
    // Bound first, as Kafka's socket server is: a client that connects while the node
    // starts waits in the backlog for its answer instead of being refused.
    let mut serving = Vec::new();
    if is_broker {
        for l in listeners.broker_listeners() {
            let addr = resolve(&l.address())?;
            let socket = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} ({})", l.name))?;
            let tls = if l.protocol.tls() { Some(Arc::new(tls::server(&cfg, &l.name)?)) } else { None };
            let sasl = if l.protocol.sasl() {
                let sasl = sluice::auth::sasl::SaslConfig::for_listener(&cfg, &l.name).map_err(anyhow::Error::msg)?;
                tracing::info!(listener = %l.name, mechanisms = ?sasl.enabled, "SASL authentication on the listener");
                Some(Arc::new(sasl))
            } else {
                None
            };
            let session = Arc::new(sluice::api::Session::anonymous(&l.name, l.protocol));
            serving.push((l.name.clone(), sluice::net::Listening { socket, session, tls, sasl }));
        }
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // A listener that checks signed OAUTHBEARER tokens reads its JWKS before it serves; one
    // that cannot be read stops startup, as in Kafka.
    for (name, l) in &serving {
        if let Some(keys) = l.sasl.as_ref().and_then(|s| s.jwks()) {
            sluice::net::jwks::start(keys.clone(), stop_rx.clone())
                .await
                .with_context(|| format!("listener {name}: sasl.oauthbearer.jwks.endpoint.url"))?;
        }
    }

    // Before any link is opened, so the peer transport's hooks see the switch.
    sluice::fault::global().enable(cfg.get_bool("fault.injection.enable"));

    // The controller quorum member, if this node votes (alone, with no voters configured).
    let controller = if is_controller {
        let raft_id = sluice::controller::quorum::raft_id;
        let ids: Vec<u64> = if voters.is_empty() { vec![raft_id(node_id)] } else { voters.keys().map(|v| raft_id(*v)).collect() };
        let timing = sluice::controller::quorum::Timing { election_ticks: 10, heartbeat_ticks: 2 };
        let metadata_dir = data_dir.join("__cluster_metadata-0");
        let directory_id = sluice::log::meta_properties::directory_id(&data_dir, node_id)
            .with_context(|| format!("reading the directory id in {}/meta.properties", data_dir.display()))?;
        tracing::info!(node_id, directory_id = %sluice::metadata::kafka_uuid(directory_id), "controller directory id");
        let node = sluice::controller::quorum::QuorumNode::open(&metadata_dir, raft_id(node_id), &ids, timing)
            .with_context(|| format!("opening the metadata log in {}", metadata_dir.display()))?;
        let configured = voters.iter().filter(|(id, _)| **id != node_id).map(|(id, addr)| (raft_id(*id), addr.address())).collect();
        let peers = sluice::controller::net::Peers::new(links.controller.clone(), links.controller_login.clone(), configured);
        // Voters added through AddRaftVoter are reached where the log says they listen.
        let image = node.image();
        let listener = controller_name.clone();
        let quorum = sluice::controller::driver::Quorum::start(
            node,
            Box::new(move |m| {
                peers.send(m, |to| {
                    let img = image.load();
                    let v = img.voters.get(&sluice::controller::quorum::node_id(to))?;
                    v.endpoints.iter().find(|e| e.name == listener).or(v.endpoints.first()).map(|e| e.address())
                })
            }),
        );
        let c = sluice::controller::Controller::new(quorum, cfg.clone());
        c.add_on_formation(
            cluster_id
                .iter()
                .map(|id| Record::ClusterId { id: id.clone() })
                .chain(formation.iter().map(|a| Record::UserScramCredential {
                    name: a.name.clone(),
                    mechanism: a.mechanism,
                    credential: a.credential(),
                }))
                .collect(),
        );
        if voters.is_empty() {
            // A data dir from before the metadata log: carry its topics over.
            if let Some(recs) = sluice::metadata::legacy_records(&data_dir, node_id)? {
                c.bootstrap_from(recs, data_dir.join("metadata.json"));
            }
        }
        if let Some(addr) = controller_addr.filter(|_| !voters.is_empty()) {
            let l = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} (controller)"))?;
            let tls = if controller_protocol.tls() { Some(Arc::new(tls::server(&cfg, &controller_name)?)) } else { None };
            let sasl = match &controller_login {
                Some(login) => {
                    let sasl = sluice::auth::sasl::SaslConfig::for_listener(&cfg, &controller_name).map_err(anyhow::Error::msg)?;
                    if !sasl.enabled.contains(&login.mechanism) {
                        bail!(
                            "sasl.mechanism.controller.protocol ({}) must be in the sasl.enabled.mechanisms of controller listener {controller_name}",
                            login.mechanism
                        );
                    }
                    tracing::info!(listener = %controller_name, mechanisms = ?sasl.enabled, user = %login.username, "SASL authentication on the controller listener");
                    Some(Arc::new(sasl))
                }
                None => None,
            };
            tokio::spawn(sluice::controller::net::serve(l, c.clone(), tls, sasl, stop_rx.clone()));
        }
        // Registered in the log as a controller (KIP-919), and its voter endpoints kept
        // current (UpdateRaftVoter), from the controller listener it serves.
        let own_endpoints: Vec<sluice::metadata::voters::VoterEndpoint> = match (listeners.controller_listener(), controller_addr) {
            (Some(l), Some(a)) => {
                let host = if l.host.is_empty() || l.host == "0.0.0.0" { a.ip().to_string() } else { l.host.clone() };
                vec![sluice::metadata::voters::VoterEndpoint { name: l.name.clone(), host, port: a.port() }]
            }
            _ => Vec::new(),
        };
        let link = sluice::controller::registrations::LeaderLink {
            dialer: links.controller.clone(),
            login: links.controller_login.clone(),
            voters: voters.iter().filter(|(id, _)| **id != node_id).map(|(id, v)| (*id, v.address())).collect(),
        };
        tokio::spawn(sluice::controller::registrations::run(c.clone(), node_id, directory_id, own_endpoints, link, stop_rx.clone()));
        let ticker = c.clone();
        let mut stop = stop_rx.clone();
        let mut status = c.quorum.status_watch();
        tokio::spawn(async move {
            let mut t = tokio::time::interval(std::time::Duration::from_millis(100));
            loop {
                // Also right after an election, so a new leader takes up its duties at once.
                tokio::select! {
                    _ = t.tick() => ticker.tick().await,
                    _ = status.changed() => ticker.tick().await,
                    _ = stop.changed() => return,
                }
            }
        });
        Some(c)
    } else {
        None
    };

    if !is_broker {
        tracing::info!(
            "sluice ready: controller {node_id} on {}, data {}, started in {} ms",
            controller_addr.map(|a| a.to_string()).unwrap_or_default(),
            data_dir.display(),
            started.elapsed().as_millis()
        );
        wait_for_signal().await?;
        let _ = stop_tx.send(true);
        return Ok(());
    }

    if serving.is_empty() {
        bail!("no client listener in listeners");
    }
    // What this broker registers: every listener's advertised address, with the port it
    // was bound to where the config says 0, and a host to dial where it names none.
    let mut endpoints = Vec::new();
    for a in &listeners.advertised {
        let bound = serving.iter().find(|(n, _)| *n == a.name).map(|(_, l)| l.socket.local_addr()).transpose()?;
        let port = match (a.port, bound) {
            (0, Some(b)) => b.port(),
            (p, _) => p,
        };
        let host = if a.host.is_empty() || a.host == "0.0.0.0" { "127.0.0.1".to_string() } else { a.host.clone() };
        endpoints.push(Endpoint { listener: a.name.clone(), host, port: port as i32, security_protocol: a.protocol });
    }
    let inter = endpoints.iter().find(|e| e.listener == listeners.inter_broker).context("no inter-broker endpoint")?.clone();
    let (adv_host, adv_port) = (inter.host.clone(), inter.port as u16);
    let shown: Vec<String> = endpoints.iter().map(|e| format!("{}://{}:{}", e.listener, e.host, e.port)).collect();
    let addrs: Vec<String> = serving.iter().map(|(_, l)| l.socket.local_addr().map(|a| a.to_string()).unwrap_or_default()).collect();
    let names: Vec<String> = serving.iter().map(|(n, _)| n.clone()).collect();

    let cluster = match &controller {
        Some(c) => Cluster::voter(node_id, voters.clone(), c.clone(), links.clone()),
        None => {
            let cl = Cluster::observer(node_id, voters.clone(), links.clone());
            tokio::spawn(cl.clone().follow_metadata(stop_rx.clone()));
            cl
        }
    };
    let journal = cluster.journal();
    sluice::fault::global().on_change(Box::new(move |c| {
        // A clock fault moves this node's clock from the moment it is added until cleared.
        sluice::clock::set_skew_ms(sluice::fault::global().clock_skew_ms());
        journal.fault_changed(c, sluice::clock::now_ms())
    }));
    // A failed log dir takes only its own partitions offline: the broker asks the controller
    // to move their leadership (below, once it runs). Once all its log dirs are offline,
    // Kafka's broker halts without a controlled shutdown: its partitions' other replicas
    // take over when its session lapses, and what they acknowledged stays acknowledged.
    // The halt waits a moment, as Kafka's failure handler thread does, so the requests that
    // met the failure are answered with KAFKA_STORAGE_ERROR rather than a closed connection.
    let (failed_tx, mut failed_rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
    let all_dirs = log_dirs.clone();
    sluice::log::dir_failure::global().on_offline(Box::new(move |dir, error| {
        let failures = sluice::log::dir_failure::global();
        if all_dirs.iter().all(|d| failures.is_offline(d)) {
            tracing::error!(dir = %dir.display(), error, "halting: every log dir of this broker is offline");
            std::thread::spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(200));
                std::process::exit(1);
            });
        } else {
            let _ = failed_tx.send(dir.to_path_buf());
        }
    }));
    // Nothing can be served before the quorum has named the cluster.
    let mut applied = cluster.applied();
    let mut waited = 0;
    while cluster.image().cluster_id.is_none() {
        if tokio::time::timeout(std::time::Duration::from_secs(5), applied.changed()).await.is_err() {
            waited += 5;
            tracing::info!(seconds = waited, "waiting for the controller quorum to elect a leader");
        }
    }
    let identity = Identity { node_id, host: adv_host.clone(), port: adv_port as i32, data_dir: data_dir.clone() };
    let broker =
        Broker::open(identity, cfg.clone(), cluster.clone()).with_context(|| format!("opening the logs in {}", data_dir.display()))?;
    let rack = Some(cfg.get("broker.rack")).filter(|r| !r.is_empty());
    let interval = std::time::Duration::from_millis(cfg.get_i64("broker.heartbeat.interval.ms").max(10) as u64);
    let http_at = cfg.get("http.listener");
    // Bound before registering, so that the registration names it: the other nodes
    // ask this one for what only it knows (its followers' progress, its groups).
    let http = if http_at.is_empty() {
        None
    } else {
        let addr = resolve(&http_at)?;
        let app = sluice::http::router(broker.clone(), stop_rx.clone());
        let (at, task) =
            sluice::http::start(addr, app, stop_rx.clone()).await.with_context(|| format!("cannot listen on {addr} (http)"))?;
        tracing::info!("metrics on http://{at}/metrics; JSON API on http://{at}/v1/");
        Some((at, task))
    };
    // A listener on every interface is reached at the host the inter-broker listener advertises.
    let http_adv = http.as_ref().map(|(at, _)| if at.ip().is_unspecified() { format!("{adv_host}:{}", at.port()) } else { at.to_string() });
    tokio::spawn(cluster.clone().run_membership(adv_host, adv_port as i32, endpoints, http_adv, rack, interval, stop_rx.clone()));
    tokio::spawn(broker.clone().follow_image(stop_rx.clone()));
    let failing = broker.clone();
    tokio::spawn(async move {
        while let Some(dir) = failed_rx.recv().await {
            failing.clone().log_dir_failed(dir).await;
        }
    });
    let mut caught_up = cluster.caught_up();
    let _ = caught_up.wait_for(|c| *c).await;
    broker.start_applying_roles();

    let sockets = serving.into_iter().map(|(_, l)| l).collect();
    let server = tokio::spawn(sluice::net::serve(sockets, broker.clone(), connection_limits, stop_rx.clone()));
    let background = tokio::spawn(broker.clone().run_background(stop_rx.clone()));
    tracing::info!(
        // Tools read the first address after "serving Kafka on": keep it HOST:PORT.
        "sluice ready: serving Kafka on {} (listeners {}; advertised {}), node {node_id}, data {}, cluster {}, started in {} ms",
        addrs.join(","),
        names.join(","),
        shown.join(","),
        data_dir.display(),
        broker.cluster_id,
        started.elapsed().as_millis()
    );

    wait_for_signal().await?;
    if !voters.is_empty() {
        cluster.controlled_shutdown(std::time::Duration::from_secs(5)).await;
    }
    let _ = stop_tx.send(true);
    let _ = server.await;
    if let Some((_, task)) = http {
        // Its streams end on the stop signal; a client that does not read is not waited for.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
    }
    let _ = background.await;
    broker.shutdown()?;
    tracing::info!("shut down cleanly");
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
    }
    Ok(())
}

/// Raises the open-file limit to the hard limit, as brokers with many partitions need.
fn raise_fd_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
