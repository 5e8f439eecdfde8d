//! What can be wrong with a connector's configuration or its data files.

use baton_core::ports::connector::ConnectorError;

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

impl From<Error> for ConnectorError {
    fn from(e: Error) -> Self {
        ConnectorError::Config(e.to_string())
    }
}
