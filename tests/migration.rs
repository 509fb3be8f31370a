//! A data dir from the single-broker days (`metadata.json`, no metadata log) keeps its
//! cluster id, topics and configs when a build with the metadata log starts on it.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

#[test]
fn legacy_metadata_json_is_migrated_into_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let id = "6f1c2a3e-1b2c-4d5e-8f90-0123456789ab";
    let legacy = format!(
        r#"{{"version":1,"cluster_id":"OldClusterIdAAAAAAAAAA","topics":{{"old":{{"name":"old","id":"{id}","partitions":3,"configs":{{"retention.ms":"1234"}}}}}},"broker_configs":{{}}}}"#
    );
    std::fs::write(dir.path().join("metadata.json"), legacy).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("serving Kafka on 127.0.0.1:").nth(1) {
                let _ = tx.send(rest.split(' ').next().unwrap().parse::<u16>().unwrap());
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(10)).expect("ready");
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let version = 12;
    let mut out = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(ApiKey::Metadata as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("t")))
        .encode(&mut out, MetadataRequest::header_version(version))
        .unwrap();
    MetadataRequest::default().with_topics(None).encode(&mut out, version).unwrap();
    s.write_all(&(out.len() as i32).to_be_bytes()).unwrap();
    s.write_all(&out).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).unwrap();
    let mut b = Bytes::from(buf);
    ResponseHeader::decode(&mut b, MetadataResponse::header_version(version)).unwrap();
    let md = MetadataResponse::decode(&mut b, version).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(md.cluster_id.as_deref(), Some("OldClusterIdAAAAAAAAAA"));
    let t = md.topics.iter().find(|t| t.name.as_ref().is_some_and(|n| &**n == "old")).expect("the old topic survives");
    assert_eq!(t.topic_id.to_string(), id);
    assert_eq!(t.partitions.len(), 3);
    assert!(t.partitions.iter().all(|p| p.leader_id.0 == 1 && p.error_code == 0));
    assert!(dir.path().join("metadata.json.migrated").exists() && !dir.path().join("metadata.json").exists());
}
