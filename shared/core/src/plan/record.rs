//! What a planned turn keeps: its part of the routing record (D-31), the work a limit left
//! for "continue", and the checkpoint written after every wave so that a turn cut short
//! resumes where it was.

use serde::{Deserialize, Serialize};

use super::graph::{PlanNode, StepProblem};
use super::outcome::{NodeResult, NodeStatus};
use crate::message::Message;

/// The plan in the routing record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanRecord {
    /// Every accepted node, in dispatch order, with its wave.
    pub nodes: Vec<PlanNode>,
    /// How each node ended (ran, skipped or not run), in the order they ended.
    pub outcomes: Vec<NodeOutcome>,
    /// Steps refused before anything ran, each with its problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Vec<StepProblem>>,
    /// The wave a turn resumed after, when it resumed from a checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_after_wave: Option<u32>,
    /// Nodes a "continue" picked up from the previous turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continued: Vec<String>,
}

impl PlanRecord {
    /// The waves as lists of node ids, from the first.
    pub fn waves(&self) -> Vec<Vec<String>> {
        let last = self.nodes.iter().map(|n| n.wave).max().unwrap_or(0);
        (1..=last)
            .map(|w| {
                self.nodes
                    .iter()
                    .filter(|n| n.wave == w)
                    .map(|n| n.id.clone())
                    .collect()
            })
            .filter(|w: &Vec<String>| !w.is_empty())
            .collect()
    }
}

/// `wave 1: a, b · wave 2: c`: waves (of node ids, or of anything else) in one line.
pub fn describe_waves(waves: &[Vec<String>]) -> String {
    waves
        .iter()
        .enumerate()
        .map(|(i, w)| format!("wave {}: {}", i + 1, w.join(", ")))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// One node's outcome in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeOutcome {
    /// The node.
    pub id: String,
    /// How it ended.
    pub status: NodeStatus,
    /// Its wall time.
    pub duration_ms: u64,
    /// Tool calls it made.
    pub tool_calls: u32,
    /// Why it did not run, for a skipped or not-run node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&NodeResult> for NodeOutcome {
    fn from(r: &NodeResult) -> Self {
        NodeOutcome {
            id: r.id.clone(),
            status: r.status,
            duration_ms: r.duration_ms,
            tool_calls: r.tool_calls,
            reason: (!r.status.ran()).then(|| r.result.clone()),
        }
    }
}

/// Nodes a turn limit stopped, kept in the episode so that "continue" runs them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PendingPlan {
    /// The nodes that did not run, in run order.
    pub nodes: Vec<PlanNode>,
    /// What their finished dependencies came to (as stored: after the privacy guard).
    pub inputs: Vec<NodeResult>,
}

/// One tool call of the planner's reply, as the checkpoint keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCall {
    /// Tool-use id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model wrote them.
    pub args: String,
}

/// A planned turn's progress at a wave boundary: enough to go on without running any
/// finished node again.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanCheckpoint {
    /// The planner's conversation before the step that is running.
    pub messages: Vec<Message>,
    /// The planner's text in the step's reply.
    pub reply_text: String,
    /// The step's tool calls.
    pub calls: Vec<StepCall>,
    /// Every accepted node of the turn so far.
    pub nodes: Vec<PlanNode>,
    /// What every finished node came to.
    pub results: Vec<NodeResult>,
    /// The last wave that finished.
    pub waves_done: u32,
    /// Planner model calls so far.
    pub iterations: u32,
    /// The plan record's own facts so far (refused steps, continuation); its nodes and
    /// outcomes are `nodes` and `results`.
    pub record: PlanRecord,
    /// A turn limit that had tripped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<crate::limits::LimitHit>,
}

impl PlanCheckpoint {
    /// The checkpoint as stored.
    ///
    /// # Errors
    /// It does not serialize (it always does: every field is plain data).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// A stored checkpoint.
    ///
    /// # Errors
    /// The text is not a checkpoint.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}
