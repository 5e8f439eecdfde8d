//! One model call read to its end for its text: what compaction and memory extraction ask
//! of the summarizer, neither of which streams to anyone.

use std::time::Duration;

use baton_core::ports::model::{Model, ModelError, ModelEvent, ModelRequest, TokenUsage};
use futures::StreamExt;

/// Why a call gave no whole answer.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The model failed.
    Model(ModelError),
    /// It took longer than the deadline.
    Timeout,
}

/// The call's text, or why there is none, and the tokens it used either way.
pub(crate) async fn collect(
    model: &dyn Model,
    request: &ModelRequest,
    deadline: Duration,
    tokens: &mut TokenUsage,
) -> Result<String, Failed> {
    let mut text = String::new();
    let called = tokio::time::timeout(deadline, async {
        let mut stream = crate::faults::model_stream(model.stream(request));
        while let Some(event) = stream.next().await {
            match event {
                Ok(ModelEvent::TextDelta(t)) => text.push_str(&t),
                Ok(ModelEvent::Usage(u)) => tokens.add(&u),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })
    .await;
    match called {
        Ok(Ok(())) => Ok(text),
        Ok(Err(e)) => Err(Failed::Model(e)),
        Err(_) => Err(Failed::Timeout),
    }
}
