//! The memory domain's skills as tools (D-43): connector kind `memory`, served by the
//! runtime itself over its memory store, so that a specialist (the shipped registry's
//! `memory`) or a planned worker can save, search and forget what the user asks in words.
//!
//! A tool names its operation in its connector settings (`op: save | search | forget`).
//! Its calls act for the call's principal only, and do nothing while memory is off for
//! them (the answer says so).

use std::sync::Arc;

use async_trait::async_trait;
use baton_core::Principal;
use baton_core::ports::clock::Clock;
use baton_core::ports::connector::{
    CacheMeta, Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus,
};
use baton_core::prompt::civil_date;
use baton_core::recall::terms::content_words;
use baton_core::recall::{
    Memory, MemoryFilter, MemoryId, MemoryKind, MemorySource, NewMemory, Origin, Saved,
    is_question, said, subject_key,
};
use serde_json::{Value, json};

use super::{save, search};
use crate::config::MemorySettings;
use crate::services::Recall;

/// The connector kind.
pub(crate) const KIND: &str = "memory";

/// What one memory tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Save,
    Search,
    Forget,
}

impl Op {
    fn of(config: &Value) -> Result<Op, String> {
        match config.get("op").and_then(Value::as_str) {
            Some("save") => Ok(Op::Save),
            Some("search") => Ok(Op::Search),
            Some("forget") => Ok(Op::Forget),
            Some(other) => Err(format!(
                "memory tools do `save`, `search` or `forget`, not {other:?}"
            )),
            None => Err("a memory tool needs `op: save | search | forget`".to_owned()),
        }
    }
}

/// Memories a search answers with at most.
const SEARCH_LIMIT: usize = 5;

/// The runtime's own connector over its memory (`None`: this runtime keeps none, and
/// its calls say so).
pub(crate) struct MemoryConnector {
    pub(crate) recall: Option<Recall>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: MemorySettings,
}

impl MemoryConnector {
    /// The best memories for `query`, as records.
    async fn found(
        &self,
        recall: &Recall,
        principal: &Principal,
        query: &str,
        now: u64,
    ) -> Result<Vec<Value>, ConnectorError> {
        let found = search(
            recall,
            principal,
            query,
            &MemoryFilter::current(now),
            self.settings.search_depth,
        )
        .await
        .map_err(unavailable)?;
        Ok(found
            .iter()
            .take(SEARCH_LIMIT)
            .map(|f| record(&f.memory, "found"))
            .collect())
    }

    fn envelope(principal: &Principal, status: EnvelopeStatus, payload: Value) -> Envelope {
        Envelope {
            status,
            payload,
            partial: Vec::new(),
            principal: principal.as_str().to_owned(),
            version: "1.0.0".to_owned(),
            domain_type: "memory".to_owned(),
            enricher_id: KIND.to_owned(),
            cache_meta: CacheMeta::default(),
        }
    }

    async fn on(&self, recall: &Recall, principal: &Principal) -> Result<bool, ConnectorError> {
        Ok(recall
            .store
            .setting(principal)
            .await
            .map_err(unavailable)?
            .unwrap_or(self.settings.on_by_default))
    }
}

fn unavailable(e: baton_core::ports::store::StoreError) -> ConnectorError {
    ConnectorError::Unavailable(format!("the memory store: {e}"))
}

