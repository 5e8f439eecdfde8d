//! A suite as data: its cases, what each expects, its thresholds, and what a run observed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A suite: its cases and thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// Its name (the file's stem unless it names itself).
    pub name: String,
    /// The orchestrator it is for; `None`: whichever is the entry.
    pub orchestrator: Option<String>,
    /// The file it came from.
    pub file: String,
    /// Its cases, in file order.
    pub cases: Vec<Case>,
    /// The mode its cases need whatever the run's mode (`end-to-end` for a suite that
    /// judges answers); `None`: the run's.
    pub mode: Option<crate::EvalMode>,
    /// What the baseline gate holds it to, beyond "nothing that passed fails now".
    pub thresholds: Thresholds,
}

/// A suite's floors for the gate; each unset one is not checked (but the switch floor,
/// 95% by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// The lowest routing accuracy.
    #[serde(default)]
    pub routing_accuracy: Option<f64>,
    /// The lowest accuracy of any intent-switch pair.
    #[serde(default = "default_switch_floor")]
    pub switch_pair: f64,
    /// Per specialist: the lowest precision and recall.
    #[serde(default)]
    pub specialists: BTreeMap<String, SpecialistFloor>,
    /// The lowest prior-context recall (of the facts cases expect a specialist to be told,
    /// the share it was).
    #[serde(default)]
    pub prior_context_recall: Option<f64>,
    /// The lowest reference resolution (of the `reference` cases, the share routed right
    /// with every referenced fact told).
    #[serde(default)]
    pub reference_resolution: Option<f64>,
    /// The lowest compaction recall (of the facts a compacted summary must keep, the share
    /// it kept).
    #[serde(default)]
    pub compaction_recall: Option<f64>,
    /// The lowest share of failed specialists whose failure the answer acknowledged.
    #[serde(default)]
    pub failure_acknowledged: Option<f64>,
    /// The lowest memory recall@5 (of the facts said in earlier conversations that cases
    /// expect remembered, the share among the top five memories found for the turn, D-43).
    #[serde(default)]
    pub memory_recall: Option<f64>,
    /// The lowest share of those facts the answer used.
    #[serde(default)]
    pub memory_use: Option<f64>,
}

fn default_switch_floor() -> f64 {
    crate::baseline::SWITCH_PAIR_FLOOR
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            routing_accuracy: None,
            switch_pair: default_switch_floor(),
            specialists: BTreeMap::new(),
            prior_context_recall: None,
            reference_resolution: None,
            compaction_recall: None,
            failure_acknowledged: None,
            memory_recall: None,
            memory_use: None,
        }
    }
}

/// One specialist's floors.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecialistFloor {
    /// The lowest precision.
    #[serde(default)]
    pub precision: Option<f64>,
    /// The lowest recall.
    #[serde(default)]
    pub recall: Option<f64>,
}

/// One case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within the suite.
    pub id: String,
    /// Labels the report slices by (`single`, `mixed`, `switch`, `fastpath` …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The conversation before the turn, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PastTurn>,
    /// The user's turn.
    pub turn: String,
    /// Pictures sent with the turn: files, relative to the suite's own file (D-42).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pictures: Vec<String>,
    /// Their bytes, read with the suite (`files::read_suite_files`).
    #[serde(skip)]
    pub picture_bytes: Vec<baton_core::picture::Bytes>,
    /// Fold the history into the episode's summary (a compaction with the summarizer
    /// model) before the turn, as a long conversation would be.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compact: bool,
    /// Specialists whose every tool call fails in this case, as if their services were
    /// down: a partial failure (end-to-end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
    /// Earlier conversations of the same user, each the messages they sent in it, run
    /// (and their memories extracted, D-43) before the case's own turn, which starts a
    /// new conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<Vec<String>>,
    /// What must happen.
    pub expect: Expect,
}

