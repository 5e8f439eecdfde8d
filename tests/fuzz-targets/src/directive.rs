//! The Direct Line directive parser over any text: no panic, and what it says holds of the
//! text (an addressed specialist is one of the cards; a payload is a non-empty suffix).

use baton_core::directive::{Addressable, DirectLinePolicy, Directive, parse};

const AGENTS: [Addressable<'static>; 4] = [
    Addressable {
        id: "shop",
        label: "Shopping",
    },
    Addressable {
        id: "support",
        label: "Support",
    },
    Addressable {
        id: "strategist",
        label: "Budget strategist",
    },
    Addressable {
        id: "rewards",
        label: "Rewards",
    },
];

/// One input: the bytes as text.
pub fn run(data: &[u8]) {
    let Some(text) = crate::common::input::<&str>(data) else {
        return;
    };
    let policy = DirectLinePolicy::default();
    match parse(text, &policy, &AGENTS) {
        Directive::Ask {
            agent_id, payload, ..
        } => {
            assert!(AGENTS.iter().any(|a| a.id == agent_id));
            assert!(!payload.is_empty() && text.ends_with(payload.as_str()));
        }
        Directive::Open { agent_id } => assert!(AGENTS.iter().any(|a| a.id == agent_id)),
        Directive::Ambiguous { candidates, .. } => {
            assert!(candidates.len() > 1);
            assert!(candidates.iter().all(|c| AGENTS.iter().any(|a| a.id == c)));
        }
        _ => {}
    }
}
