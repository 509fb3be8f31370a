//! Kafka's `sasl.jaas.config` values: `<LoginModule> <flag> key=value ... ;`.
//!
//! Kafka reads them with Java's `StreamTokenizer` (see its `JaasConfig`): words, `=`,
//! `;`, values quoted with `"` or `'` in which a backslash escapes the next character,
//! and `//` or `/* */` comments. A broker's config holds exactly one login module.

use std::collections::BTreeMap;

/// One parsed login module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasConfig {
    pub login_module: String,
    /// required, requisite, sufficient or optional.
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

fn is_word(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '=' | ';' | '"' | '\'' | '/')
}

fn tokens(s: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                out.push(Token::Equals);
            }
            ';' => {
                chars.next();
                out.push(Token::Semicolon);
            }
            '/' => {
                chars.next();
                match chars.next() {
                    Some('/') => {
                        for c in chars.by_ref() {
                            if c == '\n' {
                                break;
                            }
                        }
                    }
                    Some('*') => {
                        let mut prev = ' ';
                        loop {
                            match chars.next() {
                                Some('/') if prev == '*' => break,
                                Some(c) => prev = c,
                                None => return Err("unterminated /* comment".into()),
                            }
                        }
                    }
                    _ => return Err("a lone '/' (quote values that hold one)".into()),
                }
            }
            '"' | '\'' => {
                let quote = c;
                chars.next();
                let mut v = String::new();
                loop {
                    match chars.next() {
                        Some(c) if c == quote => break,
                        Some('\\') => match chars.next() {
                            Some('n') => v.push('\n'),
                            Some('t') => v.push('\t'),
                            Some('r') => v.push('\r'),
                            Some(c) => v.push(c),
                            None => return Err("unterminated quoted value".into()),
                        },
                        Some(c) => v.push(c),
                        None => return Err("unterminated quoted value".into()),
                    }
                }
                out.push(Token::Quoted(v));
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek().filter(|c| is_word(**c)) {
                    w.push(c);
                    chars.next();
                }
                out.push(Token::Word(w));
            }
        }
    }
    Ok(out)
}

/// Parses a `sasl.jaas.config` value holding one login module.
pub fn parse(s: &str) -> Result<JaasConfig, String> {
    let toks = tokens(s).map_err(|e| format!("sasl.jaas.config: {e}"))?;
    let mut it = toks.into_iter().peekable();
    let mut modules = Vec::new();
    while it.peek().is_some() {
        let Some(Token::Word(login_module)) = it.next() else {
            return Err("sasl.jaas.config: expected a login module class name".into());
        };
        let flag = match it.next() {
            Some(Token::Word(f)) if ["required", "requisite", "sufficient", "optional"].contains(&f.to_ascii_lowercase().as_str()) => {
                f.to_ascii_lowercase()
            }
            other => {
                return Err(format!("sasl.jaas.config: expected a control flag (required, requisite, sufficient, optional), got {other:?}"))
            }
        };
        let mut options = BTreeMap::new();
        loop {
            match it.next() {
                Some(Token::Semicolon) => break,
                Some(Token::Word(key)) => {
                    if it.next() != Some(Token::Equals) {
                        return Err(format!("sasl.jaas.config: option '{key}' needs '=' and a value"));
                    }
                    let value = match it.next() {
                        Some(Token::Word(v)) | Some(Token::Quoted(v)) => v,
                        _ => return Err(format!("sasl.jaas.config: option '{key}' has no value")),
                    };
                    options.insert(key, value);
                }
                None => return Err("sasl.jaas.config: the login module must end with ';'".into()),
                Some(t) => return Err(format!("sasl.jaas.config: unexpected {t:?}")),
            }
        }
        modules.push(JaasConfig { login_module, flag, options });
    }
    match modules.len() {
        1 => Ok(modules.remove(0)),
        n => Err(format!("sasl.jaas.config holds {n} login modules; it must hold exactly 1")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_plain_login_module_form() {
        let c = parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#,
        )
        .unwrap();
        assert_eq!(c.login_module, "org.apache.kafka.common.security.plain.PlainLoginModule");
        assert_eq!(c.flag, "required");
        assert_eq!(c.options["user_alice"], "alice-secret");
        assert_eq!(c.options["username"], "admin");
        assert_eq!(c.options.len(), 4);
    }

    #[test]
    fn quotes_escapes_comments_and_bare_words() {
        let c = parse("m.Mod Required /* note */ a=plain b=\"x y;=\\\"q\\\\\" c='v' // trailing\n d=\"\" ;").unwrap();
        assert_eq!(c.flag, "required");
        assert_eq!(c.options["a"], "plain");
        assert_eq!(c.options["b"], "x y;=\"q\\");
        assert_eq!(c.options["c"], "v");
        assert_eq!(c.options["d"], "");
        // Two adjacent quoted strings are two tokens: 'it' then 's' with no '=' between.
        assert!(parse("m required c='it''s';").is_err());
        assert_eq!(parse("m required c='it\\'s';").unwrap().options["c"], "it's");
    }

    #[test]
    fn malformed_configs_are_refused() {
        for bad in [
            "",
            "m",
            "m required",
            "m required a=1",
            "m maybe a=1;",
            "m required a 1;",
            "m required a=;",
            "m required a=\"open;",
            "m required; n required;",
            "m required a=/;",
            "m required /* open",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
