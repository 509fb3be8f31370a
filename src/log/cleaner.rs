//! Log compaction: keep the newest record per key in the closed segments.
//!
//! Each closed segment is rewritten on its own, so offsets never move: a batch that
//! loses records keeps its base offset, base and max timestamp and last offset
//! delta, and the records it keeps are copied byte for byte (only the batch is
//! recompressed, with the codec it had). The active segment is never touched.
//! The rewrite reads and writes files without the partition lock; only the swap
//! of the finished file takes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::batch::{self, BatchHeader, HEADER_LEN};
use super::compression;
use super::producers::Aborted;
use crate::error::{Error, Result};

/// Settings that steer compaction, from the topic config.
#[derive(Debug, Clone)]
pub struct CleanConfig {
    pub delete_retention_ms: i64,
    pub min_compaction_lag_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
}

/// Largest records section the cleaner will inflate.
const MAX_INFLATED: usize = 256 << 20;

/// One record, as raw bytes with what the cleaner needs to know of it.
pub struct RawRecord<'a> {
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub has_value: bool,
    /// The whole record including its length prefix.
    pub bytes: &'a [u8],
}

/// Splits an inflated records section into records.
pub fn split_records(data: &[u8], count: i32) -> Result<Vec<RawRecord<'_>>> {
    let bad = || Error::CorruptMessage("malformed record".into());
    let mut out = Vec::with_capacity(count.clamp(0, 100_000) as usize);
    let mut pos = 0;
    for _ in 0..count {
        let start = pos;
        let len = super::records::get_varint(data, &mut pos).ok_or_else(bad)?;
        let end = pos.checked_add(usize::try_from(len).map_err(|_| bad())?).ok_or_else(bad)?;
        if end > data.len() {
            return Err(bad());
        }
        let mut p = pos + 1; // attributes
        super::records::get_varint(data, &mut p).ok_or_else(bad)?; // timestamp delta
        let offset_delta = super::records::get_varint(data, &mut p).ok_or_else(bad)? as i32;
        let klen = super::records::get_varint(data, &mut p).ok_or_else(bad)?;
        let key = if klen < 0 {
            None
        } else {
            let k = data.get(p..p + klen as usize).ok_or_else(bad)?;
            p += klen as usize;
            Some(k)
        };
        let vlen = super::records::get_varint(data, &mut p).ok_or_else(bad)?;
        out.push(RawRecord { offset_delta, key, has_value: vlen >= 0, bytes: &data[start..end] });
        pos = end;
    }
    Ok(out)
}

/// The inflated records section of a batch.
pub fn records_section(b: &[u8], h: &BatchHeader) -> Result<Vec<u8>> {
    compression::decompress(h.compression(), &b[HEADER_LEN..h.total_len()], MAX_INFLATED)
}

/// Positions of the records without a key in this batch (compacted topics refuse them).
pub fn keyless_records(b: &[u8]) -> Result<Vec<i32>> {
    let h = BatchHeader::parse(b)?;
    let data = records_section(b, &h)?;
    Ok(split_records(&data, h.records_count)?.iter().enumerate().filter(|(_, r)| r.key.is_none()).map(|(i, _)| i as i32).collect())
}

