//! The runtime's own fault injection points (D-39), shared by the engine and compaction.

use baton_core::ports::model::ModelError;

/// The model stream's injected fault when its point is armed: `model.stream.first` before
/// the first event, `model.stream.next` before each later one (and the end).
pub(crate) fn model_stream(first: bool) -> Option<ModelError> {
    let point = if first {
        "model.stream.first"
    } else {
        "model.stream.next"
    };
    baton_core::fault!(point)
        .then(|| ModelError::Unavailable(baton_core::failpoint::injected(point)))
}
