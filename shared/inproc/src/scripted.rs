//! The scripted model: exact responses per agent, for tests and benchmarks.
//!
//! A script maps an agent id to rules; for each call the first rule whose `when` matches
//! the request answers it. Rules are stateless unless marked `once`, so the same script
//! serves any number of concurrent turns (benchmarks) and still lets a test say "fail the
//! first call, then succeed". Faults are data: delays, errors, malformed or unknown tool
//! calls, text-only answers, under-reported `intent_count`.
//!
//! ```yaml
//! agents:
//!   orchestrator:
//!     - when: { purpose: route }
//!       text: ["Let me check. "]
//!       tool_calls:
//!         - { name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }
//!     - when: { purpose: compose }
//!       text: ["Here you go."]
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_core::ports::model::{
    CallPurpose, Model, ModelError, ModelEvent, ModelRequest, ModelStream, StopReason, TokenUsage,
    ToolChoice,
};
use futures::stream;
use serde::Deserialize;

/// A whole script.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Rules per agent id, tried in order.
    pub agents: BTreeMap<String, Vec<Rule>>,
}

/// When a rule applies. Every set field must match.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// The call's purpose.
    pub purpose: Option<CallPurpose>,
    /// The latest user text contains this.
    pub user_contains: Option<String>,
    /// Whether the last message carries tool results.
    pub after_tool_results: Option<bool>,
    /// The call forces this tool.
    pub forced_tool: Option<String>,
}

/// A scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Tool name.
    pub name: String,
    /// Arguments (JSON).
    #[serde(default)]
    pub args: Option<serde_json::Value>,
    /// Raw argument text instead of `args` (to send malformed JSON).
    #[serde(default)]
    pub raw: Option<String>,
}

/// Failure kinds a rule can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedFailure {
    /// `ModelError::Throttled`.
    Throttled,
    /// `ModelError::Unavailable`.
    Unavailable,
    /// `ModelError::Invalid`.
    Invalid,
    /// `ModelError::Timeout`.
    Timeout,
    /// `ModelError::Malformed`.
    Malformed,
}

/// One scripted answer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// When it applies (always, if empty).
    #[serde(default)]
    pub when: When,
    /// Used at most once.
    #[serde(default)]
    pub once: bool,
    /// Wait before the first event.
    #[serde(default)]
    pub delay_ms: u64,
    /// Wait between events.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Reasoning chunks, sent first.
    #[serde(default)]
    pub reasoning: Vec<String>,
    /// Text chunks.
    #[serde(default)]
    pub text: Vec<String>,
    /// Tool calls after the text.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    /// Fail with this error (after any text and tool calls listed).
    #[serde(default)]
    pub error: Option<ScriptedFailure>,
    /// Usage to report (defaults to a rough estimate).
    #[serde(default)]
    pub usage: Option<TokenUsage>,
}

/// Why a script could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script {path}")]
    Read {
        /// Path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is not a script.
    #[error("invalid script: {0}")]
    Parse(String),
}

/// A model that answers from a [`Script`].
#[derive(Debug, Default)]
pub struct ScriptedModel {
    rules: BTreeMap<String, Vec<Arc<Rule>>>,
    used: Mutex<Vec<(String, usize)>>,
    log: Option<Mutex<Vec<ModelRequest>>>,
}

impl ScriptedModel {
    /// A model answering from `script`.
    pub fn new(script: Script) -> Self {
        let rules = script
            .agents
            .into_iter()
            .map(|(agent, rules)| (agent, rules.into_iter().map(Arc::new).collect()))
            .collect();
        ScriptedModel {
            rules,
            used: Mutex::new(Vec::new()),
            log: None,
        }
    }

    /// Parses a YAML (or JSON) script.
    ///
    /// # Errors
    /// The text is not a valid script.
    pub fn from_yaml(text: &str) -> Result<Self, ScriptError> {
        let script: Script =
            serde_norway::from_str(text).map_err(|e| ScriptError::Parse(e.to_string()))?;
        Ok(ScriptedModel::new(script))
    }

