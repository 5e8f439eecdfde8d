//! The `Metrics` port: counters and measurements (CloudWatch EMF on AWS, a local registry
//! on a laptop).

use std::sync::Arc;

/// A sink for metrics.
pub trait Metrics: Send + Sync {
    /// Adds `value` to counter `name` with the given dimensions.
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]);

    /// Records one measurement (milliseconds, USD, ...).
    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]);

    /// Adds `value` to counter `name` with `properties`: values kept with the count so that
    /// logs can be searched and grouped by them, never dimensions of the metric (a value
    /// with many variants, such as a hash, would make one metric per variant).
    fn count_with(
        &self,
        name: &'static str,
        value: u64,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
    ) {
        let _ = properties;
        self.count(name, value, dimensions);
    }
}

/// Metrics that go nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMetrics;

impl Metrics for NoMetrics {
    fn count(&self, _: &'static str, _: u64, _: &[(&'static str, &str)]) {}
    fn measure(&self, _: &'static str, _: f64, _: &[(&'static str, &str)]) {}
}

/// Every metric to two sinks: the process's own (EMF lines, the local registry) and an
/// exporter beside it (OTLP).
#[derive(Clone)]
pub struct Tee(pub Arc<dyn Metrics>, pub Arc<dyn Metrics>);

impl Metrics for Tee {
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]) {
        self.0.count(name, value, dimensions);
        self.1.count(name, value, dimensions);
    }

    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]) {
        self.0.measure(name, value, dimensions);
        self.1.measure(name, value, dimensions);
    }

    fn count_with(
        &self,
        name: &'static str,
        value: u64,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
    ) {
        self.0.count_with(name, value, dimensions, properties);
        self.1.count_with(name, value, dimensions, properties);
    }
}

/// Counter: envelopes suppressed because their principal differed (D-29), by `tool`, with
/// the `consumer` (the specialist that called it) and the `enricher` (the producer the
/// envelope names) as properties.
pub const PRINCIPAL_MISMATCH_TOTAL: &str = "principal_mismatch_total";
/// Measurement: the largest `intent_count` the orchestrator reported in a routed turn
/// (002 §10.2): how many requests messages carry.
pub const INTENT_COUNT: &str = "intent_count";
/// Measurement: what a fan-out took beyond its slowest sub-agent, ms (D-10): the
/// runtime's own dispatch overhead, whose p95 the dashboard can read.
pub const DISPATCH_OVERHEAD_MS: &str = "dispatch_overhead_ms";
/// Measurement: status events a turn sent (D-12).
pub const STATUS_EVENTS_PER_TURN: &str = "status_events_per_turn";
/// Counter: failures by `axis` (`tool`, `specialist`, `model`) and `name` (the tool, the
/// specialist or the model that failed; all come from the registry, so they stay few).
pub const FAILURES_TOTAL: &str = "failures_total";
/// Counter: data tool calls, by `tool` and `outcome` (`ok`, `partial`, `unavailable`): a
/// backend that is down, slow or answers garbage shows here.
pub const TOOL_CALLS_TOTAL: &str = "tool_calls_total";
/// Counter: envelopes whose payload is not of the tool's declared type (002 §5.5).
pub const ENVELOPE_TYPE_MISMATCH_TOTAL: &str = "envelope_type_mismatch_total";
/// Counter: envelopes with an incompatible major version (D-28).
pub const ENVELOPE_VERSION_MISMATCH_TOTAL: &str = "envelope_version_mismatch_total";
/// Counter: status codes no card maps (D-12).
pub const UNKNOWN_STATUS_CODE_TOTAL: &str = "unknown_status_code_total";
/// Measurement: cost of a turn in USD (D-32).
pub const TURN_COST_USD: &str = "turn_cost_usd";
/// Counter: turns by outcome.
pub const TURNS_TOTAL: &str = "turns_total";
/// Counter: sub-agent invocations by outcome.
pub const SUBAGENT_INVOCATIONS_TOTAL: &str = "subagent_invocations_total";
/// Measurement: wall time of one sub-agent, by agent and outcome (D-31).
pub const SUBAGENT_LATENCY_MS: &str = "subagent_latency_ms";
/// Measurement: sub-agents started together by one fan-out (D-9, D-31).
pub const FANOUT_WIDTH: &str = "fanout_width";
/// Measurement: a turn's wall time, from its claim to its commit, by outcome (D-31).
pub const TURN_LATENCY_MS: &str = "turn_latency_ms";
/// Measurement: from a request reaching the HTTP edge to the first byte of its stream.
pub const TIME_TO_FIRST_EVENT_MS: &str = "time_to_first_event_ms";
/// Counter: guard firings, by guard (D-31).
pub const GUARD_FIRINGS_TOTAL: &str = "guard_firings_total";
/// Counter: orchestrator calls that did not run, by reason (D-9, D-31).
pub const CALLS_DROPPED_TOTAL: &str = "calls_dropped_total";
/// Counter: model retries and re-asks (D-31).
pub const MODEL_RETRIES_TOTAL: &str = "model_retries_total";
/// Counter: Direct Line turns, by mode and state (D-21).
pub const DIRECT_LINE_TURNS_TOTAL: &str = "direct_line_turns_total";
/// Counter: interventions, by kind (`forced_tool_choice`, `runtime_consult`, `note`; D-22).
pub const INTERVENTIONS_TOTAL: &str = "interventions_total";
/// Counter: values the privacy guard masked, by kind (D-23).
pub const PRIVACY_MASKED_TOTAL: &str = "privacy_masked_total";
/// Counter: model calls, by agent, with the prompt's cache cohort as a property (D-3).
pub const MODEL_CALLS_TOTAL: &str = "model_calls_total";
/// Counter: tokens, by model and kind (`input`, `output`, `cache_read`, `cache_write`; D-32).
pub const MODEL_TOKENS_TOTAL: &str = "model_tokens_total";
/// Counter: episodes a compaction run handled, by outcome (`compacted`, `conflict`,
/// `failed`, `nothing`).
pub const COMPACTIONS_TOTAL: &str = "compactions_total";
/// Counter: turns folded into summaries.
pub const COMPACTED_TURNS_TOTAL: &str = "compacted_turns_total";
/// Counter: the summarizer's tokens, by kind (`input`, `output`).
pub const COMPACTION_TOKENS_TOTAL: &str = "compaction_tokens_total";
/// Measurement: the summarizer's cost of one episode's compaction, USD.
pub const COMPACTION_COST_USD: &str = "compaction_cost_usd";
/// Counter: idle connections closed at the connection limit to make room for new ones.
pub const CONNECTIONS_SHED_TOTAL: &str = "connections_shed_total";
