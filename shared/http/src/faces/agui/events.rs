//! The turn's events as AG-UI events:
//!
//! - `RUN_STARTED` first, then `RUN_FINISHED` (with the usage), or `RUN_ERROR` with the
//!   plain message when the turn could not be answered;
//! - the answer as one assistant text message (`TEXT_MESSAGE_*`), as a text-only client
//!   reads it ([`AnswerText`]);
//! - each delegation to a specialist as a `TOOL_CALL_START/ARGS/END` triple
//!   (`ask_<id>`), opened when the specialist's work first shows, and its
//!   `TOOL_CALL_RESULT` from the runtime's consulted record;
//! - each planner wave as a step (`STEP_STARTED`/`STEP_FINISHED`);
//! - progress lines as an activity (`ACTIVITY_SNAPSHOT`, replaced as they come);
//! - the consulted record and the privacy receipt as a `baton.consulted` custom event and
//!   in a `STATE_SNAPSHOT` under `baton`;
//! - a turn that waits for the user (D-36) as AG-UI's interrupt: `RUN_FINISHED` with the
//!   outcome `interrupt`, naming it (its id, `reason` `approval` or `question`, the words
//!   as `message`, `expiresAt`, and the answer's `responseSchema`).

use std::collections::{BTreeMap, BTreeSet};

use baton_core::consulted::ConsultedAgent;
use baton_core::events::{Event, InterruptionView, SOURCE_NOTE};
use baton_core::interruption::InterruptionKind;
use baton_core::turn::TurnOutcome;
use serde_json::{Value, json};

use crate::faces::answer::AnswerText;
use crate::faces::summary::TurnSummary;

/// The orchestrator's own text source.
const ORCHESTRATOR: &str = "orchestrator";

/// A run's first event, also when its turn is refused.
pub(crate) fn started(thread_id: &str, run_id: &str) -> Value {
    json!({ "type": "RUN_STARTED", "threadId": thread_id, "runId": run_id })
}

/// One turn becoming one AG-UI run.
#[derive(Debug)]
pub(crate) struct Run {
    thread_id: String,
    run_id: String,
    turn_id: String,
    episode_id: String,
    message_id: String,
    answer: AnswerText,
    text_open: bool,
    /// Specialists whose delegation was opened (and closed: the triple goes out at once).
    delegated: BTreeSet<String>,
    /// Planner waves: how many nodes each has, how many ended, whether it started.
    waves: BTreeMap<u32, (usize, usize, bool)>,
    summary: TurnSummary,
    /// What the turn waits on, as an AG-UI interrupt.
    interrupt: Option<Value>,
}

impl Run {
    /// A run `run_id` of thread `thread_id`, carrying turn `turn_id` of `episode_id`.
    pub(crate) fn new(thread_id: &str, run_id: &str, turn_id: &str, episode_id: &str) -> Self {
        Run {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            turn_id: turn_id.to_owned(),
            episode_id: episode_id.to_owned(),
            message_id: format!("{turn_id}-answer"),
            answer: AnswerText::default(),
            text_open: false,
            delegated: BTreeSet::new(),
            waves: BTreeMap::new(),
            summary: TurnSummary::default(),
            interrupt: None,
        }
    }

    /// The first event.
    pub(crate) fn started(&self) -> Value {
        started(&self.thread_id, &self.run_id)
    }

    fn tool_call_id(&self, agent: &str) -> String {
        format!("{}-ask-{agent}", self.turn_id)
    }

    /// The delegation triple for `agent`, once.
    fn delegate(&mut self, agent: &str, out: &mut Vec<Value>) {
        if agent == ORCHESTRATOR || agent == SOURCE_NOTE || !self.delegated.insert(agent.to_owned())
        {
            return;
        }
        let id = self.tool_call_id(agent);
        out.push(json!({ "type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": baton_core::registry::ask_tool_name(agent) }));
        out.push(json!({ "type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": json!({ "agent": agent }).to_string() }));
        out.push(json!({ "type": "TOOL_CALL_END", "toolCallId": id }));
    }

    fn step(wave: u32) -> String {
        format!("wave {wave}")
    }

    fn results(&mut self, agents: &[ConsultedAgent], footer: &str, out: &mut Vec<Value>) {
        for agent in agents {
            self.delegate(&agent.agent_id, out);
            let id = self.tool_call_id(&agent.agent_id);
            let content = json!({
                "agent": agent.agent_id,
                "label": agent.label,
                "status": agent.status,
                "duration_ms": agent.duration_ms,
                "tool_calls": agent.tool_calls,
            });
            out.push(json!({
                "type": "TOOL_CALL_RESULT",
                "messageId": format!("{id}-result"),
                "toolCallId": id,
                "content": content.to_string(),
                "role": "tool",
            }));
        }
        out.push(json!({
            "type": "CUSTOM",
            "name": "baton.consulted",
            "value": { "agents": agents, "footer": footer },
        }));
    }

