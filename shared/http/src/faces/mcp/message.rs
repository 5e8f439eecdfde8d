//! A request body that is not a JSON-RPC message, refused in JSON-RPC's own shape (a parse
//! error, or an invalid request) with a plain message, before the protocol is read.

use rmcp::model::{ClientJsonRpcMessage, ErrorCode};
use serde::de::IgnoredAny;
use serde_json::{Value, json};

/// The JSON-RPC error answering `body`, or `None` when it is a client's JSON-RPC message.
pub(crate) fn refusal(body: &[u8]) -> Option<Value> {
    if serde_json::from_slice::<ClientJsonRpcMessage>(body).is_ok() {
        return None;
    }
    let (code, message) = if serde_json::from_slice::<IgnoredAny>(body).is_ok() {
        (
            ErrorCode::INVALID_REQUEST,
            "the request body is not a JSON-RPC message an MCP client sends",
        )
    } else {
        (ErrorCode::PARSE_ERROR, "the request body is not valid JSON")
    };
    Some(json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code.0, "message": message },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_passes_and_anything_else_is_refused_with_its_code() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(refusal(ping), None);
        assert_eq!(refusal(b"{not json").unwrap()["error"]["code"], -32700);
        assert_eq!(refusal(br#"{"hello":1}"#).unwrap()["error"]["code"], -32600);
        assert_eq!(refusal(b"").unwrap()["error"]["code"], -32700);
    }
}
