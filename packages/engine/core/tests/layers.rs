//! The engine's layers are the ones drawn: `src/lib.rs` lists them (top to bottom) in its module
//! documentation, `docs/ARCHITECTURE.md` shows the same list, and every `crate::`/`super::` path
//! in the crate's code (tests modules aside) names a module of a lower layer than its own.
//! Modules within one layer do not use each other. So neither the drawing nor the code can
//! change without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layer list: each line of the ```` ```text ```` block under `## Layers` in lib.rs's
/// module documentation is one layer, top first: module names separated by commas, then at
/// least two spaces and what the layer does.
fn layer_block(lib_rs: &str) -> Vec<String> {
    let doc: Vec<&str> =
        lib_rs.lines().filter_map(|l| l.strip_prefix("//!")).map(|l| l.strip_prefix(' ').unwrap_or(l)).collect();
    let start =
        doc.iter().position(|l| *l == "## Layers").expect("lib.rs's module documentation has a `## Layers` section");
    let open = start + doc[start..].iter().position(|l| *l == "```text").expect("`## Layers` holds a ```text block");
    let close = open
        + 1
        + doc[open + 1..].iter().position(|l| *l == "```").expect("the ```text block under `## Layers` is closed");
    doc[open + 1..close].iter().map(|l| l.to_string()).collect()
}

fn parse_layers(block: &[String]) -> Vec<Vec<String>> {
    block
        .iter()
        .map(|line| {
            let names = line.split("  ").next().unwrap();
            names.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect()
        })
        .collect()
}

