//! Loads the JWKS of a listener that checks signed OAUTHBEARER tokens, as Kafka's
//! `RefreshingHttpsJwks` does: once before the listener serves (a JWKS that cannot be read
//! then stops the broker, as in Kafka), then, for an `http(s):` URL, every
//! `sasl.oauthbearer.jwks.endpoint.refresh.ms` and soon after a token names a key id the
//! set lacks, retrying with backoff up to `sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms`.
//! A failed reload keeps the keys there were. Loading runs on its own task: logins only
//! read the current set and never wait for the network.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;

use anyhow::{anyhow, bail, Context};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::auth::oauth::jwt::{JwkSet, KeySource, Location};

/// The largest JWKS document taken.
const MAX_BODY: usize = 1 << 20;
/// How long one fetch may take, connecting included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Loads `src` now, and keeps an `http(s):` one fresh until `shutdown` changes.
pub async fn start(src: Arc<KeySource>, shutdown: tokio::sync::watch::Receiver<bool>) -> anyhow::Result<()> {
    let keys = load(&src.location).await.context("Could not refresh JWKS")?;
    tracing::info!(location = ?src.location, keys = keys.keys.len(), "OAUTHBEARER JWKS loaded");
    src.set(keys);
    if matches!(src.location, Location::Http { .. }) {
        tokio::spawn(refresh(src, shutdown));
    }
    Ok(())
}

async fn refresh(src: Arc<KeySource>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let Location::Http { refresh_ms, retry_backoff_ms, retry_backoff_max_ms, .. } = src.location.clone() else { return };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(refresh_ms.max(1))) => {}
            _ = src.reload_wanted() => {}
            _ = shutdown.changed() => return,
        }
        let mut backoff = retry_backoff_ms.max(1);
        let mut waited = 0;
        loop {
            match load(&src.location).await {
                Ok(keys) => {
                    tracing::debug!(location = ?src.location, keys = keys.keys.len(), "OAUTHBEARER JWKS refreshed");
                    src.set(keys);
                    break;
                }
                Err(e) if waited >= retry_backoff_max_ms => {
                    tracing::warn!(location = ?src.location, error = %format!("{e:#}"), "OAUTHBEARER JWKS refresh failed; keeping the keys there were");
                    break;
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                    waited += backoff;
                    backoff = (backoff * 2).min(retry_backoff_max_ms.max(1));
                }
            }
        }
    }
}

/// Reads and parses the key set at `location`.
pub async fn load(location: &Location) -> anyhow::Result<JwkSet> {
    let body = match location {
        Location::File(p) => {
            let path = p.clone();
            tokio::task::spawn_blocking(move || std::fs::read(&path)).await?.with_context(|| format!("reading {}", p.display()))?
        }
        Location::Http { url, truststore, .. } => tokio::time::timeout(FETCH_TIMEOUT, get(url, truststore.as_deref()))
            .await
            .map_err(|_| anyhow!("GET {url}: no answer within {FETCH_TIMEOUT:?}"))??,
    };
    JwkSet::parse(&body).map_err(anyhow::Error::msg)
}

/// The parts of an `http(s)://host[:port][/path]` URL.
fn split_url(url: &str) -> anyhow::Result<(bool, String, u16, String)> {
    let (tls, rest) = match url.split_once("://") {
        Some((s, r)) if s.eq_ignore_ascii_case("https") => (true, r),
        Some((s, r)) if s.eq_ignore_ascii_case("http") => (false, r),
        _ => bail!("{url} is not an http or https URL"),
    };
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (h, p) = v6.split_once(']').ok_or_else(|| anyhow!("{url}: unclosed [ in the host"))?;
            (h.to_string(), p.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        },
    };
    let port = match port {
        Some(p) => p.parse().with_context(|| format!("{url}: bad port"))?,
        None if tls => 443,
        None => 80,
    };
    if host.is_empty() {
        bail!("{url} names no host");
    }
    let path = path.split('#').next().unwrap_or("/").to_string();
    Ok((tls, host, port, path))
}

