//! The turn's events as a chat completion: chunks while it streams, or one response at
//! its end. The answer is [`AnswerText`]'s; the consulted record, the privacy receipt and
//! the ids travel in the `baton` extension field (a client that does not know it ignores
//! it), and the usage in OpenAI's own `usage`.

use baton_core::events::Event;
use serde::Serialize;
use serde_json::{Value, json};

use crate::faces::answer::AnswerText;
use crate::faces::summary::TurnSummary;

/// One turn becoming one completion.
#[derive(Debug)]
pub(crate) struct Completion {
    id: String,
    model: String,
    created: u64,
    turn_id: String,
    episode_id: String,
    answer: AnswerText,
    /// The whole answer, for a response that is not streamed.
    text: String,
    summary: TurnSummary,
}

impl Completion {
    /// A completion for the turn `turn_id` of `episode_id`, answering as `model`, made at
    /// `created` (Unix seconds).
    pub(crate) fn new(turn_id: &str, episode_id: &str, model: &str, created: u64) -> Self {
        Completion {
            id: format!("chatcmpl-{turn_id}"),
            model: model.to_owned(),
            created,
            turn_id: turn_id.to_owned(),
            episode_id: episode_id.to_owned(),
            answer: AnswerText::default(),
            text: String::new(),
            summary: TurnSummary::default(),
        }
    }

    /// Takes in one event; the answer text it adds, if any.
    fn take(&mut self, event: &Event) -> Option<String> {
        self.summary.take(event);
        self.answer.piece(event)
    }

    /// The ids of the specialists consulted, for a response header.
    pub(crate) fn consulted_ids(&self) -> String {
        self.summary.consulted_ids()
    }

    fn usage(&self) -> Value {
        let t = self.summary.tokens();
        json!({
            "prompt_tokens": t.prompt,
            "completion_tokens": t.completion,
            "total_tokens": t.prompt + t.completion,
            "prompt_tokens_details": { "cached_tokens": t.cached },
        })
    }

    /// What Baton adds: who was consulted (from the runtime's record, never model text),
    /// what the privacy guard masked, how the turn ended, and its ids.
    fn extension(&self) -> Value {
        self.summary.record(&self.turn_id, &self.episode_id)
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    }

    /// The first chunk, sent at once: the assistant's role.
    pub(crate) fn opening(&self) -> String {
        self.chunk(json!({ "role": "assistant", "content": "" }), None)
            .to_string()
    }

    /// A content delta, serialised without building a JSON tree: it is the stream's
    /// every chunk.
    fn content_chunk(&self, piece: &str) -> String {
        #[derive(Serialize)]
        struct Delta<'a> {
            content: &'a str,
        }
        #[derive(Serialize)]
        struct Choice<'a> {
            index: u32,
            delta: Delta<'a>,
            finish_reason: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct Chunk<'a> {
            id: &'a str,
            object: &'a str,
            created: u64,
            model: &'a str,
            choices: [Choice<'a>; 1],
        }
        let chunk = Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            choices: [Choice {
                index: 0,
                delta: Delta { content: piece },
                finish_reason: None,
            }],
        };
        // Plain strings and numbers always serialise.
        serde_json::to_string(&chunk).unwrap_or_default()
    }

    /// The chunks one event makes (`data:` payloads): a content delta for answer text;
    /// at the end of the turn the finish chunk with the extension, then, if asked for, the
    /// usage chunk.
    pub(crate) fn chunks(&mut self, event: &Event, include_usage: bool) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(piece) = self.take(event) {
            out.push(self.content_chunk(&piece));
        }
        if let Event::Completed { .. } = event {
            let mut finish = self.chunk(json!({}), Some("stop"));
            finish["baton"] = self.extension();
            out.push(finish.to_string());
            if include_usage {
                let usage = json!({
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self.usage(),
                });
                out.push(usage.to_string());
            }
        }
        out
    }

    /// Takes in one event of a response that is not streamed.
    pub(crate) fn fold(&mut self, event: &Event) {
        if let Some(piece) = self.take(event) {
            self.text.push_str(&piece);
        }
    }

    /// The whole response, once the turn is over.
    pub(crate) fn response(&self) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": self.text },
                "finish_reason": "stop",
            }],
            "usage": self.usage(),
            "baton": self.extension(),
        })
    }
}