/// `source` with comments removed and the insides of string and char literals blanked, offsets
/// (and so line numbers) kept: paths are looked for in code only.
fn code_only(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let closing = format!("\"{}", "#".repeat(hashes)).into_bytes();
            let body = i + 2 + hashes;
            let end = b[body..]
                .windows(closing.len())
                .position(|w| w == closing.as_slice())
                .map_or(b.len(), |n| body + n + closing.len());
            blank(&mut out, body, end.saturating_sub(closing.len()).max(body));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a), which is left alone.
            let lit = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|n| i + 2 + n)
            } else {
                let ch = source[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
            };
            match lit {
                Some(end) => {
                    blank(&mut out, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only ASCII is written over whole literals")
}

/// `code` with every `#[cfg(test)]` module blanked (tests may use any module).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|n| from + n) {
        let after = out[at + "#[cfg(test)]".len()..].trim_start();
        let item = out.len() - after.len();
        if !(after.starts_with("mod ") || after.starts_with("pub mod ") || after.starts_with("pub(crate) mod ")) {
            from = item;
            continue;
        }
        let open = item + out[item..].find('{').expect("a test module has a body");
        let mut depth = 0;
        let mut end = out.len();
        for (n, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + n + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[at..end].chars().map(|c| if c == '\n' { '\n' } else { ' ' }).collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

/// The crate-level modules a piece of code names, with the line of each use: the first segment
/// after `crate::` (or after enough `super::` to reach the crate root, from `depth` levels down),
/// each member of a `crate::{…}` group counted. Names the crate root re-exports (`crate::Error`)
/// are mapped to their module through `reexports`.
fn used_modules(code: &str, depth: usize, reexports: &BTreeMap<String, String>) -> Vec<(String, usize)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let ident_end = |s: &str| s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let (root, rest) = if boundary && code[i..].starts_with("crate::") {
            (true, i + "crate::".len())
        } else if boundary && code[i..].starts_with("super::") {
            let mut j = i;
            let mut ups = 0;
            while code[j..].starts_with("super::") {
                ups += 1;
                j += "super::".len();
            }
            (ups >= depth, j)
        } else {
            i += 1;
            continue;
        };
        if root {
            let mut names = Vec::new();
            if code[rest..].starts_with('{') {
                let mut level = 0;
                let mut item_start = true;
                for (n, c) in code[rest..].char_indices() {
                    match c {
                        '{' => {
                            level += 1;
                            item_start = level == 1;
                        }
                        '}' => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        ',' if level == 1 => item_start = true,
                        c if item_start && (c.is_alphanumeric() || c == '_') => {
                            let s = &code[rest + n..];
                            names.push(s[..ident_end(s)].to_string());
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                let s = &code[rest..];
                names.push(s[..ident_end(s)].to_string());
            }
            for name in names.into_iter().filter(|n| n != "self") {
                let module = reexports.get(&name).cloned().unwrap_or(name);
                found.push((module, line_of(i)));
            }
        }
        i = rest;
    }
    found
}

/// What `pub use module::…` at the crate root re-exports, name → module.
fn crate_reexports(lib_rs: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in code_only(lib_rs).lines().map(str::trim) {
        let Some(rest) = line.strip_prefix("pub use ") else { continue };
        let rest = rest.trim_end_matches(';');
        let Some((module, names)) = rest.split_once("::") else { continue };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim();
            let name = name.rsplit(" as ").next().unwrap().trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.to_string());
            }
        }
    }
    map
}

/// Source files of the crate other than its root: (path shown in messages, top-level module,
/// depth below the root, text).
fn crate_sources(src: &Path) -> Vec<(String, String, usize, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| p.strip_prefix(src).unwrap() != Path::new("lib.rs"))
        .map(|p| {
            let rel = p.strip_prefix(src).unwrap();
            let parts: Vec<String> =
                rel.iter().map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
            let depth = if parts.last().unwrap() == "mod" { parts.len() - 1 } else { parts.len() };
            let text = std::fs::read_to_string(&p).unwrap();
            (format!("src/{}", rel.display()), parts[0].clone(), depth, text)
        })
        .collect()
}

/// Every way the sources break the layers: a module in no layer or in two, a listed module with
/// no source, a use of a module not below the user's layer.
fn violations(
    layers: &[Vec<String>],
    sources: &[(String, String, usize, String)],
    reexports: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut layer_of = BTreeMap::new();
    for (n, layer) in layers.iter().enumerate() {
        for module in layer {
            if layer_of.insert(module.clone(), n).is_some() {
                problems.push(format!("`{module}` is listed in two layers"));
            }
        }
    }
    let present: BTreeSet<&String> = sources.iter().map(|s| &s.1).collect();
    for module in layer_of.keys() {
        if !present.contains(module) {
            problems.push(format!("`{module}` is listed as a layer's module but has no source file"));
        }
    }
    for module in &present {
        if !layer_of.contains_key(*module) {
            problems.push(format!(
                "module `{module}` is in no layer: add it to the list in src/lib.rs and docs/ARCHITECTURE.md"
            ));
        }
    }
    for (file, module, depth, text) in sources {
        let Some(&own) = layer_of.get(module) else { continue };
        let code = without_test_modules(&code_only(text));
        for (used, line) in used_modules(&code, *depth, reexports) {
            if used == *module {
                continue;
            }
            match layer_of.get(&used) {
                Some(&layer) if layer > own => {}
                Some(&layer) => problems.push(format!(
                    "{file}:{line}: `{module}` (layer {}) uses `{used}` (layer {}): a module uses only layers below its own",
                    own + 1,
                    layer + 1
                )),
                None => problems.push(format!("{file}:{line}: `{module}` uses `crate::{used}`, which is no module of a layer")),
            }
        }
    }
    problems
}

fn core_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_use_goes_down_the_layers_lib_rs_lists() {
    let lib_rs = std::fs::read_to_string(core_dir().join("src/lib.rs")).unwrap();
    let layers = parse_layers(&layer_block(&lib_rs));
    let problems = violations(&layers, &crate_sources(&core_dir().join("src")), &crate_reexports(&lib_rs));
    assert!(problems.is_empty(), "the engine's code does not follow its layers:\n{}", problems.join("\n"));
}

#[test]
fn architecture_md_shows_the_same_layers_as_lib_rs() {
    let lib_rs = std::fs::read_to_string(core_dir().join("src/lib.rs")).unwrap();
    let block = layer_block(&lib_rs).join("\n");
    let doc_path = core_dir().join("../../../docs/ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_else(|e| panic!("reading {}: {e}", doc_path.display()));
    assert!(
        doc.contains(&format!("```text\n{block}\n```")),
        "docs/ARCHITECTURE.md must show the layer list of src/lib.rs's `## Layers`, verbatim in a ```text block:\n{block}"
    );
}

/// The checker itself: an upward use, a use between modules of one layer, a module missing from
/// the list, and a use hidden in a `crate::{…}` group or behind `super::` are all reported;
/// uses inside comments, strings and test modules are not.
#[test]
fn the_checker_reports_each_kind_of_break() {
    let layers = parse_layers(&["top  t".to_string(), "mid, side  m".to_string(), "low  l".to_string()]);
    let src = |file: &str, module: &str, depth: usize, text: &str| {
        (file.to_string(), module.to_string(), depth, text.to_string())
    };
    let reexports = BTreeMap::from([("Thing".to_string(), "top".to_string())]);
    let clean = [
        src("src/top.rs", "top", 1, "use crate::mid::A;\nuse crate::{low::B, side};\n"),
        src("src/mid.rs", "mid", 1, "// crate::top in a comment\nconst S: &str = \"crate::top\";\nuse crate::low::C;\n#[cfg(test)]\nmod tests {\n    use crate::top::T;\n    fn f() { let _ = '{'; }\n}\n"),
        src("src/side.rs", "side", 1, "fn f<'a>(x: &'a str) -> &'a str { x }\n"),
        src("src/low/mod.rs", "low", 1, "mod inner;\n"),
        src("src/low/inner.rs", "low", 2, "use super::X;\nuse crate::low::Y;\n"),
    ];
    assert_eq!(violations(&layers, &clean, &reexports), Vec::<String>::new());

    let broken = [
        src("src/top.rs", "top", 1, "use crate::mid::A;\n"),
        src("src/mid.rs", "mid", 1, "use crate::{low::C, side::D};\n"),
        src("src/side.rs", "side", 1, "\n\nfn f() -> crate::Thing { todo!() }\n"),
        src("src/low/mod.rs", "low", 1, "mod inner;\n"),
        src("src/low/inner.rs", "low", 2, "use super::super::mid::M;\n"),
        src("src/extra.rs", "extra", 1, ""),
    ];
    let problems = violations(&layers, &broken, &reexports);
    let expect = [
        "src/mid.rs:1: `mid` (layer 2) uses `side` (layer 2)",
        "src/side.rs:3: `side` (layer 2) uses `top` (layer 1)",
        "src/low/inner.rs:1: `low` (layer 3) uses `mid` (layer 2)",
        "module `extra` is in no layer",
    ];
    for e in expect {
        assert!(
            problems.iter().any(|p| p.starts_with(e)),
            "expected a report starting with {e:?}, got:\n{}",
            problems.join("\n")
        );
    }
    assert_eq!(problems.len(), expect.len(), "{}", problems.join("\n"));
}
