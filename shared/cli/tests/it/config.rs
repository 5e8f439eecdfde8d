//! Configuration layers: `baton.toml`, `BATON_*` variables, flags; bad values name the key.

use crate::support::*;

#[test]
fn a_bad_variable_names_its_key() {
    let sandbox = Sandbox::new();
    let run: Run = sandbox
        .baton()
        .env("BATON_MAX_MESSAGE_CHARS", "abc")
        .args(["chat", "--registry", registry(), "hello"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.to_lowercase().contains("max_message_chars"),
        "{run:?}"
    );
    assert!(run.stderr.contains("abc"), "{run:?}");
}

#[test]
fn a_bad_key_in_baton_toml_is_named() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("baton.toml"),
        "max_body_bytes = \"lots\"\n",
    )
    .unwrap();
    let run = sandbox.run(&["validate", registry()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("max_body_bytes"), "{run:?}");
}

#[test]
fn baton_toml_in_the_working_folder_is_read() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("baton.toml"),
        format!("registry = {:?}\n", registry()),
    )
    .unwrap();
    let run = sandbox.run(&["validate"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_variable_wins_over_the_file_and_a_flag_over_both() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("baton.toml"),
        "registry = \"nowhere-1\"\n",
    )
    .unwrap();
    let run: Run = sandbox
        .baton()
        .env("BATON_REGISTRY", "nowhere-2")
        .arg("validate")
        .output()
        .unwrap()
        .into();
    assert!(run.stderr.contains("nowhere-2"), "{run:?}");
    let run: Run = sandbox
        .baton()
        .env("BATON_REGISTRY", "nowhere-2")
        .args(["validate", registry()])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_named_config_file_must_exist() {
    let run = Sandbox::new().run(&["--config", "missing.toml", "validate", registry()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("missing.toml"), "{run:?}");
}

#[test]
fn an_unknown_model_is_named() {
    let run = Sandbox::new().run(&["chat", "--model", "gpt", "--registry", registry(), "hi"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("\"model\""), "{run:?}");
}
