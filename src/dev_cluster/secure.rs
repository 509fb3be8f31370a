//! `dev-cluster --security`: the files a secured local cluster needs, all under its data
//! dir: a CA and one certificate per node (made with the `openssl` command), the admin's
//! and the brokers' SCRAM passwords (random, kept for the next run), each node's config
//! file, and the client settings for Java tools and librdkafka.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::auth::client::SCRAM_LOGIN_MODULE;
use crate::config::STANDARD_AUTHORIZER;

/// How the cluster's listeners are secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// One PLAINTEXT listener per node, no authorizer.
    Plaintext,
    /// Mutual TLS everywhere; principals are the certificates' names.
    Ssl,
    /// SASL_SSL (SCRAM-SHA-512) for clients, brokers and controllers (with client certificates too on the controller listener).
    SaslSsl,
}

impl std::str::FromStr for Security {
    type Err = String;
    fn from_str(s: &str) -> Result<Security, String> {
        match s {
            "plaintext" => Ok(Security::Plaintext),
            "ssl" => Ok(Security::Ssl),
            "sasl_ssl" => Ok(Security::SaslSsl),
            other => Err(format!("--security {other}: expected plaintext, ssl or sasl_ssl")),
        }
    }
}

/// The SCRAM user the brokers log in to each other as.
pub const BROKER_USER: &str = "broker";
/// The super user the printed client settings log in as.
pub const ADMIN_USER: &str = "admin";

