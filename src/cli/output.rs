//! Printing: borderless tables for people, JSON for scripts.

use comfy_table::{presets, Table};
use serde_json::Value;

/// A table with `header` (upper case, as rpk and Kafka's tools print them) and `rows`.
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING);
    t.set_header(header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        t.add_row(r);
    }
    let text = t.to_string();
    // The borderless preset still pads cells and may draw blank rules: drop blank lines
    // and the indent every line shares.
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let indent = lines.iter().map(|l| l.len() - l.trim_start().len()).min().unwrap_or(0);
    let mut out = String::new();
    for line in lines {
        out.push_str(line[indent..].trim_end());
        out.push('\n');
    }
    out
}

/// Prints a JSON document on one line.
pub fn json_line(v: &Value) {
    println!("{}", serde_json::to_string(v).unwrap_or_default());
}

/// Prints a JSON document, indented.
pub fn json_pretty(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// `[1, 2, 3]` as `1,2,3`.
pub fn ids(v: &[i32]) -> String {
    v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// Bytes as text: UTF-8 when it is, else lossy.
pub fn text(b: &Option<bytes::Bytes>) -> Option<String> {
    b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_align_without_borders() {
        let t = super::table(&["TOPIC", "PARTITIONS"], vec![vec!["a".into(), "1".into()], vec!["longer".into(), "12".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("TOPIC"), "{t}");
        assert_eq!(lines[1].find('1'), lines[0].find("PARTITIONS"), "{t}");
    }
}

/// Reports what a delete did to each `kind` (topic, group): a line each for people, or
/// one JSON array with each one's error name; the first error becomes the exit code.
pub fn report_deleted(kind: &str, results: Vec<(String, Option<super::CliError>)>, json: bool) -> Result<(), super::CliError> {
    let mut failed = None;
    let mut out = Vec::new();
    for (name, e) in results {
        out.push(serde_json::json!({ kind: name, "error": e.as_ref().and_then(|e| e.code()).map(crate::error::code_name) }));
        match &e {
            None if !json => println!("deleted {kind} {name}"),
            Some(e) if !json => eprintln!("{e}"),
            _ => {}
        }
        failed = failed.or(e);
    }
    if json {
        json_line(&Value::Array(out));
    }
    failed.map_or(Ok(()), Err)
}
