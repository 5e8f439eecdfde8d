//! The messages the orchestrator sees before a turn's calls.

use baton_core::message::Message;

use crate::engine::context::Asked;

/// The messages the orchestrator sees before this turn's calls: recent narration and the
/// user's text, with the pictures sent with it (tool messages never enter model context,
/// D-19; an earlier turn's pictures are not sent again).
pub(crate) fn conversation(asked: &Asked) -> Vec<Message> {
    let mut messages = Vec::with_capacity(asked.history.len() * 2 + 1);
    for turn in &asked.history {
        messages.push(Message::user(turn.user_text.clone()));
        if !turn.narration.is_empty() {
            messages.push(Message::assistant(turn.narration.clone()));
        }
    }
    messages.push(Message::user_with_pictures(
        asked.user_text.clone(),
        &asked.pictures,
    ));
    messages
}
