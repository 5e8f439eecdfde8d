//! The crate graph points one way: core ← runtime ← adapters ← mains; the test kits are
//! only ever dev-dependencies; and the lower layers stay free of the I/O crates. Read from
//! `cargo metadata`, so a dependency added against these rules fails here, naming it.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// Each workspace crate's layer: a crate may depend (normal and build dependencies) only on
/// crates of a lower layer. Test support sits above the adapters it drives and below the
/// mains, which use it only as a dev-dependency.
const LAYERS: &[(&str, &[&str])] = &[
    ("core", &["baton-core"]),
    // The in-process adapters and the test doubles stand on the core's ports alone, beside
    // the runtime.
    (
        "runtime and in-process adapters",
        &["baton-runtime", "baton-inproc", "baton-testkit"],
    ),
    (
        "adapters",
        &[
            "baton-evals",
            "baton-connectors",
            "baton-local",
            "baton-http",
            "baton-aws",
            "baton-openai",
            "baton-otel",
            "baton-minilm",
        ],
    ),
    (
        "test support",
        &["baton-tests", "baton-hello-lambda", "baton-fuzz-targets"],
    ),
    (
        "mains",
        &[
            "baton-cli",
            "baton-turn",
            "baton-history-writer",
            "baton-compaction",
            "baton-eval-runner",
            "baton-bench",
        ],
    ),
];

/// Crates that serve tests only: any crate may use them as a dev-dependency, and none (but
/// the test support above the kit) as a normal one, so that no binary links them. (The
/// fuzz targets' bodies are also linked by the libFuzzer binaries of `fuzz/`, a workspace
/// of its own.)
const TEST_ONLY: &[&str] = &["baton-testkit", "baton-tests", "baton-fuzz-targets"];

/// External crates a layer may not reach, directly or through any other crate: the core is
/// pure (no async runtime, network, HTTP, database or AWS), the runtime adds tokio but no
/// SDK, HTTP server or database. A name ending in `*` is a prefix.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "baton-core",
        &[
            "tokio",
            "mio",
            "socket2",
            "reqwest",
            "hyper",
            "axum",
            "tower",
            "rmcp",
            "rusqlite",
            "libsqlite3-sys",
            "rustls",
            "ring",
            "lambda_runtime",
            "lambda_http",
            "aws-config",
            "aws-sdk-*",
            "aws-smithy-runtime",
        ],
    ),
    (
        "baton-runtime",
        &[
            "reqwest",
            "hyper",
            "axum",
            "tower",
            "rmcp",
            "rusqlite",
            "libsqlite3-sys",
            "rustls",
            "lambda_runtime",
            "lambda_http",
            "aws-config",
            "aws-sdk-*",
            "aws-smithy-runtime",
        ],
    ),
];

fn layer(name: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, crates))| crates.contains(&name))
        .map(|(rank, (layer, _))| (rank, *layer))
}

/// Every dependency between workspace crates that runs against the layers, and every
/// workspace crate the table does not place, as plain sentences.
fn violations(metadata: &Value) -> Vec<String> {
    let members: Vec<&str> = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        let Some((rank, from)) = layer(name) else {
            found.push(format!("{name} is in no layer: add it to LAYERS"));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            // Dev-dependencies serve tests, which may drive anything built below them.
            if dep["kind"].as_str() == Some("dev") || !members.contains(&dep_name) {
                continue;
            }
            if TEST_ONLY.contains(&dep_name) && !TEST_ONLY.contains(&name) {
                found.push(format!(
                    "{name} depends on {dep_name}, which serves tests only: make it a dev-dependency"
                ));
                continue;
            }
            match layer(dep_name) {
                Some((dep_rank, to)) if dep_rank >= rank => found.push(format!(
                    "{name} ({from}) depends on {dep_name} ({to}): a crate may depend only on lower layers"
                )),
                _ => {}
            }
        }
    }
    found
}

