//! A [`ModelRequest`] as a chat-completions request body: the system blocks as one system
//! message (these servers take no cache points; their own prefix caching sees the same
//! stable prefix first), the conversation with tool calls and tool results in OpenAI's
//! roles, the tools as functions, the tool choice and the limits.

use base64::Engine as _;
use baton_core::message::{Content, Message, Role, ToolResultStatus};
use baton_core::ports::model::{ModelRequest, ToolChoice};
use serde_json::{Map, Value, json};

/// The JSON body for `model` (the id the server knows the model by).
pub(crate) fn body(request: &ModelRequest, model: &str) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let system: Vec<&str> = request.system.iter().map(|b| &*b.text).collect();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for message in &request.messages {
        push_message(message, &mut messages);
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": &*t.name,
                    "description": &*t.description,
                    "parameters": &*t.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
    }
    if let Some(max) = request.inference.max_output_tokens {
        body.insert("max_tokens".into(), max.into());
    }
    if let Some(t) = request.inference.temperature {
        body.insert("temperature".into(), f64::from(t).into());
    }
    Value::Object(body)
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::Any => "required".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// One Baton message as one or more chat messages: tool results become `tool` messages
/// (one per call), the rest of a user message a `user` message.
fn push_message(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::Assistant => {
            let text = message.text();
            let calls: Vec<Value> = message
                .content
                .iter()
                .filter_map(|c| match c {
                    Content::ToolUse { id, name, input } => Some(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": input.to_string()},
                    })),
                    _ => None,
                })
                .collect();
            let mut m = Map::new();
            m.insert("role".into(), "assistant".into());
            m.insert(
                "content".into(),
                if text.is_empty() && !calls.is_empty() {
                    Value::Null
                } else {
                    text.into()
                },
            );
            if !calls.is_empty() {
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(m));
        }
        Role::User => {
            for c in &message.content {
                if let Content::ToolResult {
                    id,
                    status,
                    content,
                } = c
                {
                    let text = match content {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let text = match status {
                        ToolResultStatus::Ok => text,
                        ToolResultStatus::Error => format!("(the tool failed) {text}"),
                    };
                    out.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
                }
            }
            let text = message.text();
            let pictures: Vec<Value> = message
                .content
                .iter()
                .filter_map(|c| match c {
                    // A picture read back from a transcript has no bytes: told in words.
                    Content::Picture { picture, data } if data.is_empty() => {
                        Some(json!({"type": "text", "text": Content::picture_in_words(picture)}))
                    }
                    Content::Picture { picture, data } => Some(json!({
                        "type": "image_url",
                        "image_url": {"url": format!(
                            "data:{};base64,{}",
                            picture.media_type,
                            base64::engine::general_purpose::STANDARD.encode(data)
                        )},
                    })),
                    _ => None,
                })
                .collect();
            if !pictures.is_empty() {
                // Content parts: the pictures, then the words.
                let mut parts = pictures;
                if !text.is_empty() {
                    parts.push(json!({"type": "text", "text": text}));
                }
                out.push(json!({"role": "user", "content": parts}));
            } else if !text.is_empty() || !message.has_tool_results() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_core::ports::model::{CallPurpose, Inference, SystemBlock, ToolDef};

    use super::*;

    fn request(messages: Vec<Message>, choice: ToolChoice) -> ModelRequest {
        ModelRequest {
            agent_id: Arc::from("concierge"),
            model_id: Arc::from("m"),
            purpose: CallPurpose::Route,
            system: vec![
                SystemBlock {
                    text: Arc::from("stable"),
                    cache_point: true,
                },
                SystemBlock {
                    text: Arc::from("dynamic"),
                    cache_point: false,
                },
            ],
            messages,
            tools: Arc::from(vec![ToolDef {
                name: Arc::from("ask_rewards"),
                description: Arc::from("Rewards"),
                input_schema: Arc::new(json!({"type": "object"})),
            }]),
            tool_choice: choice,
            inference: Inference {
                max_output_tokens: Some(64),
                temperature: Some(0.5),
                ..Inference::default()
            },
        }
    }

    #[test]
    fn a_conversation_with_a_tool_round_trip_maps_to_openai_roles() {
        let messages = vec![
            Message::user("points?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Content::Text {
                        text: "Checking.".into(),
                    },
                    Content::ToolUse {
                        id: "c1".into(),
                        name: "ask_rewards".into(),
                        input: json!({"request": "points?"}).into(),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Content::ToolResult {
                    id: "c1".into(),
                    status: ToolResultStatus::Error,
                    content: json!("down"),
                }],
            },
        ];
        let body = body(
            &request(messages, ToolChoice::Tool("ask_rewards".into())),
            "m",
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "stable\n\ndynamic"},
                {"role": "user", "content": "points?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "ask_rewards", "arguments": "{\"request\":\"points?\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "(the tool failed) down"},
            ])
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "ask_rewards"}})
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["stream"], true);
    }

    #[test]
    fn tool_choices_map_to_their_wire_words() {
        for (choice, wire) in [
            (ToolChoice::Auto, json!("auto")),
            (ToolChoice::Any, json!("required")),
            (ToolChoice::None, json!("none")),
        ] {
            assert_eq!(
                body(&request(vec![Message::user("x")], choice), "m")["tool_choice"],
                wire
            );
        }
    }

    #[test]
    fn no_tools_means_no_tool_choice() {
        let mut r = request(vec![Message::user("x")], ToolChoice::Auto);
        r.tools = Arc::from(Vec::new());
        let body = body(&r, "m");
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }
}
