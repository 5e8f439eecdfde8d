//! The loader: raw files in, validated registry (or every problem) out.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::raw::{RawBlockMeta, RawCard, RawModels, RawObligation, RawTools, RawTuning};
use super::types::*;
use super::{LoadError, LoadErrors, LoadOptions, Registry, RegistrySources, SourceFile};
use crate::directive::{self, DirectLinePolicy};
use crate::obligation::ObligationRule;
use crate::ports::model::{Inference, LEVELS, ReasoningEffort, TextVerbosity, ToolDef};
use crate::privacy::{PiiKind, PrivacyPolicy};
use crate::prompt::PromptPlan;

const FASTPATH_CATEGORIES: [&str; 3] = ["greeting", "acknowledgement", "chitchat"];
const RESERVED_SUBAGENT_IDS: [&str; 2] = ["orchestrator", "note"];
const ASK_FIELDS: [&str; 3] = ["query", "prior_context", "intent_count"];
const DEFAULT_TOOL_TIMEOUT_MS: u64 = 30_000;

struct Problems(Vec<LoadError>);

impl Problems {
    fn add(
        &mut self,
        file: &str,
        field: impl Into<String>,
        value: impl Into<String>,
        problem: impl Into<String>,
    ) {
        self.0.push(LoadError {
            file: file.to_owned(),
            field: field.into(),
            value: value.into(),
            problem: problem.into(),
        });
    }
}

