//! Configured request headers: plain values, or secrets by reference with an optional
//! prefix (`{env: VAR, prefix: "Bearer "}`), checked at load and filled in at send time.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::{SecretRef, Secrets};

/// One configured header's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum HeaderSpec {
    /// Sent as written.
    Plain(HeaderValue),
    /// `prefix` + the secret's value, resolved through the connector's secret source.
    Secret {
        reference: SecretRef,
        prefix: String,
    },
}

/// The `headers:` mapping of a connector, checked: names valid and given once, none of
/// `reserved` (set by the connector or the transport), values plain strings or secrets.
///
/// # Errors
/// A message naming the header (never a value).
pub(crate) fn parse_headers(
    raw: &Map<String, Value>,
    reserved: &[&str],
) -> Result<Vec<(HeaderName, HeaderSpec)>, String> {
    let mut out: Vec<(HeaderName, HeaderSpec)> = Vec::new();
    for (name, value) in raw {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("headers: {name:?} is not a header name"))?;
        if reserved.contains(&header.as_str()) {
            return Err(format!(
                "headers: {name} is set by the connector itself; remove it"
            ));
        }
        if out.iter().any(|(n, _)| *n == header) {
            return Err(format!("headers: {name} is given twice"));
        }
        let spec = match value {
            // The value is not echoed: a plain header may still be something private.
            Value::String(text) => HeaderValue::from_str(text)
                .map(HeaderSpec::Plain)
                .map_err(|_| format!("headers.{name}: not a valid header value"))?,
            Value::Object(map) => {
                let field = format!("headers.{name}");
                let reference = SecretRef::parse(&field, value, &["prefix"])?;
                let prefix = match map.get("prefix") {
                    None => String::new(),
                    Some(Value::String(prefix)) => prefix.clone(),
                    Some(_) => return Err(format!("{field}.prefix: must be a string")),
                };
                if !prefix.is_empty() && HeaderValue::from_str(&prefix).is_err() {
                    return Err(format!("{field}.prefix: not valid in a header value"));
                }
                HeaderSpec::Secret { reference, prefix }
            }
            _ => {
                return Err(format!(
                    "headers.{name}: a string, or {{env: VAR_NAME}} / {{env: VAR_NAME, prefix: \"Bearer \"}}"
                ));
            }
        };
        out.push((header, spec));
    }
    Ok(out)
}

impl Secrets {
    /// The headers with their secrets filled in; secret values are marked sensitive,
    /// which keeps them out of reqwest's and hyper's own Debug output.
    ///
    /// # Errors
    /// A secret that cannot be read, or whose value is not a valid header value, named by
    /// its header and reference (never its value).
    pub(crate) fn header_map(
        &self,
        specs: &[(HeaderName, HeaderSpec)],
    ) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        for (name, spec) in specs {
            let value = match spec {
                HeaderSpec::Plain(value) => value.clone(),
                HeaderSpec::Secret { reference, prefix } => {
                    let secret = self
                        .get(reference)
                        .map_err(|e| format!("headers.{name}: {e}"))?;
                    let mut value = HeaderValue::from_str(&format!("{prefix}{}", secret.expose()))
                        .map_err(|_| {
                            format!(
                                "headers.{name}: {reference} does not hold a valid header value"
                            )
                        })?;
                    value.set_sensitive(true);
                    value
                }
            };
            headers.insert(name.clone(), value);
        }
        Ok(headers)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    struct Fixed;
    impl super::super::SecretSource for Fixed {
        fn resolve(&self, reference: &SecretRef) -> Result<String, String> {
            match reference {
                SecretRef::Env(name) if name == "GOOD" => Ok("hunter2".into()),
                SecretRef::Env(name) if name == "BAD" => Ok("two\nlines".into()),
                other => Err(format!("{other} is not set")),
            }
        }
    }

    fn parse(value: serde_json::Value) -> Result<Vec<(HeaderName, HeaderSpec)>, String> {
        parse_headers(value.as_object().unwrap(), &["x-reserved"])
    }

    #[test]
    fn headers_are_filled_in_and_marked_sensitive() {
        let specs = parse(serde_json::json!({
            "Accept": "application/json",
            "Authorization": {"env": "GOOD", "prefix": "Bearer "},
        }))
        .unwrap();
        let map = Secrets::new(Arc::new(Fixed)).header_map(&specs).unwrap();
        assert_eq!(map["accept"], "application/json");
        assert_eq!(map["authorization"], "Bearer hunter2");
        assert!(map["authorization"].is_sensitive());
        assert!(!format!("{map:?}").contains("hunter2"));
    }

    #[test]
    fn bad_headers_are_named_without_their_values() {
        for (raw, why) in [
            (
                serde_json::json!({"X-Reserved": "v"}),
                "set by the connector itself",
            ),
            (serde_json::json!({"bad name": "v"}), "is not a header name"),
            (serde_json::json!({"X": "a\nb"}), "not a valid header value"),
            (serde_json::json!({"X": 3}), "a string, or {env: VAR_NAME}"),
            (
                serde_json::json!({"X": {"env": "A", "prefix": 1}}),
                "prefix: must be a string",
            ),
            (
                serde_json::json!({"X": {"env": "A", "prefix": "a\n"}}),
                "not valid in a header value",
            ),
        ] {
            let e = parse(raw).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let secrets = Secrets::new(Arc::new(Fixed));
        let bad = parse(serde_json::json!({"X": {"env": "BAD"}})).unwrap();
        let e = secrets.header_map(&bad).unwrap_err();
        assert!(
            e.contains("does not hold a valid header value") && !e.contains("two"),
            "{e}"
        );
        let unset = parse(serde_json::json!({"X": {"env": "UNSET"}})).unwrap();
        assert!(
            secrets
                .header_map(&unset)
                .unwrap_err()
                .contains("UNSET is not set")
        );
    }
}
