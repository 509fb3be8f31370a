//! Every config key the code reads by name is one this build knows, of the type it is
//! read as: a typo or a type mismatch fails here, not silently at run time.

mod common;

use sluice::config::{broker_key, topic_key, ConfigType};

/// (file, accessor, key) for each `.get_i64("k")`, `.get_bool("k")` and `.get("k")` with
/// a dotted key in `src/`, and each `int("k")`, `positive_i32("k")` and `boolean("k")` of
/// the typed settings' builder (`config/settings.rs`).
fn reads() -> Vec<(String, &'static str, String)> {
    let mut out = Vec::new();
    for f in common::rust_files(&common::src_dir()) {
        let text = std::fs::read_to_string(&f).unwrap();
        let accessors = [(".get_i64", "get_i64"), (".get_bool", "get_bool"), (".get", "get")].into_iter().chain([
            ("int", "get_i64"),
            ("positive_i32", "get_i64"),
            ("boolean", "get_bool"),
        ]);
        for (call, acc) in accessors {
            let pat = format!("{call}(\"");
            let mut rest = text.as_str();
            while let Some(i) = rest.find(&pat) {
                // A bare name must start a word (`int(`, not `hint(`).
                let starts_word =
                    call.starts_with('.') || !rest[..i].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
                rest = &rest[i + pat.len()..];
                if !starts_word {
                    continue;
                }
                let key: String = rest.chars().take_while(|c| *c != '"').collect();
                if key.contains('.') && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_') {
                    out.push((f.display().to_string(), acc, key));
                }
            }
        }
    }
    out
}

#[test]
fn every_key_read_by_name_exists_with_the_type_it_is_read_as() {
    let found = reads();
    assert!(found.len() > 40, "the scan found only {} reads: is it still looking at the right calls?", found.len());
    let mut wrong = Vec::new();
    for (file, acc, key) in &found {
        let def = broker_key(key).or_else(|| topic_key(key));
        let ok = match (acc, def) {
            (_, None) => false,
            (&"get_i64", Some(d)) => matches!(d.kind, ConfigType::Int | ConfigType::Long),
            (&"get_bool", Some(d)) => d.kind == ConfigType::Boolean,
            _ => true,
        };
        if !ok {
            wrong.push(format!("{file}: {acc}(\"{key}\") is {:?}", def.map(|d| d.kind)));
        }
    }
    assert!(wrong.is_empty(), "config reads that do not match a known key:\n{}", wrong.join("\n"));
}
