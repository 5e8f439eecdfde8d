//! The face's tools, from the entry orchestrator's card: `ask` asks the assistant, and
//! `ask_<id>` asks one specialist over its Direct Line (D-21), named as the orchestrator
//! names its specialists (D-6). Also what a call's arguments mean.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::picture::Bytes;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::catalog::Catalog;

/// The tool that asks the assistant.
pub(crate) const ASK: &str = "ask";
/// Before a specialist's id, the name of its Direct Line tool.
const DIRECT_PREFIX: &str = "ask_";
/// The argument that carries a picture.
const IMAGE: &str = "image";
/// Every argument a tool takes.
const ARGUMENTS: [&str; 3] = ["message", "conversation", IMAGE];
/// The longest conversation id taken: an id, not a document.
pub(crate) const MAX_CONVERSATION_CHARS: usize = 256;

/// Who a tool asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The assistant, which routes as it would any message.
    Assistant,
    /// One specialist, over its Direct Line: its answer comes back verbatim.
    Direct {
        /// The specialist's id.
        agent_id: String,
    },
}

/// The tools of one registry's entry orchestrator.
#[derive(Debug, Clone)]
pub(crate) struct Toolbox {
    tools: Vec<Tool>,
    targets: BTreeMap<String, Target>,
    /// The Direct Line prefix of the orchestrator's card (`#` unless it says otherwise).
    prefix: String,
}

impl Toolbox {
    /// The tools `catalog` offers: `ask`, and one per specialist when the card has the
    /// Direct Line on (a card with it off offers no way around its routing).
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let mut tools = vec![
            Tool::new(
                ASK,
                format!(
                    "Ask {}, an assistant that answers or delegates to its specialists \
                     ({}). The result names who was consulted.",
                    catalog.assistant.label,
                    catalog
                        .agents
                        .iter()
                        .map(|a| a.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                input_schema(),
            )
            .with_title(catalog.assistant.label.clone())
            .with_raw_output_schema(output_schema())
            .with_annotations(annotations()),
        ];
        let mut targets = BTreeMap::from([(ASK.to_owned(), Target::Assistant)]);
        if catalog.direct_line.enabled {
            for agent in &catalog.agents {
                let name = format!("{DIRECT_PREFIX}{}", agent.id);
                tools.push(
                    Tool::new(
                        name.clone(),
                        format!(
                            "Ask {} directly; its answer comes back word for word. {}",
                            agent.label, agent.description
                        ),
                        input_schema(),
                    )
                    .with_title(agent.label.clone())
                    .with_raw_output_schema(output_schema())
                    .with_annotations(annotations()),
                );
                targets.insert(
                    name,
                    Target::Direct {
                        agent_id: agent.id.clone(),
                    },
                );
            }
        }
        Toolbox {
            tools,
            targets,
            prefix: catalog.direct_line.prefix.clone(),
        }
    }

    /// Every tool, `ask` first, then the specialists in declared order.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Who the tool `name` asks, if there is such a tool.
    pub(crate) fn target(&self, name: &str) -> Option<&Target> {
        self.targets.get(name)
    }

    /// The user text of a turn asking `target` `message`: for a specialist, the message
    /// behind the card's Direct Line prefix and the specialist's id, so that the runtime's
    /// own Direct Line (its parser, its verbatim delivery) handles it.
    pub(crate) fn text(&self, target: &Target, message: &str) -> String {
        match target {
            Target::Assistant => message.to_owned(),
            Target::Direct { agent_id } => format!("{}{agent_id} {message}", self.prefix),
        }
    }
}

/// Every tool takes the same arguments.
fn input_schema() -> Arc<JsonObject> {
    Arc::new(object(json!({
        "type": "object",
        "properties": {
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "What to ask, in plain words."
            },
            "conversation": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_CONVERSATION_CHARS,
                "description": "Your id for a conversation: calls naming the same one \
                    continue it. Without one, each call is a new conversation."
            },
            IMAGE: {
                "type": "object",
                "description": "A picture to ask about (a receipt, a product), as MCP's \
                    image content carries one: its bytes in base64 and its type. JPEG, PNG, \
                    WebP or GIF; its hidden data (location, device, owner) is removed before \
                    anyone sees it.",
                "properties": {
                    "data": { "type": "string", "contentEncoding": "base64" },
                    "mimeType": {
                        "type": "string",
                        "enum": ["image/jpeg", "image/png", "image/webp", "image/gif"]
                    }
                },
                "required": ["data", "mimeType"],
                "additionalProperties": false
            }
        },
        "required": ["message"],
        "additionalProperties": false
    })))
}

