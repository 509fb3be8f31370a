//! The four codecs a record batch may use, for the places that must look inside a
//! batch (compaction, key checks on compacted topics). Produce and fetch never do.

use std::io::{Read, Write};

use crate::error::{Error, Result};

/// Codec ids from the batch attributes.
pub const NONE: i16 = 0;
pub const GZIP: i16 = 1;
pub const SNAPPY: i16 = 2;
pub const LZ4: i16 = 3;
pub const ZSTD: i16 = 4;

/// The xerial framing Java's snappy streams use (and librdkafka writes).
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::CorruptMessage(format!("{what}: {e}"))
}

/// How [`decompress`] says the output would pass its limit.
const TOO_LARGE: &str = "decompresses to more than the limit";

/// Did [`decompress`] fail because the output would pass its limit (not on bad input)?
pub fn is_too_large(e: &Error) -> bool {
    matches!(e, Error::CorruptMessage(m) if m.contains(TOO_LARGE))
}

fn read_bounded(mut r: impl Read, limit: usize, what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    (&mut r).take(limit as u64 + 1).read_to_end(&mut out).map_err(|e| corrupt(what, e))?;
    if out.len() > limit {
        return Err(Error::CorruptMessage(format!("{what}: {TOO_LARGE} of {limit} bytes")));
    }
    Ok(out)
}

fn snappy_decompress(data: &[u8], limit: usize) -> Result<Vec<u8>> {
    if !data.starts_with(&XERIAL_MAGIC) {
        let n = snap::raw::decompress_len(data).map_err(|e| corrupt("snappy", e))?;
        if n > limit {
            return Err(Error::CorruptMessage(format!("snappy: {TOO_LARGE} of {limit} bytes")));
        }
        return snap::raw::Decoder::new().decompress_vec(data).map_err(|e| corrupt("snappy", e));
    }
    let mut out = Vec::new();
    let mut pos = 16;
    while pos < data.len() {
        let len = data.get(pos..pos + 4).ok_or_else(|| corrupt("snappy", "truncated block length"))?;
        let len = u32::from_be_bytes(len.try_into().expect("4")) as usize;
        pos += 4;
        let block = data.get(pos..pos + len).ok_or_else(|| corrupt("snappy", "truncated block"))?;
        pos += len;
        let n = snap::raw::decompress_len(block).map_err(|e| corrupt("snappy", e))?;
        if out.len() + n > limit {
            return Err(Error::CorruptMessage(format!("snappy: {TOO_LARGE} of {limit} bytes")));
        }
        out.extend(snap::raw::Decoder::new().decompress_vec(block).map_err(|e| corrupt("snappy", e))?);
    }
    Ok(out)
}

fn snappy_compress(data: &[u8]) -> Vec<u8> {
    let mut out = XERIAL_MAGIC.to_vec();
    out.extend(1i32.to_be_bytes());
    out.extend(1i32.to_be_bytes());
    for chunk in data.chunks(32 * 1024) {
        let block = snap::raw::Encoder::new().compress_vec(chunk).expect("snappy compresses any input");
        out.extend((block.len() as u32).to_be_bytes());
        out.extend(block);
    }
    out
}

/// Decompresses a batch's records section, refusing output larger than `limit`.
pub fn decompress(codec: i16, data: &[u8], limit: usize) -> Result<Vec<u8>> {
    match codec {
        NONE => Ok(data.to_vec()),
        GZIP => read_bounded(flate2::read::GzDecoder::new(data), limit, "gzip"),
        SNAPPY => snappy_decompress(data, limit),
        LZ4 => read_bounded(lz4_flex::frame::FrameDecoder::new(data), limit, "lz4"),
        ZSTD => {
            let dec = ruzstd::decoding::StreamingDecoder::new(data).map_err(|e| corrupt("zstd", e))?;
            read_bounded(dec, limit, "zstd")
        }
        other => Err(Error::CorruptMessage(format!("unknown compression codec {other}"))),
    }
}

/// Compresses a records section with `codec`.
pub fn compress(codec: i16, data: &[u8]) -> Result<Vec<u8>> {
    Ok(match codec {
        NONE => data.to_vec(),
        GZIP => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data)?;
            e.finish()?
        }
        SNAPPY => snappy_compress(data),
        LZ4 => {
            let info = lz4_flex::frame::FrameInfo::new().block_size(lz4_flex::frame::BlockSize::Max64KB);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data)?;
            e.finish().map_err(|e| Error::Storage(e.to_string()))?
        }
        ZSTD => ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest),
        other => return Err(Error::CorruptMessage(format!("unknown compression codec {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        for codec in [NONE, GZIP, SNAPPY, LZ4, ZSTD] {
            let c = compress(codec, &data).unwrap();
            assert_eq!(decompress(codec, &c, 1 << 30).unwrap(), data, "codec {codec}");
            if codec != NONE {
                assert!(decompress(codec, &c, 1000).is_err(), "codec {codec} honours the limit");
            }
        }
        assert!(decompress(GZIP, b"not gzip", 1000).is_err());
    }
}
