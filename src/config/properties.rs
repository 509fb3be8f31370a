//! Java `.properties` files, so a Kafka `server.properties` can configure Sluice as it is.

/// The `key=value` pairs of a properties file, in order (a later duplicate wins when
/// they are applied in turn). Follows `java.util.Properties.load`: `#` and `!` comments,
/// `=`, `:` or whitespace as the separator, a trailing `\` continues the line, and the
/// escapes `\t \n \r \f \uXXXX`.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let mut logical = line.trim_start().to_string();
        if logical.is_empty() || logical.starts_with('#') || logical.starts_with('!') {
            continue;
        }
        while ends_in_continuation(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let (key, value) = split(&logical);
        let key = unescape(key).map_err(|e| format!("line {}: {e}", n + 1))?;
        let value = unescape(value).map_err(|e| format!("line {}: {e}", n + 1))?;
        out.push((key, value));
    }
    Ok(out)
}

/// An odd number of trailing backslashes: the last one joins the next line.
fn ends_in_continuation(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or whitespace; whitespace around it is dropped.
fn split(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..i], line[i + 1..].trim_start()),
            c if c.is_whitespace() => {
                let rest = line[i..].trim_start();
                let rest = rest.strip_prefix(['=', ':']).map_or(rest, str::trim_start);
                return (&line[..i], rest);
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                out.push(code.ok_or_else(|| format!("bad \\u escape '\\u{hex}'"))?);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_what_kafka_server_properties_hold() {
        let text = "# comment\n! also\n\nnode.id=1\nlisteners = PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nlog.dirs: /tmp/k\nsasl.jaas.config org.x.Mod required \\\n  username=\"a\";\nempty=\nc\\:d=e\\u0041\n";
        let got = parse(text).unwrap();
        let want = [
            ("node.id", "1"),
            ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
            ("log.dirs", "/tmp/k"),
            ("sasl.jaas.config", "org.x.Mod required username=\"a\";"),
            ("empty", ""),
            ("c:d", "eA"),
        ];
        assert_eq!(got, want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>());
        assert!(parse("k=\\uZZZZ").is_err());
    }
}
