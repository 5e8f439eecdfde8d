//! A request body that is not a JSON-RPC message, refused in JSON-RPC's own shape (a parse
//! error, an invalid request, or a known method with params it does not take) with a plain
//! message, before the protocol is read.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcMessage};
use serde_json::{Value, json};

/// The methods of the MCP specification a client may call: one whose params do not read
/// as its own reaches the server as a custom request, which would be "method not found".
const METHODS: [&str; 13] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// The JSON-RPC error answering `body`, or `None` when it is a client's JSON-RPC message.
pub(crate) fn refusal(body: &[u8]) -> Option<Value> {
    let parsed = serde_json::from_slice::<ClientJsonRpcMessage>(body);
    if let Ok(JsonRpcMessage::Request(request)) = &parsed
        && let ClientRequest::CustomRequest(custom) = &request.request
        && METHODS.contains(&custom.method.as_str())
    {
        return Some(invalid_params(json!(request.id), &custom.method));
    }
    if parsed.is_ok() {
        return None;
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Some(error(
            Value::Null,
            ErrorCode::PARSE_ERROR,
            "the request body is not valid JSON",
        ));
    };
    // A request whose id can be read is answered under it (JSON-RPC 2.0 §5).
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or(Value::Null);
    match value.get("method").and_then(Value::as_str) {
        Some(method) if METHODS.contains(&method) && !id.is_null() => {
            Some(invalid_params(id, method))
        }
        _ => Some(error(
            id,
            ErrorCode::INVALID_REQUEST,
            "the request body is not a JSON-RPC message an MCP client sends",
        )),
    }
}

fn invalid_params(id: Value, method: &str) -> Value {
    error(
        id,
        ErrorCode::INVALID_PARAMS,
        &format!("the params of {method} are not what it takes"),
    )
}

fn error(id: Value, code: ErrorCode, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code.0, "message": message },
    })
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

    #[test]
    fn a_known_method_with_params_it_does_not_take_is_invalid_params_with_its_id() {
        for bad in [
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"coffee"}"#.as_slice(),
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":[1]}"#,
        ] {
            let refused = refusal(bad).unwrap();
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert_eq!(refused["id"], 7, "{refused}");
        }
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#;
        assert_eq!(refusal(call), None);
        // A method of its own is the server's to answer (method not found).
        assert_eq!(
            refusal(br#"{"jsonrpc":"2.0","id":7,"method":"x/y","params":{}}"#),
            None
        );
    }
}
