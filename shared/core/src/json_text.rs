//! A JSON value kept as its text.
//!
//! For values a turn only records, shows and sends on (the routing record's arguments, the
//! arguments of the tool calls in a transcript): a JSON object
//! held as a map takes a 640-byte node however few keys it has, plus a string for each key and
//! value; its text takes a few dozen bytes. A thousand open turns hold a megabyte less
//! (docs/benchmark.md, "Memory under 1,000 streams"). On the wire and in the journal it is
//! the same JSON as the value it holds.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value as compact text (always valid JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// The text of `value`.
    pub fn of(value: &Value) -> Self {
        Self(value.to_string())
    }

    /// The value, parsed again.
    pub fn value(&self) -> Value {
        // Only ever made from a value, so it parses; should it not, it reads as null.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for JsonText {
    fn default() -> Self {
        Self("null".to_owned())
    }
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        Self::of(&value)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|v| Self::of(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn it_is_the_same_json_as_its_value_both_ways() {
        let value = json!({"query": "coffee \"deals\"", "intent_count": 2, "extra": [1, null]});
        let text = JsonText::of(&value);
        assert_eq!(text.value(), value);
        assert_eq!(serde_json::to_value(&text).unwrap(), value);
        let back: JsonText = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back, text);
        // Inside a record, it serialises as the value would.
        let record = json!({"args": text});
        assert_eq!(record, json!({"args": value}));
        assert_eq!(text.to_string(), value.to_string());
    }

    #[test]
    fn the_default_is_null() {
        assert_eq!(JsonText::default().value(), Value::Null);
        assert_eq!(serde_json::to_string(&JsonText::default()).unwrap(), "null");
    }
}
