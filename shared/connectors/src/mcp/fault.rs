//! What can go wrong talking to an MCP server, before it is worded for the runtime.

use std::time::Duration;

use rmcp::ServiceError;

pub(crate) use crate::error::{chain, clip};

/// One failure of a session or a request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Fault {
    /// The session could not be started (spawn, connect or handshake).
    #[error("cannot start a session: {0}")]
    Start(String),
    /// No answer in time.
    #[error("no answer within {} ms", after.as_millis())]
    Timeout { after: Duration },
    /// The session ended (the process exited, the connection broke).
    #[error("the session ended: {0}")]
    Gone(String),
    /// The server answered the request with a JSON-RPC error.
    #[error("the server refused the request: {0}")]
    Refused(String),
    /// The server answered with something that is not the expected result.
    #[error("the server answered with something that is not a tool result: {0}")]
    Garbage(String),
    /// The server asked the user something the call had no answer for (D-36).
    #[error("the server asks the user: {}", .0.message)]
    Asked(Box<baton_core::input::InputAsked>),
}

impl Fault {
    /// Whether the session is unusable after this fault (the next use starts a new one).
    pub(crate) fn ends_session(&self) -> bool {
        matches!(self, Fault::Gone(_))
    }
}

impl From<ServiceError> for Fault {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::McpError(error) => {
                Fault::Refused(clip(format!("{} (code {})", error.message, error.code.0)))
            }
            ServiceError::TransportSend(error) => {
                Fault::Gone(format!("sending failed: {}", chain(error.error.as_ref())))
            }
            ServiceError::TransportClosed => Fault::Gone(
                "the server closed it (the process exited or the connection dropped)".to_owned(),
            ),
            ServiceError::Cancelled { .. } => Fault::Gone(chain(&e)),
            ServiceError::Timeout { timeout } => Fault::Timeout { after: timeout },
            ServiceError::UnexpectedResponse => Fault::Garbage(chain(&e)),
            other => Fault::Refused(chain(&other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_transport_ends_the_session() {
        assert!(Fault::from(ServiceError::TransportClosed).ends_session());
        assert!(!Fault::from(ServiceError::UnexpectedResponse).ends_session());
        assert!(
            !Fault::Timeout {
                after: Duration::from_millis(5)
            }
            .ends_session()
        );
    }
}
