//! Whether a token is for the resource it was asked for (RFC 8707): a JWT access token
//! names its audience, and one that names only others is refused before it is kept. An
//! opaque token says nothing here; the resource checks it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

/// False only when `token` is a JWT whose `aud` names neither `resource` nor anything
/// under it.
pub(super) fn allows(token: &str, resource: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return true;
    };
    let Some(claims) = URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    else {
        return true;
    };
    let names = |aud: &str| {
        let (aud, resource) = (aud.trim_end_matches('/'), resource.trim_end_matches('/'));
        aud == resource || resource.starts_with(&format!("{aud}/"))
    };
    match claims.get("aud") {
        Some(Value::String(aud)) => names(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(names),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jwt(claims: Value) -> String {
        format!(
            "eyJhbGciOiJub25lIn0.{}.sig",
            URL_SAFE_NO_PAD.encode(claims.to_string())
        )
    }

    #[test]
    fn a_token_for_another_resource_is_refused() {
        let resource = "http://127.0.0.1:8943/mcp";
        assert!(allows(&jwt(json!({"aud": resource})), resource));
        assert!(allows(
            &jwt(json!({"aud": "http://127.0.0.1:8943/"})),
            resource
        ));
        assert!(allows(&jwt(json!({"aud": ["x", resource]})), resource));
        assert!(!allows(
            &jwt(json!({"aud": "http://elsewhere/mcp"})),
            resource
        ));
        assert!(!allows(
            &jwt(json!({"aud": "http://127.0.0.1:8943/m"})),
            resource
        ));
        assert!(!allows(&jwt(json!({"aud": ["a", "b"]})), resource));
        // Opaque tokens, or claims without an audience, are the resource's to check.
        assert!(allows("opaque-token", resource));
        assert!(allows(&jwt(json!({"sub": "u"})), resource));
        assert!(allows("a.b.c", resource));
    }
}
