//! The JSON-RPC 2.0 envelope of A2A requests: parsing one call, and the refusals in
//! JSON-RPC's error shape with A2A's codes and a plain message.

use a2a::{A2AError, JsonRpcId, JsonRpcResponse};
use baton_runtime::{RejectionKind, TurnRejection};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One JSON-RPC call.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) id: JsonRpcId,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// A successful JSON-RPC response over a borrowed result, written without building a JSON
/// tree first (a stream writes one per event).
#[derive(Debug, serde::Serialize)]
pub(crate) struct Success<'a, T> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: &'a JsonRpcId,
    pub(crate) result: &'a T,
}

/// A call that could not be read, with the id to answer it under (null when the request
/// had none that could be read).
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) id: JsonRpcId,
    pub(crate) error: A2AError,
}

impl Refused {
    /// The JSON-RPC response carrying the refusal.
    pub(crate) fn response(self) -> JsonRpcResponse {
        error_response(self.id, &self.error)
    }
}

/// The JSON-RPC response carrying `error` for call `id`, with the typed detail (its
/// reason) the SDKs map to their own error types.
pub(crate) fn error_response(id: JsonRpcId, error: &A2AError) -> JsonRpcResponse {
    JsonRpcResponse::error(id, error.to_jsonrpc_error())
}

/// Reads one call. A batch (an array) is refused: A2A sends one call per request.
pub(crate) fn parse(bytes: &[u8]) -> Result<Call, Refused> {
    let refused = |id: JsonRpcId, error| Refused { id, error };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        refused(
            JsonRpcId::Null,
            A2AError::parse_error(format!("The request is not valid JSON: {e}.")),
        )
    })?;
    let Value::Object(mut object) = value else {
        return Err(refused(
            JsonRpcId::Null,
            A2AError::invalid_request("The request must be one JSON-RPC call (an object)."),
        ));
    };
    let id = match object.remove("id") {
        Some(Value::String(s)) => JsonRpcId::String(s),
        Some(Value::Number(n)) if n.as_i64().is_some() => {
            JsonRpcId::Number(n.as_i64().unwrap_or_default())
        }
        _ => {
            return Err(refused(
                JsonRpcId::Null,
                A2AError::invalid_request("The call needs an `id`: a string or an integer."),
            ));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refused(
            id,
            A2AError::invalid_request("The call must say `\"jsonrpc\": \"2.0\"`."),
        ));
    }
    let Some(Value::String(method)) = object.remove("method") else {
        return Err(refused(
            id,
            A2AError::invalid_request("The call needs a `method` name."),
        ));
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err(refused(
                id,
                A2AError::invalid_params("The call's `params` must be an object."),
            ));
        }
    };
    Ok(Call { id, method, params })
}

/// The call's parameters as `T`, or invalid-params naming what is wrong.
pub(crate) fn params<T: DeserializeOwned>(call: &Call) -> Result<T, A2AError> {
    T::deserialize(&call.params)
        .map_err(|e| A2AError::invalid_params(format!("The call's parameters are not valid: {e}.")))
}

/// A refused turn as an A2A error, with the runtime's plain message.
pub(crate) fn rejection(r: &TurnRejection) -> A2AError {
    let code = match r.kind {
        RejectionKind::Invalid | RejectionKind::TooLarge | RejectionKind::Mismatch => {
            a2a::error_code::INVALID_PARAMS
        }
        RejectionKind::NotFound => a2a::error_code::TASK_NOT_FOUND,
        RejectionKind::InFlight | RejectionKind::Busy => a2a::error_code::INVALID_REQUEST,
        RejectionKind::Unavailable => a2a::error_code::INTERNAL_ERROR,
    };
    A2AError::new(code, r.message.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_call_is_read_with_its_id_and_params() {
        let call =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}"#).unwrap();
        assert_eq!(call.id, JsonRpcId::Number(7));
        assert_eq!(call.method, "GetTask");
        assert_eq!(call.params["id"], "x");
    }

    #[test]
    fn malformed_calls_get_their_codes() {
        let code = |bytes: &[u8]| parse(bytes).unwrap_err().error.code;
        assert_eq!(code(b"{not json"), a2a::error_code::PARSE_ERROR);
        assert_eq!(code(b"[]"), a2a::error_code::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"GetTask"}"#),
            a2a::error_code::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#),
            a2a::error_code::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#),
            a2a::error_code::INVALID_PARAMS
        );
        // The id is kept once it could be read.
        let refused = parse(br#"{"jsonrpc":"2.0","id":"a","params":{}}"#).unwrap_err();
        assert_eq!(refused.id, JsonRpcId::String("a".into()));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Any bytes give a call or a refusal with a message; nothing panics.
        #[test]
        fn any_bytes_are_read_or_refused_in_words(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            if let Err(refused) = parse(&bytes) {
                prop_assert!(!refused.error.message.is_empty());
            }
        }

        /// Calls with arbitrary JSON params never panic the typed reading of a message.
        #[test]
        fn any_params_are_read_or_refused(text in "\\PC{0,64}", key in "[a-zA-Z]{0,12}") {
            let body = serde_json::json!({
                "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": { "message": { key.clone(): text.clone(), "parts": [{ key: text }] } }
            });
            let call = parse(body.to_string().as_bytes()).unwrap();
            if let Err(e) = params::<a2a::SendMessageRequest>(&call) {
                prop_assert_eq!(e.code, a2a::error_code::INVALID_PARAMS);
            }
        }
    }
}