pub(super) fn load(
    sources: &RegistrySources,
    options: &LoadOptions,
) -> Result<Registry, LoadErrors> {
    let mut p = Problems(Vec::new());
    let mut warnings = Vec::new();

    let (models, summarizer) = load_models(sources.models.as_ref(), options, &mut p);
    let tools = load_tools(sources.tools.as_ref(), options, &mut p);
    let blocks = load_blocks(&sources.blocks, &mut p);

    // Parse every card first so references between cards can be checked.
    let mut raws: BTreeMap<String, (RawCard, String)> = BTreeMap::new();
    for file in &sources.agents {
        let raw: RawCard = match serde_norway::from_str(&file.text) {
            Ok(raw) => raw,
            Err(e) => {
                let (field, value) = yaml_field(&e);
                p.add(
                    &file.path,
                    field,
                    value,
                    format!("not a valid agent card: {e}"),
                );
                continue;
            }
        };
        if let Some((_, other)) = raws.get(&raw.id) {
            p.add(
                &file.path,
                "id",
                &raw.id,
                format!("duplicate id, also defined in {other}"),
            );
            continue;
        }
        if !valid_id(&raw.id) {
            p.add(
                &file.path,
                "id",
                &raw.id,
                "ids are 1-40 characters of a-z, 0-9, '_' or '-', starting with a letter",
            );
            continue;
        }
        raws.insert(raw.id.clone(), (raw, file.path.clone()));
    }

    check_sub_agent_graph(&raws, &mut p);

    let required_blocks: Vec<&Arc<Block>> = {
        let mut r: Vec<&Arc<Block>> = blocks.values().filter(|b| b.required).collect();
        r.sort_by_key(|b| (category_rank(&b.category), b.id.clone()));
        r
    };

    // Validated agents without model tools (needs every ask tool first).
    let mut agents: BTreeMap<String, Agent> = BTreeMap::new();
    for (id, (raw, file)) in &raws {
        if let Some(agent) = build_agent(
            raw,
            file,
            &raws,
            &models,
            &tools,
            &blocks,
            &required_blocks,
            &mut p,
            &mut warnings,
        ) {
            agents.insert(id.clone(), agent);
        }
    }

    // Two ids that differ only by '-' and '_' would give one tool name to two cards.
    let mut ask_names: BTreeMap<String, &str> = BTreeMap::new();
    for agent in agents.values() {
        let name = agent.ask_tool.name.to_string();
        match ask_names.get(&name) {
            Some(other) => p.add(
                &agent.file,
                "id",
                &*agent.id,
                format!("its tool name {name} is also the tool name of card {other}"),
            ),
            None => {
                ask_names.insert(name, &agent.id);
            }
        }
    }

    // Orchestrators see their own tools, then one ask tool per sub-agent (D-6).
    let asks: BTreeMap<String, ToolDef> = agents
        .iter()
        .map(|(id, a)| (id.clone(), a.ask_tool.clone()))
        .collect();
    for agent in agents.values_mut() {
        let mut defs: Vec<ToolDef> = agent.tools.iter().map(|t| tool_def(t)).collect();
        if let Some(o) = &agent.orchestration {
            defs.extend(o.sub_agents.iter().filter_map(|s| asks.get(&**s).cloned()));
        }
        agent.model_tools = Arc::from(defs);
    }

    if !p.0.is_empty() {
        return Err(LoadErrors(p.0));
    }
    Ok(Registry {
        agents: agents.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        tools,
        models,
        blocks,
        summarizer,
        warnings,
    })
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && id.len() <= 40
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn category_rank(category: &str) -> u8 {
    match category {
        "persona" => 0,
        "format" => 1,
        "safety" => 2,
        _ => 3,
    }
}

fn tool_def(tool: &Tool) -> ToolDef {
    ToolDef {
        name: tool.id.clone(),
        description: tool.description.clone(),
        input_schema: tool.schema.clone(),
    }
}

fn load_models(
    file: Option<&SourceFile>,
    options: &LoadOptions,
    p: &mut Problems,
) -> (BTreeMap<String, Arc<ModelSpec>>, Option<Arc<ModelSpec>>) {
    let mut out = BTreeMap::new();
    let Some(file) = file else {
        p.add(
            "models.yaml",
            "(file)",
            "",
            "missing: every registry needs a models.yaml",
        );
        return (out, None);
    };
    let raw: RawModels = match serde_norway::from_str(&file.text) {
        Ok(raw) => raw,
        Err(e) => {
            p.add(
                &file.path,
                "(file)",
                "",
                format!("not a valid models file: {e}"),
            );
            return (out, None);
        }
    };
    for (key, m) in raw.models {
        let field = |f: &str| format!("models.{key}.{f}");
        if !options.providers.is_empty() && !options.providers.contains(&m.provider) {
            p.add(
                &file.path,
                field("provider"),
                &m.provider,
                format!("unknown provider; known: {}", options.providers.join(", ")),
            );
        }
        if m.context_window == 0 {
            p.add(&file.path, field("context_window"), "0", "must be positive");
        }
        for (name, v) in [
            ("input", m.prices.input),
            ("output", m.prices.output),
            ("cache_read", m.prices.cache_read),
            ("cache_write", m.prices.cache_write),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                p.add(
                    &file.path,
                    field(&format!("prices.{name}")),
                    v.to_string(),
                    "prices are non-negative USD per million tokens",
                );
            }
        }
        out.insert(
            key.clone(),
            Arc::new(ModelSpec {
                key: Arc::from(key.as_str()),
                provider: Arc::from(m.provider),
                model_id: Arc::from(m.model_id),
                context_window: m.context_window,
                prices: Prices {
                    input: m.prices.input,
                    output: m.prices.output,
                    cache_read: m.prices.cache_read,
                    cache_write: m.prices.cache_write,
                },
                capabilities: ModelCapabilities {
                    tool_choice: m.capabilities.tool_choice,
                    cache_points: m.capabilities.cache_points,
                    parallel_tool_calls: m.capabilities.parallel_tool_calls,
                    reasoning_effort: m.capabilities.reasoning_effort,
                    text_verbosity: m.capabilities.text_verbosity,
                },
            }),
        );
    }
    let summarizer = match raw.summarizer {
        Some(alias) => match out.get(&alias) {
            Some(m) => Some(m.clone()),
            None => {
                p.add(&file.path, "summarizer", &alias, "no such model key");
                None
            }
        },
        None => None,
    };
    (out, summarizer)
}