    /// The AG-UI events one turn event makes.
    pub(crate) fn events(&mut self, event: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        self.summary.take(event);
        match event {
            Event::Status { message, .. } => out.push(json!({
                "type": "ACTIVITY_SNAPSHOT",
                "messageId": format!("{}-progress", self.turn_id),
                "activityType": "progress",
                "content": { "message": message },
                "replace": true,
            })),
            Event::Plan { nodes } => {
                for node in nodes {
                    self.waves.entry(node.wave).or_default().0 += 1;
                }
            }
            Event::NodeStart { node, wave } => {
                let entry = self.waves.entry(*wave).or_default();
                if !entry.2 {
                    entry.2 = true;
                    out.push(json!({ "type": "STEP_STARTED", "stepName": Self::step(*wave) }));
                }
                self.delegate(node, &mut out);
            }
            Event::NodeEnd { wave, .. } => {
                let entry = self.waves.entry(*wave).or_default();
                entry.1 += 1;
                if entry.2 && entry.1 >= entry.0 {
                    entry.2 = false;
                    out.push(json!({ "type": "STEP_FINISHED", "stepName": Self::step(*wave) }));
                }
            }
            Event::ToolCallStart { agent, .. } | Event::DelegatedText { agent, .. } => {
                self.delegate(agent, &mut out);
            }
            Event::Text { source, .. } => self.delegate(source, &mut out),
            Event::AgentsConsulted { agents, footer, .. } => self.results(agents, footer, &mut out),
            Event::Interruption(asked) => {
                let InterruptionView {
                    id,
                    kind,
                    agent,
                    label,
                    tool,
                    action,
                    args,
                    expires_ms,
                    url,
                } = &**asked;
                self.interrupt = Some(interrupt(
                    id,
                    *kind,
                    Asker { agent, label, tool },
                    action,
                    args,
                    *expires_ms,
                    url.as_deref(),
                ))
            }
            _ => {}
        }
        if let Some(piece) = self.answer.piece(event) {
            if !self.text_open {
                self.text_open = true;
                out.push(json!({ "type": "TEXT_MESSAGE_START", "messageId": self.message_id, "role": "assistant" }));
            }
            out.push(json!({ "type": "TEXT_MESSAGE_CONTENT", "messageId": self.message_id, "delta": piece }));
        }
        if let Event::Completed { outcome, .. } = event {
            self.finish(*outcome, &mut out);
        }
        out
    }

    fn finish(&mut self, outcome: TurnOutcome, out: &mut Vec<Value>) {
        if self.text_open {
            self.text_open = false;
            out.push(json!({ "type": "TEXT_MESSAGE_END", "messageId": self.message_id }));
        }
        // A wave cut short still ends its step.
        for (wave, (_, _, open)) in &mut self.waves {
            if *open {
                *open = false;
                out.push(json!({ "type": "STEP_FINISHED", "stepName": Self::step(*wave) }));
            }
        }
        out.push(json!({
            "type": "STATE_SNAPSHOT",
            "snapshot": { "baton": self.summary.record(&self.turn_id, &self.episode_id) },
        }));
        if matches!(outcome, TurnOutcome::Failed | TurnOutcome::Canceled) {
            let message = self.summary.failure_words();
            out.push(json!({ "type": "RUN_ERROR", "message": message, "code": format!("turn_{}", outcome.as_str()) }));
            return;
        }
        let usage: Vec<Value> = self
            .summary
            .usage
            .iter()
            .map(|m| {
                let input = m.tokens.input + m.tokens.cache_read + m.tokens.cache_write;
                json!({
                    "model": m.model,
                    "inputTokens": input,
                    "outputTokens": m.tokens.output,
                    "totalTokens": input + m.tokens.output,
                    "cachedInputTokens": m.tokens.cache_read,
                    "cacheWriteInputTokens": m.tokens.cache_write,
                })
            })
            .collect();
        let mut finished = json!({
            "type": "RUN_FINISHED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "usage": usage,
        });
        if outcome == TurnOutcome::AwaitingUser
            && let Some(interrupt) = self.interrupt.take()
        {
            finished["outcome"] = json!({ "type": "interrupt", "interrupts": [interrupt] });
        }
        out.push(finished);
    }
}

/// Who asks: the specialist and the tool.
struct Asker<'a> {
    agent: &'a str,
    label: &'a str,
    tool: &'a str,
}

/// An interruption as AG-UI's `Interrupt`: the answer it expects is `{"approved": bool}`
/// to an approval, `{"code": "…"}` to an account link (the code the sign-in page at
/// `metadata.url` shows) and `{"answer": "…"}` to a question (see `input.rs`).
fn interrupt(
    id: &str,
    kind: InterruptionKind,
    asker: Asker<'_>,
    words: &str,
    args: &Value,
    expires_ms: u64,
    url: Option<&str>,
) -> Value {
    let schema = match kind {
        InterruptionKind::Approval => json!({
            "type": "object",
            "properties": { "approved": { "type": "boolean" } },
            "required": ["approved"],
        }),
        // The code the sign-in page showed connects the account (D-37).
        InterruptionKind::AccountLink => json!({
            "type": "object",
            "properties": { "code": { "type": "string", "pattern": "^[0-9 -]+$" } },
            "required": ["code"],
        }),
        InterruptionKind::Question => json!({
            "type": "object",
            "properties": { "answer": { "type": "string", "minLength": 1 } },
            "required": ["answer"],
        }),
    };
    let mut interrupt = json!({
        "id": id,
        "reason": kind.as_str(),
        "message": words,
        "responseSchema": schema,
        "metadata": { "agent": asker.agent, "label": asker.label, "tool": asker.tool, "args": args },
    });
    if let Some(url) = url {
        interrupt["metadata"]["url"] = json!(url);
    }
    let expires = i64::try_from(expires_ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis);
    if let Some(at) = expires {
        interrupt["expiresAt"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    }
    interrupt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_specialist_is_named_by_its_ask_tool_even_with_a_dash_in_its_id() {
        let mut run = Run::new("th", "run", "t1", "ep");
        let out = run.events(&Event::ToolCallStart {
            call_id: "c1".into(),
            agent: "gift-cards".into(),
            tool: "search".into(),
        });
        let start = out
            .iter()
            .find(|e| e["type"] == "TOOL_CALL_START")
            .expect("the delegation");
        assert_eq!(start["toolCallName"], "ask_gift_cards");
    }
}