    /// Reads a script file.
    ///
    /// # Errors
    /// The file cannot be read or is not a valid script.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        ScriptedModel::from_yaml(&text)
    }

    /// Keeps a copy of every request (for tests that inspect what models were sent).
    pub fn recording(mut self) -> Self {
        self.log = Some(Mutex::new(Vec::new()));
        self
    }

    /// The requests received so far (empty unless [`ScriptedModel::recording`]).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.log
            .as_ref()
            .and_then(|l| l.lock().ok().map(|l| l.clone()))
            .unwrap_or_default()
    }

    fn pick(&self, request: &ModelRequest) -> Option<Arc<Rule>> {
        let rules = self.rules.get(&*request.agent_id)?;
        for (i, rule) in rules.iter().enumerate() {
            if !matches(&rule.when, request) {
                continue;
            }
            if rule.once {
                let Ok(mut used) = self.used.lock() else {
                    return None;
                };
                let key = (request.agent_id.to_string(), i);
                if used.contains(&key) {
                    continue;
                }
                used.push(key);
            }
            return Some(rule.clone());
        }
        None
    }
}

fn matches(when: &When, request: &ModelRequest) -> bool {
    if when.purpose.is_some_and(|p| p != request.purpose) {
        return false;
    }
    if let Some(needle) = &when.user_contains
        && !request
            .latest_user_text()
            .is_some_and(|t| t.contains(needle.as_str()))
    {
        return false;
    }
    if let Some(after) = when.after_tool_results {
        let last = request
            .messages
            .last()
            .is_some_and(|m| m.has_tool_results());
        if last != after {
            return false;
        }
    }
    if let Some(tool) = &when.forced_tool
        && request.tool_choice != ToolChoice::Tool(tool.clone())
    {
        return false;
    }
    true
}

fn estimate(request: &ModelRequest, rule: &Rule) -> TokenUsage {
    let input: usize = request.system.iter().map(|b| b.text.len()).sum::<usize>()
        + request
            .messages
            .iter()
            .map(|m| m.text().len())
            .sum::<usize>();
    let output: usize = rule.text.iter().map(String::len).sum::<usize>()
        + rule
            .tool_calls
            .iter()
            .map(|c| c.name.len() + 32)
            .sum::<usize>();
    TokenUsage {
        input: (input / 4) as u64,
        output: (output / 4) as u64,
        cache_read: 0,
        cache_write: 0,
    }
}

type Step = (u64, Result<ModelEvent, ModelError>);

/// Plays one rule back step by step: each event is made when it is due, so a call holds
/// only its rule and a position (a test double should not inflate the memory it measures).
struct Playback {
    rule: Arc<Rule>,
    usage: TokenUsage,
    pos: usize,
}

impl Playback {
    fn new(request: &ModelRequest, rule: Arc<Rule>) -> Self {
        let usage = rule.usage.unwrap_or_else(|| estimate(request, &rule));
        Playback {
            rule,
            usage,
            pos: 0,
        }
    }

    fn next_step(&mut self) -> Option<Step> {
        let rule = &*self.rule;
        let delay = if self.pos == 0 {
            rule.delay_ms
        } else {
            rule.chunk_delay_ms
        };
        let mut i = self.pos;
        self.pos += 1;
        if let Some(r) = rule.reasoning.get(i) {
            return Some((delay, Ok(ModelEvent::ReasoningDelta(r.clone()))));
        }
        i -= rule.reasoning.len();
        if let Some(t) = rule.text.get(i) {
            return Some((delay, Ok(ModelEvent::TextDelta(t.clone()))));
        }
        i -= rule.text.len();
        if let Some(call) = rule.tool_calls.get(i / 3) {
            let id = format!("tooluse_{}", i / 3);
            let event = match i % 3 {
                0 => ModelEvent::ToolUseStart {
                    id,
                    name: call.name.clone(),
                },
                1 => ModelEvent::ToolUseDelta {
                    id,
                    fragment: match (&call.raw, &call.args) {
                        (Some(raw), _) => raw.clone(),
                        (None, Some(args)) => args.to_string(),
                        (None, None) => "{}".to_owned(),
                    },
                },
                _ => ModelEvent::ToolUseStop { id },
            };
            return Some((delay, Ok(event)));
        }
        i -= rule.tool_calls.len() * 3;
        match (rule.error, i) {
            (Some(error), 0) => {
                let e = match error {
                    ScriptedFailure::Throttled => ModelError::Throttled,
                    ScriptedFailure::Unavailable => {
                        ModelError::Unavailable("scripted outage".into())
                    }
                    ScriptedFailure::Invalid => ModelError::Invalid("scripted rejection".into()),
                    ScriptedFailure::Timeout => ModelError::Timeout,
                    ScriptedFailure::Malformed => ModelError::Malformed("scripted garbage".into()),
                };
                Some((delay, Err(e)))
            }
            (None, 0) => {
                let stop = if rule.tool_calls.is_empty() {
                    StopReason::EndTurn
                } else {
                    StopReason::ToolUse
                };
                Some((delay, Ok(ModelEvent::Stop(stop))))
            }
            (None, 1) => Some((0, Ok(ModelEvent::Usage(self.usage)))),
            _ => None,
        }
    }
}