/// The shape of every result's `structuredContent` (see `call.rs`).
fn output_schema() -> Arc<JsonObject> {
    Arc::new(object(json!({
        "type": "object",
        "properties": {
            "answer": { "type": "string", "description": "The answer, as the text content." },
            "turn_id": { "type": "string" },
            "episode_id": { "type": "string" },
            "consulted": {
                "type": "array",
                "description": "Who was consulted, from the runtime's record (never model text).",
                "items": {
                    "type": "object",
                    "properties": {
                        "agent_id": { "type": "string" },
                        "label": { "type": "string" },
                        "status": { "type": "string" },
                        "duration_ms": { "type": "integer" },
                        "tool_calls": { "type": "integer" }
                    },
                    "required": ["agent_id", "label", "status"]
                }
            },
            "footer": { "type": "string", "description": "The \"Consulted: …\" line." },
            "privacy": {
                "type": "object",
                "description": "What the privacy guard masked in this turn's output."
            },
            "outcome": {
                "type": ["string", "null"],
                "description": "answered, limited, failed or awaiting_user; null when the turn did not finish."
            },
            "cost_usd": { "type": "number" },
            "interruption": {
                "type": ["object", "null"],
                "description": "What the turn waits on (awaiting_user): its id, kind (approval or question), the agent and what it asks. Answer with the next call in the same conversation.",
                "properties": {
                    "id": { "type": "string" },
                    "kind": { "type": "string" },
                    "agent": { "type": "string" },
                    "asks": { "type": "string" },
                    "expires_ms": { "type": "integer" }
                }
            }
        },
        "required": ["answer", "turn_id", "episode_id", "consulted", "footer", "privacy", "outcome"]
    })))
}

/// A turn changes the conversation, and its specialists may reach the world.
fn annotations() -> ToolAnnotations {
    let mut a = ToolAnnotations::default();
    a.read_only_hint = Some(false);
    a.destructive_hint = Some(false);
    a.idempotent_hint = Some(false);
    a.open_world_hint = Some(true);
    a
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A call's arguments, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    /// The message.
    pub(crate) message: String,
    /// The caller's conversation id, if it named one.
    pub(crate) conversation: Option<String>,
    /// The picture sent with it, decoded (checked and stripped later, by the runtime).
    pub(crate) picture: Option<Bytes>,
}

/// Why a call's arguments were refused; the message is shown as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgsError {
    /// No `message`, or not a string.
    #[error("the arguments need a `message`: the text to ask, as a string")]
    NoMessage,
    /// A message of whitespace only.
    #[error("the `message` is empty")]
    EmptyMessage,
    /// `conversation` is not a string, is blank, or is too long.
    #[error(
        "the `conversation` must be a string of 1 to {MAX_CONVERSATION_CHARS} characters, not blank"
    )]
    BadConversation,
    /// An argument no tool takes.
    #[error(
        "the argument `{0}` is not known; the tools take `message`, `conversation` and `image`"
    )]
    Unknown(String),
    /// `image` is not `{data, mimeType}`.
    #[error("the `image` must be {{\"data\": <base64>, \"mimeType\": \"image/jpeg\"}}")]
    BadImage,
    /// The picture's data could not be read.
    #[error("{0}")]
    Picture(String),
}

