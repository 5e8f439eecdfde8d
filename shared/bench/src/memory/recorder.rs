//! What the memory benchmark watches: every model request (a recording [`Model`] around the
//! real one) and the engine's own compaction metrics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::message::{Content, Message};
use baton_core::ports::clock::Clock;
use baton_core::ports::metrics::Metrics;
use baton_core::ports::model::{
    CallPurpose, Model, ModelEvent, ModelRequest, ModelStream, TokenUsage,
};
use baton_core::prompt::estimate_tokens;
use futures::StreamExt;

/// One model request, as the engine sent it.
#[derive(Debug, Clone)]
pub(crate) struct CallRecord {
    /// The card that made it.
    pub(crate) agent: String,
    /// Why.
    pub(crate) purpose: CallPurpose,
    /// Estimated tokens of the system blocks up to the cache point (the stable prefix).
    pub(crate) system_stable: u64,
    /// Estimated tokens of the system blocks after it (date, user, the summary).
    pub(crate) system_dynamic: u64,
    /// Estimated tokens of the messages (history, the new message, tool calls, results).
    pub(crate) messages: u64,
    /// Whether the request's text contains the probe.
    pub(crate) saw_probe: bool,
    /// What the model reported it used, filled in as its stream runs.
    usage: Arc<Mutex<TokenUsage>>,
}

impl CallRecord {
    /// The prompt: system blocks and messages, estimated as the engine estimates
    /// (`baton_core::prompt::estimate_tokens`, about four characters a token).
    pub(crate) fn prompt_tokens(&self) -> u64 {
        self.system_stable + self.system_dynamic + self.messages
    }

    /// The tokens the model reported.
    pub(crate) fn usage(&self) -> TokenUsage {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }
}

/// A [`Model`] that records each request and passes it on.
#[derive(Clone)]
pub(crate) struct RecordingModel {
    inner: Arc<dyn Model>,
    probe: Arc<str>,
    calls: Arc<Mutex<Vec<CallRecord>>>,
}

impl RecordingModel {
    /// Records the requests `inner` serves, noting those whose text contains `probe`.
    pub(crate) fn new(inner: Arc<dyn Model>, probe: &str) -> Self {
        RecordingModel {
            inner,
            probe: Arc::from(probe),
            calls: Arc::default(),
        }
    }

    /// The requests recorded since the last call, in the order they were made.
    pub(crate) fn take(&self) -> Vec<CallRecord> {
        self.calls
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}

fn content_tokens(content: &Content) -> u64 {
    match content {
        Content::Text { text } => estimate_tokens(text),
        Content::ToolUse { name, input, .. } => {
            estimate_tokens(name) + estimate_tokens(&input.to_string())
        }
        Content::ToolResult { content, .. } => estimate_tokens(&content.to_string()),
        Content::Picture { picture, .. } => picture.tokens(),
    }
}

fn content_contains(content: &Content, probe: &str) -> bool {
    match content {
        Content::Text { text } => text.contains(probe),
        Content::ToolUse { input, .. } => input.to_string().contains(probe),
        Content::ToolResult { content, .. } => content.to_string().contains(probe),
        Content::Picture { .. } => false,
    }
}

fn message_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(content_tokens)
        .sum()
}

impl Model for RecordingModel {
    fn stream(&self, request: &ModelRequest) -> ModelStream {
        let stable_blocks = request
            .system
            .iter()
            .position(|b| b.cache_point)
            .map_or(0, |i| i + 1);
        let tokens = |blocks: &[baton_core::ports::model::SystemBlock]| -> u64 {
            blocks.iter().map(|b| estimate_tokens(&b.text)).sum()
        };
        let probe = &*self.probe;
        let saw_probe = !probe.is_empty()
            && (request.system.iter().any(|b| b.text.contains(probe))
                || request
                    .messages
                    .iter()
                    .flat_map(|m| &m.content)
                    .any(|c| content_contains(c, probe)));
        let usage = Arc::new(Mutex::new(TokenUsage::default()));
        let record = CallRecord {
            agent: request.agent_id.to_string(),
            purpose: request.purpose,
            system_stable: tokens(&request.system[..stable_blocks]),
            system_dynamic: tokens(&request.system[stable_blocks..]),
            messages: message_tokens(&request.messages),
            saw_probe,
            usage: usage.clone(),
        };
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(record);
        }
        self.inner
            .stream(request)
            .inspect(move |event| {
                if let Ok(ModelEvent::Usage(u)) = event
                    && let Ok(mut total) = usage.lock()
                {
                    total.add(u);
                }
            })
            .boxed()
    }
}

