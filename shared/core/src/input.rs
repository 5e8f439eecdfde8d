//! A service's question in the middle of a call (an MCP server's form elicitation, D-36):
//! what it asks, the user's answer in words read as the form's fields, and the question in
//! words for faces that show text.
//!
//! The turn does not hold the call open while the user thinks: the connector tells the
//! service the user cannot answer now, the turn waits for the answer as it waits for an
//! approval, and the call is made again with the answer ready for the same question.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a service asked the user for during a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputAsked {
    /// The service's message.
    pub message: String,
    /// The form: a flat JSON Schema object of strings, numbers, integers, booleans and
    /// enums (what MCP's `requestedSchema` may hold).
    pub schema: Value,
    /// Times this call asked before (across the resumes it took): a service that asks
    /// after every answer is not followed past [`MAX_INPUT_ASKS`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub asked_before: u32,
    /// Why the user's last answer did not fill the form, when it did not: asked again
    /// with this said first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Questions one call may put to the user, across the resumes they take.
pub const MAX_INPUT_ASKS: u32 = 3;

/// The user's answer, given to the call made again: for the question `message`, the
/// form's `content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputGiven {
    /// The question it answers (a service asking something else is not given it).
    pub message: String,
    /// The form's fields, every omitted one with its default.
    pub content: Map<String, Value>,
}

/// Words that accept the form as it stands (its defaults).
const ACCEPT: [&str; 8] = [
    "ok",
    "okay",
    "yes",
    "sure",
    "accept",
    "fine",
    "defaults",
    "use the defaults",
];

impl InputAsked {
    /// The form's fields, in schema order: name and schema.
    fn fields(&self) -> Vec<(&str, &Value)> {
        self.schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }

