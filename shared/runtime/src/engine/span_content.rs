//! What was said, on the spans, when a deployment asks for it (D-33): the user's message
//! and the answer on the turn's `invoke_agent` span, each specialist's query and answer on
//! its own, in the GenAI conventions' message form (`gen_ai.input.messages`,
//! `gen_ai.output.messages`). Every text passes the privacy guard before it is recorded,
//! and is clipped: a trace is not the journal.

use serde_json::json;
use tracing::Span;

use super::context::TurnCtx;

/// The longest text kept on a span, in bytes (cut at a character boundary).
const MAX_BYTES: usize = 16 * 1024;

/// The conventions' one-message list: `[{role, parts: [{type: text, content}]}]`.
fn messages(role: &str, text: &str) -> String {
    let mut end = text.len().min(MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let content = if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_owned()
    };
    json!([{ "role": role, "parts": [{ "type": "text", "content": content }] }]).to_string()
}

/// Records `input` (not yet masked) and `output` on `span`, when content is captured.
/// `output_masked` says whether `output` already went through the guard (the answer as
/// shown has).
pub(super) fn record(ctx: &TurnCtx, span: &Span, input: &str, output: &str, output_masked: bool) {
    if !ctx.inner.config.capture_content || span.is_disabled() {
        return;
    }
    let input = ctx.out.mask_stored(input);
    span.record("gen_ai.input.messages", messages("user", &input));
    let output = if output_masked {
        messages("assistant", output)
    } else {
        messages("assistant", &ctx.out.mask_stored(output))
    };
    span.record("gen_ai.output.messages", output);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_conventions_form_and_are_clipped_at_a_character() {
        let one: serde_json::Value = serde_json::from_str(&messages("user", "hi")).unwrap();
        assert_eq!(
            one,
            json!([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
        );
        let long = "é".repeat(MAX_BYTES);
        let clipped: serde_json::Value =
            serde_json::from_str(&messages("assistant", &long)).unwrap();
        let content = clipped[0]["parts"][0]["content"].as_str().unwrap();
        assert!(
            content.len() <= MAX_BYTES + '…'.len_utf8(),
            "{}",
            content.len()
        );
        assert!(content.ends_with('…'));
    }
}
