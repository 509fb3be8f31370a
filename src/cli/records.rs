//! Record batches on the client side: v2 batches built with the `kafka-protocol` encoder,
//! fetched bytes cut to whole batches and decoded (compressed ones through
//! `log::compression`), and Kafka's default partitioner for keyed records.

use bytes::{Buf, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

use super::CliError;
use crate::log::compression;

/// The largest decompressed batch taken from a fetch.
const MAX_DECOMPRESSED: usize = 64 << 20;

/// One record to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// One record consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// An uncompressed v2 batch of `recs`, timestamped `now_ms`.
pub fn encode_batch(recs: &[Outgoing], now_ms: i64) -> Result<Bytes, CliError> {
    let records: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder starts a new batch where offset minus sequence changes, and takes
            // the first record's sequence as the base: -1 (no sequence) with a constant gap.
            sequence: i as i32 - 1,
            timestamp: now_ms,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r.headers.iter().map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone())).collect::<IndexMap<_, _>>(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, records.iter(), &RecordEncodeOptions { version: 2, compression: Compression::None })
        .map_err(|e| CliError::Protocol(format!("cannot encode a record batch: {e}")))?;
    Ok(buf.freeze())
}

/// The whole batches at the front of `data`: a fetch may end in a cut-off batch.
pub fn whole_batches(data: &[u8]) -> usize {
    let mut pos = 0;
    while data.len() - pos >= 12 {
        let len = i32::from_be_bytes([data[pos + 8], data[pos + 9], data[pos + 10], data[pos + 11]]);
        if len < 0 {
            break;
        }
        let end = pos + 12 + len as usize;
        if end > data.len() {
            break;
        }
        pos = end;
    }
    pos
}

/// The records of the whole batches in `data` at or after `from`, and the offset to fetch
/// next (past every whole batch, control batches included).
pub fn decode_fetched(data: &Bytes, from: i64) -> Result<(Vec<Incoming>, Option<i64>), CliError> {
    let end = whole_batches(data);
    let mut out = Vec::new();
    let mut next = None;
    let mut pos = 0;
    while pos < end {
        let len = i32::from_be_bytes([data[pos + 8], data[pos + 9], data[pos + 10], data[pos + 11]]) as usize;
        let batch_end = pos + 12 + len;
        if len >= 15 {
            let base = i64::from_be_bytes(data[pos..pos + 8].try_into().expect("8 bytes"));
            let last_delta = i32::from_be_bytes(data[pos + 23..pos + 27].try_into().expect("4 bytes"));
            next = Some(base + last_delta as i64 + 1);
        }
        let mut one = data.slice(pos..batch_end);
        let set = RecordBatchDecoder::decode_with_custom_compression(
            &mut one,
            Some(|b: &mut Bytes, c: Compression| -> anyhow::Result<Bytes> {
                let codec = c as i16;
                let raw = compression::decompress(codec, b.chunk(), MAX_DECOMPRESSED).map_err(|e| anyhow::anyhow!("{e}"))?;
                b.advance(b.remaining());
                Ok(Bytes::from(raw))
            }),
        )
        .map_err(|e| CliError::Protocol(format!("cannot decode a fetched batch: {e}")))?;
        for r in set.records {
            if r.control || r.offset < from {
                continue;
            }
            out.push(Incoming {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r.headers.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            });
        }
        pos = batch_end;
    }
    Ok((out, next))
}

/// Kafka's murmur2 hash (the Java client's `Utils.murmur2`, seed 0x9747b28c).
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = 0x9747_b28c ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition the Java client's default partitioner picks for `key`.
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    ((murmur2(key) & 0x7fff_ffff) % partitions.max(1)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_the_java_client() {
        // Values from the Java client's own murmur2 test vectors.
        assert_eq!(murmur2(b"21"), -973_932_308);
        assert_eq!(murmur2(b"foobar"), -790_332_482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985_981_536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1_486_304_829);
        assert_eq!(murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58_897_971);
        assert_eq!(murmur2(b"abc"), 479_470_107);
    }

    #[test]
    fn batches_round_trip_and_a_cut_tail_is_left_out() {
        let recs = vec![
            Outgoing {
                key: Some(Bytes::from_static(b"k1")),
                value: Some(Bytes::from_static(b"v1")),
                headers: vec![("h".into(), Some(Bytes::from_static(b"x")))],
            },
            Outgoing { key: None, value: Some(Bytes::from_static(b"v2")), headers: vec![] },
        ];
        let one = encode_batch(&recs, 1_700_000_000_000).unwrap();
        assert_eq!(whole_batches(&one), one.len());
        assert_eq!(i32::from_be_bytes(one[57..61].try_into().unwrap()), 2, "one batch of two records");
        assert_eq!(i32::from_be_bytes(one[53..57].try_into().unwrap()), -1, "no base sequence");
        let mut two = BytesMut::from(&one[..]);
        // A second batch at offset 2, then cut short as a fetch can be.
        let mut second = BytesMut::from(&one[..]);
        second[0..8].copy_from_slice(&2i64.to_be_bytes());
        two.extend_from_slice(&second);
        two.extend_from_slice(&one[..one.len() - 5]);
        let data = two.freeze();
        assert_eq!(whole_batches(&data), one.len() * 2);
        let (got, next) = decode_fetched(&data, 1).unwrap();
        assert_eq!(next, Some(4));
        assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(got[1].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(got[1].headers, vec![("h".to_string(), Some(Bytes::from_static(b"x")))]);
        assert_eq!(got[1].timestamp, 1_700_000_000_000);
        assert_eq!(decode_fetched(&Bytes::new(), 0).unwrap(), (vec![], None));
    }
}
