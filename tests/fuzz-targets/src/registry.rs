//! The registry's files (a card, `tools.yaml`, `models.yaml`) over any text, beside the
//! shipped others: a registry or a list of problems naming files and fields, never a panic.

use baton_core::registry::{LoadOptions, Registry, RegistrySources, SourceFile};

const ORCHESTRATOR: &str = include_str!("../../../shared/registry/agents/orchestrator.yaml");
const SHOP: &str = include_str!("../../../shared/registry/agents/shop.yaml");
const TOOLS: &str = include_str!("../../../shared/registry/tools.yaml");
const MODELS: &str = include_str!("../../../shared/registry/models.yaml");

fn file(path: &str, text: &str) -> SourceFile {
    SourceFile {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// One input: which file the text replaces (or adds), then the text.
pub fn run(data: &[u8]) {
    let Some((which, text)) = crate::common::input::<(u8, &str)>(data) else {
        return;
    };
    let mut sources = RegistrySources {
        agents: vec![
            file("agents/orchestrator.yaml", ORCHESTRATOR),
            file("agents/shop.yaml", SHOP),
        ],
        blocks: Vec::new(),
        models: Some(file("models.yaml", MODELS)),
        tools: Some(file("tools.yaml", TOOLS)),
    };
    match which % 4 {
        0 => sources.agents.push(file("agents/fuzzed.yaml", text)),
        1 => sources.agents[1] = file("agents/shop.yaml", text),
        2 => sources.tools = Some(file("tools.yaml", text)),
        _ => sources.models = Some(file("models.yaml", text)),
    }
    let options = LoadOptions {
        connector_kinds: ["fixture", "rate_table", "a2a", "http", "mcp"]
            .map(str::to_owned)
            .to_vec(),
        providers: ["bedrock", "offline", "openai_compatible"]
            .map(str::to_owned)
            .to_vec(),
        ..LoadOptions::default()
    };
    if let Err(problems) = Registry::load(&sources, &options) {
        assert!(!problems.to_string().is_empty());
    }
}
