//! The HTTP client of an MCP server that requires OAuth: rmcp's reqwest client, with the
//! server's token on every request. A 401 gets a new token and one retry; a 403 asking
//! for more scope (`insufficient_scope`) gets a stepped-up token, a bounded number of
//! times; the retried request was refused, so nothing ran twice.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use crate::oauth::{Challenge, Tokens};
use crate::secrets::Secret;

/// Step-ups tried for one request before its refusal stands.
const MAX_STEP_UPS: usize = 2;

type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

#[derive(Clone)]
pub(crate) struct Authorized {
    pub(crate) http: reqwest::Client,
    pub(crate) tokens: Arc<dyn Tokens>,
}

impl Authorized {
    /// Runs `send` with the current token (none before the first challenge: the
    /// server's challenge tells which scope and metadata to use), renewing it as the
    /// server's answers ask.
    async fn with_token<T, F, Fut>(&self, send: F) -> Result<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut token: Option<Secret> = self.tokens.cached().await;
        let mut renewed = false;
        let mut step_ups = 0;
        loop {
            let result = send(token.as_ref().map(|t| t.expose().to_owned())).await;
            let header = match &result {
                Err(StreamableHttpError::AuthRequired(e)) if !renewed => {
                    renewed = true;
                    &e.www_authenticate_header
                }
                Err(StreamableHttpError::InsufficientScope(e)) if step_ups < MAX_STEP_UPS => {
                    step_ups += 1;
                    &e.www_authenticate_header
                }
                _ => return result,
            };
            let challenge = Challenge::parse(header);
            let fresh = self
                .tokens
                .renew(token.as_ref(), &challenge)
                .await
                .map_err(|fault| StreamableHttpError::Io(std::io::Error::other(fault)))?;
            token = Some(fresh);
        }
    }
}

impl StreamableHttpClient for Authorized {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.http.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        self.with_token(|token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.with_token(|token| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse> {
        self.with_token(|token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse> {
        self.with_token(|token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