/// A turn of the conversation so far, as the journal would hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PastTurn {
    /// What the user said.
    pub user: String,
    /// What the assistant answered.
    #[serde(default)]
    pub answer: String,
    /// Who answered it (their segments carry the answer), so the next turn can be a switch.
    #[serde(default)]
    pub consulted: Vec<String>,
    /// What each consulted specialist said in its own words, when the answer was composed
    /// from them; a specialist not named here said the answer itself (passed through).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub said: BTreeMap<String, String>,
}

/// The expectations of a case; each unset part is not checked.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Who is consulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteExpect>,
    /// The arguments of `ask_<id>` calls, by specialist: a subset match.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, serde_json::Value>,
    /// Argument keys never compared (ids and dates differ run to run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_args: Vec<String>,
    /// The answer's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<AnswerExpect>,
    /// The trust layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<TrustExpect>,
    /// A planner's plan (D-16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanExpect>,
    /// By specialist: facts (ids, names, amounts) it must be told, in its query or its
    /// prior context: what a switch or a reference to an earlier turn must carry over.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub told: BTreeMap<String, Vec<String>>,
    /// Facts the compacted summary must keep (a case with `compact: true`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// Specialists that failed and whose failure the answer must acknowledge in plain
    /// words (end-to-end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acknowledged: Vec<String>,
    /// Facts of `earlier` conversations that must be remembered: among the top five
    /// memories a search for the turn finds, and (end-to-end) in the answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalled: Vec<String>,
}

/// The plan a planner's case expects: its waves, in order, each the sub-agents that run in
/// it (in any order), each written as its skills (several joined by `+`, sorted).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanExpect {
    /// The waves.
    pub waves: Vec<Vec<String>>,
}

/// Checks on the trust layers (docs/trust.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustExpect {
    /// The turn went to this specialist on the Direct Line.
    #[serde(default)]
    pub direct_line: Option<String>,
    /// These obligations were met (the specialists the turn had to consult).
    #[serde(default)]
    pub obligations_met: Vec<String>,
    /// The privacy guard masked at least one value in the answer.
    #[serde(default)]
    pub masked: Option<bool>,
    /// None of these was consulted.
    #[serde(default)]
    pub not_consulted: Vec<String>,
}

/// The route a case expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RouteExpect {
    /// `fastpath`: answered by the orchestrator itself, nobody consulted.
    Fastpath(FastpathWord),
    /// These specialists, compared by `match`.
    Agents {
        /// Specialist ids.
        agents: Vec<String>,
        /// How the consulted list is compared (default `exact`).
        #[serde(default, rename = "match")]
        mode: MatchMode,
    },
}

/// The word `fastpath`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FastpathWord {
    /// Nobody consulted.
    Fastpath,
}

/// How the consulted specialists are compared with the expected ones (the trajectory match
/// modes of ADK and agentevals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// The same specialists in the same order, nobody else.
    #[default]
    Exact,
    /// The expected ones appear in this order; others may come between.
    InOrder,
    /// The same specialists in any order, nobody else.
    AnyOrder,
    /// Every consulted one is expected (some expected may be missing).
    Subset,
    /// Every expected one is consulted (others may be too).
    Superset,
}

/// Checks on the answer's text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerExpect {
    /// Each must appear (case-insensitive).
    #[serde(default)]
    pub contains: Vec<String>,
    /// None may appear (case-insensitive).
    #[serde(default)]
    pub not_contains: Vec<String>,
    /// It must match this regular expression.
    #[serde(default)]
    pub regex: Option<String>,
    /// It must be JSON valid against this JSON Schema (structured output).
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
}

