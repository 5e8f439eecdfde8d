//! One model call as the engine needs it: text forwarded as it streams, tool calls
//! assembled from fragments, usage counted, transient failures retried with jittered
//! backoff while nothing has been shown yet.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use baton_core::message::Content;
use baton_core::ports::metrics::{FAILURES_TOTAL, MODEL_CALLS_TOTAL};
use baton_core::ports::model::{ModelError, ModelEvent, ModelRequest, StopReason, TokenUsage};
use baton_core::registry::Agent;
use futures::StreamExt;
use tracing::Instrument as _;

use super::context::TurnCtx;

/// Retries of a transient failure before any output.
const MAX_RETRIES: u32 = 2;

/// A tool call as the model emitted it (arguments not yet parsed).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) args: String,
}

impl RawCall {
    /// Parsed arguments; an empty argument text is `{}`.
    pub(crate) fn parse(&self) -> Result<serde_json::Value, String> {
        if self.args.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        match serde_json::from_str::<serde_json::Value>(&self.args) {
            Ok(v @ serde_json::Value::Object(_)) => Ok(v),
            Ok(_) => Err("arguments are not a JSON object".to_owned()),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        }
    }
}

/// What a call produced.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    /// The text, unless the sink keeps it itself (see [`Sink::keeps_text`]).
    pub(crate) text: String,
    /// Whether any text other than whitespace came.
    pub(crate) has_text: bool,
    pub(crate) calls: Vec<RawCall>,
    pub(crate) stop: Option<StopReason>,
}

