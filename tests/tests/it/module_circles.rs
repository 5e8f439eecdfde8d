//! No module circles: inside every crate of the workspace, the modules of every folder form
//! layers, so that each can be read (and moved) after the ones it uses. Read from the `use` lines and paths of the source files themselves; a circle
//! fails here, named as the chain of modules that closes it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source folders of every crate of the workspace (`shared/*/src`, `functions/*/src`,
/// `tests/src`, `tests/*/src`): each module tree must stay circle-free, at every level.
fn trees(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for group in ["shared", "functions", "tests"] {
        let Ok(entries) = std::fs::read_dir(root.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("src").is_dir() && entry.path().join("Cargo.toml").is_file() {
                out.push(format!(
                    "{group}/{}/src",
                    entry.file_name().to_string_lossy()
                ));
            }
        }
    }
    out.push("tests/src".to_owned());
    out.sort();
    out
}

/// One source file: its module path from the crate root and its text before the tests.
struct Source {
    module: Vec<String>,
    text: String,
}

/// The module path of `file` under `src` (`engine/planner/mod.rs` is `engine::planner`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Test-only code does not count: `tests.rs` and `props.rs` files, files under a `tests`
/// folder, and whatever follows `#[cfg(test)]` in a file.
fn is_test_file(module: &[String]) -> bool {
    module.iter().any(|p| p == "tests" || p == "props")
}

fn read_sources(src: &Path) -> Vec<Source> {
    baton_tests::fixtures::files_under(src, &["rs"])
        .into_iter()
        .filter_map(|path| {
            let module = module_of(src, &path);
            if is_test_file(&module) {
                return None;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let text = match text.find("#[cfg(test)]") {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            Some(Source { module, text })
        })
        .collect()
}

/// Every path that starts at `crate::`, `super::` or `self::` in `text`, with `use` groups
/// (`crate::{a::B, c::{D, E}}`) expanded, each as its segments (`["crate", "a", "B"]`).
fn paths_in(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        if starts_word
            && (rest.starts_with("crate::")
                || rest.starts_with("super::")
                || rest.starts_with("self::"))
        {
            let (paths, end) = parse_tree(&chars, i, Vec::new());
            out.extend(paths);
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Parses a use tree at `at` under `prefix`: `a::b::{c, d::e}` gives `a::b::c` and
/// `a::b::d::e`. Returns the paths and where the tree ends.
fn parse_tree(chars: &[char], mut at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        while at < chars.len() && chars[at].is_whitespace() {
            at += 1;
        }
        if at < chars.len() && chars[at] == '{' {
            at += 1;
            let mut all = Vec::new();
            loop {
                while at < chars.len() && (chars[at].is_whitespace() || chars[at] == ',') {
                    at += 1;
                }
                if at >= chars.len() || chars[at] == '}' {
                    return (all, at + 1);
                }
                let (paths, end) = parse_tree(chars, at, path.clone());
                all.extend(paths);
                if end <= at {
                    return (all, at + 1);
                }
                at = end;
            }
        }
        let start = at;
        while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
            at += 1;
        }
        if at == start {
            return (vec![path], at);
        }
        path.push(chars[start..at].iter().collect());
        if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
            at += 2;
        } else {
            return (vec![path], at);
        }
    }
}

/// The absolute module path `path` names, seen from the file whose module is `from` (a
/// `mod.rs` is its folder's module, so `super` there is the folder's parent).
fn resolve(from: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = from.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    base
}

/// The edges between the children of `parent`: (from child, to child) for every path in a
/// child's files that reaches into another child.
fn edges(sources: &[Source], parent: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let children: BTreeSet<String> = sources
        .iter()
        .filter(|s| s.module.len() > parent.len() && s.module.starts_with(parent))
        .map(|s| s.module[parent.len()].clone())
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        if source.module.len() <= parent.len() || !source.module.starts_with(parent) {
            continue;
        }
        let from = &source.module[parent.len()];
        for path in paths_in(&source.text) {
            let target = resolve(&source.module, &path);
            if target.len() <= parent.len() || !target.starts_with(parent) {
                continue;
            }
            let to = &target[parent.len()];
            if to != from && children.contains(to) {
                graph.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    graph
}

/// Each circle in `graph`, as the chain that closes it (`a → b → a`), one per strongly
/// connected group of modules.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reaches = |from: &str, to: &str| -> Option<Vec<String>> {
        // Breadth-first, so the chain named is a shortest one.
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from.to_owned()]);
        while let Some(at) = queue.pop_front() {
            for next in graph.get(&at).into_iter().flatten() {
                if seen.contains_key(next) {
                    continue;
                }
                seen.insert(next.clone(), at.clone());
                if next == to {
                    let mut chain = vec![to.to_owned()];
                    let mut cur = to.to_owned();
                    while let Some(prev) = seen.get(&cur) {
                        chain.push(prev.clone());
                        if prev == from {
                            break;
                        }
                        cur = prev.clone();
                    }
                    chain.reverse();
                    return Some(chain);
                }
                queue.push_back(next.clone());
            }
        }
        None
    };
    let mut named: BTreeSet<String> = BTreeSet::new();
    let mut found = Vec::new();
    for module in graph.keys() {
        if named.contains(module) {
            continue;
        }
        if let Some(chain) = reaches(module, module) {
            named.extend(chain.iter().cloned());
            found.push(chain.join(" → "));
        }
    }
    found
}

