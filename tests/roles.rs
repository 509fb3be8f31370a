//! Process-level test of separate roles: three controller-only nodes form the quorum and
//! a broker-only node follows the metadata log from them and serves clients.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

/// Child processes, killed when dropped.
struct Procs(Vec<Child>);
impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts a node and returns it with a receiver of its log lines.
fn spawn(args: &[String]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

fn wait_for(rx: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if line.contains(what) {
            return line;
        }
    }
    panic!("no log line containing '{what}'");
}

fn call<Req: Encodable + HeaderVersion, Resp: Decodable + HeaderVersion>(s: &mut TcpStream, key: ApiKey, version: i16, req: &Req) -> Resp {
    let mut out = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("roles-test")))
        .encode(&mut out, Req::header_version(version))
        .unwrap();
    req.encode(&mut out, version).unwrap();
    s.write_all(&(out.len() as i32).to_be_bytes()).unwrap();
    s.write_all(&out).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).unwrap();
    let mut b = Bytes::from(buf);
    let _ = ResponseHeader::decode(&mut b, Resp::header_version(version)).unwrap();
    Resp::decode(&mut b, version).unwrap()
}

#[test]
fn controller_only_quorum_with_a_broker_only_node() {
    let dir = tempfile::tempdir().unwrap();
    let cports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let voters = (1..=3).map(|i| format!("{i}@127.0.0.1:{}", cports[i - 1])).collect::<Vec<_>>().join(",");
    let mut procs = Procs(Vec::new());
    let mut logs = Vec::new();
    for i in 1..=3 {
        let args: Vec<String> = vec![
            "serve".into(),
            "--node-id".into(),
            i.to_string(),
            "--data-dir".into(),
            dir.path().join(format!("c{i}")).display().to_string(),
            "--set".into(),
            "process.roles=controller".into(),
            "--set".into(),
            format!("controller.quorum.voters={voters}"),
        ];
        let (c, rx) = spawn(&args);
        procs.0.push(c);
        logs.push(rx);
    }
    for rx in &logs {
        wait_for(rx, "sluice ready: controller");
    }
    let args: Vec<String> = vec![
        "serve".into(),
        "--node-id".into(),
        "4".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--data-dir".into(),
        dir.path().join("b4").display().to_string(),
        "--set".into(),
        "process.roles=broker".into(),
        "--set".into(),
        format!("controller.quorum.voters={voters}"),
    ];
    let (c, rx) = spawn(&args);
    procs.0.push(c);
    let ready = wait_for(&rx, "sluice ready: serving Kafka on 127.0.0.1:");
    let port: u16 = ready.split("serving Kafka on 127.0.0.1:").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();

    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let topic = CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![create_topics_request::CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_static_str("t")))
        .with_num_partitions(2)
        .with_replication_factor(1)]);
    let created: CreateTopicsResponse = call(&mut s, ApiKey::CreateTopics, 5, &topic);
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0].error_message);
    // Too many replicas for the one broker there is.
    let too_many =
        CreateTopicsRequest::default().with_timeout_ms(30_000).with_topics(vec![create_topics_request::CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("u")))
            .with_num_partitions(1)
            .with_replication_factor(2)]);
    let refused: CreateTopicsResponse = call(&mut s, ApiKey::CreateTopics, 5, &too_many);
    assert_eq!(refused.topics[0].error_code, 38, "INVALID_REPLICATION_FACTOR");

    let md: MetadataResponse = call(&mut s, ApiKey::Metadata, 9, &MetadataRequest::default().with_topics(None));
    let brokers: Vec<i32> = md.brokers.iter().map(|b| b.node_id.0).collect();
    assert_eq!(brokers, vec![4], "controllers are not brokers");
    let t = md.topics.iter().find(|t| t.name.as_ref().is_some_and(|n| &**n == "t")).expect("topic t in metadata");
    assert_eq!(t.partitions.len(), 2);
    assert!(t.partitions.iter().all(|p| p.leader_id.0 == 4 && p.error_code == 0));
}