impl Model for ScriptedModel {
    fn serves_as(&self) -> Option<(&str, &str)> {
        Some(("scripted", "scripted"))
    }

    fn stream(&self, request: &ModelRequest) -> ModelStream {
        if let Some(log) = &self.log
            && let Ok(mut log) = log.lock()
        {
            log.push(request.clone());
        }
        let Some(rule) = self.pick(request) else {
            let missing = ModelError::Invalid(format!(
                "the script has no answer for agent {} ({:?})",
                request.agent_id, request.purpose
            ));
            return Box::pin(stream::iter([Err(missing)]));
        };
        Box::pin(stream::unfold(
            Playback::new(request, rule),
            |mut play| async move {
                let (delay, item) = play.next_step()?;
                if delay > 0 {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                Some((item, play))
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use baton_core::message::Message;
    use futures::StreamExt;

    use super::*;

    fn request(agent: &str, purpose: CallPurpose, text: &str) -> ModelRequest {
        ModelRequest {
            agent_id: Arc::from(agent),
            model_id: Arc::from("m"),
            purpose,
            system: Vec::new(),
            messages: vec![Message::user(text)],
            tools: Arc::from(Vec::new()),
            tool_choice: ToolChoice::Auto,
            inference: Default::default(),
        }
    }

    #[tokio::test]
    async fn first_matching_rule_answers_and_once_rules_are_consumed() {
        let model = ScriptedModel::from_yaml(
            r#"
agents:
  a:
    - when: { purpose: route }
      once: true
      error: throttled
    - when: { purpose: route, user_contains: "coffee" }
      text: ["hi ", "there"]
      tool_calls: [{ name: ask_b, args: { query: "coffee", intent_count: 1 } }]
"#,
        )
        .unwrap();
        let first: Vec<_> = model
            .stream(&request("a", CallPurpose::Route, "coffee"))
            .collect()
            .await;
        assert_eq!(first, vec![Err(ModelError::Throttled)]);
        let second: Vec<_> = model
            .stream(&request("a", CallPurpose::Route, "coffee"))
            .collect()
            .await;
        assert_eq!(second[0], Ok(ModelEvent::TextDelta("hi ".into())));
        assert!(second.contains(&Ok(ModelEvent::Stop(StopReason::ToolUse))));
    }

    #[tokio::test]
    async fn no_matching_rule_is_an_error_not_a_panic() {
        let model = ScriptedModel::new(Script::default());
        let out: Vec<_> = model
            .stream(&request("x", CallPurpose::Agent, "q"))
            .collect()
            .await;
        assert!(matches!(out.as_slice(), [Err(ModelError::Invalid(_))]));
    }

    #[tokio::test(start_paused = true)]
    async fn delays_are_honoured_in_virtual_time() {
        let model = ScriptedModel::from_yaml(
            "agents: { a: [ { delay_ms: 300, chunk_delay_ms: 10, text: [x, y] } ] }",
        )
        .unwrap();
        let start = tokio::time::Instant::now();
        let out: Vec<_> = model
            .stream(&request("a", CallPurpose::Agent, "q"))
            .collect()
            .await;
        assert_eq!(out.len(), 4);
        assert_eq!(start.elapsed(), Duration::from_millis(320));
    }
}