/// Reads a call's arguments: `message` (required, not blank), `conversation` and
/// `image` (optional). Nothing else is taken, so a misspelt `conversation` is not silently a new
/// conversation.
pub(crate) fn read_args(arguments: Option<&JsonObject>) -> Result<Ask, ArgsError> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    if let Some(unknown) = arguments.keys().find(|k| !ARGUMENTS.contains(&k.as_str())) {
        return Err(ArgsError::Unknown(unknown.clone()));
    }
    let message = match arguments.get("message") {
        Some(Value::String(m)) => m,
        _ => return Err(ArgsError::NoMessage),
    };
    if message.trim().is_empty() {
        return Err(ArgsError::EmptyMessage);
    }
    let conversation = match arguments.get("conversation") {
        None | Some(Value::Null) => None,
        Some(Value::String(c))
            if !c.trim().is_empty() && c.chars().count() <= MAX_CONVERSATION_CHARS =>
        {
            Some(c.clone())
        }
        Some(_) => return Err(ArgsError::BadConversation),
    };
    let picture = match arguments.get(IMAGE) {
        None | Some(Value::Null) => None,
        Some(Value::Object(image)) => {
            let (Some(Value::String(data)), Some(Value::String(media_type)), 2) =
                (image.get("data"), image.get("mimeType"), image.len())
            else {
                return Err(ArgsError::BadImage);
            };
            Some(
                crate::picture::decode(1, data, Some(media_type))
                    .map_err(|e| ArgsError::Picture(e.to_string()))?,
            )
        }
        Some(_) => return Err(ArgsError::BadImage),
    };
    Ok(Ask {
        message: message.clone(),
        conversation,
        picture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Result<Ask, ArgsError> {
        read_args(Some(&object(value)))
    }

    #[test]
    fn a_message_and_an_optional_conversation_are_read() {
        assert_eq!(
            args(json!({"message": "hi"})),
            Ok(Ask {
                message: "hi".into(),
                conversation: None,
                picture: None,
            })
        );
        assert_eq!(
            args(json!({"message": "hi", "conversation": "c-1"})),
            Ok(Ask {
                message: "hi".into(),
                conversation: Some("c-1".into()),
                picture: None,
            })
        );
        let ask = args(json!({"message": "any deals?", "image": {"data": "iVBORw0KGgo=", "mimeType": "image/png"}}))
            .unwrap();
        assert_eq!(
            ask.picture.as_deref().map(|b| &b[..4]),
            Some(&b"\x89PNG"[..])
        );
    }

    #[test]
    fn bad_arguments_are_refused_with_their_reason() {
        assert_eq!(read_args(None), Err(ArgsError::NoMessage));
        assert_eq!(args(json!({"message": 3})), Err(ArgsError::NoMessage));
        assert_eq!(args(json!({"message": "  "})), Err(ArgsError::EmptyMessage));
        assert_eq!(
            args(json!({"message": "hi", "conversation": ""})),
            Err(ArgsError::BadConversation)
        );
        assert_eq!(
            args(json!({"message": "hi", "conversation": "x".repeat(257)})),
            Err(ArgsError::BadConversation)
        );
        assert_eq!(
            args(json!({"message": "hi", "conversaton": "c"})),
            Err(ArgsError::Unknown("conversaton".into()))
        );
        for image in [
            json!("iVBORw0KGgo="),
            json!({"data": "iVBORw0KGgo="}),
            json!({"data": 1, "mimeType": "image/png"}),
        ] {
            assert_eq!(
                args(json!({"message": "hi", "image": image})),
                Err(ArgsError::BadImage)
            );
        }
        assert_eq!(
            args(json!({"message": "hi", "image": {"data": "iVBORw0KGgo=", "mimeType": "image/jpeg"}})),
            Err(ArgsError::Picture(
                "Picture 1 was not taken: it is declared as image/jpeg but its bytes are image/png.".into()
            ))
        );
    }
}
