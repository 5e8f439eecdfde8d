//! What a turn waits for (D-36), asked with MCP's elicitation: the tool call answers with
//! an `InputRequiredResult` (MCP's multi round-trip request) holding one form elicitation
//! — `{"approved": bool}` for an approval, `{"answer": "…"}` for a question — and an
//! opaque `requestState` naming the waiting turn. The client asks its user, then calls
//! the tool again with the elicitation's result and that state; the call resumes the turn
//! and answers with it. An account link is asked with a URL elicitation: the sign-in page,
//! which the client opens for its user; its accept says the user went there, and is
//! answered with a form elicitation for the code that page showed (D-37), which the call
//! after it carries. Only a client
//! that negotiated a protocol version with multi round-trip requests and declared the
//! elicitation mode needed is asked so; any other reads the question (and the page) in the
//! answer and replies with its next call in the conversation.
//!
//! The state is untrusted: it only names the turn. The runtime checks that the turn is the
//! caller's and waits on that interruption before anything runs.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use baton_core::interruption::{Answer, InterruptionKind, Reply};
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ProtocolVersion,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::call::Waiting;

/// The key of the one input request (and of its response).
const KEY: &str = "baton_answer";

/// The turn a resumed call answers: its episode and turn, and the reply.
pub(crate) struct Answered {
    pub(crate) episode_id: String,
    pub(crate) turn_id: String,
    pub(crate) reply: Reply,
}

/// What a call carrying an elicitation's result does next.
pub(crate) enum Elicited {
    /// It resumes the turn with this reply.
    Answered(Answered),
    /// The user went to the sign-in page: ask for the code it showed (this result).
    AskCode(InputRequiredResult),
}

/// The state's kind of the form that asks for a sign-in's code.
const CODE_KIND: &str = "account_link_code";

/// Whether the caller can be asked about `kind` with an elicitation in a multi round-trip
/// request.
pub(crate) fn supported(context: &RequestContext<RoleServer>, kind: InterruptionKind) -> bool {
    let new_enough = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let declared = context.client_capabilities().and_then(|c| c.elicitation);
    let can = match kind {
        // The page by URL, then its code by form.
        InterruptionKind::AccountLink => {
            declared.is_some_and(|e| e.url.is_some() && e.form.is_some())
        }
        // An empty elicitation capability means form (the spec's backwards compatibility).
        _ => declared.is_some_and(|e| e.form.is_some() || e.url.is_none()),
    };
    new_enough && can
}

/// The result that asks what `waiting` asks, for turn `turn_id` of `episode_id`.
pub(crate) fn ask(
    waiting: &Waiting,
    episode_id: &str,
    turn_id: &str,
) -> Option<InputRequiredResult> {
    let (asks, interruption_id) = (waiting.asks.as_str(), waiting.id.as_str());
    let params = match waiting.kind {
        // The user goes to the sign-in page; the accept only says they did.
        InterruptionKind::AccountLink => json!({
            "mode": "url",
            "message": asks,
            "url": waiting.url.as_deref()?,
            "elicitationId": interruption_id,
        }),
        InterruptionKind::Approval => form(
            asks,
            json!({
                "type": "object",
                "properties": { "approved": { "type": "boolean", "title": "Approve", "description": asks } },
                "required": ["approved"],
            }),
        ),
        InterruptionKind::Question => form(
            asks,
            json!({
                "type": "object",
                "properties": { "answer": { "type": "string", "title": "Your answer", "description": asks } },
                "required": ["answer"],
            }),
        ),
    };
    let state =
        json!({ "e": episode_id, "t": turn_id, "i": interruption_id, "k": waiting.kind.as_str() });
    asking(params, &state)
}

