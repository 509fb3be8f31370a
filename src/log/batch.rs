//! Magic-v2 record batch headers: parsing, validation and the in-place patches
//! the leader makes (base offset, leader epoch, LogAppendTime).

use crate::error::{Error, Result};

/// Size of the fixed batch header.
pub const HEADER_LEN: usize = 61;
/// Bytes before the batchLength field ends: baseOffset (8) + batchLength (4).
pub const LOG_OVERHEAD: usize = 12;
const CRC_START: usize = 21;

/// Attribute bits.
pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
pub const ATTR_LOG_APPEND_TIME: i16 = 0x08;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;

/// The fixed header of a record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

impl BatchHeader {
    /// Parses the header at the start of `b`, which must hold at least [`HEADER_LEN`] bytes.
    pub fn parse(b: &[u8]) -> Result<BatchHeader> {
        if b.len() < HEADER_LEN {
            return Err(Error::CorruptMessage(format!("batch of {} bytes is shorter than its header", b.len())));
        }
        Ok(BatchHeader {
            base_offset: be_i64(b, 0),
            batch_length: be_i32(b, 8),
            partition_leader_epoch: be_i32(b, 12),
            magic: b[16] as i8,
            crc: u32::from_be_bytes(b[17..21].try_into().expect("4 bytes")),
            attributes: be_i16(b, 21),
            last_offset_delta: be_i32(b, 23),
            base_timestamp: be_i64(b, 27),
            max_timestamp: be_i64(b, 35),
            producer_id: be_i64(b, 43),
            producer_epoch: be_i16(b, 51),
            base_sequence: be_i32(b, 53),
            records_count: be_i32(b, 57),
        })
    }

    /// Total size of the batch on disk, header included.
    pub fn total_len(&self) -> usize {
        LOG_OVERHEAD + self.batch_length.max(0) as usize
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64
    }
    pub fn compression(&self) -> i16 {
        self.attributes & ATTR_COMPRESSION_MASK
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
    /// Sequence of the last record, wrapping at i32::MAX as Kafka does.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        let last = self.base_sequence as i64 + self.last_offset_delta as i64;
        if last > i32::MAX as i64 {
            (last - i32::MAX as i64 - 1) as i32
        } else {
            last as i32
        }
    }
}

/// Checks one batch exactly as a client sent it: framing, magic and CRC.
pub fn validate(b: &[u8]) -> Result<BatchHeader> {
    let h = BatchHeader::parse(b)?;
    if h.magic != 2 {
        return Err(Error::CorruptMessage(format!("unsupported magic {}", h.magic)));
    }
    if h.batch_length < (HEADER_LEN - LOG_OVERHEAD) as i32 || h.total_len() != b.len() {
        return Err(Error::CorruptMessage(format!("batch length {} does not match the {} bytes sent", h.batch_length, b.len())));
    }
    let crc = crc32c::crc32c(&b[CRC_START..]);
    if crc != h.crc {
        return Err(Error::CorruptMessage(format!("crc {:08x} does not match computed {:08x}", h.crc, crc)));
    }
    if h.last_offset_delta < 0 || h.records_count < 0 {
        return Err(Error::CorruptMessage("negative record count".into()));
    }
    Ok(h)
}

/// What a producer's batch must also satisfy: records numbered densely from zero.
/// (Compaction later leaves gaps inside stored batches, so stored ones need not.)
pub fn check_produced(h: &BatchHeader) -> Result<()> {
    if h.records_count == 0 || h.records_count as i64 != h.last_offset_delta as i64 + 1 {
        return Err(Error::InvalidRecord(format!(
            "record count {} does not match last offset delta {}",
            h.records_count, h.last_offset_delta
        )));
    }
    Ok(())
}