fn load_tools(
    file: Option<&SourceFile>,
    options: &LoadOptions,
    p: &mut Problems,
) -> BTreeMap<String, Arc<Tool>> {
    let mut out = BTreeMap::new();
    let Some(file) = file else {
        p.add(
            "tools.yaml",
            "(file)",
            "",
            "missing: every registry needs a tools.yaml (it may list no tools)",
        );
        return out;
    };
    let raw: RawTools = match serde_norway::from_str(&file.text) {
        Ok(raw) => raw,
        Err(e) => {
            p.add(
                &file.path,
                "(file)",
                "",
                format!("not a valid tools file: {e}"),
            );
            return out;
        }
    };
    for (id, t) in raw.tools {
        let field = |f: &str| format!("tools.{id}.{f}");
        if !valid_tool_name(&id) {
            p.add(
                &file.path,
                format!("tools.{id}"),
                &id,
                "tool ids are 1-64 characters of a-z, 0-9 or '_'",
            );
            continue;
        }
        if id.starts_with("ask_") {
            p.add(
                &file.path,
                format!("tools.{id}"),
                &id,
                "the ask_ prefix is reserved for sub-agent tools",
            );
            continue;
        }
        if !options.connector_kinds.is_empty()
            && !options.connector_kinds.contains(&t.connector.kind)
        {
            p.add(
                &file.path,
                field("connector.kind"),
                &t.connector.kind,
                format!(
                    "unknown connector kind; known: {}",
                    options.connector_kinds.join(", ")
                ),
            );
        }
        if t.schema.get("type").and_then(Value::as_str) != Some("object") {
            p.add(
                &file.path,
                field("schema.type"),
                t.schema
                    .get("type")
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                "a tool's argument schema must be of type object",
            );
            continue;
        }
        let validator = match jsonschema::validator_for(&t.schema) {
            Ok(v) => v,
            Err(e) => {
                p.add(
                    &file.path,
                    field("schema"),
                    e.instance_path().to_string(),
                    format!("not a valid JSON Schema: {e}"),
                );
                continue;
            }
        };
        if t.timeout_ms == Some(0) {
            p.add(&file.path, field("timeout_ms"), "0", "must be positive");
        }
        out.insert(
            id.clone(),
            Arc::new(Tool {
                id: Arc::from(id.as_str()),
                description: Arc::from(t.description),
                connector_kind: Arc::from(t.connector.kind),
                connector_config: Arc::new(Value::Object(t.connector.config)),
                schema: Arc::new(t.schema),
                validator: Arc::new(validator),
                timeout_ms: t.timeout_ms.unwrap_or(DEFAULT_TOOL_TIMEOUT_MS),
                status_code: t.status.map(Arc::from),
                result_template: t.result_template.map(Arc::from),
                envelope_major: t.envelope_major,
            }),
        );
    }
    out
}

fn valid_tool_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Splits `---` front matter from a Markdown body.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.find("\n---")?;
    let meta = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map(|(_, b)| b).unwrap_or("");
    Some((meta, body))
}

fn load_blocks(files: &[SourceFile], p: &mut Problems) -> BTreeMap<String, Arc<Block>> {
    let mut out: BTreeMap<String, Arc<Block>> = BTreeMap::new();
    for file in files {
        let Some((meta, body)) = split_front_matter(&file.text) else {
            p.add(
                &file.path,
                "(front matter)",
                "",
                "a block starts with '---' front matter naming owner and category",
            );
            continue;
        };
        let meta: RawBlockMeta = match serde_norway::from_str(meta) {
            Ok(m) => m,
            Err(e) => {
                p.add(
                    &file.path,
                    "(front matter)",
                    "",
                    format!("invalid front matter: {e}"),
                );
                continue;
            }
        };
        let stem = file
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&file.path)
            .trim_end_matches(".md")
            .to_owned();
        let id = meta.id.unwrap_or(stem);
        let owner = match meta.owner.as_str() {
            "platform" => BlockOwner::Platform,
            "vertical" => BlockOwner::Vertical,
            other => {
                p.add(&file.path, "owner", other, "must be platform or vertical");
                continue;
            }
        };
        if meta.required && owner != BlockOwner::Platform {
            p.add(
                &file.path,
                "required",
                "true",
                "only platform-owned blocks can be required",
            );
        }
        const CATEGORIES: [&str; 6] = [
            "persona",
            "instructions",
            "capabilities",
            "safety",
            "format",
            "context",
        ];
        if !CATEGORIES.contains(&meta.category.as_str()) {
            p.add(
                &file.path,
                "category",
                &meta.category,
                format!("must be one of {}", CATEGORIES.join(", ")),
            );
        }
        if body.trim().is_empty() {
            p.add(&file.path, "(body)", "", "the block has no text");
        }
        if let Some(other) = out.get(&id) {
            p.add(
                &file.path,
                "id",
                &id,
                format!("duplicate block id, also defined in {}", other.file),
            );
            continue;
        }
        out.insert(
            id.clone(),
            Arc::new(Block {
                id: Arc::from(id.as_str()),
                owner,
                category: Arc::from(meta.category),
                required: meta.required,
                text: Arc::from(body.trim()),
                file: Arc::from(file.path.as_str()),
            }),
        );
    }
    out
}

fn check_sub_agent_graph(raws: &BTreeMap<String, (RawCard, String)>, p: &mut Problems) {
    // Depth-first search for cycles; each cycle reported once at the card closing it.
    fn visit<'a>(
        id: &'a str,
        raws: &'a BTreeMap<String, (RawCard, String)>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        p: &mut Problems,
    ) {
        if done.contains(id) {
            return;
        }
        let Some((raw, file)) = raws.get(id) else {
            return;
        };
        path.push(id);
        for (i, sub) in raw.sub_agents.iter().enumerate() {
            if let Some(pos) = path.iter().position(|x| *x == sub.as_str()) {
                let cycle: Vec<&str> = path[pos..].iter().copied().chain([sub.as_str()]).collect();
                p.add(
                    file,
                    format!("sub_agents[{i}]"),
                    sub,
                    format!("cycle: {}", cycle.join(" -> ")),
                );
            } else {
                visit(sub, raws, path, done, p);
            }
        }
        path.pop();
        done.insert(id);
    }
    let mut done = BTreeSet::new();
    for id in raws.keys() {
        visit(id, raws, &mut Vec::new(), &mut done, p);
    }
}