/// The result that asks one elicitation (`params`), naming the wait in its `state`.
fn asking(params: Value, state: &Value) -> Option<InputRequiredResult> {
    let params: ElicitRequestParams = serde_json::from_value(params).ok()?;
    let mut requests = InputRequests::new();
    requests.insert(
        KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    let state = URL_SAFE_NO_PAD.encode(state.to_string());
    Some(InputRequiredResult::new(Some(requests), Some(state)))
}

/// The form that asks for the code the sign-in page showed, for the same wait.
fn ask_code(episode_id: &str, turn_id: &str, interruption_id: &str) -> Option<InputRequiredResult> {
    let state = json!({ "e": episode_id, "t": turn_id, "i": interruption_id, "k": CODE_KIND });
    let asks = "Give the code the sign-in page showed once you signed in.";
    let params = form(
        asks,
        json!({
            "type": "object",
            "properties": { "code": { "type": "string", "title": "Code", "description": asks } },
            "required": ["code"],
        }),
    );
    asking(params, &state)
}

/// A form elicitation asking `asks`, its answer shaped by `schema`.
fn form(asks: &str, schema: Value) -> Value {
    json!({ "mode": "form", "message": asks, "requestedSchema": schema })
}

/// The answer a retried call carries, from its `requestState` and `inputResponses`.
///
/// # Errors
/// A plain message when the state or the response is not one this face made.
pub(crate) fn answered(state: &str, responses: &InputResponses) -> Result<Elicited, String> {
    let bad_state = || "the requestState is not one this server gave".to_owned();
    let decoded = URL_SAFE_NO_PAD.decode(state).map_err(|_| bad_state())?;
    let named: Value = serde_json::from_slice(&decoded).map_err(|_| bad_state())?;
    let field = |k: &str| named.get(k).and_then(Value::as_str).map(str::to_owned);
    let (Some(episode_id), Some(turn_id), Some(interruption_id)) =
        (field("e"), field("t"), field("i"))
    else {
        return Err(bad_state());
    };
    let response = responses
        .get(KEY)
        .ok_or_else(|| format!("inputResponses has no `{KEY}`"))?;
    let kind = field("k");
    let answer = match response.get("action").and_then(Value::as_str) {
        Some("accept") if kind.as_deref() == Some(CODE_KIND) => {
            let code = response
                .get("content")
                .and_then(|c| c.get("code"))
                .and_then(Value::as_str)
                .and_then(baton_core::interruption::link_code)
                .ok_or_else(|| "the code has 6 digits, as the sign-in page shows it".to_owned())?;
            Answer::Text(code)
        }
        Some("accept") => {
            let content = response.get("content").cloned().unwrap_or(Value::Null);
            match (
                content.get("approved").and_then(Value::as_bool),
                content.get("answer").and_then(Value::as_str),
            ) {
                (Some(true), None) => Answer::Approve,
                (Some(false), None) => Answer::Decline,
                (None, Some(words)) if !words.trim().is_empty() => {
                    Answer::Text(words.trim().to_owned())
                }
                // A URL elicitation's accept carries nothing: the user went to the page,
                // which shows the code asked for next. Only an account link is asked so
                // (a form's accept must say yes).
                (None, None)
                    if kind.as_deref() == Some("account_link")
                        && content.as_object().is_none_or(|c| c.is_empty()) =>
                {
                    return ask_code(&episode_id, &turn_id, &interruption_id)
                        .map(Elicited::AskCode)
                        .ok_or_else(|| "the code could not be asked for".to_owned());
                }
                _ => {
                    return Err(
                        "the accepted elicitation holds neither `approved` nor an `answer`"
                            .to_owned(),
                    );
                }
            }
        }
        Some("decline" | "cancel") => Answer::Decline,
        _ => return Err("the elicitation result has no action".to_owned()),
    };
    Ok(Elicited::Answered(Answered {
        episode_id,
        turn_id,
        reply: Reply {
            interruption_id,
            answer,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(kind: InterruptionKind, asks: &str, id: &str) -> Waiting {
        Waiting {
            id: id.into(),
            kind,
            agent: "rewards".into(),
            asks: asks.into(),
            expires_ms: 0,
            url: None,
        }
    }

    fn state_of(result: &InputRequiredResult) -> String {
        result.request_state.clone().unwrap()
    }

    fn answered(state: &str, responses: &InputResponses) -> Result<Answered, String> {
        match super::answered(state, responses)? {
            Elicited::Answered(answered) => Ok(answered),
            Elicited::AskCode(_) => Err("asked for the code".into()),
        }
    }

    #[test]
    fn an_account_link_sends_to_the_page_then_asks_for_its_code() {
        let mut link = waiting(InterruptionKind::AccountLink, "connect", "int_3");
        link.url = Some("https://partner.example/authorize?state=s".into());
        let asked = ask(&link, "ep_1", "t1").unwrap();
        let wire = serde_json::to_value(&asked).unwrap();
        assert_eq!(
            wire["inputRequests"][KEY]["params"]["mode"], "url",
            "{wire}"
        );
        let mut responses = InputResponses::new();
        responses.insert(KEY.into(), json!({"action": "accept"}));
        // Back from the page: the code is asked for, for the same wait.
        let Ok(Elicited::AskCode(code)) = super::answered(&state_of(&asked), &responses) else {
            panic!("the code is asked for");
        };
        let wire = serde_json::to_value(&code).unwrap();
        assert_eq!(
            wire["inputRequests"][KEY]["params"]["mode"], "form",
            "{wire}"
        );
        assert_eq!(
            wire["inputRequests"][KEY]["params"]["requestedSchema"]["required"],
            json!(["code"])
        );
        responses.insert(
            KEY.into(),
            json!({"action": "accept", "content": {"code": "482 913"}}),
        );
        let got = answered(&state_of(&code), &responses).unwrap();
        assert_eq!(got.reply.interruption_id, "int_3");
        assert_eq!(got.reply.answer, Answer::Text("482913".into()));
        responses.insert(
            KEY.into(),
            json!({"action": "accept", "content": {"code": "done"}}),
        );
        assert!(answered(&state_of(&code), &responses).is_err());
    }

    #[test]
    fn an_approval_is_asked_as_a_form_and_its_result_is_the_reply() {
        let asked = ask(
            &waiting(InterruptionKind::Approval, "Redeem 800 points", "int_1"),
            "ep_1",
            "t1",
        )
        .unwrap();
        let wire = serde_json::to_value(&asked).unwrap();
        assert_eq!(wire["resultType"], "input_required", "{wire}");
        let request = &wire["inputRequests"][KEY];
        assert_eq!(request["method"], "elicitation/create", "{wire}");
        assert_eq!(request["params"]["mode"], "form", "{wire}");
        assert_eq!(
            request["params"]["requestedSchema"]["required"],
            json!(["approved"])
        );
        let state = state_of(&asked);
        let mut responses = InputResponses::new();
        responses.insert(
            KEY.into(),
            json!({"action": "accept", "content": {"approved": true}}),
        );
        let got = answered(&state, &responses).unwrap();
        assert_eq!(
            (got.episode_id.as_str(), got.turn_id.as_str()),
            ("ep_1", "t1")
        );
        assert_eq!(got.reply.interruption_id, "int_1");
        assert_eq!(got.reply.answer, Answer::Approve);
        responses.insert(KEY.into(), json!({"action": "decline"}));
        assert_eq!(
            answered(&state, &responses).unwrap().reply.answer,
            Answer::Decline
        );
    }

    #[test]
    fn a_question_takes_words_and_anything_else_is_refused_plainly() {
        let asked = ask(
            &waiting(InterruptionKind::Question, "Which city?", "int_2"),
            "ep_1",
            "t1",
        )
        .unwrap();
        let state = state_of(&asked);
        let mut responses = InputResponses::new();
        responses.insert(
            KEY.into(),
            json!({"action": "accept", "content": {"answer": " Lakeside "}}),
        );
        assert_eq!(
            answered(&state, &responses).unwrap().reply.answer,
            Answer::Text("Lakeside".into())
        );
        responses.insert(KEY.into(), json!({"action": "accept", "content": {}}));
        assert!(answered(&state, &responses).is_err());
        assert!(answered("not-base64!", &responses).is_err());
        assert!(answered(&URL_SAFE_NO_PAD.encode("{}"), &responses).is_err());
        assert!(answered(&state, &InputResponses::new()).is_err());
    }
}
