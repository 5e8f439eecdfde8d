//! Property tests of what the face reads itself: a call's arguments and the check that a
//! body is a JSON-RPC message. Neither panics on any input, and each accepts exactly what
//! it documents.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::message::refusal;
use super::tools::{ArgsError, MAX_CONVERSATION_CHARS, read_args};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{0,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    let key = prop_oneof![
        Just("message".to_owned()),
        Just("conversation".to_owned()),
        Just("image".to_owned()),
        "[a-z]{1,12}",
    ];
    prop::collection::btree_map(key, json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn arguments_are_read_or_refused_as_documented(args in arguments()) {
        match read_args(Some(&args)) {
            Ok(ask) => {
                prop_assert_eq!(args.get("message"), Some(&Value::String(ask.message.clone())));
                prop_assert!(!ask.message.trim().is_empty());
                prop_assert!(args.keys().all(|k| k == "message" || k == "conversation" || k == "image"));
                if let Some(c) = &ask.conversation {
                    prop_assert!(!c.trim().is_empty() && c.chars().count() <= MAX_CONVERSATION_CHARS);
                }
            }
            Err(ArgsError::Unknown(key)) => {
                prop_assert!(key != "message" && key != "conversation" && key != "image");
            }
            Err(ArgsError::NoMessage) => {
                prop_assert!(!matches!(args.get("message"), Some(Value::String(_))));
            }
            Err(ArgsError::EmptyMessage | ArgsError::BadConversation | ArgsError::BadImage | ArgsError::Picture(_)) => {}
        }
    }

    #[test]
    fn any_bytes_are_a_message_or_a_json_rpc_refusal(body in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Some(error) = refusal(&body) {
            prop_assert_eq!(&error["jsonrpc"], "2.0");
            prop_assert!(error["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }

    #[test]
    fn any_json_is_a_message_or_an_invalid_request(value in json_value()) {
        let body = value.to_string();
        if let Some(error) = refusal(body.as_bytes()) {
            prop_assert_eq!(&error["error"]["code"], -32600);
        }
    }
}
