//! Process-level tests: a real `sluice` process on a loopback port, spoken to over TCP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// A broker process, killed when dropped.
struct Broker {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a broker on a port the OS picks, and learns the port from its ready line.
fn start(extra: &[&str]) -> Broker {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(dir.path());
    for s in extra {
        cmd.args(["--set", s]);
    }
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("serving Kafka on 127.0.0.1:").nth(1) {
                let port: u16 = rest.split(' ').next().unwrap().parse().unwrap();
                let _ = tx.send(port);
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(10)).expect("broker did not report ready");
    Broker { child, port, _dir: dir }
}

fn connect(b: &Broker) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", b.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn send_raw(s: &mut TcpStream, frame: &[u8]) {
    s.write_all(&(frame.len() as i32).to_be_bytes()).unwrap();
    s.write_all(frame).unwrap();
}

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).ok()?;
    Some(buf)
}

fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

fn request<R: Encodable + kafka_protocol::protocol::HeaderVersion>(key: ApiKey, version: i16, req: &R) -> Vec<u8> {
    let mut out = BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(42)
        .with_client_id(Some(StrBytes::from_static_str("test")));
    header.encode(&mut out, R::header_version(version)).unwrap();
    req.encode(&mut out, version).unwrap();
    out.to_vec()
}

fn api_versions(s: &mut TcpStream, version: i16) -> ApiVersionsResponse {
    send_raw(s, &request(ApiKey::ApiVersions, version, &ApiVersionsRequest::default()));
    let mut b = Bytes::from(read_frame(s).expect("an answer"));
    let header = ResponseHeader::decode(&mut b, 0).unwrap();
    assert_eq!(header.correlation_id, 42);
    ApiVersionsResponse::decode(&mut b, if version > 5 { 0 } else { version }).unwrap()
}

#[test]
fn api_versions_lists_only_built_apis() {
    let b = start(&[]);
    let mut s = connect(&b);
    let r = api_versions(&mut s, 3);
    assert_eq!(r.error_code, 0);
    let keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).collect();
    assert!(keys.contains(&0) && keys.contains(&1) && keys.contains(&18));
    // SaslHandshake, SaslAuthenticate, the SCRAM credential APIs, the ACL APIs and the
    // delegation token APIs are built.
    assert!([17, 36, 50, 51, 29, 30, 31, 38, 39, 40, 41].iter().all(|k| keys.contains(k)), "{keys:?}");
    let token_versions: Vec<(i16, i16, i16)> =
        r.api_keys.iter().filter(|k| (38..=41).contains(&k.api_key)).map(|k| (k.api_key, k.min_version, k.max_version)).collect();
    assert_eq!(token_versions, [(38, 1, 3), (39, 1, 2), (40, 1, 2), (41, 1, 3)], "Kafka 4.4's delegation token versions");
    // Issue 19's protocol-4.4 part: the newest versions of these, and DescribeTopicPartitions.
    let mut newest: Vec<(i16, i16, i16)> = r
        .api_keys
        .iter()
        .filter(|k| [2, 8, 9, 18, 27, 28, 42, 75].contains(&k.api_key))
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    newest.sort();
    assert_eq!(
        newest,
        [(2, 1, 11), (8, 2, 10), (9, 1, 10), (18, 0, 5), (27, 1, 2), (28, 0, 6), (42, 0, 3), (75, 0, 0)],
        "Kafka 4.4's versions"
    );
    // Share groups: heartbeat and describe at v1, fetch and acknowledge at v1-2, and the
    // share-coordinator state APIs, all at Kafka 4.4's versions (80-82, the Raft voter APIs, sit in this range).
    let share_versions: Vec<(i16, i16, i16)> =
        r.api_keys.iter().filter(|k| (76..=87).contains(&k.api_key) && !(80..=82).contains(&k.api_key)).map(|k| (k.api_key, k.min_version, k.max_version)).collect();
    assert_eq!(
        share_versions,
        [(76, 1, 1), (77, 1, 1), (78, 1, 2), (79, 1, 2), (83, 0, 0), (84, 0, 0), (85, 0, 1), (86, 0, 0), (87, 0, 1)],
        "share group APIs"
    );
}

#[test]
fn unknown_api_versions_version_gets_v0_fallback() {
    let b = start(&[]);
    let mut s = connect(&b);
    let mut frame = Vec::new();
    frame.extend(18i16.to_be_bytes());
    frame.extend(99i16.to_be_bytes());
    frame.extend(42i32.to_be_bytes());
    frame.extend([0xff, 0xff, 0, 0, 0, 0]);
    send_raw(&mut s, &frame);
    let mut body = Bytes::from(read_frame(&mut s).unwrap());
    assert_eq!(ResponseHeader::decode(&mut body, 0).unwrap().correlation_id, 42);
    let r = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert_eq!(r.error_code, 35);
    assert!(!r.api_keys.is_empty());
}

#[test]
fn oversized_frame_closes_only_that_connection() {
    let b = start(&["socket.request.max.bytes=1024"]);
    let mut s = connect(&b);
    s.write_all(&2_000_000i32.to_be_bytes()).unwrap();
    assert!(closed(&mut s));
    assert_eq!(api_versions(&mut connect(&b), 3).error_code, 0);
}

#[test]
fn malformed_and_huge_count_bodies_close_the_connection_and_nothing_else() {
    let b = start(&[]);
    let mut keep = connect(&b);
    assert_eq!(api_versions(&mut keep, 3).error_code, 0);
    let bodies: Vec<Vec<u8>> = vec![
        // Metadata v1 whose topic array claims 2^31-1 entries.
        [3i16.to_be_bytes(), 1i16.to_be_bytes()]
            .concat()
            .into_iter()
            .chain(42i32.to_be_bytes())
            .chain([0xff, 0xff, 0x7f, 0xff, 0xff, 0xff])
            .collect(),
        // Produce v9 (flexible) with a compact array length of 2^32-1.
        [0i16.to_be_bytes(), 9i16.to_be_bytes()]
            .concat()
            .into_iter()
            .chain(1i32.to_be_bytes())
            .chain([0xff, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f])
            .collect(),
        vec![0, 3],
        vec![0, 1, 0, 18, 0, 0],
    ];
    for body in bodies {
        let mut s = connect(&b);
        send_raw(&mut s, &body);
        assert!(closed(&mut s), "a malformed request closes its connection");
    }
    assert_eq!(api_versions(&mut keep, 3).error_code, 0, "other connections are untouched");
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let b = start(&[]);
    let mut s = connect(&b);
    for i in 0..20 {
        let mut frame = request(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default());
        frame[4..8].copy_from_slice(&(i as i32).to_be_bytes());
        send_raw(&mut s, &frame);
    }
    for i in 0..20 {
        let f = read_frame(&mut s).unwrap();
        assert_eq!(i32::from_be_bytes(f[0..4].try_into().unwrap()), i);
    }
}

#[test]
fn unknown_set_key_is_a_startup_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["serve", "--listen", "127.0.0.1:0", "--set", "no.such.key=1", "--data-dir", "/nonexistent/x"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown config key 'no.such.key'"));
}