#[allow(clippy::too_many_arguments)]
fn build_agent(
    raw: &RawCard,
    file: &str,
    raws: &BTreeMap<String, (RawCard, String)>,
    models: &BTreeMap<String, Arc<ModelSpec>>,
    tools: &BTreeMap<String, Arc<Tool>>,
    blocks: &BTreeMap<String, Arc<Block>>,
    required: &[&Arc<Block>],
    p: &mut Problems,
    warnings: &mut Vec<String>,
) -> Option<Agent> {
    let before = p.0.len();
    let is_orchestrator = !raw.sub_agents.is_empty();

    let role = match raw.role.as_str() {
        "orchestrator" => AgentRole::Orchestrator,
        "native" => AgentRole::Native,
        "external-wrapper" => AgentRole::ExternalWrapper,
        "internal-helper" => AgentRole::InternalHelper,
        other => {
            p.add(
                file,
                "role",
                other,
                "must be orchestrator, native, external-wrapper or internal-helper",
            );
            AgentRole::Native
        }
    };
    if raw.description.trim().is_empty() {
        p.add(
            file,
            "description",
            "",
            "the description is the routing signal and cannot be empty",
        );
    }
    let model = models.get(&raw.model).cloned();
    if model.is_none() {
        p.add(
            file,
            "model",
            &raw.model,
            "no such model key in models.yaml",
        );
    }

    let mut own_tools = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, t) in raw.tools.iter().enumerate() {
        if !seen.insert(t) {
            p.add(file, format!("tools[{i}]"), t, "listed twice");
            continue;
        }
        match tools.get(t) {
            Some(tool) => own_tools.push(tool.clone()),
            None => p.add(file, format!("tools[{i}]"), t, "no such tool in tools.yaml"),
        }
    }

    let mut card_blocks = Vec::new();
    for (i, b) in raw.prompt_blocks.iter().enumerate() {
        match blocks.get(b) {
            None => p.add(
                file,
                format!("prompt_blocks[{i}]"),
                b,
                "no such prompt block",
            ),
            Some(block) if block.required => p.add(
                file,
                format!("prompt_blocks[{i}]"),
                b,
                "platform-required blocks are injected automatically; do not list them",
            ),
            Some(block) if block.owner == BlockOwner::Platform && !is_orchestrator => p.add(
                file,
                format!("prompt_blocks[{i}]"),
                b,
                "a vertical card cannot list a platform-owned block",
            ),
            Some(block) => card_blocks.push(block.clone()),
        }
    }

    for (i, s) in raw.sub_agents.iter().enumerate() {
        match raws.get(s) {
            None => p.add(file, format!("sub_agents[{i}]"), s, "no such agent card"),
            Some(_) if RESERVED_SUBAGENT_IDS.contains(&s.as_str()) => p.add(
                file,
                format!("sub_agents[{i}]"),
                s,
                "this id is reserved for event sources and cannot be a sub-agent",
            ),
            Some(_) if raw.sub_agents[..i].contains(s) => {
                p.add(file, format!("sub_agents[{i}]"), s, "listed twice")
            }
            Some(_) => {}
        }
    }

    if !is_orchestrator {
        for (field, present) in [
            ("composition", raw.composition.is_some()),
            ("fanout_cap", raw.fanout_cap.is_some()),
            ("fastpath", raw.fastpath.is_some()),
            ("direct_line", raw.direct_line.is_some()),
            ("status_messages", raw.status_messages.is_some()),
            ("obligations", raw.obligations.is_some()),
            ("privacy", raw.privacy.is_some()),
            ("turn_limits", raw.turn_limits.is_some()),
        ] {
            if present {
                p.add(
                    file,
                    field,
                    "",
                    "orchestrator-only field on a card without sub_agents",
                );
            }
        }
    }

    let orchestration = is_orchestrator.then(|| build_orchestration(raw, file, raws, p));

    // The ask tool other orchestrators call this card through (D-6).
    let mut properties = serde_json::Map::new();
    properties.insert("query".into(), json!({"type": "string", "minLength": 1, "description": "The user's words for this specialist, verbatim: do not rephrase."}));
    properties.insert("prior_context".into(), json!({"type": "string", "description": "When the user switches topic: the entities, ids and goals from earlier turns this specialist needs."}));
    properties.insert("intent_count".into(), json!({"type": "integer", "minimum": 1, "description": "How many distinct requests the user's latest message contains, in total."}));
    for (name, schema) in &raw.ask_args {
        if ASK_FIELDS.contains(&name.as_str()) {
            p.add(
                file,
                format!("ask_args.{name}"),
                name,
                "this argument is built in",
            );
            continue;
        }
        if !schema.is_object() {
            p.add(
                file,
                format!("ask_args.{name}"),
                schema.to_string(),
                "must be a JSON Schema object",
            );
            continue;
        }
        properties.insert(name.clone(), schema.clone());
    }
    let ask_schema = json!({
        "type": "object",
        "properties": Value::Object(properties),
        "required": ["query", "intent_count"],
    });
    let ask_validator = match jsonschema::validator_for(&ask_schema) {
        Ok(v) => Some(v),
        Err(e) => {
            p.add(
                file,
                "ask_args",
                e.instance_path().to_string(),
                format!("not a valid JSON Schema: {e}"),
            );
            None
        }
    };

    let inference = Inference {
        max_output_tokens: raw.tuning.max_output_tokens,
        temperature: raw.tuning.temperature,
        ..tuning_for_model(&raw.tuning, model.as_deref(), file, p)
    };
    if let Some(t) = raw.tuning.temperature
        && !(0.0..=2.0).contains(&t)
    {
        p.add(
            file,
            "tuning.temperature",
            t.to_string(),
            "must be between 0 and 2",
        );
    }
    let mut limits = AgentLimits::default();
    if let Some(n) = raw.limits.max_tool_calls {
        limits.max_tool_calls = n;
    }
    if let Some(ms) = raw.limits.timeout_ms {
        if ms == 0 {
            p.add(file, "limits.timeout_ms", "0", "must be positive");
        }
        limits.timeout_ms = ms;
    }

    let prompt = PromptPlan::from_blocks(
        required
            .iter()
            .copied()
            .chain(card_blocks.iter())
            .map(|b| &*b.text),
    );
    if let Some(model) = &model {
        let share = prompt.estimated_tokens as f64 / model.context_window as f64;
        if share >= 0.5 {
            p.add(
                file,
                "prompt_blocks",
                format!("~{} tokens", prompt.estimated_tokens),
                format!(
                    "the prompt uses {:.0}% of {}'s context window; the limit is 50%",
                    share * 100.0,
                    model.key
                ),
            );
        } else if share >= 0.25 {
            warnings.push(format!(
                "{file}: the prompt uses {:.0}% of {}'s context window (warning at 25%)",
                share * 100.0,
                model.key
            ));
        }
    }

    if p.0.len() > before {
        return None;
    }
    let model = model?;
    let ask_validator = ask_validator?;
    let label = raw.label.clone().unwrap_or_else(|| capitalise(&raw.id));
    Some(Agent {
        id: Arc::from(raw.id.as_str()),
        label: Arc::from(label),
        description: Arc::from(raw.description.trim()),
        role,
        model,
        tools: own_tools,
        prompt,
        tuning: Tuning { inference },
        limits,
        routing: Routing {
            examples: raw.routing.examples.clone(),
            keywords: raw.routing.keywords.clone(),
        },
        ask_args: raw.ask_args.clone(),
        ask_tool: ToolDef {
            name: Arc::from(format!("ask_{}", raw.id.replace('-', "_"))),
            description: Arc::from(raw.description.trim()),
            input_schema: Arc::new(ask_schema),
        },
        ask_validator: Arc::new(ask_validator),
        model_tools: Arc::from(Vec::new()),
        orchestration,
        file: Arc::from(file),
    })
}

