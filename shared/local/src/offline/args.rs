//! Filling tool arguments from a JSON Schema, generically: the model knows no tool, only
//! the schema's types, enums and bounds, and the user's words.

use serde_json::{Map, Value};

use super::bm25::terms;

/// How deep nested objects and arrays are filled before giving up.
const MAX_DEPTH: usize = 4;

/// Property names that receive the user's words whether required or not.
const QUERY_NAMES: &[&str] = &[
    "q",
    "query",
    "search",
    "search_term",
    "term",
    "terms",
    "text",
    "question",
    "keyword",
    "keywords",
];

/// Arguments for an object schema: every required property, query-like string properties,
/// and optional enums whose values share a word with the text.
pub(crate) fn fill_object(schema: &Value, text: &str) -> Map<String, Value> {
    fill_object_at(schema, text, 0)
}

fn fill_object_at(schema: &Value, text: &str, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        if required.contains(&name.as_str()) {
            out.insert(name.clone(), fill_value(prop, text, depth));
        } else if is_query_name(name) && accepts(prop, "string") {
            out.insert(name.clone(), string_value(prop, text));
        } else if let Some(choice) = enum_match(prop, text) {
            out.insert(name.clone(), choice);
        }
    }
    out
}

fn is_query_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    QUERY_NAMES.contains(&name.as_str()) || name.ends_with("query")
}

/// The schema's type names (`type` may be a string or a list).
fn types(prop: &Value) -> Vec<&str> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn accepts(prop: &Value, ty: &str) -> bool {
    let ts = types(prop);
    ts.contains(&ty) || (ts.is_empty() && prop.get("enum").is_none())
}

/// A value for one property.
fn fill_value(prop: &Value, text: &str, depth: usize) -> Value {
    if let Some(c) = prop.get("const") {
        return c.clone();
    }
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(values) = prop.get("enum").and_then(Value::as_array)
        && let Some(first) = values.first()
    {
        return enum_match(prop, text).unwrap_or_else(|| first.clone());
    }
    if depth >= MAX_DEPTH {
        return Value::Null;
    }
    let ts = types(prop);
    let ty = ts
        .iter()
        .copied()
        .find(|t| *t != "null")
        .or_else(|| ts.first().copied())
        .unwrap_or("");
    match ty {
        "string" => string_value(prop, text),
        "integer" => integer_value(prop, text),
        "number" => number_value(prop, text),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        "array" => {
            let min = prop.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = prop.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..min.min(5))
                    .map(|_| fill_value(&items, text, depth + 1))
                    .collect(),
            )
        }
        "object" => Value::Object(fill_object_at(prop, text, depth + 1)),
        _ => {
            // No type: follow the first alternative if there is one, else use the words.
            let alternative = ["anyOf", "oneOf"]
                .iter()
                .find_map(|k| prop.get(*k).and_then(Value::as_array)?.first());
            match alternative {
                Some(alt) => fill_value(alt, text, depth + 1),
                None => string_value(prop, text),
            }
        }
    }
}

/// The text, cut to `maxLength` characters when the schema sets one.
fn string_value(prop: &Value, text: &str) -> Value {
    let text = text.trim();
    match prop.get("maxLength").and_then(Value::as_u64) {
        Some(max) => Value::String(text.chars().take(max as usize).collect()),
        None => Value::String(text.to_owned()),
    }
}

/// The enum value sharing the most words with the text, if any shares one.
fn enum_match(prop: &Value, text: &str) -> Option<Value> {
    let values = prop.get("enum")?.as_array()?;
    let wanted = terms(text);
    let mut best: Option<(usize, &Value)> = None;
    for v in values {
        let Some(s) = v.as_str() else { continue };
        let overlap = terms(s).iter().filter(|t| wanted.contains(t)).count();
        if overlap > 0 && best.is_none_or(|(n, _)| overlap > n) {
            best = Some((overlap, v));
        }
    }
    best.map(|(_, v)| v.clone())
}

