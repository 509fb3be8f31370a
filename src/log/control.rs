//! Control batches: the COMMIT and ABORT markers that end a transaction on a
//! partition, as bytes (magic v2, the control and transactional attribute bits set).

use super::{batch, records};

/// Control record types.
pub const ABORT: i16 = 0;
pub const COMMIT: i16 = 1;

/// Builds a COMMIT or ABORT marker for producer `pid` at `epoch`.
pub fn build(pid: i64, epoch: i16, commit: bool, coordinator_epoch: i32, now_ms: i64) -> Vec<u8> {
    let mut key = 0i16.to_be_bytes().to_vec();
    key.extend((if commit { COMMIT } else { ABORT }).to_be_bytes());
    let mut value = 0i16.to_be_bytes().to_vec();
    value.extend(coordinator_epoch.to_be_bytes());
    let mut b = records::build(&[(Some(&key), Some(&value))], now_ms);
    set_producer(&mut b, pid, epoch, batch::ATTR_TRANSACTIONAL | batch::ATTR_CONTROL);
    b
}

/// Marks a broker-built batch as written by `pid`/`epoch` with extra attribute bits.
pub fn set_producer(b: &mut [u8], pid: i64, epoch: i16, attrs: i16) {
    let a = i16::from_be_bytes([b[21], b[22]]) | attrs;
    b[21..23].copy_from_slice(&a.to_be_bytes());
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// For a control batch: is it a COMMIT (Some(true)) or ABORT (Some(false)) marker?
pub fn marker_type(b: &[u8]) -> Option<bool> {
    let (h, recs) = records::parse(b)?;
    if !h.is_control() {
        return None;
    }
    let key = recs.first()?.key.as_ref()?;
    let t = i16::from_be_bytes(key.get(2..4)?.try_into().ok()?);
    Some(t == COMMIT)
}

#[cfg(test)]
mod tests {
    #[test]
    fn markers_are_valid_control_batches() {
        let b = super::build(5, 2, false, 0, 10);
        let h = super::batch::validate(&b).unwrap();
        assert!(h.is_control() && h.is_transactional());
        assert_eq!((h.producer_id, h.producer_epoch), (5, 2));
        assert_eq!(super::marker_type(&b), Some(false));
        assert_eq!(super::marker_type(&super::build(5, 2, true, 0, 10)), Some(true));
    }
}
