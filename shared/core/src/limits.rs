//! A turn's limits (D-15) and, when one trips, its recorded name.

use serde::{Deserialize, Serialize};

/// Turn and episode limits (D-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnLimits {
    /// Sub-agents dispatched per turn.
    pub max_subagents: u32,
    /// Tool calls per turn, across all sub-agents.
    pub max_tool_calls: u32,
    /// Orchestrator model calls per turn.
    pub max_iterations: u32,
    /// Model and tool calls per episode within the window.
    pub episode_max_calls: u32,
    /// The episode window.
    pub episode_window_ms: u64,
    /// Consecutive failures that open a tool's circuit.
    pub breaker_failures: u32,
    /// Time an open circuit waits before a trial call.
    pub breaker_cooldown_ms: u64,
}

impl Default for TurnLimits {
    fn default() -> Self {
        TurnLimits {
            max_subagents: 8,
            max_tool_calls: 30,
            max_iterations: 6,
            episode_max_calls: 50,
            episode_window_ms: 300_000,
            breaker_failures: 5,
            breaker_cooldown_ms: 30_000,
        }
    }
}

/// The limits of a turn that can trip, by their recorded names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    /// The episode took too many turns in its window.
    EpisodeRate,
    /// The turn consulted as many specialists as it may.
    TurnSubagents,
    /// The turn made as many tool calls as it may.
    TurnToolCalls,
    /// The orchestrator took as many steps as it may.
    OrchestratorIterations,
    /// The turn had to consult more specialists than its fan-out cap lets run at once.
    FanoutCap,
}

impl LimitHit {
    /// The recorded name (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::EpisodeRate => "episode_rate",
            LimitHit::TurnSubagents => "turn_subagents",
            LimitHit::TurnToolCalls => "turn_tool_calls",
            LimitHit::OrchestratorIterations => "orchestrator_iterations",
            LimitHit::FanoutCap => "fanout_cap",
        }
    }
}