fn bound(prop: &Value, key: &str) -> Option<f64> {
    prop.get(key).and_then(Value::as_f64)
}

fn integer_value(prop: &Value, text: &str) -> Value {
    let min = bound(prop, "minimum").or_else(|| bound(prop, "exclusiveMinimum").map(|m| m + 1.0));
    let max = bound(prop, "maximum").or_else(|| bound(prop, "exclusiveMaximum").map(|m| m - 1.0));
    let found = numbers(text).into_iter().find(|n| n.fract() == 0.0);
    let n = clamp(found.or(min).unwrap_or(1.0), min, max).round();
    Value::from(n as i64)
}

fn number_value(prop: &Value, text: &str) -> Value {
    let min = bound(prop, "minimum").or_else(|| bound(prop, "exclusiveMinimum"));
    let max = bound(prop, "maximum").or_else(|| bound(prop, "exclusiveMaximum"));
    let found = numbers(text).into_iter().next();
    let n = clamp(found.or(min).unwrap_or(1.0), min, max);
    serde_json::Number::from_f64(n)
        .map(Value::Number)
        .unwrap_or_else(|| Value::from(1))
}

fn clamp(n: f64, min: Option<f64>, max: Option<f64>) -> f64 {
    let n = min.map_or(n, |m| n.max(m));
    max.map_or(n, |m| n.min(m))
}

/// Non-negative numbers written in the text ("3", "12.5"), in order.
fn numbers(text: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
        }
        let s: String = chars[start..i].iter().collect();
        if let Ok(n) = s.parse::<f64>()
            && n.is_finite()
        {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn required_properties_are_filled_by_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "enum": ["billing", "receipts", "account"]},
                "note": {"type": "string"},
                "count": {"type": "integer", "minimum": 1, "maximum": 10},
                "price": {"type": "number"},
                "urgent": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "unused": {"type": "integer"}
            },
            "required": ["topic", "note", "count", "price", "urgent", "tags"]
        });
        let args = fill_object(&schema, "3 receipts failed to scan, about 12.5 each");
        assert_eq!(args["topic"], "receipts");
        assert_eq!(args["note"], "3 receipts failed to scan, about 12.5 each");
        assert_eq!(args["count"], 3);
        assert_eq!(args["price"], 3.0);
        assert_eq!(args["urgent"], false);
        assert_eq!(args["tags"], json!([]));
        assert!(!args.contains_key("unused"));
    }

    #[test]
    fn defaults_and_bounds_apply_when_the_text_has_no_number() {
        let schema = json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 5},
                "page": {"type": "integer"},
                "sort": {"type": "string", "enum": ["newest", "oldest"]},
                "region": {"type": "string", "default": "us"}
            },
            "required": ["limit", "page", "sort", "region"]
        });
        let args = fill_object(&schema, "coffee deals");
        assert_eq!(args["limit"], 5);
        assert_eq!(args["page"], 1);
        assert_eq!(args["sort"], "newest");
        assert_eq!(args["region"], "us");
    }

    #[test]
    fn optional_query_like_strings_get_the_words() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string", "maxLength": 6}, "other": {"type": "string"}}
        });
        let args = fill_object(&schema, "coffee deals");
        assert_eq!(args["q"], "coffee");
        assert!(!args.contains_key("other"));
    }

    #[test]
    fn odd_schemas_do_not_panic() {
        for schema in [
            json!(null),
            json!({"properties": 3}),
            json!({"properties": {"a": {"type": 7}}, "required": ["a", 1]}),
            json!({"properties": {"a": {"enum": []}}, "required": ["a"]}),
            json!({"properties": {"a": {"type": "array", "minItems": 1000000, "items": {"type": "object", "properties": {"b": {"type": "object"}}, "required": ["b"]}}}, "required": ["a"]}),
        ] {
            let _ = fill_object(&schema, "99999999999999999999999 things");
        }
    }
}
