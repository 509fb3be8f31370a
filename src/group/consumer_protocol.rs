//! Just enough of the embedded consumer protocol (the bytes consumers put in
//! JoinGroup metadata and SyncGroup assignments) to learn which topics a group subscribes
//! to, and which partitions each member was given.

fn i16_at(b: &[u8], pos: &mut usize) -> Option<i16> {
    let v = i16::from_be_bytes(b.get(*pos..*pos + 2)?.try_into().ok()?);
    *pos += 2;
    Some(v)
}

/// Topics named by a ConsumerProtocolSubscription, any version.
pub fn subscription_topics(b: &[u8]) -> Option<Vec<String>> {
    let mut pos = 0;
    let _version = i16_at(b, &mut pos)?;
    let n = i32::from_be_bytes(b.get(pos..pos + 4)?.try_into().ok()?);
    pos += 4;
    if n < 0 || n as usize > b.len() {
        return None;
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = i16_at(b, &mut pos)?;
        let s = b.get(pos..pos + usize::try_from(len).ok()?)?;
        pos += len as usize;
        out.push(String::from_utf8(s.to_vec()).ok()?);
    }
    Some(out)
}

fn i32_at(b: &[u8], pos: &mut usize) -> Option<i32> {
    let v = i32::from_be_bytes(b.get(*pos..*pos + 4)?.try_into().ok()?);
    *pos += 4;
    Some(v)
}

/// A count read before that many items of at least `min` bytes each: None if the rest of
/// `b` cannot hold them (so a corrupt count allocates nothing).
fn count_at(b: &[u8], pos: &mut usize, min: usize) -> Option<usize> {
    let n = usize::try_from(i32_at(b, pos)?).ok()?;
    (n.checked_mul(min)? <= b.len().saturating_sub(*pos)).then_some(n)
}

/// Topics and partitions of a ConsumerProtocolAssignment, any version (user data ignored).
pub fn assignment_partitions(b: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut pos = 0;
    let _version = i16_at(b, &mut pos)?;
    let n = count_at(b, &mut pos, 6)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = usize::try_from(i16_at(b, &mut pos)?).ok()?;
        let topic = String::from_utf8(b.get(pos..pos + len)?.to_vec()).ok()?;
        pos += len;
        let k = count_at(b, &mut pos, 4)?;
        let partitions = (0..k).map(|_| i32_at(b, &mut pos)).collect::<Option<Vec<_>>>()?;
        out.push((topic, partitions));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_topics() {
        let mut b = vec![0, 1, 0, 0, 0, 2];
        for t in ["ab", "c"] {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
        }
        b.extend([0xff, 0xff, 0xff, 0xff]);
        assert_eq!(super::subscription_topics(&b).unwrap(), vec!["ab", "c"]);
        assert!(super::subscription_topics(&[0, 1, 0x7f, 0, 0, 0]).is_none());
    }

    #[test]
    fn reads_assignments() {
        let mut b = vec![0, 3, 0, 0, 0, 1, 0, 2];
        b.extend(b"ab");
        b.extend([0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(super::assignment_partitions(&b).unwrap(), vec![("ab".to_string(), vec![4, 7])]);
        assert!(super::assignment_partitions(&[0, 3, 0x7f, 0xff, 0xff, 0xff]).is_none());
        assert!(super::assignment_partitions(&b[..b.len() - 9]).is_none());
        assert_eq!(super::assignment_partitions(&[0, 0, 0, 0, 0, 0]).unwrap(), vec![]);
    }
}
