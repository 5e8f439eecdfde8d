//! An orchestrator's settings (a card with sub-agents): composition, fan-out, fastpath,
//! status messages and turn limits; the trust-layer sections are in `trust.rs`, memory in
//! `memory.rs`.

use std::sync::Arc;

use super::Loader;
use super::card::Card;
use super::problems::Problems;
use crate::registry::raw::{RawStatusCode, RawTurnLimits};
use crate::registry::{
    Composition, Fastpath, ModelSpec, Orchestration, OrchestrationMode, StatusMessage,
    StatusMessages, StatusPolicy, TurnLimits,
};

/// Specialists one routing step consults when the card does not say (D-9).
pub(super) const DEFAULT_FANOUT_CAP: u32 = 3;

/// What a routing orchestrator is told of its fan-out cap (002 FR-7), in its stable prompt:
/// how many specialists one message may consult, and to choose the most relevant.
pub(super) fn fanout_note(cap: u32) -> String {
    let specialists = if cap == 1 {
        "specialist"
    } else {
        "specialists"
    };
    format!(
        "You can consult at most {cap} {specialists} for one message. When a message needs more \
         than that, call the {cap} most relevant to what the user asked, most important first; \
         calls beyond {cap} are not run."
    )
}

/// The fastpath categories an orchestrator may allow.
const FASTPATH_CATEGORIES: [&str; 3] = ["greeting", "acknowledgement", "chitchat"];

