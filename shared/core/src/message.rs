//! Conversation messages as the model port sees them.

use serde::{Deserialize, Serialize};

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (tool results travel in user messages, as in Bedrock's Converse API).
    User,
    /// The model.
    Assistant,
}

/// Outcome of a tool call as reported back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    /// The tool answered.
    Ok,
    /// The tool failed or its data is unavailable.
    Error,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call the model made.
    ToolUse {
        /// The call's id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments (a JSON object), as text: a transcript holds them only to send them on.
        input: crate::json_text::JsonText,
    },
    /// The result of a tool call.
    ToolResult {
        /// Id of the call this answers.
        id: String,
        /// Outcome.
        status: ToolResultStatus,
        /// Result content (JSON; text results are JSON strings).
        content: serde_json::Value,
    },
    /// A picture the user sent (D-42): its bytes go to a model that sees pictures; a
    /// transcript keeps only what it is, never the bytes.
    Picture {
        /// What it is.
        picture: crate::picture::PictureRef,
        /// Its bytes (hidden data removed); empty in a transcript read back.
        #[serde(skip)]
        data: crate::picture::Bytes,
    },
}

impl Content {
    /// A picture as a message carries it.
    pub fn picture(picture: &crate::picture::Picture) -> Content {
        Content::Picture {
            picture: picture.reference(),
            data: picture.bytes.clone(),
        }
    }

    /// A picture told in words, for a model that does not see pictures.
    pub fn picture_in_words(picture: &crate::picture::PictureRef) -> String {
        format!(
            "[The user sent a picture ({}, {}×{} pixels) that this model cannot see.]",
            picture.media_type, picture.width, picture.height
        )
    }
}

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Pieces.
    pub content: Vec<Content>,
}

/// One tool call with its answer: what the model asked, and what it got back.
#[derive(Debug, Clone, PartialEq)]
pub struct AnsweredCall {
    /// The call's id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments, as the call was run.
    pub input: crate::json_text::JsonText,
    /// Outcome.
    pub status: ToolResultStatus,
    /// Result content.
    pub content: serde_json::Value,
}

/// The pair every tool loop appends after a reply: the assistant's message (what it said,
/// then its calls) and the user's message of the calls' results, in the order they were
/// made.
pub fn tool_exchange(text: &str, calls: Vec<AnsweredCall>) -> [Message; 2] {
    let mut uses = Vec::with_capacity(calls.len() + 1);
    if !text.is_empty() {
        uses.push(Content::Text {
            text: text.to_owned(),
        });
    }
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        uses.push(Content::ToolUse {
            id: call.id.clone(),
            name: call.name,
            input: call.input,
        });
        results.push(Content::ToolResult {
            id: call.id,
            status: call.status,
            content: call.content,
        });
    }
    [
        Message {
            role: Role::Assistant,
            content: uses,
        },
        Message {
            role: Role::User,
            content: results,
        },
    ]
}

impl Message {
    /// A user text message.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Content::Text { text: text.into() }],
        }
    }

    /// A user message of pictures, then text (the pictures first, as vision models read
    /// best). The text may be empty: a picture may come alone.
    pub fn user_with_pictures(
        text: impl Into<String>,
        pictures: &[crate::picture::Picture],
    ) -> Self {
        let text = text.into();
        let mut content: Vec<Content> = pictures.iter().map(Content::picture).collect();
        content.push(Content::Text { text });
        Message {
            role: Role::User,
            content,
        }
    }

    /// An assistant text message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Content::Text { text: text.into() }],
        }
    }

    /// The text of a user message made only of text (tool-result messages give `None`).
    pub fn user_text(&self) -> Option<&str> {
        if self.role != Role::User {
            return None;
        }
        let mut texts = self.content.iter().filter_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        });
        let first = texts.next()?;
        Some(first)
    }

    /// Whether this message carries tool results.
    pub fn has_tool_results(&self) -> bool {
        self.content
            .iter()
            .any(|c| matches!(c, Content::ToolResult { .. }))
    }

    /// Concatenated text pieces.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let Content::Text { text } = c {
                out.push_str(text);
            }
        }
        out
    }
}
