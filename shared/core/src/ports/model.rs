//! The `Model` port: one streaming conversation call.
//!
//! Providers (Bedrock ConverseStream, the offline model, the scripted model) implement
//! [`Model::stream`]; the runtime never sees a provider's wire types. A request carries the
//! system prompt as blocks with cache points, the conversation, the tools and the tool
//! choice; the answer is a stream of normalized [`ModelEvent`]s.

use std::pin::Pin;
use std::sync::Arc;

use futures_core::Stream;

pub use crate::model::{
    CallPurpose, Inference, LEVELS, Level, ModelError, ModelEvent, ModelRequest, ReasoningEffort,
    StopReason, SystemBlock, TextVerbosity, TokenUsage, ToolChoice, ToolDef,
};

/// A boxed, sendable stream: what object-safe ports return.
pub type BoxStream<'a, T> = Pin<Box<dyn Stream<Item = T> + Send + 'a>>;

/// The stream a model call yields.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A language model (or a deterministic stand-in for one).
///
/// Contract: the request is borrowed only for the call itself — a model converts what it
/// needs into its own form before returning (so the runtime can retry the same request
/// without copying it). Dropping the stream cancels the call. A stream ends after
/// [`ModelEvent::Stop`] (and, where the provider reports it, a final
/// [`ModelEvent::Usage`]). Errors are terminal: nothing follows an `Err`.
pub trait Model: Send + Sync {
    /// Start one conversation call.
    fn stream(&self, request: &ModelRequest) -> ModelStream;

    /// The provider and model id this adapter answers with, when it answers every card
    /// with one model whatever the card names (the offline model, a script, `--model
    /// KEY`): what traces name (D-33). `None`: the card's own model answers.
    fn serves_as(&self) -> Option<(&str, &str)> {
        None
    }
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        (**self).stream(request)
    }

    fn serves_as(&self) -> Option<(&str, &str)> {
        (**self).serves_as()
    }
}
