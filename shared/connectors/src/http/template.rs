//! The URL template of an `http` tool: `{name}` placeholders filled from the arguments,
//! percent-encoded, and the remaining arguments as a query string (GET and DELETE).

use std::collections::BTreeSet;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

/// Everything but RFC 3986's unreserved characters is escaped: a value stays inside its
/// path segment or query value (no `/`, `?`, `&`, `#`, `=` from an argument).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Arg(String),
}

/// A parsed URL template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UrlTemplate {
    parts: Vec<Part>,
    /// Argument names used by placeholders.
    names: BTreeSet<String>,
    /// Whether the template has its own `?`: extra query pairs then join with `&`.
    has_query: bool,
}

impl UrlTemplate {
    /// Parses and checks a template: an http(s) URL whose scheme and host are literal.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut names = BTreeSet::new();
        let mut literal = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for n in chars.by_ref() {
                        if n == '}' {
                            closed = true;
                            break;
                        }
                        name.push(n);
                    }
                    if !closed {
                        return Err(format!("url {text:?}: a `{{` is never closed"));
                    }
                    if name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(format!(
                            "url {text:?}: placeholder {{{name}}} must name an argument (letters, digits, '_')"
                        ));
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    names.insert(name.clone());
                    parts.push(Part::Arg(name));
                }
                '}' => return Err(format!("url {text:?}: a `}}` without its `{{`")),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let template = UrlTemplate {
            has_query: parts
                .iter()
                .any(|p| matches!(p, Part::Literal(l) if l.contains('?'))),
            parts,
            names,
        };
        template.check(text)?;
        Ok(template)
    }

    fn check(&self, text: &str) -> Result<(), String> {
        // The scheme and host come from the registry, never from an argument: the
        // placeholders may only stand after the authority.
        if !self.names.is_empty() {
            let prefix = match self.parts.first() {
                Some(Part::Literal(l)) => l.as_str(),
                _ => "",
            };
            let authority_ends = prefix
                .split_once("://")
                .is_some_and(|(_, rest)| rest.contains(['/', '?']));
            if !authority_ends {
                return Err(format!(
                    "url {text:?}: placeholders may only stand in the path or the query, not in the scheme or host"
                ));
            }
        }
        let sample: String = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.as_str(),
                Part::Arg(_) => "x",
            })
            .collect();
        let url = reqwest::Url::parse(&sample).map_err(|e| format!("url {text:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("url {text:?} must be an http:// or https:// URL"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(format!("url {text:?} has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "url {text:?}: no credentials in the URL; send them in a header from a secret ({{env: VAR}})"
            ));
        }
        if url.fragment().is_some() {
            return Err(format!("url {text:?}: a URL to call has no #fragment"));
        }
        Ok(())
    }

    /// The URL for `args`; with `query`, the arguments no placeholder uses are appended as
    /// a query string. Fails (in words for logs) when a placeholder has no usable value.
    pub(super) fn fill(&self, args: &Value, query: bool) -> Result<String, String> {
        let empty = serde_json::Map::new();
        let args = match args {
            Value::Object(map) => map,
            Value::Null => &empty,
            _ => return Err("the arguments are not a JSON object".to_owned()),
        };
        let mut url = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(l) => url.push_str(l),
                Part::Arg(name) => {
                    let value = args
                        .get(name)
                        .ok_or_else(|| format!("the url needs the argument {name}, absent"))?;
                    let text = scalar_text(value)
                        .ok_or_else(|| format!("the argument {name} is not a string or number"))?;
                    // "." or ".." would climb the path, and an empty value would drop a
                    // segment: neither is a value of the resource.
                    if text.is_empty() || text == "." || text == ".." {
                        return Err(format!("the argument {name} is empty or a dot segment"));
                    }
                    url.extend(utf8_percent_encode(&text, COMPONENT));
                }
            }
        }
        if query {
            let mut separator = if self.has_query { '&' } else { '?' };
            // Sorted keys: the same arguments always make the same URL (caches, logs).
            let mut rest: Vec<(&String, &Value)> = args
                .iter()
                .filter(|(k, _)| !self.names.contains(*k))
                .collect();
            rest.sort_by(|a, b| a.0.cmp(b.0));
            for (key, value) in rest {
                let values: Vec<String> = match value {
                    Value::Null => Vec::new(),
                    Value::Array(items) => items.iter().filter_map(query_text).collect(),
                    other => query_text(other).into_iter().collect(),
                };
                for v in values {
                    url.push(separator);
                    separator = '&';
                    url.extend(utf8_percent_encode(key, COMPONENT));
                    url.push('=');
                    url.extend(utf8_percent_encode(&v, COMPONENT));
                }
            }
        }
        Ok(url)
    }
}

/// A string, number or boolean as text.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One query value: scalars as text, objects and nested arrays as JSON text, null skipped.
fn query_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Object(_) | Value::Array(_) => Some(value.to_string()),
        other => scalar_text(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn placeholders_are_encoded_and_the_rest_goes_to_the_query() {
        let t = UrlTemplate::parse("https://api.example/v1/users/{user}/items?lang=en").unwrap();
        let url = t
            .fill(
                &json!({"user": "a/b c?&#", "q": "oat milk", "tags": ["x", "y&z"], "n": 3, "none": null}),
                true,
            )
            .unwrap();
        assert_eq!(
            url,
            "https://api.example/v1/users/a%2Fb%20c%3F%26%23/items?lang=en&n=3&q=oat%20milk&tags=x&tags=y%26z"
        );
        assert_eq!(
            t.fill(&json!({"user": 7, "q": "x"}), false).unwrap(),
            "https://api.example/v1/users/7/items?lang=en"
        );
    }

    #[test]
    fn a_missing_or_climbing_value_is_refused() {
        let t = UrlTemplate::parse("http://h/items/{id}").unwrap();
        assert!(t.fill(&json!({}), true).unwrap_err().contains("id"));
        for bad in [
            json!(""),
            json!("."),
            json!(".."),
            json!({"a": 1}),
            json!(null),
        ] {
            assert!(t.fill(&json!({ "id": bad }), true).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_templates_are_named() {
        for (text, expected) in [
            ("ftp://h/x", "http:// or https://"),
            ("http://{host}/x", "not in the scheme or host"),
            ("http://h{x}/y", "not in the scheme or host"),
            ("http://h/{x", "never closed"),
            ("http://h/x}", "without its"),
            ("http://h/{a-b}", "must name an argument"),
            ("http://user:pw@h/x", "no credentials"),
            ("not a url", "not a url"),
            ("http://h/x#frag", "fragment"),
        ] {
            let e = UrlTemplate::parse(text).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
        assert!(UrlTemplate::parse("http://h?q={q}").is_ok());
    }
}
