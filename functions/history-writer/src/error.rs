//! Why a stream record, or the function's setup, failed.

/// Everything the history writer can fail at.
///
/// Record-level variants end up as batch item failures (the record is retried); only
/// [`Error::NoSequenceNumber`] fails a whole invocation, and [`Error::MissingSetting`] stops
/// the function during Init.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting the function needs is not set.
    #[error("the environment variable {variable} is not set")]
    MissingSetting {
        /// Name of the variable.
        variable: &'static str,
    },
    /// A record that failed cannot be reported on its own without its sequence number.
    #[error("a stream record without a sequence number could not be processed")]
    NoSequenceNumber,
    /// The record's `Keys` are not the table's `pk`/`sk` strings.
    #[error("reading the keys of a stream record")]
    BadKeys(#[source] serde_dynamo::Error),
    /// A journal item's new image lacks an attribute the projection needs.
    #[error("reading the new image of {key}")]
    BadImage {
        /// `pk/sk` of the item.
        key: String,
        /// What was wrong.
        #[source]
        source: serde_dynamo::Error,
    },
    /// The `record` attribute of a TURN item is not a turn record.
    #[error("parsing the turn record of {key}")]
    BadTurnRecord {
        /// `pk/sk` of the item.
        key: String,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A TURN item whose `owner` is not a principal id.
    #[error("the owner of {key} is not a principal id")]
    BadOwner {
        /// `pk/sk` of the item.
        key: String,
    },
    /// A TURN item whose record names another episode or sequence number than its key.
    #[error("the turn record of {key} does not match its key")]
    MismatchedTurn {
        /// `pk/sk` of the item.
        key: String,
    },
    /// A BODY item with neither an inline `json` nor an `s3_key`.
    #[error("the body item {key} has neither `json` nor `s3_key`")]
    EmptyBody {
        /// `pk/sk` of the item.
        key: String,
    },
    /// A DynamoDB call failed.
    #[error("{action} in DynamoDB")]
    Dynamo {
        /// What the writer was doing.
        action: String,
        /// The SDK's error.
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },
    /// An S3 call failed.
    #[error("{action} in S3")]
    S3 {
        /// What the writer was doing.
        action: String,
        /// The SDK's error.
        #[source]
        source: Box<aws_sdk_s3::Error>,
    },
}

impl Error {
    /// A stable name for the kind of failure, for logs and Lambda's error type.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::MissingSetting { .. } => "MissingSetting",
            Error::NoSequenceNumber => "NoSequenceNumber",
            Error::BadKeys(_) => "BadKeys",
            Error::BadImage { .. } => "BadImage",
            Error::BadTurnRecord { .. } => "BadTurnRecord",
            Error::BadOwner { .. } => "BadOwner",
            Error::MismatchedTurn { .. } => "MismatchedTurn",
            Error::EmptyBody { .. } => "EmptyBody",
            Error::Dynamo { .. } => "DynamoDb",
            Error::S3 { .. } => "S3",
        }
    }

    pub(crate) fn dynamo(
        action: impl Into<String>,
        source: impl Into<aws_sdk_dynamodb::Error>,
    ) -> Self {
        Error::Dynamo {
            action: action.into(),
            source: Box::new(source.into()),
        }
    }

    pub(crate) fn s3(action: impl Into<String>, source: impl Into<aws_sdk_s3::Error>) -> Self {
        Error::S3 {
            action: action.into(),
            source: Box::new(source.into()),
        }
    }
}

/// What Lambda records when an invocation fails: a stable type and the top-level message
/// (the cause chain goes to the logs).
impl From<Error> for lambda_runtime::Diagnostic {
    fn from(error: Error) -> Self {
        lambda_runtime::Diagnostic {
            error_type: format!("HistoryWriter.{}", error.kind()),
            error_message: error.to_string(),
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
