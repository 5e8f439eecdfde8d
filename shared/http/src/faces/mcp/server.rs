//! The MCP server over the runtime, whatever the transport: it lists the tools and runs a
//! turn per call. rmcp speaks the protocol; this speaks Baton.

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::http::request::Parts;
use baton_core::Principal;
use baton_core::directive::DirectMode;
use baton_runtime::TurnRequest;
use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::call::{self, Reply};
use super::elicit;
use super::tools::{self, Target, Toolbox};
use crate::catalog;
use crate::start;
use crate::state::AppState;

/// The face the record names for answers given here.
const FACE: &str = "mcp";
/// Where a call's principal comes from (D-30).
#[derive(Debug, Clone)]
enum Caller {
    /// Each HTTP request's auth context, through the state's principal source.
    Request,
    /// The one the process was started as (`baton mcp` over stdio: its user).
    Fixed(Principal),
}

/// Baton as an MCP server: `ask`, and `ask_<id>` per specialist (see `tools.rs`).
#[derive(Debug, Clone)]
pub struct McpServer {
    state: AppState,
    toolbox: Arc<Toolbox>,
    caller: Caller,
}

impl McpServer {
    /// A server whose calls run as the principal of each HTTP request's auth context.
    pub(crate) fn per_request(state: AppState) -> Self {
        Self::new(state, Caller::Request)
    }

    /// A server whose calls all run as `principal` (a stdio server: the process's user).
    pub fn as_principal(state: AppState, principal: Principal) -> Self {
        Self::new(state, Caller::Fixed(principal))
    }

    fn new(state: AppState, caller: Caller) -> Self {
        let catalog = catalog::catalog(state.runtime.registry(), state.runtime.entry());
        McpServer {
            toolbox: Arc::new(Toolbox::new(&catalog)),
            state,
            caller,
        }
    }

    /// The caller, and the request's headers (for its trace context), if it came over HTTP.
    fn principal(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Principal, HeaderMap), ErrorData> {
        match &self.caller {
            Caller::Fixed(p) => Ok((p.clone(), HeaderMap::new())),
            Caller::Request => {
                let Some(parts) = context.extensions.get::<Parts>() else {
                    return Err(ErrorData::invalid_request(
                        "this request is not authenticated: it names no principal",
                        None,
                    ));
                };
                match self.state.principals.principal(parts) {
                    Ok(p) => Ok((p, parts.headers.clone())),
                    Err(e) => {
                        tracing::info!(error = %e, "MCP call refused: no usable principal");
                        Err(ErrorData::invalid_request(e.to_string(), None))
                    }
                }
            }
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let entry = self.state.runtime.entry();
        let mut implementation = Implementation::new("baton", env!("CARGO_PKG_VERSION"));
        implementation.title = Some(entry.label.to_string());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(format!(
                "Ask {} with the `ask` tool; each `ask_<id>` tool asks one specialist \
                 directly and returns its answer word for word. Pass the same \
                 `conversation` to continue a conversation. Each result's structured \
                 content names who was consulted.",
                entry.label
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.toolbox.tools().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(target) = self.toolbox.target(&request.name).cloned() else {
            return Err(ErrorData::invalid_params(
                format!(
                    "there is no tool named `{}`; tools/list lists the tools",
                    request.name
                ),
                None,
            ));
        };
        let ask = tools::read_args(request.arguments.as_ref())
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let (principal, headers) = self.principal(&context)?;
        let direct = match &target {
            Target::Assistant => None,
            Target::Direct { agent_id } => Some(agent_id.clone()),
        };
        let turn = TurnRequest {
            // The specialist's answer alone, word for word (D-21).
            direct_line_mode: direct.as_ref().map(|_| DirectMode::Strict),
            // In a conversation, the next message answers what it waits on (D-36).
            reply_in_words: ask.conversation.is_some(),
            face: FACE,
            pictures: ask.picture.clone().into_iter().collect(),
            ..TurnRequest::new(principal, self.toolbox.text(&target, &ask.message))
        };
        // A call again with an elicitation's result answers the turn it asked for (D-36).
        let elicited = match (&request.request_state, &request.input_responses) {
            (Some(state), Some(responses)) => match elicit::answered(state, responses)
                .map_err(|why| ErrorData::invalid_params(why, None))?
            {
                elicit::Elicited::Answered(answered) => Some(answered),
                // Back from the sign-in page: its code is asked for before anything runs.
                elicit::Elicited::AskCode(ask) => return Ok(CallToolResponse::InputRequired(ask)),
            },
            _ => None,
        };
        let turn = match (elicited, &ask.conversation) {
            (Some(answered), _) => start::answering(
                turn.principal,
                &answered.episode_id,
                &answered.turn_id,
                answered.reply,
                FACE,
            ),
            (None, Some(c)) => start::in_conversation(turn, c, false),
            (None, None) => turn,
        };
        let started = start::start(&self.state, &headers, turn, "POST /mcp").await;
        let mut stream = match started {
            Ok(stream) => stream,
            Err(refusal) => return Ok(call::refused(&refusal.to_string()).into()),
        };
        let token = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
        let mut reply = Reply::new(&stream.turn_id, &stream.episode_id, direct.as_deref());
        let mut progress = 0u32;
        loop {
            let wire = tokio::select! {
                wire = stream.next() => wire,
                // The client gave up on the call: stop reading. The turn commits anyway, on
                // its own task, as on every face.
                () = context.ct.cancelled() => {
                    return Err(ErrorData::invalid_request("the call was cancelled", None));
                }
            };
            let Some(wire) = wire else { break };
            let Some(line) = reply.take(&wire.event) else {
                continue;
            };
            if let Some(token) = &token {
                progress += 1;
                let note = ProgressNotificationParam::new(token.clone(), f64::from(progress))
                    .with_message(line);
                if let Err(e) = context.peer.notify_progress(note).await {
                    tracing::debug!(error = %e, "a progress notification could not be sent");
                }
            }
        }
        // A client that can ask its user is asked with an elicitation (D-36).
        if let Some(waiting) = reply.waiting()
            && elicit::supported(&context, waiting.kind)
            && let Some(input) = elicit::ask(waiting, reply.episode_id(), reply.turn_id())
        {
            return Ok(CallToolResponse::InputRequired(input));
        }
        Ok(reply.result().into())
    }
}
