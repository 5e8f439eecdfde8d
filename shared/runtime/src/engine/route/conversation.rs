//! The messages the orchestrator sees before a turn's calls.

use baton_core::message::Message;

use crate::engine::context::TurnCtx;

/// The messages the orchestrator sees before this turn's calls: recent narration and the
/// user's text (tool messages never enter model context, D-19).
pub(crate) fn conversation(ctx: &TurnCtx) -> Vec<Message> {
    let mut messages = Vec::with_capacity(ctx.history.len() * 2 + 1);
    for turn in &ctx.history {
        messages.push(Message::user(turn.user_text.clone()));
        if !turn.narration.is_empty() {
            messages.push(Message::assistant(turn.narration.clone()));
        }
    }
    messages.push(Message::user(ctx.user_text.clone()));
    messages
}