/// The engine's metrics, kept: counters by `name,dim=value` and measurement sums by name.
#[derive(Debug, Default)]
pub(crate) struct BenchMetrics {
    counters: Mutex<BTreeMap<String, u64>>,
    sums: Mutex<BTreeMap<String, f64>>,
}

impl BenchMetrics {
    /// A counter with exactly these dimensions (`name` or `name,dim=value`).
    pub(crate) fn counter(&self, key: &str) -> u64 {
        self.counters
            .lock()
            .ok()
            .and_then(|c| c.get(key).copied())
            .unwrap_or(0)
    }

    /// The sum of a measurement over every dimension set.
    pub(crate) fn sum(&self, name: &str) -> f64 {
        self.sums
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|(k, _)| k.split(',').next() == Some(name))
                    .map(|(_, v)| *v)
                    // An empty sum is -0.0.
                    .fold(0.0, |a, b| a + b)
            })
            .unwrap_or(0.0)
    }
}

fn key(name: &str, dimensions: &[(&'static str, &str)]) -> String {
    let mut k = name.to_owned();
    for (d, v) in dimensions {
        k.push(',');
        k.push_str(d);
        k.push('=');
        k.push_str(v);
    }
    k
}

impl Metrics for BenchMetrics {
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]) {
        if let Ok(mut c) = self.counters.lock() {
            *c.entry(key(name, dimensions)).or_default() += value;
        }
    }

    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]) {
        if let Ok(mut s) = self.sums.lock() {
            *s.entry(key(name, dimensions)).or_default() += value;
        }
    }
}

/// The conversation's wall clock: now when it starts, then moved on by the benchmark
/// before each turn, as a user's pace would (the engine's per-episode rate window, 50 model
/// calls in 300 s by default, reads this clock).
#[derive(Debug)]
pub(crate) struct PacedClock(AtomicU64);

impl PacedClock {
    /// Starts at the system's time.
    pub(crate) fn starting_now() -> Self {
        PacedClock(AtomicU64::new(baton_runtime::clock::SystemClock.now_ms()))
    }

    /// Moves the clock on.
    pub(crate) fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for PacedClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::ports::model::{ModelError, SystemBlock, ToolChoice};
    use futures::stream;

    use super::*;

    struct Fixed;

    impl Model for Fixed {
        fn stream(&self, _: &ModelRequest) -> ModelStream {
            let events: Vec<Result<ModelEvent, ModelError>> = vec![
                Ok(ModelEvent::TextDelta("ok".into())),
                Ok(ModelEvent::Usage(TokenUsage {
                    input: 7,
                    output: 2,
                    ..TokenUsage::default()
                })),
            ];
            stream::iter(events).boxed()
        }
    }

    #[tokio::test]
    async fn a_request_is_recorded_with_its_prompt_and_usage() {
        let model = RecordingModel::new(Arc::new(Fixed), "x@example.com");
        let request = ModelRequest {
            agent_id: "shop".into(),
            model_id: "m".into(),
            purpose: CallPurpose::Agent,
            system: vec![
                SystemBlock {
                    text: "12345678".into(),
                    cache_point: true,
                },
                SystemBlock {
                    text: "1234".into(),
                    cache_point: false,
                },
            ],
            messages: vec![Message::user("write to x@example.com please")],
            tools: Arc::new([]),
            tool_choice: ToolChoice::Auto,
            inference: Default::default(),
        };
        let _: Vec<_> = model.stream(&request).collect().await;
        let calls = model.take();
        assert_eq!(calls.len(), 1);
        let c = &calls[0];
        assert_eq!((c.system_stable, c.system_dynamic, c.messages), (2, 1, 8));
        assert_eq!(c.prompt_tokens(), 11);
        assert!(c.saw_probe);
        assert_eq!((c.usage().input, c.usage().output), (7, 2));
        assert!(model.take().is_empty());
    }

    #[test]
    fn metrics_are_kept_by_dimensions() {
        let m = BenchMetrics::default();
        m.count("c", 2, &[("outcome", "compacted")]);
        m.count("c", 1, &[("outcome", "compacted")]);
        m.measure("cost", 0.5, &[]);
        m.measure("cost", 0.25, &[("k", "v")]);
        assert_eq!(m.counter("c,outcome=compacted"), 3);
        assert_eq!(m.counter("c"), 0);
        assert!((m.sum("cost") - 0.75).abs() < 1e-12);
    }
}
