//! Rendering tool data as short lines: through a tool's `result_template` (`{field}`,
//! `{a.b}`) or, without one, as "key: value" pairs of a record's plain fields.

use serde_json::{Map, Value};

/// The records of a payload: the array itself, else the first field holding an array of
/// objects (such as `items`), else the payload as a single record.
pub(crate) fn records(data: &Value) -> Vec<&Value> {
    match data {
        Value::Null => Vec::new(),
        Value::Array(items) => items.iter().collect(),
        Value::Object(map) => map
            .values()
            .find_map(|v| match v {
                Value::Array(items) if items.iter().all(Value::is_object) => {
                    Some(items.iter().collect())
                }
                _ => None,
            })
            .unwrap_or_else(|| vec![data]),
        scalar => vec![scalar],
    }
}

/// One record as one line; empty when nothing in it can be shown.
pub(crate) fn render_record(record: &Value, template: Option<&str>) -> String {
    let line = match template {
        Some(t) => fill_template(t, record),
        None => text_of(record),
    };
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Replaces `{path}` placeholders; missing fields become empty, other braces stay.
fn fill_template(template: &str, record: &Value) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let placeholder = after
            .find('}')
            .map(|close| (&after[..close], close))
            .filter(|(p, _)| {
                !p.trim().is_empty()
                    && p.trim()
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
            });
        match placeholder {
            Some((path, close)) => {
                out.push_str(&lookup(record, path.trim()).map(text_of).unwrap_or_default());
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A dotted path into objects (and arrays, by index).
fn lookup<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(record, |v, key| match v {
        Value::Object(map) => map.get(key),
        Value::Array(items) => items.get(key.parse::<usize>().ok()?),
        _ => None,
    })
}

/// A value as words.
fn text_of(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(text_of)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(map) => key_values(map),
    }
}

/// "key: value" for the plain (non-nested) fields, keys with spaces for underscores.
fn key_values(map: &Map<String, Value>) -> String {
    map.iter()
        .filter(|(_, v)| matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_)))
        .map(|(k, v)| format!("{}: {}", k.replace('_', " "), text_of(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn records_come_from_the_array_or_its_first_list_of_objects() {
        let items = json!([{"a": 1}, {"a": 2}]);
        assert_eq!(records(&items).len(), 2);
        assert_eq!(records(&json!({"total": 2, "items": items})).len(), 2);
        assert_eq!(records(&json!({"name": "x", "tags": ["a", "b"]})).len(), 1);
        assert!(records(&json!({"items": []})).is_empty());
        assert!(records(&Value::Null).is_empty());
        assert_eq!(records(&json!("plain")).len(), 1);
    }

    #[test]
    fn templates_fill_nested_fields_and_blank_missing_ones() {
        let rec =
            json!({"title": "Latte", "store": {"name": "Mart"}, "ok": true, "tags": ["a", "b"]});
        assert_eq!(
            render_record(
                &rec,
                Some("{title} at {store.name} ({missing}) {ok} {tags} {tags.1}")
            ),
            "Latte at Mart () yes a, b b"
        );
        assert_eq!(
            render_record(&rec, Some("{ title } {not a path} {")),
            "Latte {not a path} {"
        );
    }

    #[test]
    fn records_without_a_template_list_their_plain_fields() {
        let rec = json!({"unit_price": 2.5, "name": "Milk", "nested": {"x": 1}, "none": null});
        let line = render_record(&rec, None);
        assert!(
            line.contains("unit price: 2.5") && line.contains("name: Milk"),
            "{line}"
        );
        assert!(!line.contains("nested") && !line.contains("none"), "{line}");
        assert_eq!(render_record(&json!(7), None), "7");
    }
}
