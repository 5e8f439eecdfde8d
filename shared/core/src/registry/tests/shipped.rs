//! The shipped registry: it loads with no problems, declares what the runtime needs, and
//! a fifth specialist needs only data.

use super::fixtures::{block, edit, file};
use crate::directive::DirectLinePolicy;
use crate::model::ReasoningEffort;
use crate::privacy::{MaskStyle, PiiKind};
use crate::registry::{Agent, LoadOptions, Registry, RegistrySources, SourceFile};

/// Read when the test runs, not when it is built: a test binary reused from another
/// checkout through a shared target directory must read this checkout's registry.
fn shipped_dir() -> String {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    format!("{crate_dir}/../registry")
}

fn shipped_sources() -> RegistrySources {
    let shipped = shipped_dir();
    let read_dir = |dir: &str, ext: &str| {
        let mut files: Vec<SourceFile> = std::fs::read_dir(format!("{shipped}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .map(|p| {
                file(
                    &format!("{dir}/{}", p.file_name().unwrap().to_str().unwrap()),
                    &std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    };
    let read_one = |name: &str| {
        Some(file(
            name,
            &std::fs::read_to_string(format!("{shipped}/{name}")).unwrap(),
        ))
    };
    RegistrySources {
        agents: read_dir("agents", "yaml"),
        blocks: read_dir("blocks", "md"),
        models: read_one("models.yaml"),
        tools: read_one("tools.yaml"),
    }
}

fn shipped_options() -> LoadOptions {
    LoadOptions {
        connector_kinds: vec![
            "fixture".into(),
            "rate_table".into(),
            "a2a".into(),
            "http".into(),
            "mcp".into(),
            "memory".into(),
        ],
        providers: vec![
            "bedrock".into(),
            "offline".into(),
            "openai_compatible".into(),
        ],
        ..LoadOptions::default()
    }
}

fn load_shipped(sources: &RegistrySources) -> Registry {
    Registry::load(sources, &shipped_options()).unwrap_or_else(|e| panic!("{e}"))
}

fn ask_names(agent: &Agent) -> Vec<&str> {
    agent.model_tools.iter().map(|t| &*t.name).collect()
}

#[test]
fn the_shipped_registry_loads_with_no_problems() {
    let r = load_shipped(&shipped_sources());
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    let entry = r.entry(None).unwrap();
    assert_eq!(&*entry.id, "orchestrator");
    assert_eq!(
        ask_names(entry),
        [
            "ask_shop",
            "ask_support",
            "ask_rewards",
            "ask_strategist",
            "ask_stores",
            "ask_memory"
        ]
    );
    assert_eq!(r.summarizer().map(|m| &*m.provider), Some("bedrock"));
    // Compaction summarises with models.yaml's summarizer, keeping the last 4 turns.
    let memory = entry
        .orchestration
        .as_ref()
        .unwrap()
        .memory
        .as_ref()
        .unwrap();
    assert_eq!(&*memory.summarizer.key, "nova-micro");
    assert_eq!((memory.compact_after_turns, memory.keep_last), (8, 4));
    // The strategist thinks before it answers; the lookup cards do not.
    let effort = |id: &str| r.agent(id).unwrap().tuning.inference.reasoning_effort;
    assert_eq!(effort("strategist"), Some(ReasoningEffort::Medium));
    assert_eq!(effort("shop"), None);
    assert!(
        r.model("offline").is_some(),
        "local runs need the offline model"
    );
    // Every tool called as a tool answers with envelopes and has words for the offline
    // model; the store finder is a remote agent, served as a conversation.
    for tool in r.tools().filter(|t| &*t.connector_kind != "a2a") {
        assert!(
            tool.envelope_major.is_some(),
            "{} has no envelope_major",
            tool.id
        );
        assert!(
            tool.result_template.is_some(),
            "{} has no result_template",
            tool.id
        );
    }
    for agent in r.agents() {
        assert!(
            agent.routing.examples.len() >= 6 || agent.orchestration.is_some(),
            "{} needs routing examples",
            agent.id
        );
    }
}

#[test]
fn the_shipped_orchestrator_has_words_for_every_tool_status_code() {
    let r = load_shipped(&shipped_sources());
    let codes = &r
        .entry(None)
        .unwrap()
        .orchestration
        .as_ref()
        .unwrap()
        .status
        .codes;
    for tool in r.tools() {
        let code = tool
            .status_code
            .as_deref()
            .unwrap_or_else(|| panic!("{} emits no status code", tool.id));
        assert!(
            codes.contains_key(code),
            "no words for {code} ({})",
            tool.id
        );
    }
}

#[test]
fn the_shipped_orchestrator_declares_its_trust_settings() {
    let r = load_shipped(&shipped_sources());
    let o = r.entry(None).unwrap().orchestration.as_ref().unwrap();
    assert_eq!(o.direct_line, DirectLinePolicy::default());
    let support = o
        .obligations
        .iter()
        .find(|rule| &*rule.agent == "support")
        .unwrap();
    assert!(support.fires("Can I get a refund for this?"));
    assert!(support.fires("I filed a CHARGEBACK"));
    assert_eq!(o.privacy.kinds, PiiKind::ALL.to_vec());
    assert_eq!(o.privacy.mask, MaskStyle::Label);
}

#[test]
fn the_shipped_demo_sentence_splits_between_support_and_shop() {
    let r = load_shipped(&shipped_sources());
    let hints = |id: &str| {
        let a = r.agent(id).unwrap();
        let mut text = a.routing.keywords.join(" ");
        text.push(' ');
        text.push_str(&a.routing.examples.join(" "));
        text.to_lowercase()
    };
    let (support, shop) = (hints("support"), hints("shop"));
    for word in ["receipt", "scan"] {
        assert!(support.contains(word) && !shop.contains(word), "{word}");
    }
    for word in ["coffee", "deals"] {
        assert!(shop.contains(word) && !support.contains(word), "{word}");
    }
}

#[test]
fn a_seventh_specialist_needs_only_data() {
    let mut s = shipped_sources();
    s.agents.push(file(
        "agents/meals.yaml",
        "\
id: meals
label: Meal planner
description: Plans a week of dinners around the user's budget and current offers.
role: native
model: claude-haiku
tools: [find_recipes]
prompt_blocks: [persona-meals, instructions-meals]
routing:
  examples: [plan my dinners for this week under $60]
  keywords: [dinner, recipe, meal plan]
",
    ));
    s.blocks.push(file(
        "blocks/persona-meals.md",
        &block(
            "vertical",
            "persona",
            false,
            "You plan cheap, tasty dinners.",
        ),
    ));
    s.blocks.push(file(
        "blocks/instructions-meals.md",
        &block(
            "vertical",
            "instructions",
            false,
            "Call find_recipes, then propose three dinners.",
        ),
    ));
    edit(
        &mut s,
        "tools.yaml",
        "  find_savings_playbooks:\n",
        "  find_recipes:
    description: Find recipes by ingredient or budget.
    connector: {kind: fixture, file: fixtures/meals/recipes.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Ingredients or dish words.}
      required: [query]
      additionalProperties: false
  find_savings_playbooks:
",
    );
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "sub_agents: [shop, support, rewards, strategist, stores, memory]",
        "sub_agents: [shop, support, rewards, strategist, stores, memory, meals]",
    );
    let r = load_shipped(&s);
    let entry = r.entry(None).unwrap();
    assert_eq!(
        ask_names(entry),
        [
            "ask_shop",
            "ask_support",
            "ask_rewards",
            "ask_strategist",
            "ask_stores",
            "ask_memory",
            "ask_meals"
        ]
    );
    let meals = r.agent("meals").unwrap();
    assert_eq!(&*meals.label, "Meal planner");
    assert!(
        meals
            .prompt
            .prefix
            .ends_with("Call find_recipes, then propose three dinners.")
    );
}

#[test]
fn the_shipped_support_and_shop_take_pictures_and_the_others_do_not() {
    let r = load_shipped(&shipped_sources());
    for agent in r.agents() {
        let takes = matches!(&*agent.id, "support" | "shop");
        assert_eq!(agent.takes_pictures, takes, "{}", agent.id);
        let argument = agent.ask_tool.input_schema["properties"].get("pictures");
        assert_eq!(argument.is_some(), takes, "{}", agent.id);
    }
}
