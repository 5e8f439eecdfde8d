//! Chunks into normalized [`ModelEvent`]s: text, reasoning, tool calls assembled from
//! their pieces, the stop reason and the usage.
//!
//! Servers differ in how they piece a tool call; all of these are taken:
//! - `index` on every piece (OpenAI, vLLM), on none, or reused for calls with new ids;
//! - the `id` and `name` on the first piece only, or repeated on every piece (llama.cpp),
//!   or an empty `name` on continuations;
//! - a whole call in one piece (Ollama), `arguments` as an object, no `id` at all;
//! - `finish_reason` absent, `null` or `""` until the end, and `stop` for a message that
//!   made tool calls.
//!
//! Arguments are passed through as fragments: malformed JSON is the engine's to refuse
//! (its invalid-arguments guard), never this decoder's to repair. A stream that ends
//! without a finish reason is an error, never a short answer.

use std::collections::HashMap;

use baton_core::ports::model::{ModelError, ModelEvent, StopReason, TokenUsage};
use serde_json::Value;

use crate::wire::{Chunk, Delta, ToolCallDelta, Usage};

/// One tool call being assembled.
#[derive(Debug)]
struct Call {
    id: String,
    name: String,
    started: bool,
    /// Fragments that arrived before the name (held until the call can start).
    held: String,
    /// Bytes of arguments sent so far.
    sent: usize,
}

/// The decoding state of one message.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    calls: Vec<Call>,
    by_index: HashMap<u64, usize>,
    finish: Option<StopReason>,
    usage: Option<TokenUsage>,
}

impl Assembler {
    /// One chunk's events, appended to `out`.
    ///
    /// # Errors
    /// The error a server reported inside the stream.
    pub(crate) fn on_chunk(
        &mut self,
        chunk: Chunk,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            return Err(crate::error::in_stream(&error));
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(usage_of) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk
            .choices
            .into_iter()
            .flatten()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if let Some(delta) = choice.delta {
            self.on_delta(delta, out);
        }
        if let Some(message) = choice.message {
            self.on_delta(message, out);
        }
        if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
            self.finish = Some(match reason {
                "stop" | "eos" if !self.calls.is_empty() => StopReason::ToolUse,
                "stop" | "eos" => StopReason::EndTurn,
                "tool_calls" | "function_call" => StopReason::ToolUse,
                "length" => StopReason::MaxTokens,
                _ => StopReason::Other,
            });
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: Delta, out: &mut Vec<ModelEvent>) {
        for reasoning in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !reasoning.is_empty() {
                out.push(ModelEvent::ReasoningDelta(reasoning));
            }
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            out.push(ModelEvent::TextDelta(text));
        }
        for piece in delta.tool_calls.into_iter().flatten() {
            self.on_tool_piece(piece, out);
        }
    }

    fn on_tool_piece(&mut self, piece: ToolCallDelta, out: &mut Vec<ModelEvent>) {
        let id = piece.id.filter(|id| !id.is_empty());
        let (name, arguments) = match piece.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let slot = self.slot_for(piece.index, id.as_deref(), name.as_deref());
        let call = &mut self.calls[slot];
        if call.name.is_empty()
            && let Some(name) = name
        {
            call.name = name;
        }
        let fragment = match arguments {
            Some(Value::String(s)) => s,
            // A whole argument object in one piece (some servers).
            Some(v @ Value::Object(_)) => v.to_string(),
            _ => String::new(),
        };
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolUseStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.held.is_empty() {
                let held = std::mem::take(&mut call.held);
                call.sent += held.len();
                out.push(ModelEvent::ToolUseDelta {
                    id: call.id.clone(),
                    fragment: held,
                });
            }
        }
        if fragment.is_empty() {
            return;
        }
        if call.started {
            call.sent += fragment.len();
            out.push(ModelEvent::ToolUseDelta {
                id: call.id.clone(),
                fragment,
            });
        } else {
            call.held.push_str(&fragment);
        }
    }

    /// Which call a piece belongs to: by index, unless the index is reused for a new id;
    /// else by id; else the latest call, unless the piece names another tool.
    fn slot_for(&mut self, index: Option<u64>, id: Option<&str>, name: Option<&str>) -> usize {
        if let Some(i) = index
            && let Some(&slot) = self.by_index.get(&i)
        {
            let same = id.is_none_or(|id| self.calls[slot].id == id);
            if same {
                return slot;
            }
        }
        if let Some(id) = id
            && let Some(slot) = self.calls.iter().position(|c| c.id == id)
        {
            if let Some(i) = index {
                self.by_index.insert(i, slot);
            }
            return slot;
        }
        if index.is_none()
            && id.is_none()
            && let Some(last) = self.calls.len().checked_sub(1)
        {
            let other_tool = name.is_some_and(|n| {
                let current = &self.calls[last].name;
                !current.is_empty() && current != n
            });
            if !other_tool {
                return last;
            }
        }
        let slot = self.calls.len();
        self.calls.push(Call {
            id: id.map_or_else(|| format!("call_{slot}"), str::to_owned),
            name: String::new(),
            started: false,
            held: String::new(),
            sent: 0,
        });
        if let Some(i) = index {
            self.by_index.insert(i, slot);
        }
        slot
    }

    /// The end of the stream: every call closed, the stop reason, the usage.
    ///
    /// # Errors
    /// `Unavailable` when the server never said why the message ended (the stream was cut).
    pub(crate) fn finish(mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let Some(reason) = self.finish else {
            return Err(ModelError::Unavailable(
                "the stream ended before the model finished its message".to_owned(),
            ));
        };
        for call in &mut self.calls {
            if !call.started {
                // A call whose name never came: the engine's unknown-tool guard takes it.
                out.push(ModelEvent::ToolUseStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            let rest = std::mem::take(&mut call.held);
            if !rest.is_empty() {
                call.sent += rest.len();
                out.push(ModelEvent::ToolUseDelta {
                    id: call.id.clone(),
                    fragment: rest,
                });
            }
            if call.sent == 0 {
                // No arguments at all (a tool without parameters): an empty object.
                out.push(ModelEvent::ToolUseDelta {
                    id: call.id.clone(),
                    fragment: "{}".to_owned(),
                });
            }
            out.push(ModelEvent::ToolUseStop {
                id: call.id.clone(),
            });
        }
        out.push(ModelEvent::Stop(reason));
        if let Some(usage) = self.usage {
            out.push(ModelEvent::Usage(usage));
        }
        Ok(())
    }
}

/// Usage in Baton's terms (cached prompt tokens apart); `None` for an empty report.
fn usage_of(usage: &Usage) -> Option<TokenUsage> {
    if usage.prompt_tokens.is_none() && usage.completion_tokens.is_none() {
        return None;
    }
    let prompt = usage.prompt_tokens.unwrap_or(0);
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .unwrap_or(0)
        .min(prompt);
    Some(TokenUsage {
        input: prompt - cached,
        output: usage.completion_tokens.unwrap_or(0),
        cache_read: cached,
        cache_write: 0,
    })
}
