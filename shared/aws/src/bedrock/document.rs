//! `serde_json::Value` ↔ Smithy `Document`: the SDK's `Document` has no serde support
//! (short of `--cfg aws_sdk_unstable`), and tool schemas, tool inputs and tool results
//! all travel as documents.

use aws_smithy_types::{Document, Number};
use serde_json::Value;

/// A JSON value as a Smithy document.
pub(crate) fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(to_number(n)),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_document(v)))
                .collect(),
        ),
    }
}

fn to_number(n: &serde_json::Number) -> Number {
    if let Some(u) = n.as_u64() {
        Number::PosInt(u)
    } else if let Some(i) = n.as_i64() {
        Number::NegInt(i)
    } else {
        // serde_json (without arbitrary_precision) holds every other number as an f64.
        Number::Float(n.as_f64().unwrap_or(0.0))
    }
}

/// A Smithy document as a JSON value (the inverse, used to check the conversion; no
/// response field the adapter reads is a document). Non-finite floats, which JSON cannot
/// carry, become `null`.
#[cfg(test)]
fn to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_json_schema_survives_the_round_trip() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": { "type": "string", "maxLength": 200 },
                "limit": { "type": "integer", "minimum": -5, "default": 3.5 },
                "tags": { "type": "array", "items": { "enum": ["a", "b", null, true] } }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        assert_eq!(to_json(&to_document(&schema)), schema);
    }

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(to_document(&json!(7)), Document::Number(Number::PosInt(7)));
        assert_eq!(
            to_document(&json!(-7)),
            Document::Number(Number::NegInt(-7))
        );
        assert_eq!(
            to_document(&json!(0.25)),
            Document::Number(Number::Float(0.25))
        );
    }

    #[test]
    fn a_non_finite_float_becomes_null() {
        assert_eq!(
            to_json(&Document::Number(Number::Float(f64::NAN))),
            Value::Null
        );
    }
}
