//! What can go wrong talking to an MCP server, before it is worded for the runtime.

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::oauth::AuthFault;

/// Longest error text kept from a library or a server: enough to act on, never a dump.
const MAX_DETAIL: usize = 400;

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

/// An error and its sources, `: `-joined (libraries often keep the useful part, such as
/// "connection refused", in a source), clipped.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = text_of(e);
    let mut source = source_of(e);
    while let Some(s) = source {
        let next = text_of(s);
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = source_of(s);
    }
    clip(text)
}

/// An error's own words; an authorization failure carried through rmcp's transport as an
/// I/O error is shown as itself, without the transport's "Io error" wording.
fn text_of(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(StreamableHttpError::Io(io)) =
        e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        && let Some(fault) = io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<AuthFault>())
    {
        return fault.to_string();
    }
    e.to_string()
}

fn source_of<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    // rmcp's HTTP transport leaves the HTTP client's error (which says "connection
    // refused") out of the source chain.
    if let Some(StreamableHttpError::Client(inner)) =
        e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    e.source()
}

/// At most `MAX_DETAIL` bytes, cut at a character boundary.
pub(crate) fn clip(mut text: String) -> String {
    if text.len() > MAX_DETAIL {
        let mut end = MAX_DETAIL;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_details_are_clipped_at_a_character_boundary() {
        let text = clip("é".repeat(MAX_DETAIL));
        assert!(text.len() <= MAX_DETAIL + '…'.len_utf8());
        assert!(text.ends_with('…'));
        assert_eq!(clip("short".into()), "short");
    }

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
