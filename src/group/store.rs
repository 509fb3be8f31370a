//! How group state is written to `__consumer_offsets`. The layout is Sluice's own.
//!
//! Keys are binary so that compaction keeps the newest value per key:
//!
//! | bytes | field |
//! | --- | --- |
//! | u16 | key version, 0 |
//! | u8 | kind: 1 = committed offset, 2 = classic group metadata, 3 = consumer (KIP-848) group, 4 = streams (KIP-1071) group, 5 = share (KIP-932) group |
//! | u16 + UTF-8 | group id |
//! | u16 + UTF-8, i32 | topic and partition (kind 1 only) |
//!
//! Values are JSON objects with a `"v"` version field (see [`OffsetValue`],
//! [`GroupValue`], [`ConsumerGroupValue`] and [`StreamsGroupValue`]; a share group's is
//! `share::group::ShareGroup::encode`'s, which this layer carries as bytes); byte strings
//! inside them are hex. A null value is a tombstone.

use serde::{Deserialize, Serialize};

const KEY_VERSION: u16 = 0;
const KIND_OFFSET: u8 = 1;
const KIND_GROUP: u8 = 2;
const KIND_CONSUMER_GROUP: u8 = 3;
const KIND_STREAMS_GROUP: u8 = 4;
const KIND_SHARE_GROUP: u8 = 5;

/// A decoded record key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Offset { group: String, topic: String, partition: i32 },
    Group { group: String },
    ConsumerGroup { group: String },
    StreamsGroup { group: String },
    ShareGroup { group: String },
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u16).to_be_bytes());
    out.extend(s.as_bytes());
}

fn get_str(b: &[u8], pos: &mut usize) -> Option<String> {
    let len = u16::from_be_bytes(b.get(*pos..*pos + 2)?.try_into().ok()?) as usize;
    *pos += 2;
    let s = String::from_utf8(b.get(*pos..*pos + len)?.to_vec()).ok()?;
    *pos += len;
    Some(s)
}

impl Key {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = KEY_VERSION.to_be_bytes().to_vec();
        match self {
            Key::Offset { group, topic, partition } => {
                out.push(KIND_OFFSET);
                put_str(&mut out, group);
                put_str(&mut out, topic);
                out.extend(partition.to_be_bytes());
            }
            Key::Group { group } => {
                out.push(KIND_GROUP);
                put_str(&mut out, group);
            }
            Key::ConsumerGroup { group } => {
                out.push(KIND_CONSUMER_GROUP);
                put_str(&mut out, group);
            }
            Key::StreamsGroup { group } => {
                out.push(KIND_STREAMS_GROUP);
                put_str(&mut out, group);
            }
            Key::ShareGroup { group } => {
                out.push(KIND_SHARE_GROUP);
                put_str(&mut out, group);
            }
        }
        out
    }

    pub fn decode(b: &[u8]) -> Option<Key> {
        if u16::from_be_bytes(b.get(0..2)?.try_into().ok()?) != KEY_VERSION {
            return None;
        }
        let mut pos = 3;
        let group = get_str(b, &mut pos)?;
        match *b.get(2)? {
            KIND_OFFSET => {
                let topic = get_str(b, &mut pos)?;
                let partition = i32::from_be_bytes(b.get(pos..pos + 4)?.try_into().ok()?);
                Some(Key::Offset { group, topic, partition })
            }
            KIND_GROUP => Some(Key::Group { group }),
            KIND_CONSUMER_GROUP => Some(Key::ConsumerGroup { group }),
            KIND_STREAMS_GROUP => Some(Key::StreamsGroup { group }),
            KIND_SHARE_GROUP => Some(Key::ShareGroup { group }),
            _ => None,
        }
    }
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetValue {
    pub v: u16,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_ts: i64,
}

/// One member as stored: the metadata of the chosen protocol and its assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberValue {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub subscription: String,
    pub assignment: String,
}

/// A group's last stable (or empty) shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupValue {
    pub v: u16,
    pub protocol_type: Option<String>,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub state_ts: i64,
    pub members: Vec<MemberValue>,
}

/// A consumer group: the group itself, serialized with a version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsumerGroupValue {
    pub v: u16,
    pub group: super::consumer::ConsumerGroup,
}

/// A streams group: topology, members and target assignment, serialized with a version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamsGroupValue {
    pub v: u16,
    pub group: super::streams::StreamsGroup,
}

/// Lowercase hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes from lowercase hex; None on bad input.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for k in [
            Key::Offset { group: "g".into(), topic: "t".into(), partition: 3 },
            Key::Group { group: "gé".into() },
            Key::StreamsGroup { group: "s".into() },
            Key::ShareGroup { group: "q".into() },
        ] {
            assert_eq!(Key::decode(&k.encode()), Some(k));
        }
        assert_eq!(unhex(&hex(&[0, 255, 16])).unwrap(), vec![0, 255, 16]);
    }
}
