//! The crate's layers, checked: every `crate::<module>` path in `src/` names a
//! module of a lower layer than the file's own (or its own module). Comments
//! are skipped, so a doc link may still point up; code may not.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, bottom up. A module may use only the
/// modules of earlier entries: those in its own entry are its siblings, not
/// below it. `error` holds every layer's error type; `transforms` runs BFV
/// operations to count their NTTs; `parallel` (rayon loops) knows no layer.
const LAYERS: &[&[&str]] = &[
    &["error", "parallel"],
    &["arith"],
    &["backend"],
    &["ntt"],
    &["bfv"],
    &["matching", "transforms"],
    &["wasm", "server"],
];

/// Upward uses that are known and being removed: (module, path prefix).
const ALLOWED: &[(&str, &str)] = &[];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// `line` without its `//` comment (a `//` inside a string literal is kept).
fn code_of(line: &str) -> &str {
    let bytes = line.as_bytes();
    let (mut in_str, mut i) = (false, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// The names the crate root re-exports (`pub use module::{A, B};` in
/// `src/lib.rs`), each with the module it comes from.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        for item in items.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = item.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                out.insert(name.to_string(), module.to_string());
            }
        }
    }
    out
}

/// Every `crate::` path in `code`, with the top-level module it enters
/// (root re-exports resolved through `reexports`). A group
/// `crate::{a::X, B}` gives one use per item.
fn uses(code: &str, reexports: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at + "crate::".len()..];
        rest = tail;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `blindmatch_crate::`
        }
        let items: Vec<&str> = match tail.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect(),
            None => vec![tail],
        };
        for item in items {
            let path: String = item
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let first = path.split("::").next().unwrap_or("");
            let module = reexports.get(first).map_or(first, String::as_str);
            out.push((module.to_string(), format!("crate::{path}")));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable src/") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = root_reexports(&fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let (mut scanned, mut seen, mut bad) = (0, 0, Vec::new());
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src/");
        let first = rel.components().next().expect("a component");
        let module = first.as_os_str().to_string_lossy();
        let module = module.trim_end_matches(".rs");
        // The root only declares and re-exports; binaries use the crate by name.
        if module == "lib" || module == "bin" {
            continue;
        }
        let Some(own) = rank(module) else {
            bad.push(format!(
                "{}: module `{module}` is in no layer",
                rel.display()
            ));
            continue;
        };
        scanned += 1;
        let text = fs::read_to_string(file).expect("readable file");
        for (n, line) in text.lines().enumerate() {
            for (used, path) in uses(code_of(line), &reexports) {
                seen += 1;
                if used == module {
                    continue;
                }
                let upward = rank(&used).is_none_or(|r| r >= own);
                let allowed = ALLOWED
                    .iter()
                    .any(|&(m, prefix)| m == module && path.starts_with(prefix));
                if upward && !allowed {
                    bad.push(format!("{}:{}: {module} uses {path}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        scanned > 40 && seen > 100,
        "only {scanned} files, {seen} uses"
    );
    assert!(bad.is_empty(), "upward uses:\n{}", bad.join("\n"));
}

#[test]
fn the_scanner_finds_groups_reexports_and_skips_comments() {
    let reexports = root_reexports("pub use backend::Backend;\npub use error::{A, B};\n");
    assert_eq!(reexports["Backend"], "backend");
    assert_eq!(reexports["B"], "error");
    let line = r#"use crate::{Backend, bfv::X}; let s = "//"; f(crate::ntt::Y); // crate::server"#;
    let got: Vec<String> = uses(code_of(line), &reexports)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(got, ["backend", "bfv", "ntt"]);
}
