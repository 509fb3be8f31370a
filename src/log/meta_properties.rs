//! `meta.properties`: a data directory's identity, as Kafka writes it and its tools read
//! it. `kafka-metadata-quorum add-controller` reads the directory id of the controller it
//! adds from there (the `ReplicaKey` that tells this incarnation from a wiped one), and
//! DescribeLogDirs names each log dir by it (KIP-858).

use std::io::Write;
use std::path::Path;

use uuid::Uuid;

use base64::Engine;

/// A UUID as Kafka writes one (`Uuid.toString`: URL-safe base64, no padding).
fn kafka_uuid(u: Uuid) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(u.as_bytes())
}

/// Kafka's form, or the hyphenated one (what a Sluice build of 2026-12-03 wrote).
fn parse_kafka_uuid(s: &str) -> Option<Uuid> {
    let s = s.trim();
    let kafka = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok().and_then(|b| Uuid::from_slice(&b).ok());
    kafka.or_else(|| Uuid::parse_str(s).ok())
}

/// The file's name in each dir.
pub const FILE: &str = "meta.properties";

/// The directory id of `dir`, given on its first use and kept in `meta.properties`.
pub fn directory_id(dir: &Path, node_id: i32) -> std::io::Result<Uuid> {
    let path = dir.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let known = text.lines().filter_map(|l| l.split_once('=')).find(|(k, _)| k.trim() == "directory.id").map(|(_, v)| v.to_string());
    if let Some(v) = known {
        return parse_kafka_uuid(&v).ok_or_else(|| std::io::Error::other(format!("{}: directory.id {v} is not a Kafka UUID", path.display())));
    }
    let id = new_directory_id();
    // Version 0 (no cluster id needed: an observer may not know it yet); Kafka's loader
    // reads the directory id from it all the same.
    let body = format!("#Written by Sluice\nversion=0\nbroker.id={node_id}\ndirectory.id={}\n", kafka_uuid(id));
    let tmp = dir.join(format!("{FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(body.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok(id)
}

/// A random id that is none of the ids Kafka reserves (its first 100, as `Uuid.randomUuid`
/// avoids, and which start with 15 zero bytes).
fn new_directory_id() -> Uuid {
    loop {
        let id = Uuid::new_v4();
        if id.as_bytes()[..15].iter().any(|b| *b != 0) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = directory_id(dir.path(), 4).unwrap();
        assert_eq!(directory_id(dir.path(), 4).unwrap(), a);
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(text.contains(&format!("directory.id={}", kafka_uuid(a))), "{text}");
        assert_eq!(parse_kafka_uuid(&kafka_uuid(a)), Some(a));
    }
}
