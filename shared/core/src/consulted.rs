//! The plain footer of who was consulted (D-20), for text-only channels.

use crate::turn::{AgentStatus, ConsultedAgent};

/// `Consulted: Shop, Support (unavailable)` — or an empty string when nobody was.
pub fn footer(agents: &[ConsultedAgent]) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let names: Vec<String> = agents
        .iter()
        .map(|a| match a.status {
            AgentStatus::Ok => a.label.clone(),
            AgentStatus::Partial => format!("{} (partial)", a.label),
            AgentStatus::Error => format!("{} (unavailable)", a.label),
            AgentStatus::Timeout => format!("{} (timed out)", a.label),
        })
        .collect();
    format!("Consulted: {}", names.join(", "))
}
