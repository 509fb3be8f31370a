//! The principal of a TLS client: its certificate's subject in RFC 2253 form (as Java's
//! `X500Principal.getName()` writes it, which is what Kafka maps), then
//! `ssl.principal.mapping.rules` with Kafka's `SslPrincipalMapper` syntax.

use regex::Regex;

/// The principal of a connection that did not authenticate.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// A bad `ssl.principal.mapping.rules` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid ssl.principal.mapping.rules '{rules}': {why}")]
pub struct RuleError {
    rules: String,
    why: String,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Map { pattern: Regex, replacement: String, case: Option<char> },
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Parses Kafka's rule list: `DEFAULT` and `RULE:pattern/replacement/[LU]`, comma separated.
    pub fn parse(rules: &str) -> Result<PrincipalMapper, RuleError> {
        let err = |why: String| RuleError { rules: rules.to_string(), why };
        let mut out = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("DEFAULT") {
                out.push(Rule::Default);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("RULE:") {
                let (pattern, r) = until_slash(r).ok_or_else(|| err("a RULE needs pattern/replacement/".into()))?;
                let (replacement, r) = until_slash(r).ok_or_else(|| err("a RULE needs pattern/replacement/".into()))?;
                let (case, r) = match r.chars().next() {
                    Some(c @ ('L' | 'U')) => (Some(c), &r[1..]),
                    _ => (None, r),
                };
                // Java's `matches()` wants the whole name to match.
                let pattern = Regex::new(&format!("^(?:{pattern})$")).map_err(|e| err(format!("bad pattern '{pattern}': {e}")))?;
                out.push(Rule::Map { pattern, replacement: java_replacement(&replacement), case });
                rest = r;
            } else {
                return Err(err(format!("'{rest}' is neither DEFAULT nor RULE:pattern/replacement/")));
            }
            rest = rest.trim_start();
            match rest.strip_prefix(',') {
                Some(r) => rest = r.trim_start(),
                None if rest.is_empty() => {}
                None => return Err(err(format!("expected ',' before '{rest}'"))),
            }
        }
        Ok(PrincipalMapper { rules: out })
    }

    /// The user name for a DN: the first rule that matches, or None when none does (Kafka
    /// then refuses the connection).
    pub fn map(&self, dn: &str) -> Option<String> {
        self.rules.iter().find_map(|r| match r {
            Rule::Default => Some(dn.to_string()),
            Rule::Map { pattern, replacement, case } => {
                if !pattern.is_match(dn) {
                    return None;
                }
                let s = pattern.replace_all(dn, replacement.as_str()).into_owned();
                Some(match case {
                    Some('L') => s.to_lowercase(),
                    Some('U') => s.to_uppercase(),
                    _ => s,
                })
            }
        })
    }
}

/// Text up to the next unescaped `/` (with `\/` unescaped), and what follows it.
fn until_slash(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '/' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, n)) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    None
}

/// Java's `$1` group references, in the regex crate's `${1}` form (so `$1x` stays group 1).
fn java_replacement(r: &str) -> String {
    let mut out = String::new();
    let mut chars = r.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push_str("${");
                while let Some(d) = chars.next_if(char::is_ascii_digit) {
                    out.push(d);
                }
                out.push('}');
            }
            '$' => out.push_str("$$"),
            '\\' => {
                if let Some(n) = chars.next() {
                    if n == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(n);
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The subject of a DER certificate in RFC 2253 form, or None if it does not parse.
pub fn subject_dn(cert_der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).ok()?;
    let rdns: Vec<String> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| rdn.iter().map(|atv| attribute(&atv.attr_type().to_id_string(), atv.attr_value())).collect::<Vec<_>>().join("+"))
        .collect();
    // RFC 2253 writes the last RDN of the sequence first.
    Some(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// One `type=value`, with RFC 2253's keywords (Java's set) and its escaping.
fn attribute(oid: &str, value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> String {
    let keyword = match oid {
        "2.5.4.3" => Some("CN"),
        "2.5.4.6" => Some("C"),
        "2.5.4.7" => Some("L"),
        "2.5.4.8" => Some("ST"),
        "2.5.4.10" => Some("O"),
        "2.5.4.11" => Some("OU"),
        "2.5.4.9" => Some("STREET"),
        "0.9.2342.19200300.100.1.25" => Some("DC"),
        "0.9.2342.19200300.100.1.1" => Some("UID"),
        _ => None,
    };
    let text = match (keyword, value.header.tag().0, value.header.is_constructed()) {
        (Some(_), 12 | 18 | 19 | 22 | 26, false) => std::str::from_utf8(value.data).ok().map(str::to_string),
        // TeletexString, read as Latin-1 as Java does.
        (Some(_), 20, false) => Some(value.data.iter().map(|&b| b as char).collect()),
        (Some(_), 30, false) if value.data.len().is_multiple_of(2) => {
            let units: Vec<u16> = value.data.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        (Some(_), 28, false) if value.data.len().is_multiple_of(4) => {
            value.data.chunks(4).map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]]))).collect()
        }
        _ => None,
    };
    match (keyword, text) {
        (Some(k), Some(t)) => format!("{k}={}", escape(&t)),
        // Unknown types and non-string values: the OID and the value's DER in hex.
        _ => {
            let mut der = vec![value.header.tag().0 as u8 | if value.header.is_constructed() { 0x20 } else { 0 }];
            let n = value.data.len();
            if n < 0x80 {
                der.push(n as u8);
            } else {
                let bytes: Vec<u8> = n.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
                der.push(0x80 | bytes.len() as u8);
                der.extend(bytes);
            }
            der.extend_from_slice(value.data);
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{oid}=#{hex}")
        }
    }
}

fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special =
            matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') || (i == 0 && (c == '#' || c == ' ')) || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_rule_syntax() {
        let m = PrincipalMapper::parse("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT").unwrap();
        assert_eq!(m.map("CN=kafka-server,OU=ServiceUsers,O=org").as_deref(), Some("kafka-server"));
        assert_eq!(m.map("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US").as_deref(), Some("duke@javasoft"));
        assert_eq!(m.map("OU=x,cn=alice,O=y").as_deref(), Some("ALICE"));
        assert_eq!(m.map("O=nobody").as_deref(), Some("O=nobody"), "DEFAULT keeps the DN");
        assert_eq!(PrincipalMapper::parse("DEFAULT").unwrap().map("CN=a,O=b").as_deref(), Some("CN=a,O=b"));
        let only = PrincipalMapper::parse("RULE:^CN=([a-z]+)$/$1/").unwrap();
        assert_eq!(only.map("CN=bob,O=x"), None, "no rule applies");
        let slash = PrincipalMapper::parse(r"RULE:^CN=(.*)\/x$/$1/").unwrap();
        assert_eq!(slash.map("CN=a/x").as_deref(), Some("a"));
        assert!(PrincipalMapper::parse("RULE:^CN=(.*$/$1/").is_err());
        assert!(PrincipalMapper::parse("NOPE").is_err());
    }

    #[test]
    fn rfc2253_escaping() {
        assert_eq!(escape("a,b+c"), r"a\,b\+c");
        assert_eq!(escape("#x "), r"\#x\ ");
    }

    #[test]
    fn garbage_is_no_certificate() {
        assert_eq!(subject_dn(b"\x30\x82\xff\xff"), None);
        assert_eq!(subject_dn(b""), None);
    }
}
