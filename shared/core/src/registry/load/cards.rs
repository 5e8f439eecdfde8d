//! `agents/*.yaml`: agent cards, parsed first so references between cards can be checked,
//! then each built into an [`Agent`] whose every reference resolves.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::Loader;
use super::card::{Card, Cards, ParsedCard, capitalise};
use super::problems::Problems;
use crate::prompt::{PREFIX_MAX_SHARE, PREFIX_WARN_SHARE, PromptPlan};
use crate::registry::raw::RawCard;
use crate::registry::{
    Agent, AgentRole, Block, BlockOwner, ModelSpec, OrchestrationMode, Routing, SourceFile, Tool,
    Tuning,
};

/// The most a card's description may take (estimated tokens; D-6): every orchestrator
/// that routes to the card sends it on every routing request.
pub(crate) const DESCRIPTION_MAX_TOKENS: u64 = 400;

/// Ids event sources use, so no card can be a sub-agent under them.
const RESERVED_SUBAGENT_IDS: [&str; 2] = ["orchestrator", "note"];

impl Loader<'_> {
    /// Parses every card; one that does not parse, repeats an id or has a bad id is left
    /// out.
    pub(super) fn parse_cards(&mut self, files: &[SourceFile]) -> Cards {
        let mut cards = Cards::new();
        for file in files {
            let raw: RawCard = match serde_norway::from_str(&file.text) {
                Ok(raw) => raw,
                Err(e) => {
                    let (field, value) = yaml_field(&e);
                    self.problems.add(
                        &file.path,
                        field,
                        value,
                        format!("not a valid agent card: {e}"),
                    );
                    continue;
                }
            };
            if let Some(other) = cards.get(&raw.id) {
                self.problems.add(
                    &file.path,
                    "id",
                    &raw.id,
                    format!("duplicate id, also defined in {}", other.file),
                );
                continue;
            }
            if !valid_id(&raw.id) {
                self.problems.add(
                    &file.path,
                    "id",
                    &raw.id,
                    "ids are 1-40 characters of a-z, 0-9, '_' or '-', starting with a letter",
                );
                continue;
            }
            let file = file.path.clone();
            cards.insert(raw.id.clone(), ParsedCard { raw, file });
        }
        cards
    }

    /// Reports every cycle of sub-agents once, at the card closing it.
    pub(super) fn check_sub_agent_graph(&mut self, cards: &Cards) {
        // Depth-first search; `done` holds cards whose every path has been walked.
        fn visit<'a>(
            id: &'a str,
            cards: &'a Cards,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
            p: &mut Problems,
        ) {
            if done.contains(id) {
                return;
            }
            let Some(card) = cards.get(id) else {
                return;
            };
            path.push(id);
            for (i, sub) in card.raw.sub_agents.iter().enumerate() {
                if let Some(pos) = path.iter().position(|x| *x == sub.as_str()) {
                    let cycle: Vec<&str> =
                        path[pos..].iter().copied().chain([sub.as_str()]).collect();
                    p.add(
                        &card.file,
                        format!("sub_agents[{i}]"),
                        sub,
                        format!("cycle: {}", cycle.join(" -> ")),
                    );
                } else {
                    visit(sub, cards, path, done, p);
                }
            }
            path.pop();
            done.insert(id);
        }
        let mut done = BTreeSet::new();
        for id in cards.keys() {
            visit(id, cards, &mut Vec::new(), &mut done, &mut self.problems);
        }
    }

    /// Every card that builds without a problem, by id.
    pub(super) fn build_agents(&mut self, cards: &Cards) -> BTreeMap<String, Agent> {
        let mut agents = BTreeMap::new();
        for (id, parsed) in cards {
            let card = Card {
                raw: &parsed.raw,
                file: &parsed.file,
                cards,
            };
            if let Some(agent) = self.build_agent(card) {
                agents.insert(id.clone(), agent);
            }
        }
        agents
    }

    /// One card, checked in the order its problems are reported; `None` if it has any.
    /// Its model tools are left empty: they need every card's ask tool.
    fn build_agent(&mut self, card: Card<'_>) -> Option<Agent> {
        let before = self.problems.len();
        let raw = card.raw;
        let role = self.role(card);
        let model = self.card_model(card);
        let tools = self.card_tools(card);
        let description = self.card_description(card, &tools);
        let blocks = self.card_blocks(card);
        self.check_sub_agent_refs(card);
        self.check_orchestration_mode(card);
        let mut orchestration = if orchestrates(card) {
            if raw.asks_user {
                self.problems.add(
                    card.file,
                    "asks_user",
                    "true",
                    "only a specialist asks the user; an orchestrator asks its specialists",
                );
            }
            if raw.takes_pictures {
                self.problems.add(
                    card.file,
                    "takes_pictures",
                    "true",
                    "only a specialist is passed pictures; an orchestrator sees the user's pictures itself",
                );
            }
            Some(self.build_orchestration(card, model.as_ref()))
        } else {
            self.check_leaf_fields(card);
            None
        };
        let (ask_schema, ask_validator) = self.ask_schema(card);
        let inference = self.card_inference(card, model.as_deref());
        let limits = self.card_limits(card);
        let prompt = self.card_prompt(card, &blocks, model.as_deref());
        if let (Some(o), Some(model)) = (orchestration.as_mut(), model.as_ref())
            && super::planner::plans(card)
            && let Some(planner) = self.build_planner(card, model, inference)
        {
            o.mode = OrchestrationMode::Planner(planner);
        }

        if self.problems.len() > before {
            return None;
        }
        let model = model?;
        let ask_validator = ask_validator?;
        let label = raw.label.clone().unwrap_or_else(|| capitalise(&raw.id));
        Some(Agent {
            id: Arc::from(raw.id.as_str()),
            metrics_name: Arc::from(raw.id.as_str()),
            label: Arc::from(label),
            description: description.clone(),
            role,
            model,
            tools,
            prompt,
            tuning: Tuning { inference },
            limits,
            routing: Routing {
                examples: raw.routing.examples.clone(),
                keywords: raw.routing.keywords.clone(),
            },
            ask_args: raw.ask_args.clone(),
            ask_tool: super::ask::ask_tool(raw, &description, ask_schema),
            ask_validator: Arc::new(ask_validator),
            asks_user: raw.asks_user,
            takes_pictures: raw.takes_pictures,
            model_tools: Arc::from(Vec::new()),
            orchestration,
            file: Arc::from(card.file),
        })
    }

    /// The role label.
    fn role(&mut self, card: Card<'_>) -> AgentRole {
        match card.raw.role.as_str() {
            "orchestrator" => AgentRole::Orchestrator,
            "native" => AgentRole::Native,
            "external-wrapper" => AgentRole::ExternalWrapper,
            "internal-helper" => AgentRole::InternalHelper,
            other => {
                self.problems.add(
                    card.file,
                    "role",
                    other,
                    "must be orchestrator, native, external-wrapper or internal-helper",
                );
                AgentRole::Native
            }
        }
    }

    /// The description is how orchestrators route to the card (D-6). A card of one tool
    /// may leave it out when the tool has one: a remote agent's own card describes it.
    fn card_description(&mut self, card: Card<'_>, tools: &[Arc<Tool>]) -> Arc<str> {
        let description = super::card::description_of(card.raw, tools);
        if description.is_empty() {
            self.problems.add(
                card.file,
                "description",
                "",
                "the description is the routing signal and cannot be empty (a card of one tool may leave it out when the tool has one)",
            );
        }
        // Every specialist's description is in every routing request: each one kept
        // tight keeps routing sharp and the prompt small as specialists are added.
        let tokens = crate::prompt::estimate_tokens(&description);
        if tokens > DESCRIPTION_MAX_TOKENS {
            self.problems.add(
                card.file,
                "description",
                format!("~{tokens} tokens"),
                format!(
                    "a card's description is what orchestrators route by, and has a budget of {DESCRIPTION_MAX_TOKENS} tokens (about {} characters): say what the specialist is for, not how it works",
                    DESCRIPTION_MAX_TOKENS * 4
                ),
            );
        }
        description
    }

    /// The card's model, from `models.yaml`.
    fn card_model(&mut self, card: Card<'_>) -> Option<Arc<ModelSpec>> {
        let model = self.models.get(&card.raw.model).cloned();
        if model.is_none() {
            self.problems.add(
                card.file,
                "model",
                &card.raw.model,
                "no such model key in models.yaml",
            );
        }
        model
    }

    /// The card's own tools, from `tools.yaml`, each listed once.
    fn card_tools(&mut self, card: Card<'_>) -> Vec<Arc<Tool>> {
        let mut own = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, t) in card.raw.tools.iter().enumerate() {
            if !seen.insert(t) {
                self.problems
                    .add(card.file, format!("tools[{i}]"), t, "listed twice");
                continue;
            }
            match self.tools.get(t) {
                Some(tool) => own.push(tool.clone()),
                None => self.problems.add(
                    card.file,
                    format!("tools[{i}]"),
                    t,
                    "no such tool in tools.yaml",
                ),
            }
        }
        own
    }

    /// The blocks the card lists: not a required one (those come anyway), and on a
    /// vertical card not a platform-owned one.
    fn card_blocks(&mut self, card: Card<'_>) -> Vec<Arc<Block>> {
        let is_orchestrator = orchestrates(card);
        let mut listed = Vec::new();
        for (i, b) in card.raw.prompt_blocks.iter().enumerate() {
            let field = format!("prompt_blocks[{i}]");
            match self.blocks.get(b) {
                None => self
                    .problems
                    .add(card.file, field, b, "no such prompt block"),
                Some(block) if block.required => self.problems.add(
                    card.file,
                    field,
                    b,
                    "platform-required blocks are injected automatically; do not list them",
                ),
                Some(block) if block.owner == BlockOwner::Platform && !is_orchestrator => {
                    self.problems.add(
                        card.file,
                        field,
                        b,
                        "a vertical card cannot list a platform-owned block",
                    )
                }
                Some(block) => listed.push(block.clone()),
            }
        }
        listed
    }

    /// Each sub-agent is a card, not a reserved id, and listed once.
    fn check_sub_agent_refs(&mut self, card: Card<'_>) {
        let subs = &card.raw.sub_agents;
        for (i, s) in subs.iter().enumerate() {
            let field = format!("sub_agents[{i}]");
            match card.cards.get(s) {
                None => self.problems.add(card.file, field, s, "no such agent card"),
                Some(_) if RESERVED_SUBAGENT_IDS.contains(&s.as_str()) => self.problems.add(
                    card.file,
                    field,
                    s,
                    "this id is reserved for event sources and cannot be a sub-agent",
                ),
                Some(_) if subs[..i].contains(s) => {
                    self.problems.add(card.file, field, s, "listed twice")
                }
                Some(_) => {}
            }
        }
    }

    /// A card without sub-agents sets none of the orchestrator's fields.
    fn check_leaf_fields(&mut self, card: Card<'_>) {
        let raw = card.raw;
        for (field, present) in [
            ("composition", raw.composition.is_some()),
            ("fanout_cap", raw.fanout_cap.is_some()),
            ("fastpath", raw.fastpath.is_some()),
            ("direct_line", raw.direct_line.is_some()),
            ("status_messages", raw.status_messages.is_some()),
            ("obligations", raw.obligations.is_some()),
            ("privacy", raw.privacy.is_some()),
            ("turn_limits", raw.turn_limits.is_some()),
            ("memory", raw.memory.is_some()),
        ] {
            if present {
                self.problems.add(
                    card.file,
                    field,
                    "",
                    "orchestrator-only field on a card without sub_agents or orchestration",
                );
            }
        }
    }

    /// The prompt's stable prefix: the required blocks, then the card's in declared order.
    /// Past half the model's context window it is an error, past a quarter a warning; what
    /// a request adds on top is bounded per request (`REQUEST_PROMPT_SHARE`).
    fn card_prompt(
        &mut self,
        card: Card<'_>,
        blocks: &[Arc<Block>],
        model: Option<&ModelSpec>,
    ) -> PromptPlan {
        // A routing orchestrator is told its fan-out cap (the runtime's, not the card
        // author's, words: a card cannot forget it).
        let cap_note = (!card.raw.sub_agents.is_empty()).then(|| {
            super::orchestration::fanout_note(
                card.raw
                    .fanout_cap
                    .unwrap_or(super::orchestration::DEFAULT_FANOUT_CAP),
            )
        });
        let prompt = PromptPlan::from_blocks(
            self.required_blocks
                .iter()
                .chain(blocks.iter())
                .map(|b| &*b.text)
                .chain(cap_note.as_deref()),
        );
        let Some(model) = model else {
            return prompt;
        };
        let share = prompt.estimated_tokens as f64 / model.context_window as f64;
        if share >= PREFIX_MAX_SHARE {
            self.problems.add(
                card.file,
                "prompt_blocks",
                format!("~{} tokens", prompt.estimated_tokens),
                format!(
                    "the prompt uses {:.0}% of {}'s context window; the limit is {:.0}%",
                    share * 100.0,
                    model.key,
                    PREFIX_MAX_SHARE * 100.0
                ),
            );
        } else if share >= PREFIX_WARN_SHARE {
            self.warnings.push(format!(
                "{}: the prompt uses {:.0}% of {}'s context window (warning at {:.0}%)",
                card.file,
                share * 100.0,
                model.key,
                PREFIX_WARN_SHARE * 100.0
            ));
        }
        prompt
    }
}

/// Whether the card orchestrates: it routes to sub-agents or it plans.
pub(super) fn orchestrates(card: Card<'_>) -> bool {
    !card.raw.sub_agents.is_empty() || card.raw.orchestration.is_some()
}

/// 1-40 characters of a-z, 0-9, '_' or '-', starting with a letter.
fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && id.len() <= 40
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
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
