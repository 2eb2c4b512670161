//! The plan inside each of the hub's crates kept by a test: a crate's top-level modules,
//! with an edge for every `crate::X` a module's code names, form no cycle. Between the
//! crates, cargo keeps the direction (store ← core ← notify, sync ← hub).
//!
//! Invariant: there is none; a new cycle fails this test, naming its crate and modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The cycles allowed, as the set of modules each spans: none.
const ALLOWED_CYCLES: &[&[&str]] = &[];

/// The hub's crates, as folders beside this one.
const CRATES: &[&str] = &["store", "core", "notify", "sync", "hub"];

/// The top-level modules `lib.rs` declares.
fn modules(src: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

/// A module's source files: `X.rs` and everything under `X/`.
fn files_of(src: &Path, module: &str) -> Vec<PathBuf> {
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
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.exists() {
        out.push(file);
    }
    let dir = src.join(module);
    if dir.is_dir() {
        walk(&dir, &mut out);
    }
    out
}

/// The first path segments a text names after `crate::`, as `crate::x::…`
/// or `crate::{x, y::{…}}`; comment lines are not code.
fn named(text: &str) -> BTreeSet<String> {
    let code: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let code = code.join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(word);
            continue;
        };
        // The group's top level only: nested braces name sub-paths.
        let (mut depth, mut top) = (0, String::new());
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                _ if depth == 0 => top.push(c),
                _ => {}
            }
        }
        for item in top.split(',') {
            let first = item.trim().split("::").next().unwrap_or_default();
            out.insert(first.to_owned());
        }
    }
    out
}

/// Module → the other top-level modules of the crate in `src` its code names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    let known: BTreeSet<&String> = modules.iter().collect();
    let mut edges = BTreeMap::new();
    for m in &modules {
        let mut to = BTreeSet::new();
        for file in files_of(src, m) {
            let text = std::fs::read_to_string(&file).unwrap();
            to.extend(
                named(&text)
                    .into_iter()
                    .filter(|n| n != m && known.contains(n)),
            );
        }
        edges.insert(m.clone(), to);
    }
    edges
}

fn reachable(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(m) = todo.pop() {
        for next in &edges[&m] {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn the_top_level_modules_of_each_crate_form_no_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut modules = 0;
    for krate in CRATES {
        let edges = graph(&workspace.join(krate).join("src"));
        modules += edges.len();
        let new = new_cycles(&edges);
        assert!(
            new.is_empty(),
            "module cycles in {krate}: {new:?}\nedges: {edges:#?}"
        );
    }
    assert!(
        modules > 20,
        "the crates' modules were not found: {modules}"
    );
}

/// The cycles of `edges` not in [`ALLOWED_CYCLES`], each as the set of modules it spans.
fn new_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reachable(edges, m))).collect();
    let mut cycles: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, from_m) in &reach {
        if from_m.contains(*m) {
            let cycle: Vec<String> = from_m
                .iter()
                .filter(|n| reach[n].contains(*m))
                .cloned()
                .collect();
            cycles.insert(cycle);
        }
    }
    let allowed: BTreeSet<Vec<String>> = ALLOWED_CYCLES
        .iter()
        .map(|c| c.iter().map(|s| (*s).to_owned()).collect())
        .collect();
    cycles.difference(&allowed).cloned().collect()
}

#[test]
fn uses_are_read_from_paths_and_groups() {
    let text = "use crate::a::X;\n// crate::b in a comment\nuse crate::{c, d::{e, f}};\nlet _ = crate::g::h();";
    let got: Vec<String> = named(text).into_iter().collect();
    assert_eq!(got, ["a", "c", "d", "g"]);
}
