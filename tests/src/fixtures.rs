//! Shared test data: where the repository's files are, and a scripted turn over the shipped
//! registry.

// Test support: a broken fixture is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_core::ports::connector::Connector;
use baton_core::registry::Registry;

/// The repository root.
pub fn repo_root() -> PathBuf {
    baton_testkit::workspace_root()
}

/// The shipped registry (`shared/registry`).
pub fn registry_dir() -> PathBuf {
    repo_root().join("shared/registry")
}

/// The registry in `root` (the shipped one, or a copy of it), validated against the
/// default connectors, with those connectors: what a runtime over it is built from.
///
/// # Panics
/// When the registry does not load.
pub fn registry_at(root: &Path) -> (Arc<Registry>, BTreeMap<String, Arc<dyn Connector>>) {
    let connectors = baton_connectors::default_connectors(root);
    let sources = baton_runtime::registry_folder::read_sources(root).expect("reading the registry");
    let registry =
        baton_runtime::registry_folder::load_sources(&sources, &connectors, &Default::default())
            .expect("loading the registry");
    (Arc::new(registry), connectors)
}

/// Copies a folder tree (e.g. the registry, to change a copy of it).
///
/// # Panics
/// When a file cannot be read or written.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creating a folder");
    for entry in std::fs::read_dir(from).expect("reading a folder") {
        let entry = entry.expect("reading a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copying a file");
        }
    }
}

/// Every file under `dir` with one of `extensions`, in path order, skipping build output
/// (`target*`) and git's own folder. Symbolic links are not followed, so a loop cannot trap
/// the walk.
///
/// # Panics
/// When a folder cannot be listed.
pub fn files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry"))
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().expect("a file type");
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() && name != ".git" && !name.starts_with("target") {
            files.extend(files_under(&path, extensions));
        } else if kind.is_file()
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.contains(&e))
        {
            files.push(path);
        }
    }
    files
}

/// A sample invocation event from `events/`.
///
/// # Panics
/// When the file cannot be read.
pub fn event(name: &str) -> Vec<u8> {
    let path = repo_root().join("events").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A scripted turn over the shipped registry: the orchestrator routes "coffee deals" to
/// `shop`, which answers from text, then composes.
pub const SHOP_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Checking offers. "]
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Bean Street coffee ", "earns 1,000 points."]
  shop:
    - text: ["Bean Street coffee earns 1,000 points."]
"#;
