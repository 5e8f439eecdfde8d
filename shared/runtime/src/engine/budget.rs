//! What a turn may still spend (D-15): its tool calls, its share of the episode's sliding
//! window, and the model usage it is priced by (D-32).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use baton_core::cost::cost_usd;
use baton_core::interruption::TurnSpent;
use baton_core::ports::model::TokenUsage;
use baton_core::registry::{ModelSpec, TurnLimits};
use baton_core::turn::ModelUsage;

/// Calls and tokens of one model within a turn.
type ModelTally = (Arc<ModelSpec>, u32, TokenUsage);

/// The turn's limits and what it has taken of them.
pub(crate) struct Budget {
    pub(crate) limits: TurnLimits,
    /// A turn uses one or two models: a short list beats a map.
    usage: Mutex<Vec<ModelTally>>,
    tool_calls: AtomicU32,
    /// Tool calls the turn had taken before it waited for the user (D-15): they count
    /// against its budget, not again against the episode's window.
    tool_calls_carried: u32,
    model_calls: AtomicU32,
    /// Model and tool calls in the episode's sliding window (D-15): the earlier turns'
    /// when this one started, plus each call this turn has begun.
    window_calls: AtomicU32,
}

impl Budget {
    pub(crate) fn new(limits: TurnLimits) -> Self {
        Budget {
            limits,
            usage: Mutex::new(Vec::new()),
            tool_calls: AtomicU32::new(0),
            tool_calls_carried: 0,
            model_calls: AtomicU32::new(0),
            window_calls: AtomicU32::new(0),
        }
    }

    /// Adds one model call's usage.
    pub(crate) fn add_usage(&self, model: &Arc<ModelSpec>, usage: &TokenUsage) {
        self.model_calls.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut u) = self.usage.lock() {
            match u.iter_mut().find(|t| t.0.key == model.key) {
                Some(tally) => {
                    tally.1 += 1;
                    tally.2.add(usage);
                }
                None => u.push((model.clone(), 1, *usage)),
            }
        }
    }

    /// Usage by model with cost, and the total cost (D-32).
    pub(crate) fn usage(&self) -> (Vec<ModelUsage>, f64) {
        let Ok(u) = self.usage.lock() else {
            return (Vec::new(), 0.0);
        };
        let mut models: Vec<ModelUsage> = u
            .iter()
            .map(|(spec, calls, tokens)| ModelUsage {
                model: spec.key.to_string(),
                calls: *calls,
                tokens: *tokens,
                cost_usd: round_usd(cost_usd(tokens, &spec.prices)),
            })
            .collect();
        models.sort_by(|a, b| a.model.cmp(&b.model));
        let total = round_usd(models.iter().map(|m| m.cost_usd).sum());
        (models, total)
    }

    /// Goes on from the budgets the waiting turn had spent (D-15, D-36).
    pub(crate) fn restore_spent(&mut self, spent: TurnSpent) {
        self.tool_calls_carried = spent.tool_calls;
    }

    /// What the turn has spent of its own budgets, with `iterations` of the orchestrator.
    pub(crate) fn spent(&self, iterations: u32) -> TurnSpent {
        TurnSpent {
            tool_calls: self.tool_calls_carried + self.tool_calls.load(Ordering::Acquire),
            iterations,
        }
    }

    /// Takes one tool call from the turn budget (D-15); false when it is spent.
    pub(crate) fn take_tool_call(&self) -> bool {
        let max = self
            .limits
            .max_tool_calls
            .saturating_sub(self.tool_calls_carried);
        self.tool_calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Sets the calls the episode made in its window before this turn.
    pub(crate) fn set_window_calls(&self, before: u32) {
        self.window_calls.store(before, Ordering::Release);
    }

    /// Takes one model or tool call from the episode's sliding window: false when it
    /// already holds `episode_max_calls`.
    pub(crate) fn take_window_call(&self) -> bool {
        let max = self.limits.episode_max_calls;
        self.window_calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Whether the episode's window is spent.
    pub(crate) fn window_spent(&self) -> bool {
        self.window_calls.load(Ordering::Acquire) >= self.limits.episode_max_calls
    }

    /// Whether the turn's tool-call budget is spent.
    pub(crate) fn tool_calls_spent(&self) -> bool {
        self.tool_calls_carried + self.tool_calls.load(Ordering::Acquire)
            >= self.limits.max_tool_calls
    }

    /// Model and tool calls made so far (for the episode's sliding window).
    pub(crate) fn calls_made(&self) -> u32 {
        self.tool_calls.load(Ordering::Relaxed) + self.model_calls.load(Ordering::Relaxed)
    }
}

/// Cost to a billionth of a dollar: enough for tokens, free of float noise in events.
/// No cost is `0`, never `-0` (an empty float sum is `-0.0`, which JSON would print as
/// such).
fn round_usd(usd: f64) -> f64 {
    let rounded = (usd * 1e9).round() / 1e9;
    if rounded == 0.0 { 0.0 } else { rounded }
}
