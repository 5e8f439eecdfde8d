//! What can be wrong with a connector's configuration or its data files, and how the
//! errors of the libraries under the connectors are worded for a log or a message.

use baton_core::ports::connector::ConnectorError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// Longest error text kept from a library or a server: enough to act on, never a dump.
const MAX_DETAIL: usize = 400;

/// A connector configuration or data problem, in words a registry author can act on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The tool's `connector:` settings are wrong.
    #[error("{0}")]
    Config(String),
    /// The fixture file is not there.
    #[error("the fixture file {file} does not exist (looked for {looked})")]
    Missing { file: String, looked: String },
    /// The fixture file could not be read.
    #[error("cannot read the fixture file {file}: {source}")]
    Unreadable {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The fixture file is not a valid fixture.
    #[error("the fixture file {file} is not valid: {problem}")]
    Invalid { file: String, problem: String },
    /// The fixture file is not marked as demo data.
    #[error("the fixture file {file} is not marked `demo: true`; fixtures hold demo data only")]
    NotDemo { file: String },
}

/// What went wrong getting a token, in words an operator can act on. Never holds a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum AuthFault {
    /// A credential could not be read or used.
    #[error("authorization: {0}")]
    Credentials(String),
    /// A metadata or token endpoint could not be reached.
    #[error("authorization: cannot reach {0}")]
    Unreachable(String),
    /// Discovery found no usable authorization server.
    #[error("authorization: {0}")]
    Discovery(String),
    /// The authorization server refused the token request.
    #[error("authorization: the authorization server refused a token: {0}")]
    Refused(String),
    /// The token response could not be used.
    #[error("authorization: the token response is not usable: {0}")]
    Garbage(String),
    /// The user must connect their account first: a sign-in was started (D-37).
    #[error("authorization: the user must connect their account")]
    NeedsLink,
}

impl From<Error> for ConnectorError {
    fn from(e: Error) -> Self {
        ConnectorError::Config(e.to_string())
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
}
