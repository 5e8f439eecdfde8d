//! What each node of a plan came to, what a dependent is told, and the documents the
//! planner reads back (`dispatch_agent`'s and `get_agent_results`' results).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::graph::PlanNode;
use crate::consulted::AgentStatus;

/// How a node ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// It finished its mission.
    Completed,
    /// It finished with degraded data.
    Partial,
    /// It failed.
    Failed,
    /// It ran out of time.
    Timeout,
    /// It did not run: a dependency did not finish.
    Skipped,
    /// It did not run: a limit of the turn stopped it (it waits for "continue").
    NotRun,
}

impl NodeStatus {
    /// How a sub-agent that ran ended, as a node.
    pub fn of(status: AgentStatus) -> Self {
        match status {
            AgentStatus::Ok => NodeStatus::Completed,
            AgentStatus::Partial => NodeStatus::Partial,
            AgentStatus::Error => NodeStatus::Failed,
            AgentStatus::Timeout => NodeStatus::Timeout,
            // Planned work does not wait for the user yet (its calls are held back).
            AgentStatus::Awaiting => NodeStatus::Failed,
        }
    }

    /// The wire name (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Completed => "completed",
            NodeStatus::Partial => "partial",
            NodeStatus::Failed => "failed",
            NodeStatus::Timeout => "timeout",
            NodeStatus::Skipped => "skipped",
            NodeStatus::NotRun => "not_run",
        }
    }

    /// Whether its dependents may use what it produced.
    pub fn usable(self) -> bool {
        matches!(self, NodeStatus::Completed | NodeStatus::Partial)
    }

    /// Whether it ran (and so is in the consulted record).
    pub fn ran(self) -> bool {
        !matches!(self, NodeStatus::Skipped | NodeStatus::NotRun)
    }
}

/// What one node came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeResult {
    /// The node.
    pub id: String,
    /// How it ended.
    pub status: NodeStatus,
    /// Its answer when it ran; otherwise why it did not, in plain words.
    pub result: String,
    /// Tool calls it made.
    pub tool_calls: u32,
    /// Its wall time.
    pub duration_ms: u64,
}

impl NodeResult {
    /// A node that did not run, and why.
    pub fn not_run(id: &str, status: NodeStatus, why: String) -> Self {
        NodeResult {
            id: id.to_owned(),
            status,
            result: why,
            tool_calls: 0,
            duration_ms: 0,
        }
    }
}

/// Why `node` cannot run given what its dependencies came to: the first dependency that
/// did not finish usably (or has no result at all: it never finished), in plain words.
/// `None`: it may run.
pub fn blocked(node: &PlanNode, results: &[NodeResult]) -> Option<String> {
    node.depends_on.iter().find_map(|dep| {
        let Some(r) = results.iter().find(|r| &r.id == dep) else {
            return Some(format!("Skipped because {dep} never finished."));
        };
        let what = match r.status {
            NodeStatus::Completed | NodeStatus::Partial => return None,
            NodeStatus::Failed => "failed",
            NodeStatus::Timeout => "timed out",
            NodeStatus::Skipped => "was skipped",
            NodeStatus::NotRun => "did not run",
        };
        Some(format!("Skipped because {dep} {what}."))
    })
}

/// The results a node gets from its dependencies, in the order it names them.
pub fn inputs<'a>(node: &PlanNode, results: &'a [NodeResult]) -> Vec<&'a NodeResult> {
    node.depends_on
        .iter()
        .filter_map(|dep| results.iter().find(|r| &r.id == dep))
        .collect()
}

/// One node as the planner reads it back.
fn entry(node: &PlanNode, result: Option<&NodeResult>) -> Value {
    match result {
        Some(r) => json!({
            "agent_id": node.id,
            "status": r.status.as_str(),
            "result": r.result,
            "tool_calls_used": r.tool_calls,
            "duration_ms": r.duration_ms,
            "wave": node.wave,
        }),
        None => json!({"agent_id": node.id, "status": "running", "wave": node.wave}),
    }
}

/// `get_agent_results`: the nodes asked for (all when `ids` is `None`) with what each
/// came to.
///
/// # Errors
/// An id that was never dispatched this turn; the message lists those that were.
pub fn results_document(
    nodes: &[PlanNode],
    results: &[NodeResult],
    ids: Option<&[String]>,
) -> Result<Value, String> {
    let chosen: Vec<&PlanNode> = match ids {
        None => nodes.iter().collect(),
        Some(ids) => {
            let unknown: Vec<&str> = ids
                .iter()
                .filter(|id| !nodes.iter().any(|n| &n.id == *id))
                .map(String::as_str)
                .collect();
            if !unknown.is_empty() {
                let known: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
                return Err(format!(
                    "No sub-agent called {} was dispatched in this turn. Dispatched: {}.",
                    unknown.join(", "),
                    if known.is_empty() {
                        "none yet".to_owned()
                    } else {
                        known.join(", ")
                    }
                ));
            }
            nodes.iter().filter(|n| ids.contains(&n.id)).collect()
        }
    };
    let agents: Vec<Value> = chosen
        .iter()
        .map(|n| entry(n, results.iter().find(|r| r.id == n.id)))
        .collect();
    Ok(json!({ "agents": agents }))
}

/// `dispatch_agent`'s own result: the node's wave and, once the step has run, what it
/// came to.
pub fn dispatch_document(node: &PlanNode, result: Option<&NodeResult>) -> Value {
    entry(node, result)
}