impl Loader<'_> {
    /// The orchestrator's settings, each checked in the order its problems are reported.
    /// `model` is the card's own, when it resolved: the summarizer's last default.
    pub(super) fn build_orchestration(
        &mut self,
        card: Card<'_>,
        model: Option<&Arc<ModelSpec>>,
    ) -> Orchestration {
        let composition = self.composition(card);
        let fanout_cap = self.fanout_cap(card);
        let fastpath = self.fastpath(card);
        let status = self.status_messages(card);
        let limits = self.turn_limits(card);
        Orchestration {
            mode: OrchestrationMode::Routing,
            sub_agents: card
                .raw
                .sub_agents
                .iter()
                .map(|s| Arc::from(s.as_str()))
                .collect(),
            composition,
            fanout_cap,
            fastpath,
            status,
            limits,
            direct_line: self.direct_line(card),
            obligations: self.obligations(card),
            privacy: self.privacy(card),
            memory: self.memory(card, model),
        }
    }

    /// How sub-agents' answers reach the user; mediated when unset.
    fn composition(&mut self, card: Card<'_>) -> Composition {
        match card.raw.composition.as_deref() {
            None | Some("mediated") => Composition::Mediated,
            Some("passthrough") => Composition::Passthrough,
            Some("direct") => Composition::Direct,
            Some("direct_then_compose") => Composition::DirectThenCompose,
            Some(other) => {
                self.problems.add(
                    card.file,
                    "composition",
                    other,
                    "must be mediated, passthrough, direct or direct_then_compose",
                );
                Composition::Mediated
            }
        }
    }

    /// How many sub-agents one turn may ask at once; 3 when unset.
    fn fanout_cap(&mut self, card: Card<'_>) -> u32 {
        let fanout_cap = card.raw.fanout_cap.unwrap_or(DEFAULT_FANOUT_CAP);
        if fanout_cap == 0 {
            self.problems
                .add(card.file, "fanout_cap", "0", "must be at least 1");
        }
        fanout_cap
    }

    /// The fastpath, if set: known categories, and a fallback among the sub-agents.
    fn fastpath(&mut self, card: Card<'_>) -> Option<Fastpath> {
        let f = card.raw.fastpath.as_ref()?;
        for (i, a) in f.allow.iter().enumerate() {
            if !FASTPATH_CATEGORIES.contains(&a.as_str()) {
                self.problems.add(
                    card.file,
                    format!("fastpath.allow[{i}]"),
                    a,
                    format!("must be one of {}", FASTPATH_CATEGORIES.join(", ")),
                );
            }
        }
        if !card.raw.sub_agents.contains(&f.fallback) {
            self.problems.add(
                card.file,
                "fastpath.fallback",
                &f.fallback,
                "the fallback must be one of this card's sub_agents",
            );
        }
        Some(Fastpath {
            allow: f.allow.clone(),
            fallback: Arc::from(f.fallback.as_str()),
        })
    }

    /// The status lines shown while tools run; the defaults where unset.
    fn status_messages(&mut self, card: Card<'_>) -> StatusMessages {
        let mut status = StatusMessages::default();
        let Some(s) = &card.raw.status_messages else {
            return status;
        };
        if let Some(ms) = s.merge_window_ms {
            status.merge_window_ms = ms;
        }
        if let Some(ms) = s.idle_after_ms {
            if ms == 0 {
                self.problems.add(
                    card.file,
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
            let message = self.status_code(card.file, code, m);
            status.codes.insert(code.clone(), message);
        }
        status
    }

    /// One status code's policy and words; a code that is shown needs words.
    fn status_code(&mut self, file: &str, code: &str, m: &RawStatusCode) -> StatusMessage {
        let policy = match m.policy.as_deref() {
            None | Some("batch") => StatusPolicy::Batch,
            Some("forward") => StatusPolicy::Forward,
            Some("transform") => StatusPolicy::Transform,
            Some("suppress") => StatusPolicy::Suppress,
            Some(other) => {
                self.problems.add(
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
                self.problems.add(
                    file,
                    format!("status_messages.codes.{code}.text"),
                    "",
                    "a shown status code needs words",
                );
                String::new()
            }
        };
        self.status_placeholders(file, code, &text, policy);
        StatusMessage {
            text: Arc::from(text),
            policy,
        }
    }

    /// Placeholders are filled only under `transform`, and only with what every call that
    /// emits the code has: `{agent}`, and a required argument of each tool whose `status`
    /// is the code.
    fn status_placeholders(&mut self, file: &str, code: &str, text: &str, policy: StatusPolicy) {
        let field = format!("status_messages.codes.{code}.text");
        let names = StatusMessage::placeholders(text);
        if names.is_empty() {
            return;
        }
        if policy != StatusPolicy::Transform {
            self.problems.add(
                file,
                field,
                text,
                "placeholders such as {agent} are filled only under policy: transform",
            );
            return;
        }
        let emitters: Vec<&Arc<crate::registry::Tool>> = self
            .tools
            .values()
            .filter(|t| t.status_code.as_deref() == Some(code))
            .collect();
        for name in names.into_iter().filter(|n| *n != "agent") {
            let every = !emitters.is_empty()
                && emitters.iter().all(|t| {
                    t.schema
                        .get("required")
                        .and_then(serde_json::Value::as_array)
                        .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(name)))
                });
            if !every {
                self.problems.add(
                    file,
                    field.clone(),
                    format!("{{{name}}}"),
                    "can only be {agent} or a required argument of every tool with this status code",
                );
            }
        }
    }

    /// The limits of one turn; the defaults where unset.
    fn turn_limits(&mut self, card: Card<'_>) -> TurnLimits {
        let mut limits = TurnLimits::default();
        let Some(l) = &card.raw.turn_limits else {
            return limits;
        };
        set_counts(l, &mut limits, card.file, &mut self.problems);
        let p = &mut self.problems;
        if let Some(s) = l.episode_window_s {
            if s == 0 {
                p.add(
                    card.file,
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
                    card.file,
                    "turn_limits.breaker_cooldown_ms",
                    "0",
                    "must be positive",
                );
            }
            limits.breaker_cooldown_ms = ms;
        }
        if limits.max_iterations < 2 {
            p.add(
                card.file,
                "turn_limits.max_iterations",
                limits.max_iterations.to_string(),
                "an orchestrator needs at least 2 calls (route and compose)",
            );
        }
        limits
    }
}

/// The turn limits that are counts, each positive when set.
fn set_counts(l: &RawTurnLimits, limits: &mut TurnLimits, file: &str, p: &mut Problems) {
    let mut set = |v: Option<u32>, slot: &mut u32, name: &str| {
        if let Some(v) = v {
            if v == 0 {
                p.add(file, format!("turn_limits.{name}"), "0", "must be positive");
            }
            *slot = v;
        }
    };
    set(l.max_subagents, &mut limits.max_subagents, "max_subagents");
    set(
        l.max_tool_calls,
        &mut limits.max_tool_calls,
        "max_tool_calls",
    );
    set(
        l.max_iterations,
        &mut limits.max_iterations,
        "max_iterations",
    );
    set(
        l.episode_max_calls,
        &mut limits.episode_max_calls,
        "episode_max_calls",
    );
    set(
        l.breaker_failures,
        &mut limits.breaker_failures,
        "breaker_failures",
    );
}