/// The first string among `names` in the arguments.
fn arg<'a>(args: &'a Value, names: &[&str]) -> Option<&'a str> {
    names
        .iter()
        .find_map(|n| args.get(*n).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A memory as a tool result: its fields, and `line`, the words a model or a template can
/// say it in (`found`: it was looked up; otherwise it was just kept or forgotten).
fn record(memory: &Memory, line: &str) -> Value {
    let said = civil_date(memory.created_ms);
    let line = match line {
        "found" => format!("You told me on {said}: “{}”", memory.text),
        other => format!("{other}: {}", memory.text),
    };
    json!({
        "id": memory.id,
        "kind": memory.kind,
        "subject": memory.subject,
        "text": memory.text,
        "said": said,
        "line": line,
    })
}

#[async_trait]
impl Connector for MemoryConnector {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let op = Op::of(&request.config).map_err(ConnectorError::Config)?;
        let principal = &request.principal;
        let Some(recall) = &self.recall else {
            return Ok(Self::envelope(
                principal,
                EnvelopeStatus::Ok,
                json!({ "memory": "not kept", "note": "This assistant keeps no memory across conversations." }),
            ));
        };
        if !self.on(recall, principal).await? {
            return Ok(Self::envelope(
                principal,
                EnvelopeStatus::Ok,
                json!({ "memory": "off", "note": "Memory across conversations is off for this user: nothing is saved, searched or forgotten." }),
            ));
        }
        let now = self.clock.now_ms();
        let payload = match op {
            Op::Save => {
                let text = arg(&request.args, &["text", "query"]).unwrap_or_default();
                if is_question(said(text)) {
                    // A question is never a memory (D-43): nothing is kept, and what was
                    // said about it is the answer, whichever tool a model chose.
                    let found = self.found(recall, principal, text, now).await?;
                    return Ok(Self::envelope(
                        principal,
                        EnvelopeStatus::Ok,
                        json!({ "saved": "nothing: that is a question, not something to remember", "memories": found }),
                    ));
                }
                let kind = arg(&request.args, &["kind"])
                    .and_then(MemoryKind::parse)
                    .unwrap_or(MemoryKind::Fact);
                let built = NewMemory {
                    kind,
                    subject: arg(&request.args, &["subject"])
                        .unwrap_or_default()
                        .to_owned(),
                    text: said(text).to_owned(),
                    origin: Origin::Said,
                    source: MemorySource {
                        episode_id: Some(request.episode_id.to_string()),
                        turn_id: None,
                        specialist: Some(request.agent_id.to_string()),
                    },
                    ttl_ms: None,
                }
                .build(now);
                let memory = match built {
                    Ok(memory) => memory,
                    Err(e) => {
                        return Ok(Self::envelope(
                            principal,
                            EnvelopeStatus::Error,
                            json!({ "error": e.to_string() }),
                        ));
                    }
                };
                let saved = save(recall, principal, &memory, self.settings.max_memories)
                    .await
                    .map_err(unavailable)?;
                let (status, replaced) = match saved {
                    Saved::New { replaced, .. } => ("saved", replaced),
                    Saved::Unchanged(_) => ("already known", None),
                };
                json!({ "saved": status, "memories": [record(&memory, "Kept")], "replaced": replaced })
            }
            Op::Search => {
                let query = arg(&request.args, &["query", "text"]).unwrap_or_default();
                json!({ "memories": self.found(recall, principal, query, now).await? })
            }
            Op::Forget => {
                let what =
                    arg(&request.args, &["id", "subject", "query", "text"]).unwrap_or_default();
                let forgotten = forget(recall, principal, what, now).await?;
                json!({ "forgotten": forgotten.iter().map(|m| record(m, "Forgotten")).collect::<Vec<_>>() })
            }
        };
        Ok(Self::envelope(principal, EnvelopeStatus::Ok, payload))
    }

    fn check_config(&self, tool_id: &str, config: &Value) -> Result<(), String> {
        check_config(tool_id, config)
    }
}

/// Checks a memory tool's settings (also when the registry is loaded, D-43).
pub(crate) fn check_config(tool_id: &str, config: &Value) -> Result<(), String> {
    Op::of(config)
        .map(drop)
        .map_err(|e| format!("tool {tool_id}: {e}"))
}

/// Forgets what `what` names: a memory id, else the current memories whose subject holds
/// every content word of it ("forget my address" forgets the memory about "address").
/// Nothing is forgotten on a guess: words that name no subject forget nothing.
async fn forget(
    recall: &Recall,
    principal: &Principal,
    what: &str,
    now: u64,
) -> Result<Vec<Memory>, ConnectorError> {
    {
        let store = &recall.store;
        if let Ok(id) = MemoryId::parse(what) {
            let memory = store.memory(principal, &id).await.map_err(unavailable)?;
            if let Some(memory) = memory {
                store.forget(principal, &id).await.map_err(unavailable)?;
                return Ok(vec![memory]);
            }
            return Ok(Vec::new());
        }
        let asked = strip_forget(what);
        let wanted: Vec<String> = content_words(&subject_key(asked)).collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let current = store
            .list(principal, &MemoryFilter::current(now), usize::MAX)
            .await
            .map_err(unavailable)?;
        let mut forgotten = Vec::new();
        for memory in current {
            let subject: Vec<String> = content_words(&memory.subject).collect();
            if wanted.iter().all(|w| subject.contains(w)) {
                store
                    .forget(principal, &memory.id)
                    .await
                    .map_err(unavailable)?;
                forgotten.push(memory);
            }
        }
        Ok(forgotten)
    }
}

/// "forget my address" names "my address".
fn strip_forget(text: &str) -> &str {
    let trimmed = text.trim().trim_end_matches(['.', '!']);
    let lower = trimmed.to_lowercase();
    for ask in [
        "please forget about ",
        "please forget ",
        "forget about ",
        "forget ",
    ] {
        if lower.starts_with(ask) && trimmed.is_char_boundary(ask.len()) {
            return &trimmed[ask.len()..];
        }
    }
    trimmed
}
