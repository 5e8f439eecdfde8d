//! The crate graph points one way: core ← runtime ← adapters ← mains. Read from
//! `cargo metadata`, so a dependency added against the arrows fails here, naming it.

use std::process::Command;

use serde_json::Value;

/// Each workspace crate's layer: a crate may depend (normal and build dependencies) only on
/// crates of a lower layer. Test support sits above the adapters it drives and below the
/// mains, which use it only as a dev-dependency.
const LAYERS: &[(&str, &[&str])] = &[
    ("core", &["baton-core"]),
    // The test doubles stand on the core's ports alone, beside the runtime.
    (
        "runtime and test doubles",
        &["baton-runtime", "baton-testkit"],
    ),
    (
        "adapters",
        &[
            "baton-connectors",
            "baton-local",
            "baton-http",
            "baton-aws",
            "baton-openai",
        ],
    ),
    ("test support", &["baton-tests"]),
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

fn workspace_metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
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
    let core = metadata["packages"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["name"] == "baton-core")
        .unwrap();
    core["dependencies"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "name": "baton-runtime", "kind": null }));
    assert_eq!(
        violations(&metadata),
        [
            "baton-core (core) depends on baton-runtime (runtime and test doubles): a crate may depend only on lower layers"
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
