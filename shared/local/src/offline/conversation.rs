//! Reading a request's conversation: the user's text for this turn, the calls and results
//! that followed it, and JSON results that may arrive as objects or as JSON strings.

use baton_core::message::{Content, Message, Role, ToolResultStatus};
use baton_core::ports::model::ModelRequest;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Runtime reminders travel as user text; they are instructions, not the user's words.
const REMINDER_PREFIX: &str = "<reminder>";

/// One tool result of the conversation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResultRef<'a> {
    /// Id of the call it answers.
    pub(crate) id: &'a str,
    /// Outcome as the runtime reported it.
    pub(crate) status: ToolResultStatus,
    /// The content.
    pub(crate) content: &'a Value,
}

/// The latest message the user wrote (skipping runtime reminders): its index and text.
pub(crate) fn user_turn(request: &ModelRequest) -> Option<(usize, &str)> {
    request
        .messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| {
            m.user_text()
                .filter(|t| !t.trim_start().starts_with(REMINDER_PREFIX))
                .map(|t| (i, t))
        })
}

/// The pictures of the user's latest message, with their bytes.
pub(crate) fn user_pictures(
    request: &ModelRequest,
) -> impl Iterator<Item = (&baton_core::picture::PictureRef, &[u8])> {
    user_turn(request)
        .and_then(|(i, _)| request.messages.get(i))
        .into_iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::Picture { picture, data } if !data.is_empty() => Some((picture, &data[..])),
            _ => None,
        })
}

/// How many pictures the user's latest message carries, those sent without their bytes
/// too (a transcript read back): the numbers an `ask_<id>` call names them by.
pub(crate) fn user_picture_count(request: &ModelRequest) -> usize {
    user_turn(request)
        .and_then(|(i, _)| request.messages.get(i))
        .map_or(0, |m| {
            m.content
                .iter()
                .filter(|c| matches!(c, Content::Picture { .. }))
                .count()
        })
}

/// Messages after the user's latest text (the whole conversation when there is none).
fn since_user_turn(request: &ModelRequest) -> &[Message] {
    match user_turn(request) {
        Some((i, _)) => &request.messages[i + 1..],
        None => &request.messages,
    }
}

/// Names of the tools called since the user's latest text.
pub(crate) fn calls_since_user_turn(request: &ModelRequest) -> Vec<&str> {
    since_user_turn(request)
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// Every tool result since the user's latest text, in order.
pub(crate) fn results_since_user_turn(request: &ModelRequest) -> Vec<ResultRef<'_>> {
    results_in(since_user_turn(request))
}

/// The tool results of the last message, if it carries any.
pub(crate) fn results_in_last_message(request: &ModelRequest) -> Vec<ResultRef<'_>> {
    results_in(
        request
            .messages
            .last()
            .map(std::slice::from_ref)
            .unwrap_or(&[]),
    )
}

fn results_in(messages: &[Message]) -> Vec<ResultRef<'_>> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::ToolResult {
                id,
                status,
                content,
            } => Some(ResultRef {
                id,
                status: *status,
                content,
            }),
            _ => None,
        })
        .collect()
}

/// The tool name a call id was made with, if the call is in the conversation.
pub(crate) fn tool_name_of<'a>(request: &'a ModelRequest, call_id: &str) -> Option<&'a str> {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|c| match c {
            Content::ToolUse { id, name, .. } if id == call_id => Some(name.as_str()),
            _ => None,
        })
}

/// The number the next call id gets: ids stay unique across the whole conversation.
pub(crate) fn next_call_number(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|c| matches!(c, Content::ToolUse { .. }))
        .count()
        + 1
}

/// Decodes a result given either as a JSON value or as a JSON string holding one.
pub(crate) fn decode<T: DeserializeOwned>(content: &Value) -> Option<T> {
    match content {
        Value::String(s) => serde_json::from_str(s).ok(),
        other => serde_json::from_value(other.clone()).ok(),
    }
}

/// "A", "A and B", "A, B and C".
pub(crate) fn join_labels(labels: &[&str]) -> String {
    match labels {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_join_as_a_list() {
        assert_eq!(join_labels(&[]), "");
        assert_eq!(join_labels(&["Shop"]), "Shop");
        assert_eq!(join_labels(&["A", "B", "C"]), "A, B and C");
    }
}