fn repository_circles() -> Vec<String> {
    let root: PathBuf = baton_testkit::workspace_root();
    let mut found = Vec::new();
    let trees = trees(&root);
    assert!(
        trees.len() > 15,
        "only {} crates found: {trees:?}",
        trees.len()
    );
    for src in &trees {
        let sources = read_sources(&root.join(src));
        assert!(!sources.is_empty(), "{src}: no file read");
        // Every folder module (the crate root included) is a level whose children are
        // checked against each other.
        let parents: BTreeSet<Vec<String>> = sources
            .iter()
            .flat_map(|s| (0..s.module.len()).map(|k| s.module[..k].to_vec()))
            .collect();
        for parent in parents {
            for circle in circles(&edges(&sources, &parent)) {
                let at = if parent.is_empty() {
                    "the crate root".to_owned()
                } else {
                    parent.join("::")
                };
                found.push(format!("{src}, in {at}: {circle}"));
            }
        }
    }
    found
}

#[test]
fn no_crate_has_a_module_circle() {
    let found = repository_circles();
    assert!(found.is_empty(), "module circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_through_a_use_group_and_super_is_named() {
    let sources = vec![
        Source {
            module: vec!["plan".into(), "tools".into()],
            text: "use crate::{ports::model::ToolDef, registry::{Skill, SkillCatalog}};".into(),
        },
        Source {
            module: vec!["registry".into()],
            text: "pub(crate) fn f() -> super::plan::tools::X { todo() }".into(),
        },
        Source {
            module: vec!["ports".into(), "model".into()],
            text: "use super::store::Store; // inside ports: not an edge between children".into(),
        },
        Source {
            module: vec!["ports".into(), "store".into()],
            text: String::new(),
        },
    ];
    let graph = edges(&sources, &[]);
    assert_eq!(
        graph
            .get("plan")
            .map(|s| s.iter().cloned().collect::<Vec<_>>()),
        Some(vec!["ports".to_owned(), "registry".to_owned()])
    );
    assert_eq!(circles(&graph), ["plan → registry → plan"]);
    let inside_ports = edges(&sources, &["ports".to_owned()]);
    assert_eq!(circles(&inside_ports), Vec::<String>::new());
    assert_eq!(
        inside_ports.get("model").map(BTreeSet::len),
        Some(1),
        "{inside_ports:?}"
    );
}
