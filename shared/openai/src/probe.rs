//! What `models.yaml` promises about a model, checked against its server once per process
//! on first use: today, that a forced tool choice is honoured (the obligation reminders
//! of D-22 force one). A server that ignores it gets a message naming what to change;
//! with `capabilities.tool_choice: false` the runtime's fallbacks take over instead.

use std::sync::Arc;

use baton_core::ports::model::{ModelError, ModelEvent, ModelStream};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::Route;

/// The name of the tool the probe forces.
const PROBE_TOOL: &str = "baton_probe";

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeVerdict {
    /// The server does what models.yaml says.
    Capable,
    /// A forced tool choice was ignored; the message says what to change.
    CannotForceToolChoice(String),
}

/// The route's verdict, probing on first use with `send` (which streams one request body
/// to the route's server, unprobed). Failures to reach the server are not remembered.
pub(crate) async fn verdict(
    route: &Arc<Route>,
    send: impl FnOnce(Value) -> ModelStream,
) -> Result<ProbeVerdict, ModelError> {
    route
        .probe
        .get_or_try_init(|| run(route, send))
        .await
        .cloned()
}

async fn run(
    route: &Arc<Route>,
    send: impl FnOnce(Value) -> ModelStream,
) -> Result<ProbeVerdict, ModelError> {
    if !route.capabilities.tool_choice {
        return Ok(ProbeVerdict::Capable);
    }
    let body = json!({
        "model": &*route.model_id,
        "messages": [{"role": "user", "content": "Call the baton_probe tool with ok set to true."}],
        "tools": [{"type": "function", "function": {
            "name": PROBE_TOOL,
            "description": "Confirms that tool calls work.",
            "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        }}],
        "tool_choice": {"type": "function", "function": {"name": PROBE_TOOL}},
        "max_tokens": 32,
        "temperature": 0,
        "stream": true,
    });
    let mut events = send(body);
    let mut called = false;
    while let Some(event) = events.next().await {
        if let ModelEvent::ToolUseStart { name, .. } = event? {
            called |= name == PROBE_TOOL;
        }
    }
    if called {
        tracing::info!(model = %route.key, server = %route.server, "the model server honours a forced tool choice");
        return Ok(ProbeVerdict::Capable);
    }
    let message = format!(
        "the server at {server} ignored a forced tool choice for model {key} ({id}), which \
         models.yaml says it takes. Ollama: use a model with tool support (qwen2.5, \
         llama3.1 …); llama.cpp's llama-server: start it with --jinja; vLLM: start it with \
         --enable-auto-tool-choice and a --tool-call-parser; or set \
         capabilities.tool_choice: false for {key} in models.yaml so that Baton's fallbacks \
         take over",
        server = route.server,
        key = route.key,
        id = route.model_id,
    );
    tracing::error!(model = %route.key, server = %route.server, "{message}");
    Ok(ProbeVerdict::CannotForceToolChoice(message))
}
