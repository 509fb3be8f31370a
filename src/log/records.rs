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

/// A record header: its key and value, as a producer gives them.
pub type Header<'a> = (&'a str, Option<&'a [u8]>);

/// Builds an uncompressed batch at base offset 0 (the log assigns the real one),
/// every record stamped `timestamp`, without a producer id.
pub fn build(records: &[(Option<&[u8]>, Option<&[u8]>)], timestamp: i64) -> Vec<u8> {
    let with_headers: Vec<_> = records.iter().map(|(k, v)| (*k, *v, &[][..])).collect();
    build_with_headers(&with_headers, timestamp)
}

/// [`build`], each record with its headers.
pub fn build_with_headers(records: &[(Option<&[u8]>, Option<&[u8]>, &[Header])], timestamp: i64) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, (k, v, headers)) in records.iter().enumerate() {
        let mut r = vec![0u8];
        put_varint(&mut r, 0);
        put_varint(&mut r, i as i64);
        put_bytes(&mut r, *k);
        put_bytes(&mut r, *v);
        put_varint(&mut r, headers.len() as i64);
        for (hk, hv) in headers.iter() {
            put_bytes(&mut r, Some(hk.as_bytes()));
            put_bytes(&mut r, *hv);
        }
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

/// One record as read back for people (the console's message browser): everything it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    /// Header keys are strings in Kafka; a key that is not UTF-8 is shown lossily.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// Every record of one batch, compressed or not, with its headers; `inflate_limit` bounds
/// the decompressed size. An error names what is malformed.
pub fn decode(batch: &[u8], inflate_limit: usize) -> crate::error::Result<(BatchHeader, Vec<FullRecord>)> {
    let bad = || crate::error::Error::CorruptMessage("malformed record".into());
    let h = BatchHeader::parse(batch)?;
    let body = batch.get(HEADER_LEN..h.total_len()).ok_or_else(bad)?;
    let data = super::compression::decompress(h.compression(), body, inflate_limit)?;
    let mut pos = 0;
    let mut out = Vec::new();
    for _ in 0..h.records_count {
        let len = get_varint(&data, &mut pos).ok_or_else(bad)?;
        let end = pos.checked_add(usize::try_from(len).map_err(|_| bad())?).ok_or_else(bad)?;
        let rec = data.get(..end).ok_or_else(bad)?;
        let mut p = pos + 1; // attributes
        let ts_delta = get_varint(rec, &mut p).ok_or_else(bad)?;
        let offset_delta = get_varint(rec, &mut p).ok_or_else(bad)?;
        let key = get_bytes(rec, &mut p).ok_or_else(bad)?;
        let value = get_bytes(rec, &mut p).ok_or_else(bad)?;
        let count = get_varint(rec, &mut p).ok_or_else(bad)?;
        let mut headers = Vec::new();
        for _ in 0..count.max(0) {
            let hk = get_bytes(rec, &mut p).ok_or_else(bad)?.unwrap_or_default();
            headers.push((String::from_utf8_lossy(&hk).into_owned(), get_bytes(rec, &mut p).ok_or_else(bad)?));
        }
        let timestamp = if h.attributes & 0x08 != 0 { h.max_timestamp } else { h.base_timestamp + ts_delta };
        out.push(FullRecord { offset: h.base_offset + offset_delta, timestamp, key, value, headers });
        pos = end;
    }
    Ok((h, out))
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

    #[test]
    fn headers_survive_build_then_decode() {
        let headers: &[Header] = &[("trace", Some(b"abc")), ("empty", None)];
        let b = build_with_headers(&[(Some(b"k"), Some(b"v"), headers), (None, None, &[])], 77);
        crate::log::batch::validate(&b).unwrap();
        let (_, recs) = decode(&b, 1 << 20).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].headers, vec![("trace".to_string(), Some(b"abc".to_vec())), ("empty".to_string(), None)]);
        assert_eq!((recs[1].offset, recs[1].key.clone(), recs[1].timestamp), (1, None, 77));
        assert!(decode(&b[..b.len() - 3], 1 << 20).is_err(), "a cut batch is an error, not a panic");
    }
}
