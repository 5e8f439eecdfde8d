//! `baton validate`.

use crate::support::*;

#[test]
fn the_shipped_registry_is_valid() {
    let run = Sandbox::new().run(&["validate", registry()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("registry OK: 8 agents, "), "{run:?}");
    assert!(run.stdout.contains(" tools, "), "{run:?}");
}

#[test]
fn a_broken_registry_names_file_field_and_value() {
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("registry");
    copy_dir(std::path::Path::new(registry()), &copy);
    let card = copy.join("agents/shop.yaml");
    let text = std::fs::read_to_string(&card).unwrap();
    std::fs::write(&card, text.replace("- search_offers", "- search_ofers")).unwrap();

    let run = sandbox.run(&["validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{run:?}");
    for part in ["agents/shop.yaml", "tools", "search_ofers"] {
        assert!(run.stderr.contains(part), "missing {part:?}: {run:?}");
    }
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn a_missing_registry_is_a_plain_error() {
    let run = Sandbox::new().run(&["validate", "no/such/registry"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no/such/registry"), "{run:?}");
    assert!(
        run.stderr.contains("--registry"),
        "it says how to give one: {run:?}"
    );
    assert!(!run.stderr.contains("panicked"), "{run:?}");
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let run = Sandbox::new().run(&["frobnicate"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn a_specialist_added_without_eval_cases_is_a_warning_and_with_strict_an_error() {
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("registry");
    copy_dir(std::path::Path::new(registry()), &copy);
    // A fifth specialist: a copy of rewards under another id, listed by the orchestrator.
    let card = std::fs::read_to_string(copy.join("agents/rewards.yaml")).unwrap();
    std::fs::write(
        copy.join("agents/perks.yaml"),
        card.replace("id: rewards", "id: perks"),
    )
    .unwrap();
    let orchestrator = copy.join("agents/orchestrator.yaml");
    let text = std::fs::read_to_string(&orchestrator).unwrap();
    let with_perks = text.replacen(
        "sub_agents: [shop, support, rewards, strategist, stores, memory]",
        "sub_agents: [shop, support, rewards, strategist, stores, memory, perks]",
        1,
    );
    assert_ne!(text, with_perks, "the orchestrator's sub-agents as shipped");
    std::fs::write(&orchestrator, with_perks).unwrap();

    let run = sandbox.run(&["validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("warning: perks has 0 single-intent eval case(s)"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("no eval case switches from shop to perks"),
        "{run:?}"
    );
    let strict = sandbox.run(&["validate", "--strict", copy.to_str().unwrap()]);
    assert_eq!(strict.code, 1, "{strict:?}");
    assert!(
        strict
            .stderr
            .contains("the eval suites do not cover the specialists"),
        "{strict:?}"
    );
}

/// A team's own tools and model, declared in YAML only, are checked by `baton validate`:
/// a secret variable that is not set, an MCP server that cannot be started, and a model
/// server that does not answer are each named.
#[test]
fn validate_names_an_unset_secret_an_unreachable_mcp_server_and_a_silent_model_server() {
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("registry");
    copy_dir(std::path::Path::new(registry()), &copy);
    let tools = copy.join("tools.yaml");
    let mut text = std::fs::read_to_string(&tools).unwrap();
    text.push_str(
        r#"
  partner_points:
    description: Points at the partner.
    connector:
      kind: http
      url: https://partner.example/points
      headers: { Authorization: { env: BATON_TEST_UNSET_TOKEN, prefix: "Bearer " } }
    schema: { type: object, properties: {}, additionalProperties: false }
  desk_lookup:
    connector:
      kind: mcp
      server: { command: [/nonexistent/mcp-server, stdio] }
      domain_type: desk
      enricher_id: desk
      version: 1.0.0
"#,
    );
    std::fs::write(&tools, text).unwrap();
    let run = sandbox.run(&["validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    for part in [
        "BATON_TEST_UNSET_TOKEN",
        "/nonexistent/mcp-server",
        "desk_lookup",
    ] {
        assert!(run.stderr.contains(part), "missing {part:?}: {run:?}");
    }

    // The shipped tools again, and a model on a server that is not there.
    let shipped = std::path::Path::new(registry()).join("tools.yaml");
    std::fs::copy(shipped, &tools).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let models = copy.join("models.yaml");
    let mut text = std::fs::read_to_string(&models).unwrap();
    text.push_str(&format!(
        "\n  mine:\n    provider: openai_compatible\n    base_url: {url}\n    model_id: m\n    \
         context_window: 8192\n    prices: {{input: 0, output: 0}}\n    capabilities: {{tool_choice: true}}\n"
    ));
    std::fs::write(&models, text).unwrap();
    let run = sandbox.run(&["--model", "mine", "validate", copy.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&url), "{run:?}");
    assert!(run.stderr.contains("model mine"), "{run:?}");
    let run = sandbox.run(&[
        "--model",
        "nothing-like-it",
        "validate",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("mine"),
        "the openai_compatible models are listed: {run:?}"
    );
}
