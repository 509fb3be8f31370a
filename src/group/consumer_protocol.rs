//! Just enough of the embedded consumer protocol (the bytes consumers put in
//! JoinGroup metadata) to learn which topics a group subscribes to.

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
}
