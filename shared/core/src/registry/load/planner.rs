//! `orchestration: planner` (D-16): the skills a planner may grant, grouped by domain, and
//! the template every sub-agent it dispatches is made from.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Loader;
use super::card::{Card, capitalise};
use crate::model::{Inference, ToolDef};
use crate::plan::tools::planner_tools;
use crate::prompt::PromptPlan;
use crate::registry::{
    Agent, AgentLimits, AgentRole, ModelSpec, Planner, Routing, Skill, SkillCatalog, SkillDomain,
    Tool, Tuning,
};

/// Tool calls of a sub-agent whose dispatch names none (seed 003's default).
const AGENT_TOOL_CALLS: u32 = 5;
/// The most a dispatch may give one sub-agent.
const MAX_AGENT_TOOL_CALLS: u32 = 10;
/// A sub-agent's wall time.
const AGENT_TIMEOUT_MS: u64 = 30_000;

impl Loader<'_> {
    /// `orchestration` is `routing` (with sub-agents) or `planner` (with skills, no
    /// sub-agents); the planner's sections appear only on a planner.
    pub(super) fn check_orchestration_mode(&mut self, card: Card<'_>) {
        let raw = card.raw;
        match raw.orchestration.as_deref() {
            None => {}
            Some("routing") if raw.sub_agents.is_empty() => self.problems.add(
                card.file,
                "orchestration",
                "routing",
                "a routing orchestrator needs sub_agents",
            ),
            Some("routing") => {}
            Some("planner") if !raw.sub_agents.is_empty() => self.problems.add(
                card.file,
                "sub_agents",
                "",
                "a planner creates its sub-agents from skills; list skill domains under skills instead",
            ),
            Some("planner") => {}
            Some(other) => self.problems.add(
                card.file,
                "orchestration",
                other,
                "must be routing or planner",
            ),
        }
        if !plans(card) {
            for (field, present) in [
                ("skills", raw.skills.is_some()),
                ("planner", raw.planner.is_some()),
            ] {
                if present {
                    self.problems.add(
                        card.file,
                        field,
                        "",
                        "only a card with orchestration: planner sets it",
                    );
                }
            }
        }
        if plans(card) && raw.fastpath.is_some() {
            self.problems.add(
                card.file,
                "fastpath",
                "",
                "a planner answers small talk itself and has no fallback specialist",
            );
        }
    }

    /// The planner's settings; `None` when one of them has a problem (reported).
    pub(super) fn build_planner(
        &mut self,
        card: Card<'_>,
        model: &Arc<ModelSpec>,
        inference: Inference,
    ) -> Option<Arc<Planner>> {
        let before = self.problems.len();
        let settings = card.raw.planner.clone().unwrap_or_default();
        let catalog = self.granted_skills(card);
        let worker_model = match &settings.worker_model {
            None => model.clone(),
            Some(key) => match self.models.get(key) {
                Some(m) => m.clone(),
                None => {
                    self.problems.add(
                        card.file,
                        "planner.worker_model",
                        key,
                        "no such model key in models.yaml",
                    );
                    model.clone()
                }
            },
        };
        let mut blocks = Vec::new();
        for (i, b) in settings.worker_blocks.iter().enumerate() {
            match self.blocks.get(b) {
                Some(block) if !block.required => blocks.push(block.clone()),
                Some(_) => self.problems.add(
                    card.file,
                    format!("planner.worker_blocks[{i}]"),
                    b,
                    "platform-required blocks are injected automatically; do not list them",
                ),
                None => self.problems.add(
                    card.file,
                    format!("planner.worker_blocks[{i}]"),
                    b,
                    "no such prompt block",
                ),
            }
        }
        let agent_tool_calls = settings.agent_tool_calls.unwrap_or(AGENT_TOOL_CALLS);
        let max_agent_tool_calls = settings
            .max_agent_tool_calls
            .unwrap_or(MAX_AGENT_TOOL_CALLS);
        let timeout_ms = settings.agent_timeout_ms.unwrap_or(AGENT_TIMEOUT_MS);
        for (field, zero) in [
            ("agent_tool_calls", agent_tool_calls == 0),
            ("max_agent_tool_calls", max_agent_tool_calls == 0),
            ("agent_timeout_ms", timeout_ms == 0),
        ] {
            if zero {
                self.problems.add(
                    card.file,
                    format!("planner.{field}"),
                    "0",
                    "must be positive",
                );
            }
        }
        if agent_tool_calls > max_agent_tool_calls {
            self.problems.add(
                card.file,
                "planner.agent_tool_calls",
                agent_tool_calls.to_string(),
                "must not be more than planner.max_agent_tool_calls",
            );
        }
        let validator = jsonschema::validator_for(&serde_json::json!({"type": "object"}));
        if self.problems.len() > before {
            return None;
        }
        let validator = validator.ok()?;
        let prompt = PromptPlan::from_blocks(
            self.required_blocks
                .iter()
                .chain(blocks.iter())
                .map(|b| &*b.text),
        );
        let id = format!("{}-worker", card.raw.id);
        let worker = Agent {
            label: Arc::from(capitalise(&id)),
            metrics_name: Arc::from(id.as_str()),
            id: Arc::from(id),
            description: Arc::from("A sub-agent the planner dispatches"),
            role: AgentRole::InternalHelper,
            model: worker_model,
            tools: Vec::new(),
            prompt,
            tuning: Tuning { inference },
            limits: AgentLimits {
                max_tool_calls: agent_tool_calls,
                timeout_ms,
            },
            routing: Routing::default(),
            ask_args: BTreeMap::new(),
            ask_tool: ToolDef {
                name: Arc::from(crate::plan::USE_SKILL),
                description: Arc::from(""),
                input_schema: Arc::new(serde_json::json!({"type": "object"})),
            },
            ask_validator: Arc::new(validator),
            asks_user: false,
            takes_pictures: false,
            model_tools: Arc::from(Vec::new()),
            orchestration: None,
            file: Arc::from(card.file),
        };
        Some(Arc::new(Planner {
            catalog,
            worker: Arc::new(worker),
            agent_tool_calls,
            max_agent_tool_calls,
        }))
    }

    /// The skills the card grants: every specialist's tools as `<card>.<tool>`, narrowed
    /// to the domains and skills its `skills` list names (all when it names none).
    fn granted_skills(&mut self, card: Card<'_>) -> SkillCatalog {
        let all = self.skill_catalog(card);
        let Some(wanted) = &card.raw.skills else {
            return all;
        };
        if wanted.is_empty() {
            self.problems.add(
                card.file,
                "skills",
                "",
                "a planner needs at least one skill domain",
            );
        }
        let mut kept: BTreeMap<Arc<str>, SkillDomain> = BTreeMap::new();
        for (i, w) in wanted.iter().enumerate() {
            let field = format!("skills[{i}]");
            if let Some(d) = all.domain(w) {
                kept.insert(d.id.clone(), d.clone());
            } else if let Some(s) = all.skill(w) {
                let domain = kept.entry(s.domain.clone()).or_insert_with(|| SkillDomain {
                    skills: Vec::new(),
                    ..all
                        .domain(&s.domain)
                        .cloned()
                        .unwrap_or_else(|| SkillDomain {
                            id: s.domain.clone(),
                            description: Arc::from(""),
                            skills: Vec::new(),
                        })
                });
                if !domain.skills.iter().any(|k| k.name == s.name) {
                    domain.skills.push(s.clone());
                    domain.skills.sort_by(|a, b| a.name.cmp(&b.name));
                }
            } else {
                self.problems.add(
                    card.file,
                    field,
                    w,
                    "no such skill domain (a card with tools) or skill (<domain>.<tool>)",
                );
            }
        }
        SkillCatalog {
            domains: kept.into_values().collect(),
        }
    }

    /// Every specialist card's tools as skills, by domain.
    fn skill_catalog(&self, card: Card<'_>) -> SkillCatalog {
        let mut domains = Vec::new();
        for (id, other) in card.cards {
            let raw = &other.raw;
            if !raw.sub_agents.is_empty() || raw.orchestration.is_some() || raw.tools.is_empty() {
                continue;
            }
            let domain: Arc<str> = Arc::from(id.as_str());
            let mut skills: Vec<Arc<Skill>> = raw
                .tools
                .iter()
                .filter_map(|t| self.tools.get(t))
                .map(|tool| {
                    Arc::new(Skill {
                        name: Arc::from(format!("{id}.{}", tool.id)),
                        domain: domain.clone(),
                        tool: tool.clone(),
                    })
                })
                .collect();
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            skills.dedup_by(|a, b| a.name == b.name);
            let tools: Vec<Arc<Tool>> = skills.iter().map(|s| s.tool.clone()).collect();
            domains.push(SkillDomain {
                id: domain,
                description: super::card::description_of(raw, &tools),
                skills,
            });
        }
        SkillCatalog { domains }
    }
}

/// Whether the card plans.
pub(super) fn plans(card: Card<'_>) -> bool {
    card.raw.orchestration.as_deref() == Some("planner")
}

/// The planner's tools, as its model sees them.
pub(super) fn model_tools(planner: &Planner) -> Vec<ToolDef> {
    planner_tools(
        &planner.catalog,
        planner.agent_tool_calls,
        planner.max_agent_tool_calls,
    )
}
