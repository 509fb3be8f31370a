//! kcat-style output templates for `consume -f`: `%t` topic, `%p` partition, `%o` offset,
//! `%k` key, `%s` value, `%h` headers (`k=v,k2=v2`), `%T` timestamp (ms), `%K` key length,
//! `%S` value length (-1 for null), `%%` a percent sign; `\n`, `\t`, `\r` and `\\` escapes.

use super::records::Incoming;
use super::CliError;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Topic,
    Partition,
    Offset,
    Key,
    Value,
    Headers,
    Timestamp,
    KeyLen,
    ValueLen,
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Piece>);

impl Template {
    /// Parses `spec`; an unknown `%x` is an error.
    pub fn parse(spec: &str) -> Result<Template, CliError> {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let mut it = spec.chars();
        while let Some(c) = it.next() {
            match c {
                '%' => {
                    let p = match it.next() {
                        Some('%') => {
                            lit.push('%');
                            continue;
                        }
                        Some('t') => Piece::Topic,
                        Some('p') => Piece::Partition,
                        Some('o') => Piece::Offset,
                        Some('k') => Piece::Key,
                        Some('s') => Piece::Value,
                        Some('h') => Piece::Headers,
                        Some('T') => Piece::Timestamp,
                        Some('K') => Piece::KeyLen,
                        Some('S') => Piece::ValueLen,
                        Some(x) => return Err(CliError::Usage(format!("format: unknown %{x} (known: %t %p %o %k %s %h %T %K %S %%)"))),
                        None => return Err(CliError::Usage("format: a lone % at the end".into())),
                    };
                    if !lit.is_empty() {
                        pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                    }
                    pieces.push(p);
                }
                '\\' => match it.next() {
                    Some('n') => lit.push('\n'),
                    Some('t') => lit.push('\t'),
                    Some('r') => lit.push('\r'),
                    Some('\\') => lit.push('\\'),
                    Some(x) => {
                        lit.push('\\');
                        lit.push(x);
                    }
                    None => lit.push('\\'),
                },
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(Template(pieces))
    }

    /// The record rendered (bytes, so binary values pass through unchanged).
    pub fn render(&self, topic: &str, partition: i32, r: &Incoming) -> Vec<u8> {
        let mut out = Vec::new();
        let len = |b: &Option<bytes::Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
        for p in &self.0 {
            match p {
                Piece::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Piece::Topic => out.extend_from_slice(topic.as_bytes()),
                Piece::Partition => out.extend_from_slice(partition.to_string().as_bytes()),
                Piece::Offset => out.extend_from_slice(r.offset.to_string().as_bytes()),
                Piece::Key => out.extend_from_slice(r.key.as_deref().unwrap_or_default()),
                Piece::Value => out.extend_from_slice(r.value.as_deref().unwrap_or_default()),
                Piece::Headers => {
                    for (i, (k, v)) in r.headers.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(k.as_bytes());
                        out.push(b'=');
                        out.extend_from_slice(v.as_deref().unwrap_or_default());
                    }
                }
                Piece::Timestamp => out.extend_from_slice(r.timestamp.to_string().as_bytes()),
                Piece::KeyLen => out.extend_from_slice(len(&r.key).to_string().as_bytes()),
                Piece::ValueLen => out.extend_from_slice(len(&r.value).to_string().as_bytes()),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn rec() -> Incoming {
        Incoming {
            offset: 7,
            timestamp: 1234,
            key: Some(Bytes::from_static(b"k")),
            value: None,
            headers: vec![("a".into(), Some(Bytes::from_static(b"1"))), ("b".into(), None)],
        }
    }

    #[test]
    fn every_placeholder_renders() {
        let t = Template::parse("%t/%p@%o %k=%s [%h] %T %K %S 100%%\\n").unwrap();
        assert_eq!(String::from_utf8(t.render("top", 2, &rec())).unwrap(), "top/2@7 k= [a=1,b=] 1234 1 -1 100%\n");
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(Template::parse("%x").is_err());
        assert!(Template::parse("50%").is_err());
        assert_eq!(Template::parse("a\\tb").unwrap().render("t", 0, &rec()), b"a\tb");
    }
}
