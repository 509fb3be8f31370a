//! The `sluice` command: serve a Kafka-compatible broker.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};

use sluice::broker::{Broker, Identity};
use sluice::config::{self, BrokerConfig};

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
}

#[derive(Args, Clone, Default)]
struct ServeArgs {
    /// Config file (TOML, Kafka key names). Default: ./config.toml if present.
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
}

/// Strips a `NAME://` listener prefix and keeps the first listener.
fn host_port(listener: &str) -> &str {
    let first = listener.split(',').next().unwrap_or("").trim();
    first.split_once("://").map_or(first, |(_, hp)| hp)
}

fn split_host_port(s: &str) -> anyhow::Result<(String, u16)> {
    let (h, p) = s.rsplit_once(':').with_context(|| format!("'{s}' is not HOST:PORT"))?;
    let port = p.parse::<u16>().with_context(|| format!("bad port in '{s}'"))?;
    let host = h.trim_start_matches('[').trim_end_matches(']');
    Ok((if host.is_empty() { "0.0.0.0".into() } else { host.to_string() }, port))
}

fn build_config(args: &ServeArgs) -> anyhow::Result<BrokerConfig> {
    let mut cfg = BrokerConfig::default();
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("config.toml")).filter(|p| p.exists()),
    };
    if let Some(p) = path {
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        for (k, v) in config::parse_toml(&text).map_err(anyhow::Error::msg)? {
            cfg.set_static(&k, &v).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
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

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into()))
        .init();
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(a)) => a,
        None => cli.serve,
    };
    let started = std::time::Instant::now();
    raise_fd_limit();
    let cfg = build_config(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve(cfg, started))
}

async fn serve(cfg: BrokerConfig, started: std::time::Instant) -> anyhow::Result<()> {
    let (listen_host, listen_port) = split_host_port(host_port(&cfg.get("listeners")))?;
    let listen_addr =
        (listen_host.as_str(), listen_port).to_socket_addrs()?.next().with_context(|| format!("cannot resolve {listen_host}"))?;
    let listener = tokio::net::TcpListener::bind(listen_addr).await.with_context(|| format!("cannot listen on {listen_addr}"))?;
    let bound = listener.local_addr()?;
    let (adv_host, adv_port) = split_host_port(host_port(&cfg.get("advertised.listeners")))?;
    let adv_port = if adv_port == 0 { bound.port() } else { adv_port };
    let adv_host = if adv_host == "0.0.0.0" { "127.0.0.1".to_string() } else { adv_host };
    let node_id: i32 = cfg.get("node.id").parse().context("node.id")?;
    let data_dir = PathBuf::from(cfg.get("log.dirs").split(',').next().unwrap_or("./data").trim());
    let identity = Identity { node_id, host: adv_host, port: adv_port as i32, data_dir: data_dir.clone() };
    let broker = Broker::open(identity, cfg)?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(sluice::net::serve(listener, broker.clone(), stop_rx.clone()));
    let background = tokio::spawn(broker.clone().run_background(stop_rx));
    tracing::info!(
        "sluice ready: serving Kafka on {bound} (advertised {}:{}), node {node_id}, data {}, cluster {}, started in {} ms",
        broker.identity.host,
        broker.identity.port,
        data_dir.display(),
        broker.cluster_id,
        started.elapsed().as_millis()
    );

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
    }
    let _ = stop_tx.send(true);
    let _ = server.await;
    let _ = background.await;
    broker.shutdown()?;
    tracing::info!("shut down cleanly");
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