/// A card's reasoning effort and text verbosity, typed, each checked against what its
/// model takes: a setting a model cannot take would otherwise be dropped without a word.
fn tuning_for_model(
    tuning: &RawTuning,
    model: Option<&ModelSpec>,
    file: &str,
    p: &mut Problems,
) -> Inference {
    let mut out = Inference::default();
    if let Some(word) = &tuning.reasoning_effort {
        let field = "tuning.reasoning_effort";
        match (ReasoningEffort::parse(word), model) {
            (None, _) => p.add(file, field, word, format!("must be one of {LEVELS}")),
            (Some(_), Some(m)) if m.capabilities.reasoning_effort.is_none() => p.add(
                file,
                field,
                word,
                format!(
                    "model {} ({}) takes no reasoning effort (models.yaml: capabilities.reasoning_effort)",
                    m.key, m.model_id
                ),
            ),
            (Some(effort), _) => out.reasoning_effort = Some(effort),
        }
        if let (Some(m), Some(t)) = (model, tuning.temperature)
            && m.capabilities.reasoning_effort == Some(ReasoningSupport::Thinking)
        {
            p.add(
                file,
                "tuning.temperature",
                t.to_string(),
                format!(
                    "model {} thinks at its own temperature when reasoning_effort is set; drop one of the two",
                    m.key
                ),
            );
        }
    }
    if let Some(word) = &tuning.text_verbosity {
        let field = "tuning.text_verbosity";
        match (TextVerbosity::parse(word), model) {
            (None, _) => p.add(file, field, word, format!("must be one of {LEVELS}")),
            (Some(_), Some(m)) if !m.capabilities.text_verbosity => p.add(
                file,
                field,
                word,
                format!(
                    "model {} ({}) takes no text verbosity (models.yaml: capabilities.text_verbosity)",
                    m.key, m.model_id
                ),
            ),
            (Some(verbosity), _) => out.text_verbosity = Some(verbosity),
        }
    }
    out
}

