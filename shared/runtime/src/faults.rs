//! The runtime's own fault injection points (D-39): the model stream, shared by the engine
//! and compaction, and the connectors. Without the `failpoints` feature each helper is a
//! constant `None` (or the stream itself), so the shipped paths do no extra work.

use baton_core::failpoint::injected;
use baton_core::ports::connector::ConnectorError;
use baton_core::ports::model::{ModelError, ModelStream};
use baton_core::ports::upstream::UpstreamError;
use futures::StreamExt as _;

/// `stream`, with `model.stream.first` before its first event and `model.stream.next`
/// before each later one (and its end): an armed point ends it with a retryable error.
pub(crate) fn model_stream(stream: ModelStream) -> ModelStream {
    if !cfg!(feature = "failpoints") {
        return stream;
    }
    Box::pin(futures::stream::unfold(
        Some((stream, "model.stream.first")),
        |state| async move {
            let (mut stream, point) = state?;
            if baton_core::fault!(point) {
                // Errors are terminal: nothing follows.
                return Some((Err(ModelError::Unavailable(injected(point))), None));
            }
            let event = stream.next().await?;
            Some((event, Some((stream, "model.stream.next"))))
        },
    ))
}

/// The fault of `connector.<kind>` when it is armed: the call fails as an unreachable
/// backend's would, without reaching it.
pub(crate) fn connector(kind: &str) -> Option<ConnectorError> {
    if !cfg!(feature = "failpoints") {
        return None;
    }
    let point = format!("connector.{kind}");
    baton_core::fault!(&point).then(|| ConnectorError::Unavailable(injected(&point)))
}

/// The fault of `connector.upstream_chat` (a specialist's chat service) when it is armed.
pub(crate) fn upstream_chat() -> Option<UpstreamError> {
    baton_core::fault!("connector.upstream_chat")
        .then(|| UpstreamError::Unavailable(injected("connector.upstream_chat")))
}