/// Patches the fields outside the CRC that the leader owns.
pub fn assign_offset(b: &mut [u8], base_offset: i64, leader_epoch: i32) {
    b[0..8].copy_from_slice(&base_offset.to_be_bytes());
    b[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
}

/// Rewrites the batch to LogAppendTime: sets the attribute bit and the max timestamp,
/// then recomputes the CRC, since both lie inside it.
pub fn set_log_append_time(b: &mut [u8], now_ms: i64) {
    let attrs = be_i16(b, 21) | ATTR_LOG_APPEND_TIME;
    b[21..23].copy_from_slice(&attrs.to_be_bytes());
    b[35..43].copy_from_slice(&now_ms.to_be_bytes());
    let crc = crc32c::crc32c(&b[CRC_START..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// Splits a Produce `records` field into batches without copying.
pub fn split(records: &[u8]) -> Result<Vec<std::ops::Range<usize>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < records.len() {
        if records.len() - pos < LOG_OVERHEAD {
            return Err(Error::CorruptMessage("trailing bytes after the last batch".into()));
        }
        let len = be_i32(records, pos + 8);
        if len < 0 {
            return Err(Error::CorruptMessage("negative batch length".into()));
        }
        let end = pos + LOG_OVERHEAD + len as usize;
        if end > records.len() {
            return Err(Error::CorruptMessage("batch runs past the end of the request".into()));
        }
        out.push(pos..end);
        pos = end;
    }
    Ok(out)
}

/// The (offset delta, timestamp) of every record of an uncompressed batch, or None
/// when the batch is compressed or its records don't parse.
pub fn record_timestamps(b: &[u8]) -> Option<Vec<(i32, i64)>> {
    let h = BatchHeader::parse(b).ok()?;
    if h.compression() != 0 {
        return None;
    }
    let mut pos = HEADER_LEN;
    let mut out = Vec::with_capacity(h.records_count.clamp(0, 4096) as usize);
    for _ in 0..h.records_count {
        let len = super::records::get_varint(b, &mut pos)?;
        let start = pos;
        pos += 1; // attributes
        let ts_delta = super::records::get_varint(b, &mut pos)?;
        let off_delta = super::records::get_varint(b, &mut pos)?;
        out.push((off_delta as i32, h.base_timestamp + ts_delta));
        pos = start.checked_add(usize::try_from(len).ok()?)?;
        if pos > b.len() {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a valid uncompressed batch of `n` records with the given timestamps.
    pub fn make_batch(n: i32, base_ts: i64, pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..n {
            let mut r = vec![0u8]; // attributes
            zz(&mut r, i as i64); // timestamp delta
            zz(&mut r, i as i64); // offset delta
            zz(&mut r, -1); // key: null
            zz(&mut r, 1); // value length
            r.push(b'a' + (i % 26) as u8);
            zz(&mut r, 0); // headers
            zz(&mut records, r.len() as i64);
            records.extend(r);
        }
        let mut b = Vec::new();
        b.extend(0i64.to_be_bytes());
        b.extend(((HEADER_LEN - LOG_OVERHEAD + records.len()) as i32).to_be_bytes());
        b.extend(0i32.to_be_bytes());
        b.push(2);
        b.extend(0u32.to_be_bytes());
        b.extend(0i16.to_be_bytes());
        b.extend((n - 1).to_be_bytes());
        b.extend(base_ts.to_be_bytes());
        b.extend((base_ts + n as i64 - 1).to_be_bytes());
        b.extend(pid.to_be_bytes());
        b.extend(epoch.to_be_bytes());
        b.extend(seq.to_be_bytes());
        b.extend(n.to_be_bytes());
        b.extend(records);
        let crc = crc32c::crc32c(&b[CRC_START..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn zz(out: &mut Vec<u8>, v: i64) {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            let byte = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    #[test]
    fn valid_batch_passes_and_corrupt_one_fails() {
        let mut b = make_batch(3, 1000, -1, -1, -1);
        let h = validate(&b).unwrap();
        assert_eq!(h.records_count, 3);
        assert_eq!(record_timestamps(&b).unwrap(), vec![(0, 1000), (1, 1001), (2, 1002)]);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        assert!(matches!(validate(&b), Err(Error::CorruptMessage(_))));
    }

    #[test]
    fn patches_keep_the_crc_valid() {
        let mut b = make_batch(2, 5, -1, -1, -1);
        assign_offset(&mut b, 42, 7);
        set_log_append_time(&mut b, 99);
        let h = validate(&b).unwrap();
        assert_eq!((h.base_offset, h.partition_leader_epoch, h.max_timestamp), (42, 7, 99));
    }

    #[test]
    fn split_rejects_truncated_input() {
        let b = make_batch(1, 0, -1, -1, -1);
        assert_eq!(split(&b).unwrap().len(), 1);
        assert!(split(&b[..b.len() - 1]).is_err());
    }
}