fn roots(truststore: Option<&Path>) -> anyhow::Result<rustls::RootCertStore> {
    let files: Vec<&Path> = match truststore {
        Some(p) => vec![p],
        None => ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
            .iter()
            .map(Path::new)
            .filter(|p| p.exists())
            .take(1)
            .collect(),
    };
    let mut roots = rustls::RootCertStore::empty();
    for f in files {
        let pem = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        for c in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            // A bundle may hold certificates rustls cannot use; the others still count.
            let _ = c.map(|c| roots.add(c));
        }
    }
    if roots.is_empty() {
        bail!("no CA certificates to check the JWKS endpoint with (set ssl.truststore.location in the OAUTHBEARER JAAS config)");
    }
    Ok(roots)
}

/// `GET url`: the body of a 200 answer.
async fn get(url: &str, truststore: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    let (tls, host, port, path) = split_url(url)?;
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await.with_context(|| format!("connecting to {host}:{port}"))?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\nUser-Agent: sluice\r\n\r\n");
    let raw = if tls {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots(truststore)?)
            .with_no_client_auth();
        let name = rustls_pki_types::ServerName::try_from(host.clone()).with_context(|| format!("{host} is not a host name"))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.context("TLS handshake")?;
        exchange(stream, &request).await?
    } else {
        exchange(tcp, &request).await?
    };
    response_body(&raw).with_context(|| format!("GET {url}"))
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, request: &str) -> anyhow::Result<Vec<u8>> {
    s.write_all(request.as_bytes()).await?;
    s.flush().await?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(n) => n,
            // Servers that close without TLS close_notify still sent the whole answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => 0,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Ok(raw);
        }
        raw.extend_from_slice(&buf[..n]);
        if raw.len() > MAX_BODY + 64 * 1024 {
            bail!("the answer is over {MAX_BODY} bytes");
        }
    }
}

/// The body of a raw HTTP/1.x answer, which must be 200 OK.
fn response_body(raw: &[u8]) -> anyhow::Result<Vec<u8>> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| anyhow!("the answer has no end of headers"))?;
    let head = std::str::from_utf8(&raw[..end]).context("the answer's headers are not text")?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let code = status.split(' ').nth(1).unwrap_or("");
    if code != "200" {
        bail!("the endpoint answered '{status}'");
    }
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("transfer-encoding") && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            } else if k.eq_ignore_ascii_case("content-length") {
                length = v.parse::<usize>().ok();
            }
        }
    }
    let body = &raw[end + 4..];
    if chunked {
        return dechunk(body);
    }
    Ok(match length {
        Some(n) if n <= body.len() => body[..n].to_vec(),
        Some(_) => bail!("the answer ended before its Content-Length"),
        None => body.to_vec(),
    })
}

fn dechunk(mut body: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body.windows(2).position(|w| w == b"\r\n").ok_or_else(|| anyhow!("a chunk size line does not end"))?;
        let size_text = std::str::from_utf8(&body[..eol])?.split(';').next().unwrap_or("").trim().to_string();
        let size = usize::from_str_radix(&size_text, 16).with_context(|| format!("bad chunk size '{size_text}'"))?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 || out.len() + size > MAX_BODY {
            bail!("a chunk is cut short or the body is too large");
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(split_url("https://idp.example/keys").unwrap(), (true, "idp.example".into(), 443, "/keys".into()));
        assert_eq!(split_url("http://127.0.0.1:8080").unwrap(), (false, "127.0.0.1".into(), 8080, "/".into()));
        assert_eq!(split_url("http://[::1]:81/a?b#c").unwrap(), (false, "::1".into(), 81, "/a?b".into()));
        assert!(split_url("ftp://x/").is_err());
        assert!(split_url("http://:80/").is_err());
        assert!(split_url("http://h:port/").is_err());
    }

    #[test]
    fn answers() {
        assert_eq!(response_body(b"HTTP/1.0 200 OK\r\nContent-Type: x\r\n\r\n{\"keys\":[]}").unwrap(), b"{\"keys\":[]}");
        assert_eq!(response_body(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}xx").unwrap(), b"{}");
        assert_eq!(
            response_body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n1;x\r\n}\r\n0\r\n\r\n").unwrap(),
            b"{\"}"
        );
        assert!(response_body(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(response_body(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(response_body(b"garbage").is_err());
        assert!(response_body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
    }
}
