//! The client side of a session: introduces Baton to the server (with form elicitation
//! offered) and hands what the server sends on its own to the calls it belongs to: progress
//! notifications and questions for the user.

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use super::progress::ProgressRouter;
use super::questions::QuestionRouter;

/// A session's handler: the routes of its calls in flight.
#[derive(Debug, Default)]
pub(crate) struct Handler {
    pub(crate) progress: Arc<ProgressRouter>,
    pub(crate) questions: Arc<QuestionRouter>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params.progress_token);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                self.questions.answer(&message, schema)
            }
            // Not offered: the capability names form mode only.
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        capabilities.elicitation = Some(elicitation);
        // The newest version with an `initialize` handshake, which servers of today
        // speak; a server answering with an older version Baton knows is accepted.
        ClientConfig::new(
            capabilities,
            Implementation::new("baton", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}
