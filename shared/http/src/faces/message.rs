//! What the faces that take a chat history read of a message: its text and its pictures.
//! Each face spells a picture part its own way and passes how to read one.

use baton_core::picture::Bytes;
use serde_json::Value;

use crate::error::Error;

/// A user message: its text parts joined, and its pictures' bytes in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UserMessage {
    /// The text.
    pub text: String,
    /// The pictures, decoded (checked and stripped later, by the runtime).
    pub pictures: Vec<Bytes>,
}

/// How a face spells a picture part: the bytes of picture `n` (1-based) when `part` is
/// one, `None` when it is not a picture at all.
pub(crate) type PicturePart = fn(n: usize, part: &Value) -> Option<Result<Bytes, Error>>;

/// A user message's content: a string, or text parts and the face's picture parts; any
/// other part (audio, a document) is refused, naming what is taken.
pub(crate) fn message_of(
    content: Option<&Value>,
    picture: PicturePart,
) -> Result<UserMessage, Error> {
    match content {
        Some(Value::String(s)) => Ok(UserMessage {
            text: s.clone(),
            pictures: Vec::new(),
        }),
        Some(Value::Array(parts)) => {
            let mut message = UserMessage::default();
            for part in parts {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => message.text.push_str(t),
                    _ => match picture(message.pictures.len() + 1, part) {
                        Some(bytes) => message.pictures.push(bytes?),
                        None => {
                            return Err(Error::InvalidBody(
                                "only text and picture parts are supported in a user message"
                                    .into(),
                            ));
                        }
                    },
                }
            }
            Ok(message)
        }
        _ => Err(Error::InvalidBody(
            "the last user message has no `content`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn no_pictures(_: usize, _: &Value) -> Option<Result<Bytes, Error>> {
        None
    }

    fn any_picture(n: usize, part: &Value) -> Option<Result<Bytes, Error>> {
        (part["type"] == "pic").then(|| Ok(Bytes::from(vec![u8::try_from(n).unwrap_or(0)])))
    }

    #[test]
    fn text_parts_join_and_pictures_are_numbered_in_order() {
        let content = json!([
            {"type": "text", "text": "is this "},
            {"type": "pic"},
            {"type": "text", "text": "on sale?"},
            {"type": "pic"}
        ]);
        let message = message_of(Some(&content), any_picture).unwrap();
        assert_eq!(message.text, "is this on sale?");
        assert_eq!(
            message.pictures,
            vec![Bytes::from(vec![1]), Bytes::from(vec![2])]
        );
    }

    #[test]
    fn other_parts_are_refused() {
        let content = json!([{"type": "input_audio", "input_audio": {}}]);
        let e = message_of(Some(&content), no_pictures).unwrap_err();
        assert_eq!(
            e.to_string(),
            "only text and picture parts are supported in a user message"
        );
        assert!(message_of(None, no_pictures).is_err());
    }
}