/// What the secured cluster's files are.
pub struct Files {
    pub dir: PathBuf,
    pub admin_password: String,
    pub broker_password: String,
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let out =
        cmd.output().map_err(|e| anyhow::anyhow!("cannot run openssl (dev-cluster --security makes its certificates with it): {e}"))?;
    anyhow::ensure!(out.status.success(), "{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    Ok(())
}

fn ec_key_request(key: &Path) -> Command {
    let mut c = Command::new("openssl");
    c.args(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout"]).arg(key);
    c
}

/// A certificate for `cn` signed by the CA in `tls`, with `ext` (extension lines), and the
/// PEM keystore (key, then certificate) Sluice and Java's PEM support read.
fn issue(tls: &Path, name: &str, cn: &str, ext: &str) -> anyhow::Result<()> {
    let (key, csr, crt) = (tls.join(format!("{name}.key")), tls.join(format!("{name}.csr")), tls.join(format!("{name}.crt")));
    run(ec_key_request(&key).arg("-out").arg(&csr).args(["-subj", &format!("/CN={cn}")]))?;
    let ext_file = tls.join(format!("{name}.ext"));
    std::fs::write(&ext_file, ext)?;
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "3650", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(tls.join("ca.pem"))
        .arg("-CAkey")
        .arg(tls.join("ca.key"))
        .arg("-CAcreateserial")
        .arg("-out")
        .arg(&crt)
        .arg("-extfile")
        .arg(&ext_file))?;
    let keystore = [std::fs::read(&key)?, std::fs::read(&crt)?].concat();
    std::fs::write(tls.join(format!("{name}.pem")), keystore)?;
    let _ = std::fs::remove_file(csr);
    Ok(())
}

/// Makes (or, from an earlier run, reuses) the CA, the nodes' and the client's
/// certificates and the passwords.
pub fn prepare(data_dir: &Path, nodes: u16, host: &str) -> anyhow::Result<Files> {
    std::fs::create_dir_all(data_dir)?;
    let dir = data_dir.canonicalize()?;
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls)?;
    if !tls.join("ca.pem").exists() {
        run(Command::new("openssl")
            .args(["req", "-x509", "-days", "3650", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout"])
            .arg(tls.join("ca.key"))
            .arg("-out")
            .arg(tls.join("ca.pem"))
            .args(["-subj", "/CN=sluice dev-cluster CA"])
            .args(["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]))?;
    }
    let san = match host.parse::<std::net::IpAddr>() {
        Ok(_) => format!("IP:{host},IP:127.0.0.1,DNS:localhost"),
        Err(_) => format!("DNS:{host},IP:127.0.0.1,DNS:localhost"),
    };
    let leaf = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n";
    for i in 1..=nodes {
        if !tls.join(format!("node-{i}.pem")).exists() {
            issue(
                &tls,
                &format!("node-{i}"),
                &format!("node-{i}"),
                &format!("{leaf}extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName={san}\n"),
            )?;
        }
    }
    if !tls.join("client.pem").exists() {
        issue(&tls, "client", ADMIN_USER, &format!("{leaf}extendedKeyUsage=clientAuth\n"))?;
    }
    let secrets = dir.join("passwords");
    let mut kept: BTreeMap<String, String> = std::fs::read_to_string(&secrets)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    for user in [ADMIN_USER, BROKER_USER] {
        kept.entry(user.to_string()).or_insert_with(|| crate::auth::scram::nonce()[..24].to_string());
    }
    let text: String = kept.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&secrets, text)?;
    restrict(&secrets);
    Ok(Files { admin_password: kept[ADMIN_USER].clone(), broker_password: kept[BROKER_USER].clone(), dir })
}

/// Only the owner reads files that hold passwords or keys.
fn restrict(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600));
}

fn jaas(user: &str, password: &str) -> String {
    format!("{SCRAM_LOGIN_MODULE} required username=\"{user}\" password=\"{password}\";")
}

/// Node `i`'s settings (Kafka key names) for `security`, before the user's `--set`s.
pub fn node_settings(security: Security, f: &Files, i: u16, listen: &str, controller: &str, nodes: u16) -> BTreeMap<String, String> {
    let tls = f.dir.join("tls");
    let path = |p: PathBuf| p.to_string_lossy().into_owned();
    let broker_protocol = if security == Security::SaslSsl { "SASL_SSL" } else { "SSL" };
    let protocols = format!("BROKER:{broker_protocol},CONTROLLER:{broker_protocol}");
    let mut s: BTreeMap<String, String> = [
        ("listeners", format!("BROKER://{listen},CONTROLLER://{controller}")),
        ("advertised.listeners", format!("BROKER://{listen}")),
        ("listener.security.protocol.map", protocols),
        ("inter.broker.listener.name", "BROKER".into()),
        ("controller.listener.names", "CONTROLLER".into()),
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.location", path(tls.join(format!("node-{i}.pem")))),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.location", path(tls.join("ca.pem"))),
        // Only holders of a certificate from this CA reach the quorum.
        ("listener.name.controller.ssl.client.auth", "required".into()),
        ("authorizer.class.name", STANDARD_AUTHORIZER.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    match security {
        Security::SaslSsl => {
            s.insert("sasl.enabled.mechanisms".into(), "SCRAM-SHA-512".into());
            s.insert("sasl.mechanism.inter.broker.protocol".into(), "SCRAM-SHA-512".into());
            s.insert("listener.name.broker.scram-sha-512.sasl.jaas.config".into(), jaas(BROKER_USER, &f.broker_password));
            // Nodes log in to the quorum as the same super user; its credential is in every
            // controller's --add-scram, so the quorum can form before any metadata exists.
            s.insert("sasl.mechanism.controller.protocol".into(), "SCRAM-SHA-512".into());
            s.insert("listener.name.controller.scram-sha-512.sasl.jaas.config".into(), jaas(BROKER_USER, &f.broker_password));
            s.insert("super.users".into(), format!("User:{ADMIN_USER};User:{BROKER_USER}"));
        }
        Security::Ssl | Security::Plaintext => {
            s.insert("listener.name.broker.ssl.client.auth".into(), "required".into());
            let nodes: Vec<String> = (1..=nodes).map(|n| format!("User:CN=node-{n}")).collect();
            s.insert("super.users".into(), format!("User:CN={ADMIN_USER};{}", nodes.join(";")));
        }
    }
    s
}

/// The settings as a TOML config file (every key quoted: they hold dots).
pub fn toml(settings: &BTreeMap<String, String>) -> String {
    let q = |v: &str| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
    settings.iter().map(|(k, v)| format!("{} = {}\n", q(k), q(v))).collect()
}

/// The `--add-scram` values that seed a new cluster's users.
pub fn seed_users(security: Security, f: &Files) -> Vec<String> {
    if security != Security::SaslSsl {
        return Vec::new();
    }
    [(ADMIN_USER, &f.admin_password), (BROKER_USER, &f.broker_password)]
        .iter()
        .map(|(u, p)| format!("SCRAM-SHA-512=[name={u},password={p}]"))
        .collect()
}

/// Writes `client.properties` (Java clients, Kafka's tools with `--command-config`) and
/// `librdkafka.conf` (kcat `-F`, confluent-kafka); returns their paths.
pub fn write_client_files(security: Security, f: &Files, bootstrap: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
    let tls = f.dir.join("tls");
    let p = |name: &str| tls.join(name).to_string_lossy().into_owned();
    let (java, rdkafka) = match security {
        Security::SaslSsl => (
            format!(
                "bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={}\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
                jaas(ADMIN_USER, &f.admin_password),
                p("ca.pem")
            ),
            format!(
                "bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username={ADMIN_USER}\nsasl.password={}\nssl.ca.location={}\n",
                f.admin_password,
                p("ca.pem")
            ),
        ),
        Security::Ssl | Security::Plaintext => (
            format!(
                "bootstrap.servers={bootstrap}\nsecurity.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\nssl.keystore.type=PEM\nssl.keystore.location={}\n",
                p("ca.pem"),
                p("client.pem")
            ),
            format!(
                "bootstrap.servers={bootstrap}\nsecurity.protocol=SSL\nssl.ca.location={}\nssl.certificate.location={}\nssl.key.location={}\n",
                p("ca.pem"),
                p("client.crt"),
                p("client.key")
            ),
        ),
    };
    let (jp, rp) = (f.dir.join("client.properties"), f.dir.join("librdkafka.conf"));
    std::fs::write(&jp, java)?;
    std::fs::write(&rp, rdkafka)?;
    restrict(&jp);
    restrict(&rp);
    Ok((jp, rp))
}