fn build_orchestration(
    raw: &RawCard,
    file: &str,
    raws: &BTreeMap<String, (RawCard, String)>,
    p: &mut Problems,
) -> Orchestration {
    let composition = match raw.composition.as_deref() {
        None | Some("mediated") => Composition::Mediated,
        Some("passthrough") => Composition::Passthrough,
        Some("direct") => Composition::Direct,
        Some("direct_then_compose") => Composition::DirectThenCompose,
        Some(other) => {
            p.add(
                file,
                "composition",
                other,
                "must be mediated, passthrough, direct or direct_then_compose",
            );
            Composition::Mediated
        }
    };
    let fanout_cap = raw.fanout_cap.unwrap_or(3);
    if fanout_cap == 0 {
        p.add(file, "fanout_cap", "0", "must be at least 1");
    }
    let fastpath = raw.fastpath.as_ref().map(|f| {
        for (i, a) in f.allow.iter().enumerate() {
            if !FASTPATH_CATEGORIES.contains(&a.as_str()) {
                p.add(
                    file,
                    format!("fastpath.allow[{i}]"),
                    a,
                    format!("must be one of {}", FASTPATH_CATEGORIES.join(", ")),
                );
            }
        }
        if !raw.sub_agents.contains(&f.fallback) {
            p.add(
                file,
                "fastpath.fallback",
                &f.fallback,
                "the fallback must be one of this card's sub_agents",
            );
        }
        Fastpath {
            allow: f.allow.clone(),
            fallback: Arc::from(f.fallback.as_str()),
        }
    });
    let mut status = StatusMessages::default();
    if let Some(s) = &raw.status_messages {
        if let Some(ms) = s.merge_window_ms {
            status.merge_window_ms = ms;
        }
        if let Some(ms) = s.idle_after_ms {
            if ms == 0 {
                p.add(
                    file,
                    "status_messages.idle_after_ms",
                    "0",
                    "must be positive",
                );
            }
            status.idle_after_ms = ms;
        }
        if let Some(t) = &s.idle_text {
            status.idle_text = Arc::from(t.as_str());
        }
        for (code, m) in &s.codes {
            let policy = match m.policy.as_deref() {
                None | Some("batch") => StatusPolicy::Batch,
                Some("forward") => StatusPolicy::Forward,
                Some("transform") => StatusPolicy::Transform,
                Some("suppress") => StatusPolicy::Suppress,
                Some(other) => {
                    p.add(
                        file,
                        format!("status_messages.codes.{code}.policy"),
                        other,
                        "must be forward, transform, suppress or batch",
                    );
                    StatusPolicy::Batch
                }
            };
            let text = match (&m.text, policy) {
                (Some(t), _) => t.clone(),
                (None, StatusPolicy::Suppress) => String::new(),
                (None, _) => {
                    p.add(
                        file,
                        format!("status_messages.codes.{code}.text"),
                        "",
                        "a shown status code needs words",
                    );
                    String::new()
                }
            };
            status.codes.insert(
                code.clone(),
                StatusMessage {
                    text: Arc::from(text),
                    policy,
                },
            );
        }
    }
    let mut limits = TurnLimits::default();
    if let Some(l) = &raw.turn_limits {
        let set = |v: Option<u32>, slot: &mut u32, name: &str, p: &mut Problems| {
            if let Some(v) = v {
                if v == 0 {
                    p.add(file, format!("turn_limits.{name}"), "0", "must be positive");
                }
                *slot = v;
            }
        };
        set(
            l.max_subagents,
            &mut limits.max_subagents,
            "max_subagents",
            p,
        );
        set(
            l.max_tool_calls,
            &mut limits.max_tool_calls,
            "max_tool_calls",
            p,
        );
        set(
            l.max_iterations,
            &mut limits.max_iterations,
            "max_iterations",
            p,
        );
        set(
            l.episode_max_calls,
            &mut limits.episode_max_calls,
            "episode_max_calls",
            p,
        );
        set(
            l.breaker_failures,
            &mut limits.breaker_failures,
            "breaker_failures",
            p,
        );
        if let Some(s) = l.episode_window_s {
            if s == 0 {
                p.add(
                    file,
                    "turn_limits.episode_window_s",
                    "0",
                    "must be positive",
                );
            }
            limits.episode_window_ms = s.saturating_mul(1_000);
        }
        if let Some(ms) = l.breaker_cooldown_ms {
            if ms == 0 {
                p.add(
                    file,
                    "turn_limits.breaker_cooldown_ms",
                    "0",
                    "must be positive",
                );
            }
            limits.breaker_cooldown_ms = ms;
        }
        if limits.max_iterations < 2 {
            p.add(
                file,
                "turn_limits.max_iterations",
                limits.max_iterations.to_string(),
                "an orchestrator needs at least 2 calls (route and compose)",
            );
        }
    }
    Orchestration {
        sub_agents: raw
            .sub_agents
            .iter()
            .map(|s| Arc::from(s.as_str()))
            .collect(),
        composition,
        fanout_cap,
        fastpath,
        status,
        limits,
        direct_line: load_direct_line(raw, file, raws, p),
        obligations: load_obligations(raw, file, raws, p),
        privacy: load_privacy(raw.privacy.as_ref(), file, p),
    }
}

