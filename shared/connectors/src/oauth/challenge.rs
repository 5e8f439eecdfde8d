//! The `WWW-Authenticate: Bearer ...` challenge of a protected resource (RFC 6750 §3,
//! RFC 9728 §5.1): where its metadata is, which scope it wants, and why it refused.

/// What a Bearer challenge says. Unknown parameters are ignored; a header with no Bearer
/// challenge gives an empty one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The protected resource's metadata URL (RFC 9728).
    pub(crate) resource_metadata: Option<String>,
    /// The scope the resource asks for, space-separated.
    pub(crate) scope: Option<String>,
    /// The error code (`invalid_token`, `insufficient_scope`, ...).
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// Parses the header's value. Several challenges may share one header
    /// (`Basic realm="x", Bearer scope="y"`): the Bearer one is read. Never fails: what
    /// cannot be read is left out.
    pub(crate) fn parse(header: &str) -> Self {
        let mut challenge = Challenge::default();
        let mut in_bearer = false;
        let mut rest = header.trim_start();
        while !rest.is_empty() {
            let (token, after) = split_token(rest);
            let after = after.trim_start();
            if let Some(value_part) = after.strip_prefix('=') {
                // `name=value` (a parameter), unless it is `token68=` of another scheme.
                let (value, after_value) = read_value(value_part.trim_start());
                if in_bearer {
                    let slot = match token.to_ascii_lowercase().as_str() {
                        "resource_metadata" => Some(&mut challenge.resource_metadata),
                        "scope" => Some(&mut challenge.scope),
                        "error" => Some(&mut challenge.error),
                        _ => None,
                    };
                    if let Some(slot) = slot
                        && slot.is_none()
                    {
                        *slot = Some(value);
                    }
                }
                rest = skip_comma(after_value);
            } else if token.is_empty() {
                // A stray character: skip it rather than loop.
                rest = skip_comma(&rest[rest.chars().next().map_or(1, char::len_utf8)..]);
            } else {
                // A scheme name starts a new challenge.
                in_bearer = token.eq_ignore_ascii_case("bearer");
                rest = skip_comma(after);
            }
        }
        challenge
    }

    /// The scopes it asks for, one by one.
    pub(crate) fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Whether the resource refused for want of scope (RFC 6750 §3.1).
    pub(crate) fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// A token: characters up to whitespace, `=`, `,` or a quote.
fn split_token(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| c.is_whitespace() || matches!(c, '=' | ',' | '"'))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// A parameter value: a quoted string (with `\` escapes) or a token.
fn read_value(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let (token, rest) = split_token(text);
        return (token.to_owned(), rest);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (value, &quoted[i + 1..]),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c => value.push(c),
        }
    }
    // An unterminated string runs to the end.
    (value, "")
}

fn skip_comma(text: &str) -> &str {
    text.trim_start().trim_start_matches(',').trim_start()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scopes(), vec!["mcp:basic", "mcp:write"]);
        assert!(c.is_insufficient_scope());
    }

    #[test]
    fn other_schemes_and_odd_spellings_are_tolerated() {
        let c = Challenge::parse(
            r#"Basic realm="scope=nope", bearer Scope=read , error=invalid_token, x="a\"b""#,
        );
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.resource_metadata, None);
        assert_eq!(Challenge::parse(""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(
            Challenge::parse(r#"Bearer scope="unterminated"#)
                .scope
                .as_deref(),
            Some("unterminated")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_header_parses_without_panic(header in ".{0,200}") {
            let _ = Challenge::parse(&header);
        }
    }
}
