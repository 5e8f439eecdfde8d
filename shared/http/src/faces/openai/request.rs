//! The chat completion request: which text is the turn, whether it streams, and which
//! episode it continues. Fields this face does not use (temperature, tools, ...) are
//! accepted and ignored, as a chat UI sends them whatever the server.

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;
use baton_core::picture::Bytes;

use crate::faces::message::message_of;

/// What this face reads from `POST /v1/chat/completions`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    /// The model asked for; echoed back.
    pub model: String,
    /// The last user message's text: the turn.
    pub text: String,
    /// Its pictures (`image_url` parts with data URLs).
    pub pictures: Vec<Bytes>,
    /// Server-sent chunks rather than one response.
    pub stream: bool,
    /// A last chunk with the usage (`stream_options.include_usage`).
    pub include_usage: bool,
    /// `metadata.episode_id`: the episode to continue.
    pub episode_id: Option<String>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Option<Value>,
}

/// The model name when a request gives none.
pub(crate) const DEFAULT_MODEL: &str = "baton";

/// Reads a request body. Refusals name the field in plain words.
pub(crate) fn parse(bytes: &[u8]) -> Result<ChatRequest, Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| Error::MalformedJson)?;
    if !value.is_object() {
        return Err(Error::InvalidBody(
            "the request body must be a JSON object".into(),
        ));
    }
    let body: Body = serde_json::from_value(value).map_err(|e| {
        tracing::debug!(error = %e, "chat completion request of the wrong shape");
        Error::InvalidBody(
            "`messages` must be a list of messages, each with a `role` and a `content`".into(),
        )
    })?;
    let last = body
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .ok_or_else(|| Error::InvalidBody("`messages` has no message with role `user`".into()))?;
    let message = message_of(last.content.as_ref(), image_url)?;
    let episode_id = match body.metadata.as_ref().and_then(|m| m.get("episode_id")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(Error::InvalidBody(
                "`metadata.episode_id` must be a string".into(),
            ));
        }
    };
    Ok(ChatRequest {
        model: body
            .model
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        text: message.text,
        pictures: message.pictures,
        stream: body.stream.unwrap_or(false),
        include_usage: body
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        episode_id,
    })
}

/// An `image_url` part: `{"type": "image_url", "image_url": {"url": "data:...", "detail": ...}}`
/// (or the URL as a bare string, as some clients send it).
fn image_url(n: usize, part: &Value) -> Option<Result<Bytes, Error>> {
    if part.get("type").and_then(Value::as_str) != Some("image_url") {
        return None;
    }
    let url = match part.get("image_url") {
        Some(Value::String(url)) => Some(url.as_str()),
        Some(Value::Object(fields)) => fields.get("url").and_then(Value::as_str),
        _ => None,
    };
    Some(match url {
        Some(url) => crate::picture::from_url(n, url),
        None => Err(Error::InvalidBody(format!(
            "Picture {n} was not taken: an `image_url` part needs `image_url.url`."
        ))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> String {
        match parse(body.as_bytes()) {
            Err(e) => e.to_string(),
            Ok(r) => panic!("accepted {r:?}"),
        }
    }

    #[test]
    fn the_last_user_message_is_the_turn() {
        let r = parse(
            br#"{"model":"gpt-4o","temperature":0.2,"messages":[
                {"role":"system","content":"be brief"},
                {"role":"user","content":"hello"},
                {"role":"assistant","content":"hi"},
                {"role":"user","content":[{"type":"text","text":"find "},{"type":"text","text":"deals"}]}
            ],"stream":true,"stream_options":{"include_usage":true},"metadata":{"episode_id":"ep_1"}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            ChatRequest {
                model: "gpt-4o".into(),
                text: "find deals".into(),
                pictures: Vec::new(),
                stream: true,
                include_usage: true,
                episode_id: Some("ep_1".into()),
            }
        );
        let r = parse(br#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!((r.model.as_str(), r.stream), (DEFAULT_MODEL, false));
    }

    #[test]
    fn image_url_parts_are_the_turns_pictures() {
        let r = parse(
            br#"{"messages":[{"role":"user","content":[
                {"type":"text","text":"any deals?"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}},
                {"type":"image_url","image_url":"data:image/png;base64,iVBORw0KGgo"}
            ]}]}"#,
        )
        .unwrap();
        assert_eq!(r.text, "any deals?");
        assert_eq!(r.pictures.len(), 2);
        assert_eq!(&r.pictures[0][..4], b"\x89PNG");
    }

    #[test]
    fn bad_requests_are_named_in_plain_words() {
        assert_eq!(refusal("{"), "the request body is not valid JSON");
        assert_eq!(refusal("[]"), "the request body must be a JSON object");
        assert!(refusal(r#"{"model":"x"}"#).contains("`messages`"));
        assert!(
            refusal(r#"{"messages":[{"role":"system","content":"x"}]}"#).contains("role `user`")
        );
        assert!(
            refusal(
                r#"{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}"#
            )
            .contains("needs `image_url.url`")
        );
        assert!(
            refusal(
                r#"{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}"#
            )
            .contains("remote picture URLs are not fetched")
        );
        assert!(
            refusal(r#"{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}"#)
                .contains("only text and picture parts")
        );
        assert!(refusal(r#"{"messages":[{"role":"user"}]}"#).contains("no `content`"));
        assert!(
            refusal(r#"{"messages":[{"role":"user","content":"x"}],"metadata":{"episode_id":3}}"#)
                .contains("metadata.episode_id")
        );
    }

    /// A JSON value of any shape, a few levels deep.
    fn json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[a-z ]{0,8}".prop_map(Value::from),
            Just(Value::from("user")),
            Just(Value::from("text")),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("messages".to_owned()),
                        Just("role".to_owned()),
                        Just("content".to_owned()),
                        Just("type".to_owned()),
                        Just("text".to_owned()),
                        Just("metadata".to_owned()),
                        Just("episode_id".to_owned()),
                        Just("stream".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Any bytes are either a request or a plain refusal; nothing panics.
        #[test]
        fn any_bytes_parse_or_are_refused_plainly(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            if let Err(e) = parse(&bytes) {
                proptest::prop_assert!(!e.to_string().is_empty());
            }
        }

        /// Any JSON shape, biased towards the request's own field names, likewise.
        #[test]
        fn any_json_parses_or_is_refused_plainly(value in json()) {
            if let Err(e) = parse(value.to_string().as_bytes()) {
                proptest::prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}
