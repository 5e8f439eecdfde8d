//! What the faces that take a chat history read of a message: its text.

use serde_json::Value;

use crate::error::Error;

/// A user message's text: its content as a string, or its text parts joined; any other
/// part (an image, a file) is refused.
pub(crate) fn text_of(content: Option<&Value>) -> Result<String, Error> {
    match content {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    _ => {
                        return Err(Error::InvalidBody(
                            "only text parts are supported in a user message".into(),
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(Error::InvalidBody(
            "the last user message has no text `content`".into(),
        )),
    }
}
