//! `sluice events`: reads a node's event journal over its HTTP listener
//! (`GET /v1/events?since=SEQ`, a JSON array; `?follow=true`, server-sent events). The
//! HTTP client is std's `TcpStream` with an HTTP/1.1 GET: one request, no keep-alive, so
//! no HTTP crate is needed; chunked and length-delimited bodies are both read.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::CliError;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A non-following read must finish in this; a following one waits forever between events
/// (the server sends keep-alive comments).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// `sluice events ...`.
#[derive(Args, Debug)]
pub struct EventsArgs {
    /// The node's HTTP listener, HOST:PORT. Default: env SLUICE_HTTP, else 127.0.0.1:9644.
    #[arg(long, env = "SLUICE_HTTP", default_value = "127.0.0.1:9644")]
    pub http: String,
    /// Keep reading new events as they happen (until Ctrl-C).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    pub since: u64,
    /// text (one line per event) or json (one object per line).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Runs `events`.
pub fn run(a: &EventsArgs) -> Result<i32, CliError> {
    let json = a.format == "json";
    let path = if a.follow { format!("/v1/events?follow=true&since={}", a.since) } else { format!("/v1/events?since={}", a.since) };
    let mut body = get(&a.http, &path, a.follow)?;
    if !a.follow {
        let mut text = String::new();
        body.read_to_string(&mut text)?;
        let v: Value = serde_json::from_str(&text).map_err(|e| CliError::Protocol(format!("{}{path}: not a JSON array: {e}", a.http)))?;
        for e in v.as_array().into_iter().flatten() {
            println!("{}", render(e, json));
        }
        return Ok(0);
    }
    let mut sse = Sse::default();
    let mut reader = BufReader::new(body);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(CliError::Io(format!("{}: the event stream ended", a.http)));
        }
        if let Some(data) = sse.line(line.trim_end_matches(['\r', '\n'])) {
            match serde_json::from_str::<Value>(&data) {
                Ok(v) => println!("{}", render(&v, json)),
                Err(e) => eprintln!("skipping an event that is not JSON ({e}): {data}"),
            }
        }
    }
}

/// One event for people: time, type, then the other fields as k=v.
pub fn render(e: &Value, json: bool) -> String {
    if json {
        return e.to_string();
    }
    let time = e["time_ms"].as_i64().map_or_else(|| "-".to_string(), iso8601);
    let kind = e["type"].as_str().unwrap_or("?");
    let mut out = format!("{time} {kind}");
    if let Some(o) = e.as_object() {
        for (k, v) in o {
            if matches!(k.as_str(), "time_ms" | "type") {
                continue;
            }
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect::<Vec<_>>().join(","),
                other => other.to_string(),
            };
            out.push_str(&format!(" {k}={v}"));
        }
    }
    out
}

/// Epoch ms as `YYYY-MM-DDTHH:MM:SS.mmmZ` (the civil-from-days conversion of the
/// proleptic Gregorian calendar).
pub fn iso8601(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms.rem_euclid(1000))
}

/// A server-sent-events parser: feed it lines, it hands back each event's data.
#[derive(Debug, Default)]
pub struct Sse {
    data: Vec<String>,
    /// The last `id:` seen.
    pub last_id: Option<String>,
}

impl Sse {
    /// Takes one line (without its end); a blank line ends an event and returns its data
    /// (`data:` lines joined with newlines). Comments (`:`) and other fields are skipped.
    pub fn line(&mut self, line: &str) -> Option<String> {
        if line.is_empty() {
            if self.data.is_empty() {
                return None;
            }
            return Some(std::mem::take(&mut self.data).join("\n"));
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_string()),
            "id" => self.last_id = Some(value.to_string()),
            _ => {}
        }
        None
    }
}

/// A body read in HTTP/1.1 chunks.
pub struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    /// Reads the chunked body of `inner`.
    pub fn new(inner: R) -> Self {
        Chunked { inner, left: 0, done: false }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        while self.left == 0 && !self.done {
            let mut size = String::new();
            if self.inner.read_line(&mut size)? == 0 {
                return Err(bad("the chunked body ended early"));
            }
            let size = size.trim();
            if size.is_empty() {
                // The CRLF after a chunk's data.
                continue;
            }
            let hex = size.split(';').next().unwrap_or("");
            self.left = usize::from_str_radix(hex.trim(), 16).map_err(|_| bad("a bad chunk size"))?;
            if self.left == 0 {
                self.done = true;
            }
        }
        if self.done {
            return Ok(0);
        }
        let n = buf.len().min(self.left);
        let got = self.inner.read(&mut buf[..n])?;
        if got == 0 {
            return Err(bad("the chunked body ended early"));
        }
        self.left -= got;
        Ok(got)
    }
}

/// GETs `path` from `addr`; the body as a reader (status must be 200).
fn get(addr: &str, path: &str, follow: bool) -> Result<Box<dyn Read>, CliError> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| CliError::Usage(format!("--http {addr}: {e}")))?
        .next()
        .ok_or_else(|| CliError::Usage(format!("--http {addr}: no address")))?;
    let mut s = TcpStream::connect_timeout(&sock, CONNECT_TIMEOUT).map_err(|e| CliError::Io(format!("cannot connect to {addr}: {e}")))?;
    s.set_read_timeout(if follow { None } else { Some(READ_TIMEOUT) })?;
    let accept = if follow { "text/event-stream" } else { "application/json" };
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\nUser-Agent: sluice-cli\r\n\r\n")?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)?;
    let code = status.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok()).unwrap_or(0);
    let (mut chunked, mut length) = (false, None);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                "content-length" => length = v.trim().parse::<u64>().ok(),
                _ => {}
            }
        }
    }
    let body: Box<dyn Read> = match (chunked, length) {
        (true, _) => Box::new(Chunked::new(r)),
        (false, Some(n)) => Box::new(r.take(n)),
        (false, None) => Box::new(r),
    };
    if code != 200 {
        let mut text = String::new();
        let _ = body.take(4096).read_to_string(&mut text);
        return Err(CliError::Protocol(format!("GET http://{addr}{path}: HTTP {code}: {}", text.trim())));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_comments_and_multiline_data() {
        let mut p = Sse::default();
        let lines = [": keep-alive", "id: 7", "data: {\"seq\":7}", "", "", "event: x", "data: a", "data:b", "", "retry: 10"];
        let got: Vec<String> = lines.iter().filter_map(|l| p.line(l)).collect();
        assert_eq!(got, vec!["{\"seq\":7}".to_string(), "a\nb".to_string()]);
        assert_eq!(p.last_id.as_deref(), Some("7"));
    }

    #[test]
    fn chunked_bodies_are_joined() {
        let raw = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
        let mut s = String::new();
        Chunked::new(&raw[..]).read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello, world");
        let mut s = String::new();
        assert!(Chunked::new(&b"5\r\nhel"[..]).read_to_string(&mut s).is_err());
    }

    #[test]
    fn events_render_for_people() {
        let e: Value = serde_json::from_str(
            r#"{"seq":3,"time_ms":1764636795123,"type":"leader_changed","topic":"t","partition":0,"isr":[1,2],"reason":"clean"}"#,
        )
        .unwrap();
        let line = render(&e, false);
        assert!(line.starts_with("2025-12-02T00:53:15.123Z leader_changed "), "{line}");
        assert!(
            line.contains(" topic=t") && line.contains(" partition=0") && line.contains(" isr=1,2") && line.contains(" seq=3"),
            "{line}"
        );
        assert_eq!(render(&e, true), e.to_string());
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(render(&serde_json::json!({"type": "x", "time_ms": null}), false), "- x");
    }
}