/// Rebuilds a batch around a subset of its records.
fn rebuild(b: &[u8], h: &BatchHeader, kept: &[&RawRecord]) -> Result<Vec<u8>> {
    let mut section = Vec::new();
    for r in kept {
        section.extend_from_slice(r.bytes);
    }
    let body = compression::compress(h.compression(), &section)?;
    let mut out = b[..HEADER_LEN].to_vec();
    out.extend(body);
    let len = (out.len() - batch::LOG_OVERHEAD) as i32;
    out[8..12].copy_from_slice(&len.to_be_bytes());
    out[57..61].copy_from_slice(&(kept.len() as i32).to_be_bytes());
    let crc = crc32c::crc32c(&out[21..]);
    out[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

fn batches(bytes: &[u8]) -> impl Iterator<Item = (BatchHeader, &[u8])> {
    super::records::batches(bytes).filter_map(|b| BatchHeader::parse(b).ok().map(|h| (h, b)))
}

/// Is this batch part of a transaction that was aborted? Its records never count.
fn is_aborted(h: &BatchHeader, aborted: &[Aborted]) -> bool {
    h.is_transactional() && aborted.iter().any(|a| a.producer_id == h.producer_id && a.first <= h.base_offset && h.base_offset < a.last)
}

/// Maps each key to the offset of its newest record across `segments`.
pub fn build_offset_map(segments: &[PathBuf], aborted: &[Aborted]) -> Result<HashMap<Vec<u8>, i64>> {
    let mut map = HashMap::new();
    for path in segments {
        let bytes = std::fs::read(path)?;
        for (h, b) in batches(&bytes) {
            if h.is_control() || is_aborted(&h, aborted) {
                continue;
            }
            let data = records_section(b, &h)?;
            for r in split_records(&data, h.records_count)? {
                if let Some(k) = r.key {
                    map.insert(k.to_vec(), h.base_offset + r.offset_delta as i64);
                }
            }
        }
    }
    Ok(map)
}

/// Writes the cleaned copy of one segment to `out`. Returns (bytes before, bytes after).
pub fn clean_segment(
    path: &Path,
    out: &Path,
    map: &HashMap<Vec<u8>, i64>,
    aborted: &[Aborted],
    cfg: &CleanConfig,
    now_ms: i64,
) -> Result<(usize, usize)> {
    let bytes = std::fs::read(path)?;
    let mut cleaned = Vec::with_capacity(bytes.len());
    for (h, b) in batches(&bytes) {
        if h.is_control() {
            cleaned.extend_from_slice(b);
            continue;
        }
        if is_aborted(&h, aborted) {
            // Records of aborted transactions are never visible: compaction drops them.
            continue;
        }
        let data = records_section(b, &h)?;
        let records = split_records(&data, h.records_count)?;
        let tombstones_expired = h.max_timestamp < now_ms.saturating_sub(cfg.delete_retention_ms);
        let kept: Vec<&RawRecord> = records
            .iter()
            .filter(|r| {
                let offset = h.base_offset + r.offset_delta as i64;
                let newest = r.key.is_none_or(|k| map.get(k).is_none_or(|&o| o <= offset));
                newest && (r.has_value || !tombstones_expired)
            })
            .collect();
        if kept.len() == records.len() {
            cleaned.extend_from_slice(b);
        } else if !kept.is_empty() {
            cleaned.extend(rebuild(b, &h, &kept)?);
        }
    }
    std::fs::write(out, &cleaned)?;
    Ok((bytes.len(), cleaned.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::records;

    fn keyed_batch(kv: &[(&str, Option<&str>)], codec: i16) -> Vec<u8> {
        let recs: Vec<(Option<&[u8]>, Option<&[u8]>)> = kv.iter().map(|(k, v)| (Some(k.as_bytes()), v.map(str::as_bytes))).collect();
        let plain = records::build(&recs, 1000);
        if codec == 0 {
            return plain;
        }
        let h = BatchHeader::parse(&plain).unwrap();
        let body = compression::compress(codec, &plain[HEADER_LEN..]).unwrap();
        let mut out = plain[..HEADER_LEN].to_vec();
        out.extend(body);
        let len = (out.len() - batch::LOG_OVERHEAD) as i32;
        out[8..12].copy_from_slice(&len.to_be_bytes());
        out[21..23].copy_from_slice(&(h.attributes | codec).to_be_bytes());
        let crc = crc32c::crc32c(&out[21..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        out
    }

    #[test]
    fn keeps_the_newest_value_per_key_in_every_codec() {
        for codec in 0..=4 {
            let dir = tempfile::tempdir().unwrap();
            let seg = dir.path().join("seg");
            let mut b1 = keyed_batch(&[("a", Some("1")), ("b", Some("1")), ("c", Some("1"))], codec);
            batch::assign_offset(&mut b1, 0, 0);
            let mut b2 = keyed_batch(&[("a", Some("2")), ("c", None)], codec);
            batch::assign_offset(&mut b2, 3, 0);
            std::fs::write(&seg, [b1, b2].concat()).unwrap();
            let map = build_offset_map(&[seg.clone()], &[]).unwrap();
            let cfg = CleanConfig { delete_retention_ms: 0, min_compaction_lag_ms: 0, min_cleanable_dirty_ratio: 0.5 };
            let out = dir.path().join("out");
            // Tombstones are kept until delete.retention.ms has passed...
            clean_segment(&seg, &out, &map, &[], &CleanConfig { delete_retention_ms: i64::MAX / 2, ..cfg.clone() }, 2000).unwrap();
            let kept = survivors(&out);
            assert_eq!(kept, vec![(1, "b".into(), true), (3, "a".into(), true), (4, "c".into(), false)], "codec {codec}");
            // ...and dropped after.
            clean_segment(&seg, &out, &map, &[], &cfg, 2000).unwrap();
            assert_eq!(survivors(&out), vec![(1, "b".into(), true), (3, "a".into(), true)], "codec {codec}");
            let bytes = std::fs::read(&out).unwrap();
            for (h, b) in batches(&bytes) {
                batch::validate(b).unwrap();
                assert_eq!(h.compression(), codec);
            }
        }
    }

    fn survivors(path: &Path) -> Vec<(i64, String, bool)> {
        let bytes = std::fs::read(path).unwrap();
        let mut out = Vec::new();
        for (h, b) in batches(&bytes) {
            let data = records_section(b, &h).unwrap();
            for r in split_records(&data, h.records_count).unwrap() {
                out.push((h.base_offset + r.offset_delta as i64, String::from_utf8(r.key.unwrap().to_vec()).unwrap(), r.has_value));
            }
        }
        out
    }
}
