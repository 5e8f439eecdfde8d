//! AG-UI's run input: the thread, the run, and the last user message as the turn, or the
//! answer to the interrupt the thread waits on (`resume`). The rest (state, tools,
//! context, forwarded props) is accepted and not used.

use baton_core::picture::Bytes;
use serde_json::Value;

use crate::error::Error;
use crate::faces::message::message_of;

/// What this face reads from a `RunAgentInput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunInput {
    /// The client's conversation: the episode is derived from it and the caller.
    pub thread_id: String,
    /// The run: the turn's id, so that a retried run is its replay.
    pub run_id: String,
    /// The last user message's text (empty in a resume that sends none).
    pub text: String,
    /// Its pictures (image parts, or the binary parts of clients before 1.0).
    pub pictures: Vec<Bytes>,
    /// The answer to the interrupt the previous run ended with, when this run resumes.
    pub resume: Option<Resume>,
}

/// One `resume` entry: the answer to an interrupt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The interrupt answered.
    pub interrupt_id: String,
    /// `status: "cancelled"`: abandoned (a decline).
    pub cancelled: bool,
    /// The answer (`{"approved": bool}` or `{"answer": "…"}`); null when absent.
    pub payload: Value,
}

/// The `resume` list: at most one entry (Baton's turns wait on one thing at a time).
fn resume(input: &Value) -> Result<Option<Resume>, Error> {
    let Some(entries) = input.get("resume").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let entries = entries
        .as_array()
        .ok_or_else(|| Error::InvalidBody("`resume` must be a list".into()))?;
    let [entry] = entries.as_slice() else {
        return match entries.len() {
            0 => Ok(None),
            _ => Err(Error::InvalidBody(
                "`resume` answers one interrupt: the run waits on one at a time".into(),
            )),
        };
    };
    let interrupt_id = string_field(entry, "interruptId")?;
    let cancelled = match entry.get("status").and_then(Value::as_str) {
        Some("resolved") => false,
        Some("cancelled") => true,
        _ => {
            return Err(Error::InvalidBody(
                "`resume[0].status` must be `resolved` or `cancelled`".into(),
            ));
        }
    };
    Ok(Some(Resume {
        interrupt_id,
        cancelled,
        payload: entry.get("payload").cloned().unwrap_or(Value::Null),
    }))
}

fn string_field(input: &Value, name: &str) -> Result<String, Error> {
    match input.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        _ => Err(Error::InvalidBody(format!(
            "`{name}` must be a non-empty string"
        ))),
    }
}

/// Reads a run input; refusals name the field in plain words.
pub(crate) fn parse(bytes: &[u8]) -> Result<RunInput, Error> {
    let input: Value = serde_json::from_slice(bytes).map_err(|_| Error::MalformedJson)?;
    if !input.is_object() {
        return Err(Error::InvalidBody(
            "the request body must be a JSON object".into(),
        ));
    }
    let thread_id = string_field(&input, "threadId")?;
    let run_id = string_field(&input, "runId")?;
    let Some(messages) = input.get("messages").and_then(Value::as_array) else {
        return Err(Error::InvalidBody("`messages` must be a list".into()));
    };
    let resume = resume(&input)?;
    let last = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    let message = match (last, &resume) {
        (Some(last), _) => message_of(last.get("content"), picture)?,
        // A resume carries its answer in `resume`, not in a message.
        (None, Some(_)) => Default::default(),
        (None, None) => {
            return Err(Error::InvalidBody(
                "`messages` has no message with role `user`".into(),
            ));
        }
    };
    Ok(RunInput {
        thread_id,
        run_id,
        text: message.text,
        pictures: message.pictures,
        resume,
    })
}