/// Every forbidden external crate a guarded crate reaches through normal dependencies, as
/// the chain that reaches it (`baton-core → futures → tokio`).
fn forbidden_reached(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().into_iter().flatten();
    let names: BTreeMap<&str, &str> = packages
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let name_of = |id: &str| names.get(id).copied().unwrap_or(id).to_owned();
    // Each package's normal (linked) dependencies, by id.
    let normal: BTreeMap<&str, Vec<String>> = metadata["resolve"]["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| {
            let deps = n["deps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|k| k["kind"].is_null())
                })
                .filter_map(|d| d["pkg"].as_str().map(str::to_owned))
                .collect();
            Some((n["id"].as_str()?, deps))
        })
        .collect();
    let matches = |rule: &str, name: &str| match rule.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => rule == name,
    };
    let mut found = Vec::new();
    for (guarded, rules) in FORBIDDEN {
        let Some(start) = names
            .iter()
            .find(|(_, name)| *name == guarded)
            .map(|(id, _)| *id)
        else {
            found.push(format!("{guarded} is not in the workspace"));
            continue;
        };
        // Breadth-first, remembering how each crate was reached.
        let mut came_from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.to_owned()]);
        let mut named = std::collections::BTreeSet::new();
        while let Some(id) = queue.pop_front() {
            for dep in normal.get(id.as_str()).into_iter().flatten().cloned() {
                if dep == start || came_from.contains_key(&dep) {
                    continue;
                }
                came_from.insert(dep.clone(), id.clone());
                let dep_name = name_of(&dep);
                if let Some(rule) = rules.iter().find(|r| matches(r, &dep_name)) {
                    if named.insert(*rule) {
                        let mut chain = vec![dep_name.clone()];
                        let mut at = dep.clone();
                        while let Some(prev) = came_from.get(&at) {
                            chain.push(name_of(prev));
                            at = prev.clone();
                        }
                        chain.reverse();
                        found.push(format!(
                            "{guarded} may not depend on {rule}, and reaches it: {}",
                            chain.join(" → ")
                        ));
                    }
                    continue;
                }
                queue.push_back(dep);
            }
        }
    }
    found
}

fn workspace_metadata() -> Value {
    metadata(&["--no-deps"])
}

fn full_metadata() -> Value {
    metadata(&[])
}

fn metadata(extra: &[&str]) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(extra)
        .current_dir(baton_testkit::crate_dir())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// `from` given a normal dependency on `to`, as a careless edit would add it.
fn add_normal_dependency(metadata: &mut Value, from: &str, to: &str) {
    let package = metadata["packages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["name"] == from)
        .unwrap();
    package["dependencies"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": to, "kind": null }));
}

#[test]
fn the_workspace_depends_only_downwards() {
    let metadata = workspace_metadata();
    let crates = metadata["packages"].as_array().map(Vec::len).unwrap_or(0);
    assert!(crates >= 10, "cargo metadata listed only {crates} crates");
    let found = violations(&metadata);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_dependency_against_the_layers_is_named() {
    let mut metadata = workspace_metadata();
    // The core reaching up into the runtime, as a careless edit would make it.
    add_normal_dependency(&mut metadata, "baton-core", "baton-runtime");
    assert_eq!(
        violations(&metadata),
        [
            "baton-core (core) depends on baton-runtime (runtime and in-process adapters): a crate may depend only on lower layers"
        ]
    );
}

#[test]
fn a_crate_outside_the_table_is_named() {
    let mut metadata = workspace_metadata();
    metadata["packages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": "baton-new", "dependencies": [] }));
    assert_eq!(
        violations(&metadata),
        ["baton-new is in no layer: add it to LAYERS"]
    );
}

#[test]
fn a_normal_dependency_on_a_test_kit_is_named() {
    let mut metadata = workspace_metadata();
    add_normal_dependency(&mut metadata, "baton-cli", "baton-testkit");
    assert_eq!(
        violations(&metadata),
        ["baton-cli depends on baton-testkit, which serves tests only: make it a dev-dependency"]
    );
}

#[test]
fn the_core_and_the_runtime_reach_no_forbidden_crate() {
    let metadata = full_metadata();
    let found = forbidden_reached(&metadata);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The rule reads the real graph: the runtime does reach tokio, which only the core
    // may not.
    assert!(
        metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "tokio")
    );
}

#[test]
fn a_forbidden_crate_reached_through_another_is_named_with_its_chain() {
    let mut metadata = full_metadata();
    let id_of = |m: &Value, name: &str| -> String {
        m["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let core = id_of(&metadata, "baton-core");
    let tokio = id_of(&metadata, "tokio");
    let serde_json = id_of(&metadata, "serde_json");
    // serde_json (which the core uses) made to pull in tokio, as a careless feature would.
    let nodes = metadata["resolve"]["nodes"].as_array_mut().unwrap();
    let node = nodes.iter_mut().find(|n| n["id"] == serde_json).unwrap();
    node["deps"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "tokio", "pkg": tokio, "dep_kinds": [{ "kind": null, "target": null }]
        }));
    let found = forbidden_reached(&metadata);
    assert!(
        found.contains(
            &"baton-core may not depend on tokio, and reaches it: baton-core → serde_json → tokio"
                .to_owned()
        ),
        "{found:?} ({core})"
    );
}
