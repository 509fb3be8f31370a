//! The layering of `src/lib.rs` holds: every `crate::<module>` a top-level module names
//! is in a lower layer (or is itself).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

fn rank_of() -> BTreeMap<&'static str, usize> {
    sluice::LAYERS.iter().enumerate().flat_map(|(i, layer)| layer.iter().map(move |m| (*m, i))).collect()
}

/// The top-level module a file under `src/` belongs to (None for lib.rs and main.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The modules named as `crate::<name>` (or `sluice::<name>`) in `text`, comments left out.
fn named_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for prefix in ["crate::", "sluice::"] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                rest = &rest[i + prefix.len()..];
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn every_module_imports_only_from_layers_below_it() {
    let src = common::src_dir();
    let ranks = rank_of();
    let files = common::rust_files(&src);
    let mut wrong = Vec::new();
    for f in &files {
        let Some(m) = module_of(&src, f) else { continue };
        let Some(&mine) = ranks.get(m.as_str()) else {
            wrong.push(format!("{}: module `{m}` is in no layer of sluice::LAYERS", f.display()));
            continue;
        };
        for used in named_modules(&std::fs::read_to_string(f).unwrap()) {
            let Some(&theirs) = ranks.get(used.as_str()) else { continue };
            if used != m && theirs >= mine {
                wrong.push(format!("{}: `{m}` (layer {}) imports `{used}` (layer {})", f.display(), mine + 1, theirs + 1));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "imports against the layering of src/lib.rs:\n{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_an_upward_import() {
    assert_eq!(named_modules("use crate::broker::Broker; // crate::api"), vec!["broker".to_string()]);
    let ranks = rank_of();
    assert!(ranks["broker"] > ranks["group"] && ranks["partition"] < ranks["group"]);
}
