//! `models.yaml`: a file that does not parse, a capability that does not exist, deployment ids.

use super::fixtures::{edit, expect_error, load_errors, sources};
use crate::registry::{LoadErrors, LoadOptions, Registry};

#[test]
fn malformed_tools_and_models_files_are_named() {
    let mut s = sources();
    edit(&mut s, "tools.yaml", "tools:\n", "tools: [\n");
    edit(&mut s, "models.yaml", "models:\n", "modles:\n");
    let errors = load_errors(&s);
    expect_error(&errors, "tools.yaml", "(file)", "");
    let e = expect_error(&errors, "models.yaml", "(file)", "");
    assert!(e.problem.contains("modles"), "{e}");
}

#[test]
fn an_unknown_reasoning_capability_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "models.yaml",
        "parallel_tool_calls: true}",
        "parallel_tool_calls: true, reasoning_effort: telepathy}",
    );
    let errors = load_errors(&s);
    assert!(
        errors.iter().any(|e| e.file == "models.yaml"),
        "{}",
        LoadErrors(errors.clone())
    );
}

#[test]
fn deployment_model_ids_replace_those_of_models_yaml_after_parsing() {
    let s = sources();
    let plain = Registry::load(&s, &LoadOptions::default()).unwrap();
    let (key, before) = plain
        .models()
        .map(|m| (m.key.to_string(), m.model_id.to_string()))
        .next()
        .unwrap();
    let options = LoadOptions {
        model_ids: [(key.clone(), "eu.deployed-id-v1:0".to_owned())].into(),
        ..LoadOptions::default()
    };
    let deployed = Registry::load(&s, &options).unwrap();
    assert_ne!(before, "eu.deployed-id-v1:0");
    assert_eq!(
        &*deployed.model(&key).unwrap().model_id,
        "eu.deployed-id-v1:0"
    );
    // Every card on that model sees the deployed id; other models keep theirs.
    for agent in deployed.agents() {
        let expected = plain.model(&agent.model.key).unwrap();
        if *agent.model.key == *key {
            assert_eq!(&*agent.model.model_id, "eu.deployed-id-v1:0");
        } else {
            assert_eq!(agent.model.model_id, expected.model_id);
        }
    }
    // A key that names no model changes nothing.
    let options = LoadOptions {
        model_ids: [("no-such-model".to_owned(), "x".to_owned())].into(),
        ..LoadOptions::default()
    };
    let same = Registry::load(&s, &options).unwrap();
    assert_eq!(
        format!("{:?}", same.models().collect::<Vec<_>>()),
        format!("{:?}", plain.models().collect::<Vec<_>>())
    );
}