/// A value as an error shows it: strings bare, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Types a mapping whose fields all have defaults. Each key is tried on its own first, so
/// every bad key is reported under its own field path.
fn typed_mapping<T: serde::de::DeserializeOwned>(
    value: &Value,
    file: &str,
    field: &str,
    p: &mut Problems,
) -> Option<T> {
    let Value::Object(map) = value else {
        p.add(file, field, shown(value), "must be a mapping");
        return None;
    };
    let before = p.0.len();
    for (key, v) in map {
        let one = Value::Object(serde_json::Map::from_iter([(key.clone(), v.clone())]));
        if let Err(e) = serde_json::from_value::<T>(one) {
            let msg = e.to_string();
            if msg.starts_with("unknown field") {
                p.add(file, format!("{field}.{key}"), key, msg);
            } else if v.is_null() {
                // The usual cause: an unquoted `#` or `!` starts a comment or a tag in YAML.
                p.add(
                    file,
                    format!("{field}.{key}"),
                    "",
                    "has no value; quote values such as \"#\" or \"!!\", which YAML otherwise reads as a comment or a tag",
                );
            } else {
                p.add(file, format!("{field}.{key}"), shown(v), msg);
            }
        }
    }
    if p.0.len() > before {
        return None;
    }
    match serde_json::from_value::<T>(value.clone()) {
        Ok(t) => Some(t),
        Err(e) => {
            p.add(file, field, shown(value), e.to_string());
            None
        }
    }
}

fn load_direct_line(
    raw: &RawCard,
    file: &str,
    raws: &BTreeMap<String, (RawCard, String)>,
    p: &mut Problems,
) -> DirectLinePolicy {
    let Some(value) = &raw.direct_line else {
        return DirectLinePolicy::default();
    };
    let Some(policy) = typed_mapping::<DirectLinePolicy>(value, file, "direct_line", p) else {
        return DirectLinePolicy::default();
    };
    if policy.prefix.is_empty() {
        p.add(file, "direct_line.prefix", "", "must not be empty");
    } else if policy.prefix.contains(char::is_whitespace) {
        p.add(
            file,
            "direct_line.prefix",
            &policy.prefix,
            "must not contain whitespace",
        );
    }
    if !directive::is_token(&policy.exit) {
        p.add(
            file,
            "direct_line.exit",
            &policy.exit,
            "must be one word of letters, digits, '-', '_' or '.'",
        );
    }
    // The exit word is checked before the specialists, so one that names a specialist
    // would make that specialist unreachable.
    let exit_lower = policy.exit.to_lowercase();
    let exit_norm = directive::normalise_label(&policy.exit);
    for s in &raw.sub_agents {
        let label = raws
            .get(s)
            .and_then(|(r, _)| r.label.clone())
            .unwrap_or_else(|| capitalise(s));
        if exit_lower == s.to_lowercase() || exit_norm == directive::normalise_label(&label) {
            p.add(
                file,
                "direct_line.exit",
                &policy.exit,
                format!("is also how sub-agent {s} ({label}) is addressed; choose another word"),
            );
        }
    }
    policy
}

