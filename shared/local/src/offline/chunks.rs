//! Turning a composed reply into stream events: text in chunks of a few words, tool
//! arguments in fragments, then the stop reason and an estimated usage.

use baton_core::message::{Content, Message};
use baton_core::ports::model::{ModelEvent, ModelRequest, StopReason, TokenUsage};

/// Words per text chunk: small enough that a reply arrives as several deltas.
const WORDS_PER_CHUNK: usize = 3;

/// Splits text into chunks of a few words; concatenating the chunks gives the text back.
pub(crate) fn text_chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for piece in text.split_inclusive(char::is_whitespace) {
        current.push_str(piece);
        if !piece.trim().is_empty() {
            words += 1;
        }
        if words >= WORDS_PER_CHUNK && piece.ends_with(char::is_whitespace) {
            out.push(std::mem::take(&mut current));
            words = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Splits JSON text into at least two fragments at character boundaries.
fn fragments(json: &str) -> Vec<String> {
    let chars: Vec<char> = json.chars().collect();
    if chars.len() < 2 {
        return vec![json.to_owned(), String::new()];
    }
    // Roughly 24 characters per fragment, and never fewer than two.
    let parts = (chars.len() / 24).clamp(2, 8);
    let size = chars.len().div_ceil(parts);
    chars
        .chunks(size)
        .map(|c| c.iter().collect::<String>())
        .collect()
}

/// Collects the events of one reply and counts what it emits.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    events: Vec<ModelEvent>,
    out_chars: usize,
    calls: usize,
}

impl Reply {
    /// An empty reply.
    pub(crate) fn new() -> Self {
        Reply::default()
    }

    /// Appends text as several deltas.
    pub(crate) fn text(&mut self, text: &str) {
        self.out_chars += text.chars().count();
        self.events
            .extend(text_chunks(text).into_iter().map(ModelEvent::TextDelta));
    }

    /// Appends one tool call: start, argument fragments, stop.
    pub(crate) fn tool_call(&mut self, id: String, name: &str, args: &serde_json::Value) {
        let json = args.to_string();
        self.out_chars += name.chars().count() + json.chars().count();
        self.calls += 1;
        self.events.push(ModelEvent::ToolUseStart {
            id: id.clone(),
            name: name.to_owned(),
        });
        for fragment in fragments(&json) {
            self.events.push(ModelEvent::ToolUseDelta {
                id: id.clone(),
                fragment,
            });
        }
        self.events.push(ModelEvent::ToolUseStop { id });
    }

    /// Ends the reply: the stop reason, then usage estimated at four characters a token.
    pub(crate) fn finish(mut self, request: &ModelRequest) -> Vec<ModelEvent> {
        let stop = if self.calls > 0 {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        self.events.push(ModelEvent::Stop(stop));
        self.events.push(ModelEvent::Usage(TokenUsage {
            input: tokens(input_chars(request)),
            output: tokens(self.out_chars),
            cache_read: 0,
            cache_write: 0,
        }));
        self.events
    }
}

fn tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn input_chars(request: &ModelRequest) -> usize {
    let system: usize = request.system.iter().map(|b| b.text.chars().count()).sum();
    system + request.messages.iter().map(message_chars).sum::<usize>()
}

fn message_chars(message: &Message) -> usize {
    message
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.chars().count(),
            Content::ToolUse { name, input, .. } => {
                name.chars().count() + input.to_string().chars().count()
            }
            Content::ToolResult { content, .. } => content.to_string().chars().count(),
            // Counted as the tokens a vision model would take for it.
            Content::Picture { picture, .. } => {
                usize::try_from(picture.tokens().saturating_mul(4)).unwrap_or(usize::MAX)
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_rebuild_the_text_exactly() {
        let text = "From Support: try again.\n\n- one item\n- two  items ";
        let chunks = text_chunks(text);
        assert!(chunks.len() > 2);
        assert_eq!(chunks.concat(), text);
        assert!(text_chunks("").is_empty());
    }

    #[test]
    fn arguments_come_in_at_least_two_fragments() {
        for json in ["{}", r#"{"query":"coffee deals","intent_count":2}"#, "é"] {
            let parts = fragments(json);
            assert!(parts.len() >= 2);
            assert_eq!(parts.concat(), json);
        }
    }
}
