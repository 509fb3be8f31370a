//! Building and reading the records inside uncompressed magic-v2 batches. The broker
//! writes its own internal records (group state, committed offsets) this way.

use super::batch::{BatchHeader, HEADER_LEN, LOG_OVERHEAD};

/// One record of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub offset_delta: i32,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
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

/// Reads a zigzag varint, as records encode their fields.
pub fn get_varint(b: &[u8], pos: &mut usize) -> Option<i64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    None
}

fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

fn get_bytes(b: &[u8], pos: &mut usize) -> Option<Option<Vec<u8>>> {
    let len = get_varint(b, pos)?;
    if len < 0 {
        return Some(None);
    }
    let end = pos.checked_add(usize::try_from(len).ok()?)?;
    let v = b.get(*pos..end)?.to_vec();
    *pos = end;
    Some(Some(v))
}

/// Builds an uncompressed batch at base offset 0 (the log assigns the real one),
/// every record stamped `timestamp`, without a producer id.
pub fn build(records: &[(Option<&[u8]>, Option<&[u8]>)], timestamp: i64) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, (k, v)) in records.iter().enumerate() {
        let mut r = vec![0u8];
        put_varint(&mut r, 0);
        put_varint(&mut r, i as i64);
        put_bytes(&mut r, *k);
        put_bytes(&mut r, *v);
        put_varint(&mut r, 0);
        put_varint(&mut body, r.len() as i64);
        body.extend(r);
    }
    let n = records.len() as i32;
    let mut b = Vec::with_capacity(HEADER_LEN + body.len());
    b.extend(0i64.to_be_bytes());
    b.extend(((HEADER_LEN - LOG_OVERHEAD + body.len()) as i32).to_be_bytes());
    b.extend(0i32.to_be_bytes());
    b.push(2);
    b.extend(0u32.to_be_bytes());
    b.extend(0i16.to_be_bytes());
    b.extend((n - 1).to_be_bytes());
    b.extend(timestamp.to_be_bytes());
    b.extend(timestamp.to_be_bytes());
    b.extend((-1i64).to_be_bytes());
    b.extend((-1i16).to_be_bytes());
    b.extend((-1i32).to_be_bytes());
    b.extend(n.to_be_bytes());
    b.extend(body);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// Reads the records of one uncompressed batch. None if compressed or malformed.
pub fn parse(batch: &[u8]) -> Option<(BatchHeader, Vec<Record>)> {
    let h = BatchHeader::parse(batch).ok()?;
    if h.compression() != 0 || batch.len() < h.total_len() {
        return None;
    }
    let end = h.total_len();
    let mut pos = HEADER_LEN;
    let mut out = Vec::new();
    for _ in 0..h.records_count {
        let len = get_varint(batch, &mut pos)?;
        let rec_end = pos.checked_add(usize::try_from(len).ok()?)?;
        if rec_end > end {
            return None;
        }
        pos += 1; // attributes
        let ts_delta = get_varint(batch, &mut pos)?;
        let offset_delta = get_varint(batch, &mut pos)? as i32;
        let key = get_bytes(batch, &mut pos)?;
        let value = get_bytes(batch, &mut pos)?;
        out.push(Record { offset_delta, timestamp: h.base_timestamp + ts_delta, key, value });
        pos = rec_end;
    }
    Some((h, out))
}

/// Splits a run of whole batches (as a read returns them) into slices.
pub fn batches(mut bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let h = BatchHeader::parse(bytes).ok()?;
        let len = h.total_len();
        if len > bytes.len() {
            return None;
        }
        let (b, rest) = bytes.split_at(len);
        bytes = rest;
        Some(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_then_parse() {
        let b = build(&[(Some(b"k"), Some(b"v")), (Some(b"t"), None)], 77);
        let h = crate::log::batch::validate(&b).unwrap();
        assert_eq!(h.records_count, 2);
        let (_, recs) = parse(&b).unwrap();
        assert_eq!(recs[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(recs[1].value, None);
        assert_eq!(recs[1].offset_delta, 1);
        assert_eq!(batches(&[b.clone(), b].concat()).count(), 2);
    }
}