/// A picture part: `{"type": "image", "source": {"type": "data", "value": <base64>,
/// "mimeType": ...}}` (or a `url` source with a data URL), or before 1.0 `{"type":
/// "binary", "mimeType": ..., "data": <base64>}` (or `url`). A file handle or a remote URL
/// is refused: nothing here fetches.
fn picture(n: usize, part: &Value) -> Option<Result<Bytes, Error>> {
    let text = |field: &str, of: &Value| of.get(field).and_then(Value::as_str).map(str::to_owned);
    let refused = |why: &str| {
        Err(Error::InvalidBody(format!(
            "Picture {n} was not taken: {why}."
        )))
    };
    Some(match part.get("type").and_then(Value::as_str)? {
        "image" => {
            let Some(source) = part.get("source") else {
                return Some(refused("an image part needs a `source`"));
            };
            match (text("type", source), text("value", source)) {
                (Some(kind), Some(value)) if kind == "data" => {
                    crate::picture::decode(n, &value, text("mimeType", source).as_deref())
                }
                (Some(kind), Some(value)) if kind == "url" => crate::picture::from_url(n, &value),
                (Some(kind), Some(_)) if kind == "file" => refused(
                    "file handles are not resolved here; send the picture's data (a `data` source)",
                ),
                _ => refused("its `source` needs a `type` (data or url) and a `value`"),
            }
        }
        "binary" => match (text("data", part), text("url", part)) {
            (Some(data), _) => crate::picture::decode(n, &data, text("mimeType", part).as_deref()),
            (None, Some(url)) => crate::picture::from_url(n, &url),
            (None, None) => refused("a binary part needs its `data` in base64"),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_and_binary_parts_are_the_turns_pictures() {
        let input = parse(
            br#"{"threadId":"th-1","runId":"run-1","messages":[{"id":"1","role":"user","content":[
                {"type":"text","text":"any deals?"},
                {"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/png"}},
                {"type":"image","source":{"type":"url","value":"data:image/png;base64,iVBORw0KGgo="}},
                {"type":"binary","mimeType":"image/png","data":"iVBORw0KGgo="}
            ]}]}"#,
        )
        .unwrap();
        assert_eq!(input.text, "any deals?");
        assert_eq!(input.pictures.len(), 3);
        for (part, why) in [
            (
                r#"{"type":"image","source":{"type":"file","value":"f-1"}}"#,
                "file handles",
            ),
            (
                r#"{"type":"image","source":{"type":"url","value":"https://a/b.png"}}"#,
                "remote",
            ),
            (
                r#"{"type":"image","source":{"type":"data","value":"iVBORw0KGgo=","mimeType":"image/gif"}}"#,
                "declared as image/gif",
            ),
            (
                r#"{"type":"binary","mimeType":"image/png","id":"x"}"#,
                "needs its `data`",
            ),
            (
                r#"{"type":"audio","source":{"type":"data","value":"AAAA","mimeType":"audio/wav"}}"#,
                "only text and picture parts",
            ),
        ] {
            let body = format!(
                r#"{{"threadId":"t","runId":"r","messages":[{{"id":"1","role":"user","content":[{part}]}}]}}"#
            );
            let e = parse(body.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(why), "{part}: {e}");
        }
    }

    #[test]
    fn the_last_user_message_of_the_run_is_the_turn() {
        let input = parse(
            br#"{"threadId":"th-1","runId":"run-1","state":{},"tools":[],"context":[],
                "messages":[{"id":"1","role":"user","content":"hi"},
                            {"id":"2","role":"assistant","content":"hello"},
                            {"id":"3","role":"user","content":[{"type":"text","text":"coffee deals"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            input,
            RunInput {
                thread_id: "th-1".into(),
                run_id: "run-1".into(),
                text: "coffee deals".into(),
                pictures: Vec::new(),
                resume: None,
            }
        );
    }

    #[test]
    fn a_resume_answers_one_interrupt() {
        let input = parse(
            br#"{"threadId":"t","runId":"r2","messages":[],
                "resume":[{"interruptId":"int_1","status":"resolved","payload":{"approved":true}}]}"#,
        )
        .unwrap();
        assert_eq!(
            input.resume,
            Some(Resume {
                interrupt_id: "int_1".into(),
                cancelled: false,
                payload: serde_json::json!({ "approved": true }),
            })
        );
        let refusal = |b: &str| parse(b.as_bytes()).unwrap_err().to_string();
        assert!(
            refusal(r#"{"threadId":"t","runId":"r","messages":[],"resume":{}}"#).contains("list")
        );
        assert!(
            refusal(r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}"#)
                .contains("resolved")
        );
        assert!(
            refusal(r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"resolved"},{"interruptId":"j","status":"resolved"}]}"#)
                .contains("one interrupt")
        );
    }

    #[test]
    fn bad_input_is_named() {
        let refusal = |b: &str| parse(b.as_bytes()).unwrap_err().to_string();
        assert_eq!(refusal("{"), "the request body is not valid JSON");
        assert!(refusal(r#"{"runId":"r","messages":[]}"#).contains("`threadId`"));
        assert!(refusal(r#"{"threadId":"t","messages":[]}"#).contains("`runId`"));
        assert!(refusal(r#"{"threadId":"t","runId":"r"}"#).contains("`messages`"));
        assert!(refusal(r#"{"threadId":"t","runId":"r","messages":[]}"#).contains("role `user`"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]

        /// Any bytes, and any mix of the input's own fields, are a run or a plain refusal.
        #[test]
        fn any_input_parses_or_is_refused_plainly(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            thread in proptest::option::of("[a-z0-9 ]{0,6}"),
            role in proptest::option::of(proptest::prelude::prop_oneof!["user", "assistant", ""]),
            content in proptest::option::of("[a-z ]{0,8}"),
        ) {
            if let Err(e) = parse(&bytes) {
                proptest::prop_assert!(!e.to_string().is_empty());
            }
            let input = serde_json::json!({
                "threadId": thread,
                "runId": "r",
                "messages": [{"id": "1", "role": role, "content": content}],
            });
            if let Err(e) = parse(input.to_string().as_bytes()) {
                proptest::prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}