fn load_obligations(
    raw: &RawCard,
    file: &str,
    raws: &BTreeMap<String, (RawCard, String)>,
    p: &mut Problems,
) -> Vec<ObligationRule> {
    let items = match &raw.obligations {
        None => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            p.add(
                file,
                "obligations",
                shown(other),
                "must be a list of rules (agent, and keywords, category or always)",
            );
            return Vec::new();
        }
    };
    let mut rules = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("obligations[{i}]");
        let Some(rule) = typed_mapping::<RawObligation>(item, file, &field, p) else {
            continue;
        };
        let Some(agent) = rule.agent else {
            p.add(
                file,
                format!("{field}.agent"),
                "",
                "missing: the sub-agent that must be consulted",
            );
            continue;
        };
        let mut ok = true;
        if !raw.sub_agents.contains(&agent) {
            p.add(
                file,
                format!("{field}.agent"),
                &agent,
                format!(
                    "must be one of this card's sub_agents ({})",
                    raw.sub_agents.join(", ")
                ),
            );
            ok = false;
        }
        for (j, k) in rule.keywords.iter().enumerate() {
            if k.trim().is_empty() {
                p.add(
                    file,
                    format!("{field}.keywords[{j}]"),
                    k,
                    "an empty keyword never fires",
                );
                ok = false;
            }
        }
        if let Some(category) = &rule.category {
            // The field must be an argument some specialist of this card declares, or the
            // rule could never fire.
            let declared = raw.sub_agents.iter().any(|id| {
                raws.get(id)
                    .is_some_and(|(sub, _)| sub.ask_args.contains_key(&category.field))
            });
            if !declared {
                p.add(
                    file,
                    format!("{field}.category.field"),
                    &category.field,
                    "no sub-agent of this card declares that ask_args field",
                );
                ok = false;
            }
            if category.values.is_empty() {
                p.add(
                    file,
                    format!("{field}.category.values"),
                    "",
                    "a category rule needs at least one value",
                );
                ok = false;
            }
        }
        if rule.keywords.is_empty() && !rule.always && rule.category.is_none() {
            p.add(
                file,
                &field,
                &agent,
                "a rule needs keywords, a category or always: true, or it never fires",
            );
            ok = false;
        }
        if ok {
            rules.push(ObligationRule {
                agent: Arc::from(agent),
                keywords: rule.keywords,
                always: rule.always,
                category: rule.category,
            });
        }
    }
    rules
}

fn load_privacy(value: Option<&Value>, file: &str, p: &mut Problems) -> PrivacyPolicy {
    let Some(value) = value else {
        return PrivacyPolicy::default();
    };
    // Kinds are checked one by one so that an error names the index and the kind.
    if let Some(Value::Array(kinds)) = value.get("kinds") {
        let before = p.0.len();
        for (i, k) in kinds.iter().enumerate() {
            if serde_json::from_value::<PiiKind>(k.clone()).is_err() {
                p.add(
                    file,
                    format!("privacy.kinds[{i}]"),
                    shown(k),
                    format!(
                        "unknown kind; known: {}",
                        PiiKind::ALL.map(PiiKind::as_str).join(", ")
                    ),
                );
            } else if kinds[..i].contains(k) {
                p.add(
                    file,
                    format!("privacy.kinds[{i}]"),
                    shown(k),
                    "listed twice",
                );
            }
        }
        if p.0.len() > before {
            return PrivacyPolicy::default();
        }
    }
    typed_mapping::<PrivacyPolicy>(value, file, "privacy", p).unwrap_or_default()
}

fn capitalise(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The field (and value, when known) a YAML error is about: serde names unknown and
/// missing fields in backticks.
fn yaml_field(e: &serde_norway::Error) -> (String, String) {
    let msg = e.to_string();
    let quoted = |prefix: &str| {
        let start = msg.find(prefix)? + prefix.len();
        let end = msg[start..].find('`')?;
        Some(msg[start..start + end].to_owned())
    };
    if let Some(f) = quoted("unknown field `") {
        return (f.clone(), f);
    }
    if let Some(f) = quoted("missing field `") {
        return (f, String::new());
    }
    match msg.split_once(": ") {
        Some((path, _)) if !path.contains(' ') && !path.is_empty() => {
            (path.to_owned(), String::new())
        }
        _ => ("(card)".to_owned(), String::new()),
    }
}
