//! The shipped registry's tools, answered by the shipped connectors.

use std::path::PathBuf;
use std::sync::Arc;

use baton_connectors::default_connectors;
use baton_core::Principal;
use baton_core::ports::connector::{ConnectorRequest, Envelope, EnvelopeStatus};
use baton_core::registry::{LoadOptions, Registry, RegistrySources, SourceFile};
use serde_json::{Value, json};

fn root() -> PathBuf {
    baton_testkit::crate_dir().join("../registry")
}

fn read_dir(dir: &str, ext: &str) -> Vec<SourceFile> {
    let mut files: Vec<SourceFile> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| SourceFile {
            path: format!("{dir}/{}", p.file_name().unwrap().to_str().unwrap()),
            text: std::fs::read_to_string(&p).unwrap(),
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

fn read_one(name: &str) -> Option<SourceFile> {
    Some(SourceFile {
        path: name.to_owned(),
        text: std::fs::read_to_string(root().join(name)).unwrap(),
    })
}

/// The kinds this crate ships, and the memory domain's, which the runtime serves itself
/// (D-43) and tests with its memory store.
fn shipped_kinds() -> Vec<String> {
    let mut kinds: Vec<String> = default_connectors(&root()).into_keys().collect();
    kinds.push("memory".to_owned());
    kinds
}

fn registry() -> Registry {
    let sources = RegistrySources {
        agents: read_dir("agents", "yaml"),
        blocks: read_dir("blocks", "md"),
        models: read_one("models.yaml"),
        tools: read_one("tools.yaml"),
    };
    let options = LoadOptions {
        connector_kinds: shipped_kinds(),
        providers: vec![
            "bedrock".into(),
            "offline".into(),
            "openai_compatible".into(),
        ],
        ..LoadOptions::default()
    };
    Registry::load(&sources, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// 2026-11-22T00:00:00Z.
const NOV_22: u64 = 1_795_305_600_000;
const DAY_MS: u64 = 86_400_000;

async fn call(registry: &Registry, tool: &str, args: Value) -> Envelope {
    call_at(registry, tool, args, NOV_22).await
}

async fn call_at(registry: &Registry, tool: &str, args: Value, now_ms: u64) -> Envelope {
    let tool = registry.tool(tool).unwrap();
    let connectors = default_connectors(&root());
    tool.check_args(&args)
        .unwrap_or_else(|e| panic!("{}: {e}", tool.id));
    connectors[&*tool.connector_kind]
        .call(ConnectorRequest {
            tool_id: tool.id.clone(),
            config: tool.connector_config.clone(),
            args,
            principal: Principal::new("demo-user").unwrap(),
            episode_id: Arc::from("ep-demo"),
            agent_id: Arc::from("test"),
            now_ms,
            progress: None,
            traceparent: None,
            idempotency_key: None,
            links: None,
            input: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", tool.id))
}

/// The tools that are called as tools and only look things up: not those serving a
/// specialist as a conversation (the store finder, a remote A2A agent, tested in
/// `a2a_connector`), nor those that act once the user approves (the redemption, which
/// spends on the demo ledger: tested with it in the CLI's `approvals`), nor those that
/// act with the user's own sign-in (the partner miles: tested with the demo partner in the
/// CLI's `account_links`).
fn called_tools(registry: &Registry) -> Vec<Arc<baton_core::registry::Tool>> {
    let connectors = default_connectors(&root());
    registry
        .tools()
        .filter(|t| connectors.contains_key(&*t.connector_kind))
        .filter(|t| connectors[&*t.connector_kind].upstream_chat().is_none())
        .filter(|t| t.approval.is_none())
        .filter(|t| !connectors[&*t.connector_kind].acts_for_user(&t.connector_config))
        .cloned()
        .collect()
}

/// Arguments that satisfy each shipped tool's schema.
fn sample_args(tool: &str) -> Value {
    match tool {
        "calculate_redemption" => json!({"points": 10_000, "reward_type": "gift_card"}),
        "get_points_balance"
        | "get_points_by_method"
        | "get_redemption_history"
        | "get_purchase_history"
        | "lookup_receipts" => json!({}),
        "search_help_articles" => json!({"query": "points missing"}),
        _ => json!({"query": "coffee"}),
    }
}

#[test]
fn every_shipped_tool_passes_its_connector_check() {
    let registry = registry();
    let connectors = default_connectors(&root());
    let mut checked = 0;
    for tool in registry.tools().filter(|t| &*t.connector_kind != "memory") {
        let connector = connectors
            .get(&*tool.connector_kind)
            .unwrap_or_else(|| panic!("{}: no connector {}", tool.id, tool.connector_kind));
        connector
            .check_config(&tool.id, &tool.connector_config)
            .unwrap_or_else(|e| panic!("{}: {e}", tool.id));
        checked += 1;
    }
    assert_eq!(checked, 13);
}

#[tokio::test]
async fn every_shipped_tool_answers_ok_for_the_callers_principal() {
    let registry = registry();
    for tool in called_tools(&registry) {
        let e = call(&registry, &tool.id, sample_args(&tool.id)).await;
        assert_eq!(e.status, EnvelopeStatus::Ok, "{}", tool.id);
        assert_eq!(e.principal, "demo-user", "{}", tool.id);
        assert_eq!(
            e.major_version(),
            tool.envelope_major,
            "{}: envelope_major in tools.yaml and the data's version disagree",
            tool.id
        );
    }
}

/// The offline model fills a tool's `result_template` from one record (or the payload),
/// so every `{field}` must exist in the data.
#[tokio::test]
async fn result_templates_name_fields_the_data_has() {
    let registry = registry();
    for tool in called_tools(&registry) {
        let template = tool
            .result_template
            .as_deref()
            .unwrap_or_else(|| panic!("{} has no result_template", tool.id));
        let e = call(&registry, &tool.id, sample_args(&tool.id)).await;
        let record = match e.payload.get("items") {
            Some(items) => items[0].clone(),
            None => e.payload.clone(),
        };
        assert!(
            record.is_object(),
            "{}: no record in {}",
            tool.id,
            e.payload
        );
        let fields = template
            .split('{')
            .skip(1)
            .filter_map(|s| s.split_once('}').map(|(f, _)| f));
        for field in fields {
            assert!(
                record.get(field).is_some(),
                "{}: template field {field:?} missing from {record}",
                tool.id
            );
        }
    }
}

#[tokio::test]
async fn the_demo_sentence_finds_coffee_offers_and_the_unscannable_receipt() {
    let registry = registry();
    let offers = call(
        &registry,
        "search_offers",
        json!({"query": "find me coffee deals"}),
    )
    .await;
    let items = offers.payload["items"].as_array().unwrap();
    assert!(items.len() >= 3, "{}", offers.payload);
    for offer in items {
        assert!(
            offer["tags"].to_string().contains("coffee"),
            "not a coffee offer: {offer}"
        );
    }

    let receipts = call(
        &registry,
        "lookup_receipts",
        json!({"query": "my receipt didn't scan"}),
    )
    .await;
    assert_eq!(receipts.payload["items"][0]["id"], "R-20427");

    let help = call(
        &registry,
        "search_help_articles",
        json!({"query": "my receipt didn't scan"}),
    )
    .await;
    assert_eq!(help.payload["items"][0]["id"], "HC-101");
}

#[tokio::test]
async fn the_calculator_prices_points_with_the_shipped_rates() {
    let registry = registry();
    let e = call(
        &registry,
        "calculate_redemption",
        json!({"points": 25_000, "reward_type": "gift_card"}),
    )
    .await;
    assert_eq!(e.payload["value"], json!(25.0));
    assert_eq!(e.payload["unit"], "usd");
}

/// Every `YYYY-MM-DD` string inside a value, with its path.
fn dates(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) if s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-' => {
            out.push((path.to_owned(), s.clone()));
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                dates(v, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                dates(v, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_demo_stays_true_on_any_date() {
    let registry = registry();
    // Today, a year from now and ten years from now.
    for now in [NOV_22, NOV_22 + 365 * DAY_MS, NOV_22 + 3_652 * DAY_MS] {
        let today = baton_core::prompt::civil_date(now);
        let offers = call_at(
            &registry,
            "search_offers",
            json!({"query": "coffee deals"}),
            now,
        )
        .await;
        let items = offers.payload["items"].as_array().unwrap();
        assert!(items.len() >= 3, "{today}: {}", offers.payload);
        for offer in items {
            let ends = offer["ends"].as_str().unwrap();
            assert!(ends >= today.as_str(), "{today}: an expired offer: {offer}");
        }
        let balance = call_at(&registry, "get_points_balance", json!({}), now).await;
        assert_eq!(balance.payload["as_of"], json!(today));
        let expiring = balance.payload["expiring"]["on"].as_str().unwrap();
        assert!(expiring > today.as_str(), "{today}: {}", balance.payload);
        // Nothing happened in the future, and nothing is left undated.
        for tool in called_tools(&registry) {
            let e = call_at(&registry, &tool.id, sample_args(&tool.id), now).await;
            let mut found = Vec::new();
            dates(&e.payload, &tool.id, &mut found);
            for (path, date) in found {
                let ahead = ["ends", "on"]
                    .iter()
                    .any(|f| path.ends_with(&format!(".{f}")));
                assert!(
                    ahead || date <= today,
                    "{today}: {path} = {date} lies in the future"
                );
            }
            assert!(
                !e.payload.to_string().contains("today"),
                "{today}: {}: an unresolved date in {}",
                tool.id,
                e.payload
            );
        }
    }
}

/// A program serves only the connector kinds its registry's tools use: the shipped one
/// names the demo `fixture` data and the rest, one without demo tools does not get it.
#[test]
fn only_the_kinds_a_registry_uses_are_served() {
    let shipped = registry();
    let served = baton_connectors::used_by(default_connectors(&root()), &shipped);
    let kinds: Vec<&str> = served.keys().map(String::as_str).collect();
    assert_eq!(kinds, ["a2a", "fixture", "http", "mcp", "rate_table"]);
    // The same agents with their tools served over HTTP only (and no demo data).
    let mut sources = RegistrySources {
        agents: read_dir("agents", "yaml"),
        blocks: read_dir("blocks", "md"),
        models: read_one("models.yaml"),
        tools: read_one("tools.yaml"),
    };
    if let Some(tools) = sources.tools.as_mut() {
        for kind in ["fixture", "rate_table", "mcp", "a2a"] {
            tools.text = tools.text.replace(&format!("kind: {kind}"), "kind: http");
        }
    }
    let options = LoadOptions {
        connector_kinds: shipped_kinds(),
        providers: vec![
            "bedrock".into(),
            "offline".into(),
            "openai_compatible".into(),
        ],
        ..LoadOptions::default()
    };
    let http_only = Registry::load(&sources, &options).unwrap_or_else(|e| panic!("{e}"));
    let served = baton_connectors::used_by(default_connectors(&root()), &http_only);
    assert_eq!(served.keys().collect::<Vec<_>>(), ["http"]);
}
