//! One `tools/call`: the request with Baton's metadata, progress routing, cancellation when
//! the caller gives up, and how the result becomes an envelope.

use std::sync::Arc;

use baton_core::ports::connector::{
    ConnectorRequest, Envelope, EnvelopeStatus, FailedSource, ProgressSink,
};
use rmcp::Peer;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest, JsonObject,
    Request, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use serde_json::{Value, json};

use baton_core::input::InputGiven;

use super::fault::{Fault, clip};
use super::session::Session;
use crate::envelope::EnvelopeMeta;

/// `_meta` key carrying the principal the call is made for (D-29).
pub(crate) const META_PRINCIPAL: &str = "baton/principal";
/// `_meta` key carrying the episode id.
pub(crate) const META_EPISODE: &str = "baton/episode";
/// `_meta` key carrying the agent id.
pub(crate) const META_AGENT: &str = "baton/agent";
/// `_meta` key carrying the call's idempotency key (D-36): the same act, the same key.
pub(crate) const META_IDEMPOTENCY_KEY: &str = "baton/idempotency_key";
/// `_meta` key carrying the W3C trace context of the call's span (D-33), as MCP servers that
/// trace read it.
pub(crate) const META_TRACEPARENT: &str = "traceparent";

/// The request metadata of one call: who it is for, in which episode, by which agent, and
/// the trace it belongs to when traces are exported.
pub(crate) fn baton_meta(request: &ConnectorRequest) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.insert(
        META_PRINCIPAL.to_owned(),
        Value::String(request.principal.as_str().to_owned()),
    );
    meta.insert(
        META_EPISODE.to_owned(),
        Value::String(request.episode_id.to_string()),
    );
    meta.insert(
        META_AGENT.to_owned(),
        Value::String(request.agent_id.to_string()),
    );
    if let Some(key) = &request.idempotency_key {
        meta.insert(
            META_IDEMPOTENCY_KEY.to_owned(),
            Value::String(key.to_string()),
        );
    }
    if let Some(traceparent) = &request.traceparent {
        meta.insert(
            META_TRACEPARENT.to_owned(),
            Value::String(traceparent.to_string()),
        );
    }
    meta
}

/// Calls `tool` on the session. Progress notifications go to `progress` (sink and status)
/// while the call runs; a question the server asks gets `given` when it is the one that
/// answers it, else ends the call as [`Fault::Asked`]. Dropping the future tells the server
/// the call is abandoned.
pub(crate) async fn call_tool(
    session: &Session,
    tool: &str,
    args: JsonObject,
    meta: RequestMetaObject,
    progress: Option<(Arc<dyn ProgressSink>, Arc<str>)>,
    given: Option<Arc<InputGiven>>,
) -> Result<CallToolResult, Fault> {
    let peer = session.peer();
    // Open before the request goes: a server may ask at once.
    let questions = session.questions().open(given);
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
    let request = ClientRequest::CallToolRequest(Request::new(params));
    // rmcp gives every request a progress token; the route is keyed by it.
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options().with_meta(meta))
        .await?;
    let _route = progress.map(|(sink, status)| {
        session
            .router()
            .route(handle.progress_token.clone(), sink, status)
    });
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    // Whatever the server made of "cancel", the call waits for the user's answer.
    if let Some(asked) = questions.asked() {
        return Err(Fault::Asked(Box::new(asked)));
    }
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        other => Err(Fault::Garbage(clip(format!("{other:?}")))),
    }
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting (a timeout
/// dropped the future), so the server stops working on it and rmcp forgets it.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        // Drop cannot wait: the notice is sent by a task (when there is a runtime to run it).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let reason = Some("the caller stopped waiting".to_owned());
                let notice = CancelledNotificationParam::new(Some(id), reason);
                if let Err(e) = peer.notify_cancelled(notice).await {
                    tracing::debug!(error = %e, "could not tell the MCP server a call was abandoned");
                }
            });
        }
    }
}

/// Where a result came from, for logs.
pub(crate) struct Origin<'a> {
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
}

/// The envelope for a tool's result: `structuredContent` when present, else the text
/// contents; `isError` makes an `error` envelope whose payload says nothing of the
/// server's text (it is logged instead).
pub(crate) fn envelope_of(
    result: CallToolResult,
    meta: &EnvelopeMeta,
    principal: &str,
    origin: &Origin<'_>,
) -> Envelope {
    if result.is_error == Some(true) {
        let text = clip(texts(&result).join("\n"));
        tracing::warn!(server = origin.server, tool = origin.tool, error = %text, "the MCP tool reported an error");
        return meta.envelope(
            EnvelopeStatus::Error,
            json!({"problem": "the tool reported an error"}),
            Vec::<FailedSource>::new(),
            principal,
        );
    }
    let payload = match result.structured_content {
        Some(structured) => structured,
        None => {
            let skipped = result
                .content
                .iter()
                .filter(|c| c.as_text().is_none())
                .count();
            if skipped > 0 {
                tracing::debug!(
                    server = origin.server,
                    tool = origin.tool,
                    skipped,
                    "non-text contents of an MCP result are not passed on"
                );
            }
            payload_of_texts(&texts(&result))
        }
    };
    meta.envelope(EnvelopeStatus::Ok, payload, Vec::new(), principal)
}

fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect()
}

/// One text that is JSON is that JSON; other texts are `{"text": ...}` (joined by
/// newlines); no text at all is `null`.
fn payload_of_texts(texts: &[&str]) -> Value {
    match texts {
        [] => Value::Null,
        [one] => serde_json::from_str(one).unwrap_or_else(|_| json!({"text": one})),
        many => json!({"text": many.join("\n")}),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;

    use super::*;

    fn meta() -> EnvelopeMeta {
        EnvelopeMeta {
            domain_type: "echo".into(),
            enricher_id: "mcp-test".into(),
            version: "1.0.0".into(),
        }
    }

    fn origin() -> Origin<'static> {
        Origin {
            server: "python3 server.py",
            tool: "echo",
        }
    }

    fn result(
        content: Vec<ContentBlock>,
        structured: Option<Value>,
        error: bool,
    ) -> CallToolResult {
        let mut r = CallToolResult::success(content);
        r.structured_content = structured;
        r.is_error = Some(error);
        r
    }

    #[test]
    fn structured_content_wins_over_text() {
        let e = envelope_of(
            result(
                vec![ContentBlock::text("{\"sum\": 3}")],
                Some(json!({"sum": 3.0})),
                false,
            ),
            &meta(),
            "user-1",
            &origin(),
        );
        assert_eq!(e.status, EnvelopeStatus::Ok);
        assert_eq!(e.payload, json!({"sum": 3.0}));
        assert_eq!(e.principal, "user-1");
        assert_eq!(e.domain_type, "echo");
    }

    #[test]
    fn texts_become_json_or_a_text_field() {
        assert_eq!(payload_of_texts(&["{\"a\": 1}"]), json!({"a": 1}));
        assert_eq!(payload_of_texts(&["hi"]), json!({"text": "hi"}));
        assert_eq!(payload_of_texts(&["a", "b"]), json!({"text": "a\nb"}));
        assert_eq!(payload_of_texts(&[]), Value::Null);
    }

    #[test]
    fn an_error_result_hides_the_server_text() {
        let e = envelope_of(
            result(vec![ContentBlock::text("secret stack trace")], None, true),
            &meta(),
            "user-1",
            &origin(),
        );
        assert_eq!(e.status, EnvelopeStatus::Error);
        assert!(!e.payload.to_string().contains("secret"));
    }
}