/// Where streamed pieces go while the call runs.
pub(crate) trait Sink: Send {
    /// A text piece.
    fn text(&mut self, text: &str) -> impl Future<Output = ()> + Send;
    /// A reasoning piece.
    fn reasoning(&mut self, text: &str) -> impl Future<Output = ()> + Send;
    /// A tool call is starting (lets a sink release held-back text).
    fn tool_start(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// Whether the reply must keep its own copy of the text. A sink whose text is already
    /// kept elsewhere (the answer, in the turn's narration) says no: an answer of megabytes
    /// is then held once, not twice.
    fn keeps_text(&self) -> bool {
        true
    }
}

/// Why a call was refused before it reached the model: the episode's window is spent.
pub(crate) const WINDOW_SPENT: &str = "the episode's window of model and tool calls is spent";

/// Runs one call of `agent`'s model.
pub(crate) async fn call(
    ctx: &TurnCtx,
    agent: &Arc<Agent>,
    request: &ModelRequest,
    sink: &mut impl Sink,
) -> Result<Reply, ModelError> {
    let Some(model) = ctx.inner.model_for(&agent.model).cloned() else {
        return Err(ModelError::Invalid(format!(
            "no adapter for provider {}",
            agent.model.provider
        )));
    };
    // A model that does not see pictures is told of them in words (D-42).
    let told;
    let request = if agent.model.capabilities.pictures || !has_pictures(request) {
        request
    } else {
        told = pictures_in_words(request);
        &told
    };
    let mut attempt = 0;
    // A retry the window refuses ends with the failure it would have retried: the model
    // was reached.
    let mut failed: Option<ModelError> = None;
    loop {
        if !ctx.take_window_call() {
            return Err(failed.unwrap_or_else(|| ModelError::Invalid(WINDOW_SPENT.into())));
        }
        let mut shown = false;
        // OpenTelemetry GenAI conventions: one `chat` span per model call. The cohort (the
        // hash of the card's stable prompt prefix, D-3) tells which calls can share a
        // prompt cache.
        // The model that answers: the card's, unless one model answers every card.
        let (provider, model_id) = model
            .serves_as()
            .unwrap_or((&*agent.model.provider, &agent.model.model_id));
        let span = tracing::info_span!(
            "chat",
            gen_ai.operation.name = "chat",
            gen_ai.request.model = %model_id,
            gen_ai.agent.name = %agent.id,
            baton.prompt.cohort = %agent.prompt.cohort,
            gen_ai.provider.name = %provider,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.usage.cache_read.input_tokens = tracing::field::Empty,
            gen_ai.usage.cache_creation.input_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
        );
        let result = one(ctx, agent, &model, request, sink, &mut shown)
            .instrument(span)
            .await;
        match result {
            Err(e) if e.is_retryable() && !shown && attempt < MAX_RETRIES => {
                attempt += 1;
                ctx.trace(|t| t.retries += 1);
                let wait = backoff(attempt);
                tracing::warn!(agent = %agent.id, attempt, ?wait, error = %e, "model call failed; retrying");
                failed = Some(e);
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

fn has_pictures(request: &ModelRequest) -> bool {
    request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .any(|c| matches!(c, Content::Picture { .. }))
}

/// `request` with each picture replaced by a sentence saying what it is.
fn pictures_in_words(request: &ModelRequest) -> ModelRequest {
    let mut told = request.clone();
    for content in told.messages.iter_mut().flat_map(|m| m.content.iter_mut()) {
        if let Content::Picture { picture, .. } = content {
            *content = Content::Text {
                text: Content::picture_in_words(picture),
            };
        }
    }
    told
}

async fn one(
    ctx: &TurnCtx,
    agent: &Arc<Agent>,
    model: &Arc<dyn baton_core::ports::model::Model>,
    request: &ModelRequest,
    sink: &mut impl Sink,
    shown: &mut bool,
) -> Result<Reply, ModelError> {
    let mut stream = crate::faults::model_stream(model.stream(request));
    let mut reply = Reply::default();
    let mut usage = TokenUsage::default();
    let mut open: Vec<RawCall> = Vec::new();
    let mut outcome = Ok(());
    while let Some(event) = stream.next().await {
        match event {
            Ok(ModelEvent::TextDelta(t)) => {
                *shown = true;
                reply.has_text |= !t.trim().is_empty();
                if sink.keeps_text() {
                    reply.text.push_str(&t);
                }
                sink.text(&t).await;
            }
            Ok(ModelEvent::ReasoningDelta(t)) => sink.reasoning(&t).await,
            Ok(ModelEvent::ToolUseStart { id, name }) => {
                sink.tool_start().await;
                open.push(RawCall {
                    id,
                    name,
                    args: String::new(),
                });
            }
            Ok(ModelEvent::ToolUseDelta { id, fragment }) => {
                if let Some(c) = open.iter_mut().rev().find(|c| c.id == id) {
                    c.args.push_str(&fragment);
                }
            }
            Ok(ModelEvent::ToolUseStop { id }) => {
                if let Some(pos) = open.iter().position(|c| c.id == id) {
                    reply.calls.push(open.remove(pos));
                }
            }
            Ok(ModelEvent::Stop(reason)) => reply.stop = Some(reason),
            Ok(ModelEvent::Usage(u)) => usage.add(&u),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    // A call whose stop never came still counts: providers may end the stream early.
    reply.calls.append(&mut open);
    let span = tracing::Span::current();
    // As signed integers: the OpenTelemetry layer exports an unsigned one as text, and the
    // GenAI conventions type token counts as int.
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", int(usage.input));
    span.record("gen_ai.usage.output_tokens", int(usage.output));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cache_read),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_write),
    );
    if let Some(stop) = reply.stop {
        span.record("gen_ai.response.finish_reasons", stop.as_str());
    }
    ctx.budget.add_usage(&agent.model, &usage);
    ctx.inner.metrics.count_with(
        MODEL_CALLS_TOTAL,
        1,
        &[("agent", &agent.metrics_name)],
        &[("cohort", &agent.prompt.cohort)],
    );
    if outcome.is_err() {
        ctx.inner.metrics.count(
            FAILURES_TOTAL,
            1,
            &[("axis", "model"), ("name", &agent.model.key)],
        );
    }
    outcome.map(|()| reply)
}

fn backoff(attempt: u32) -> Duration {
    let base = 100u64 << attempt.min(6);
    let mut h = RandomState::new().build_hasher();
    h.write_u32(attempt);
    let jitter = h.finish() % (base / 2 + 1);
    Duration::from_millis(base / 2 + jitter)
}

/// A sink that drops everything (calls whose text is not shown).
pub(crate) struct Quiet;

impl Sink for Quiet {
    async fn text(&mut self, _: &str) {}
    async fn reasoning(&mut self, _: &str) {}
}
