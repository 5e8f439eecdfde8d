//! The event stream on its way out of the function: its time to first event is measured,
//! and it can never end in an error.
//!
//! lambda_runtime turns an `Err` from a streamed body into text in the middle of the
//! response and keeps streaming. The engine already ends every failure
//! with a plain `error` event, so an `Err` here would be a bug below us; it is logged and
//! the stream simply ends.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::Response;
use baton_core::ports::metrics::{Metrics, TIME_TO_FIRST_EVENT_MS};
use tokio::time::Instant;
use tokio_stream::StreamExt as _;

/// Middleware for the router: wraps every event stream (see the module docs).
pub async fn guard_stream(
    State(metrics): State<Arc<dyn Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let response = next.run(request).await;
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut first = true;
    let frames = body.into_data_stream().map_while(move |frame| match frame {
        Ok(bytes) => {
            if first {
                first = false;
                metrics.measure(
                    TIME_TO_FIRST_EVENT_MS,
                    started.elapsed().as_secs_f64() * 1000.0,
                    &[],
                );
            }
            Some(Ok::<_, Infallible>(bytes))
        }
        Err(e) => {
            tracing::error!(error = %e, "the event stream failed; ending it");
            None
        }
    });
    Response::from_parts(parts, Body::from_stream(frames))
}