    fn required(&self) -> Vec<&str> {
        self.schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The question in plain words: the service's message, the form's fields (each with
    /// what it takes and its default), and why the last answer did not do, if it did not.
    pub fn in_words(&self) -> String {
        let mut out = String::new();
        if let Some(problem) = &self.problem {
            out.push_str(problem);
            out.push(' ');
        }
        out.push_str(self.message.trim());
        let fields = self.fields();
        let described: Vec<String> = fields
            .iter()
            .map(|(name, schema)| describe_field(name, schema))
            .collect();
        match described.as_slice() {
            [] => {}
            [one] if fields.len() == 1 => {
                // One field: the answer is its value; say only what it takes.
                if let Some(hint) = one.split_once(" (").map(|(_, h)| h.trim_end_matches(')')) {
                    out.push_str(&format!(" ({hint})"));
                }
            }
            many => {
                out.push_str(" Answer with ");
                out.push_str(&many.join("; "));
                out.push_str(", as `field: value` (what you leave out keeps its default).");
            }
        }
        out
    }

    /// The form's content from the user's answer in words: a JSON object, `field: value`
    /// parts (by line or comma), the whole answer as the value of a one-field form (or of
    /// its one field without a default), or a plain "ok" for the defaults. Omitted fields
    /// get their defaults (SEP-1034).
    ///
    /// # Errors
    /// In plain words, what the answer lacks or gets wrong (a required field, a number
    /// that is not one, a choice not offered).
    pub fn content_from(&self, answer: &str) -> Result<Map<String, Value>, String> {
        let answer = answer.trim();
        let fields = self.fields();
        let mut given: Map<String, Value> = Map::new();
        if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(answer) {
            given = object;
        } else {
            for part in answer.split(['\n', ',', ';']) {
                let Some((key, value)) = part.split_once([':', '=']) else {
                    continue;
                };
                let key = key.trim().to_lowercase();
                if let Some((name, _)) = fields.iter().find(|(n, _)| n.to_lowercase() == key) {
                    given.insert((*name).to_owned(), Value::String(value.trim().to_owned()));
                }
            }
            let accepts = ACCEPT.contains(&answer.to_lowercase().trim_end_matches(['.', '!']));
            if given.is_empty() && !accepts && !answer.is_empty() {
                // The whole answer is the value of the one field, or of the one field with
                // no default.
                let open: Vec<&str> = fields
                    .iter()
                    .filter(|(_, s)| s.get("default").is_none())
                    .map(|(n, _)| *n)
                    .collect();
                match (fields.as_slice(), open.as_slice()) {
                    ([(name, _)], _) | (_, [name]) => {
                        given.insert((*name).to_owned(), Value::String(answer.to_owned()));
                    }
                    _ => {
                        return Err(format!(
                            "That did not fill in the form: give each field as `field: value` ({}).",
                            fields
                                .iter()
                                .map(|(n, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
        }
        let mut content = Map::new();
        for (name, schema) in &fields {
            let value = match given.remove(*name) {
                Some(v) => Some(coerce(name, schema, v)?),
                None => schema.get("default").cloned(),
            };
            if let Some(value) = value {
                content.insert((*name).to_owned(), value);
            }
        }
        if let Some(missing) = self
            .required()
            .into_iter()
            .find(|r| !content.contains_key(*r))
        {
            return Err(format!("The service needs {missing}."));
        }
        Ok(content)
    }
}

/// One field for the question in words: `name (what it takes, default …)`.
fn describe_field(name: &str, schema: &Value) -> String {
    let mut hints: Vec<String> = Vec::new();
    if let Some(d) = schema.get("description").and_then(Value::as_str) {
        hints.push(d.to_owned());
    }
    let choices = choices(schema);
    if !choices.is_empty() {
        hints.push(format!("one of {}", choices.join(", ")));
    } else if let Some(t) = schema.get("type").and_then(Value::as_str)
        && t != "string"
    {
        hints.push(match t {
            "boolean" => "yes or no".to_owned(),
            "integer" => "a whole number".to_owned(),
            other => format!("a {other}"),
        });
    }
    if let Some(d) = schema.get("default") {
        hints.push(format!("default {d}"));
    }
    if hints.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", hints.join(", "))
    }
}

/// The values an enum field offers (`enum`, or `oneOf` of `const`s).
fn choices(schema: &Value) -> Vec<String> {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(text).collect();
    }
    schema
        .get("oneOf")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(|c| c.get("const")).map(text).collect())
        .unwrap_or_default()
}

/// `value` as the field's type; text is read as the user would mean it.
fn coerce(name: &str, schema: &Value, value: Value) -> Result<Value, String> {
    let text = match &value {
        Value::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    };
    let choices = choices(schema);
    if !choices.is_empty() {
        return choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(&text))
            .map(|c| Value::String(c.clone()))
            .ok_or_else(|| format!("{name} must be one of {}.", choices.join(", ")));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => text
            .replace(',', "")
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{name} must be a whole number.")),
        Some("number") => text
            .replace(',', "")
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{name} must be a number.")),
        Some("boolean") => match text.to_lowercase().as_str() {
            "yes" | "y" | "true" | "1" | "on" => Ok(Value::Bool(true)),
            "no" | "n" | "false" | "0" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{name} must be yes or no.")),
        },
        _ => Ok(match value {
            Value::String(s) => Value::String(s.trim().to_owned()),
            other => Value::String(other.to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> InputAsked {
        InputAsked {
            message: "Who is it for?".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }
            }),
            asked_before: 0,
            problem: None,
        }
    }

    #[test]
    fn an_ok_takes_every_default() {
        let content = form().content_from("OK").unwrap();
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
    }

    #[test]
    fn fields_in_words_or_json_are_read_as_their_types_and_the_rest_defaulted() {
        let content = form()
            .content_from("Name: Ada Lovelace\nage = 36, status: Pending; verified: no")
            .unwrap();
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada Lovelace", "age": 36, "score": 95.5, "status": "pending", "verified": false})
        );
        let content = form().content_from(r#"{"age": "41", "score": 3}"#).unwrap();
        assert_eq!(content["age"], 41);
        assert_eq!(content["score"], 3.0);
    }

    #[test]
    fn an_answer_that_does_not_fit_says_why() {
        assert_eq!(
            form().content_from("age: old").unwrap_err(),
            "age must be a whole number."
        );
        assert_eq!(
            form().content_from("status: gone").unwrap_err(),
            "status must be one of active, inactive, pending."
        );
        assert!(
            form()
                .content_from("tomorrow at noon")
                .unwrap_err()
                .contains("`field: value`")
        );
        let required = InputAsked {
            schema: json!({"type": "object", "properties": {"seat": {"type": "string"}}, "required": ["seat"]}),
            ..form()
        };
        assert_eq!(
            required.content_from("ok").unwrap_err(),
            "The service needs seat."
        );
        // One field: the whole answer is its value.
        assert_eq!(required.content_from(" 12A ").unwrap()["seat"], "12A");
        // So it is of the one field without a default.
        let seat = InputAsked {
            schema: json!({"type": "object", "properties": {"seat": {"type": "string"}, "window": {"type": "boolean", "default": true}}, "required": ["seat"]}),
            ..form()
        };
        assert_eq!(
            Value::Object(seat.content_from("12A").unwrap()),
            json!({"seat": "12A", "window": true})
        );
    }

    #[test]
    fn the_question_in_words_lists_the_fields_or_the_one_fields_choices() {
        let words = form().in_words();
        assert!(words.starts_with("Who is it for? Answer with "), "{words}");
        for field in [
            "name (User name, default \"John Doe\")",
            "age (a whole number, default 30)",
            "verified (yes or no, default true)",
        ] {
            assert!(words.contains(field), "{field}: {words}");
        }
        let one = InputAsked {
            schema: json!({"type": "object", "properties": {"class": {"type": "string", "enum": ["economy", "business"]}}}),
            problem: Some("class must be one of economy, business.".into()),
            ..form()
        };
        assert_eq!(
            one.in_words(),
            "class must be one of economy, business. Who is it for? (one of economy, business)"
        );
    }
}
