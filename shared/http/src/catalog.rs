//! What the caller can reach: the assistant, its specialists, how to address one directly
//! (the Direct Line settings a client needs to write `#<id> …`), and the ways in. The
//! native route and every face that lists specialists read it from here.

use baton_core::directive::{DirectLinePolicy, DirectMode};
use baton_core::registry::{Agent, Registry};
use serde::Serialize;

/// The answer of `GET /v1/agents`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Catalog {
    /// The orchestrator the caller talks to.
    pub(crate) assistant: Assistant,
    /// How to address a specialist directly.
    pub(crate) direct_line: DirectLine,
    /// Its specialists, in declared order.
    pub(crate) agents: Vec<Specialist>,
    /// The ways in this server serves (the native stream and each face).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) endpoints: Vec<Endpoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Assistant {
    pub(crate) id: String,
    pub(crate) label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DirectLine {
    pub(crate) enabled: bool,
    pub(crate) prefix: String,
    exit: String,
    sticky: bool,
    mode: DirectMode,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Specialist {
    pub(crate) id: String,
    pub(crate) label: String,
    pub(crate) description: String,
}

/// One way in: what it is, and its method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Endpoint {
    name: &'static str,
    method: &'static str,
    path: &'static str,
}

pub(crate) const fn endpoint(
    name: &'static str,
    method: &'static str,
    path: &'static str,
) -> Endpoint {
    Endpoint { name, method, path }
}

/// The catalog of `entry` over `registry`. An entry without specialists has the Direct Line
/// off: there is no one to address.
pub(crate) fn catalog(registry: &Registry, entry: &Agent) -> Catalog {
    let (policy, sub_agents) = match &entry.orchestration {
        Some(o) => (o.direct_line.clone(), o.sub_agents.as_slice()),
        None => (
            DirectLinePolicy {
                enabled: false,
                ..DirectLinePolicy::default()
            },
            &[][..],
        ),
    };
    let agents = sub_agents
        .iter()
        .filter_map(|id| registry.agent(id))
        .map(|a| Specialist {
            id: a.id.to_string(),
            label: a.label.to_string(),
            description: a.description.to_string(),
        })
        .collect::<Vec<_>>();
    Catalog {
        assistant: Assistant {
            id: entry.id.to_string(),
            label: entry.label.to_string(),
        },
        direct_line: DirectLine {
            enabled: policy.enabled && !agents.is_empty(),
            prefix: policy.prefix,
            exit: policy.exit,
            sticky: policy.sticky,
            mode: policy.mode,
        },
        agents,
        endpoints: Vec::new(),
    }
}