/// What a run observed of one case.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// The specialists consulted (asked), in call order.
    pub consulted: Vec<String>,
    /// The arguments each was asked with.
    pub args: BTreeMap<String, serde_json::Value>,
    /// The orchestrator answered by itself (nobody consulted).
    pub fastpath: bool,
    /// The answer's text, when the run produced one (end-to-end mode).
    pub answer: Option<String>,
    /// The specialist the Direct Line delivered, if the turn was one.
    #[serde(default)]
    pub direct_line: Option<String>,
    /// The obligations the turn met.
    #[serde(default)]
    pub obligations_met: Vec<String>,
    /// Values the privacy guard masked in the answer.
    #[serde(default)]
    pub masked: u32,
    /// A planner's waves, each its sub-agents as their skills (joined by `+`), in dispatch
    /// order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<Vec<String>>,
    /// The summary the case's compaction wrote (`compact: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The consulted specialists that gave no usable answer, each with its label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<(String, String)>,
    /// Re-asks by the intent-count failsafe.
    pub failsafe_reasks: u32,
    /// Calls dropped by the guards or the caps.
    pub dropped_calls: u32,
    /// Obligations the runtime had to force.
    pub obligations_forced: u32,
    /// Wall time, ms.
    pub latency_ms: u64,
    /// Tokens, all models.
    pub tokens: u64,
    /// Cost, USD.
    pub cost_usd: f64,
    /// The top five memories a search for the turn found, best first (cases with
    /// `recalled` expectations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalled: Vec<String>,
}

/// How a case did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Verdict {
    /// Every expectation held.
    Passed,
    /// Some did not; each failure in plain words.
    Failed {
        /// What did not hold.
        reasons: Vec<String>,
    },
    /// The run could not observe it (a model error): neither passed nor failed.
    Errored {
        /// What went wrong.
        error: String,
    },
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case.
    pub id: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The expected specialists (empty for the Fastpath or no route expectation).
    pub expected: Vec<String>,
    /// Whether the route expectation held (`None` when the case sets none or errored).
    pub route_ok: Option<bool>,
    /// Whether the argument expectation held.
    pub args_ok: Option<bool>,
    /// Whether the answer expectation held.
    pub answer_ok: Option<bool>,
    /// Whether the trust expectation held.
    #[serde(default)]
    pub trust_ok: Option<bool>,
    /// Whether the plan expectation held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_ok: Option<bool>,
    /// The context expectations (`told`, `kept`, `acknowledged`), counted fact by fact.
    #[serde(default, skip_serializing_if = "ContextCounts::is_empty")]
    pub context: ContextCounts,
    /// How it did.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What the run saw (absent when it errored).
    pub observed: Option<Observation>,
}

impl CaseResult {
    /// A case the run could not observe.
    pub fn errored(case: &Case, error: impl Into<String>) -> CaseResult {
        CaseResult {
            id: case.id.clone(),
            tags: case.tags.clone(),
            expected: expected_agents(case),
            route_ok: None,
            args_ok: None,
            answer_ok: None,
            trust_ok: None,
            plan_ok: None,
            context: ContextCounts::default(),
            verdict: Verdict::Errored {
                error: error.into(),
            },
            observed: None,
        }
    }
}

/// The specialists a case expects (none for the Fastpath).
pub fn expected_agents(case: &Case) -> Vec<String> {
    match &case.expect.route {
        Some(RouteExpect::Agents { agents, .. }) => agents.clone(),
        _ => Vec::new(),
    }
}

/// How a case's context expectations did, fact by fact: what the context metrics add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContextCounts {
    /// Facts the case expects specialists to be told.
    pub told_expected: u32,
    /// Of those, told.
    pub told_found: u32,
    /// Facts the summary must keep.
    pub kept_expected: u32,
    /// Of those, kept.
    pub kept_found: u32,
    /// Failures the answer must acknowledge.
    pub acknowledged_expected: u32,
    /// Of those, acknowledged.
    pub acknowledged_found: u32,
    /// Facts of earlier conversations the case expects remembered.
    #[serde(default)]
    pub recalled_expected: u32,
    /// Of those, among the top five memories found.
    #[serde(default)]
    pub recalled_found: u32,
    /// Of those, in the answer (end-to-end).
    #[serde(default)]
    pub used_found: u32,
    /// Facts whose use in an answer was judged (the run produced one).
    #[serde(default)]
    pub used_expected: u32,
}

impl ContextCounts {
    /// The case sets no context expectation.
    pub fn is_empty(&self) -> bool {
        self.told_expected
            + self.kept_expected
            + self.acknowledged_expected
            + self.recalled_expected
            == 0
    }
}
