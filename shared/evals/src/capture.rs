//! From the journal to a case: a real turn, the conversation before it and what its
//! routing record says the orchestrator did, as a case that expects the same again.

use super::{Case, Expect, MatchMode, PastTurn, RouteExpect};
use baton_core::turn::TurnRecord;

/// The case of `turns[at]`, with up to `history` turns before it as its conversation.
/// The route expected is the one the turn took (`routing.calls`, or `routing.invoked` for
/// turns recorded before calls were kept); edit the case when that route was the wrong one.
/// A turn that carried pictures is not captured: its pictures are the user's, kept with
/// their episode, and the same words without them are another turn.
pub fn capture(turns: &[TurnRecord], at: usize, history: usize) -> Option<Case> {
    let turn = turns.get(at).filter(|t| t.pictures.is_empty())?;
    let past: Vec<PastTurn> = turns[at.saturating_sub(history)..at]
        .iter()
        .map(|t| {
            let mut consulted: Vec<String> = Vec::new();
            let mut said = std::collections::BTreeMap::new();
            for s in &t.segments {
                if !consulted.contains(&s.agent_id) {
                    consulted.push(s.agent_id.clone());
                }
                // Its own words, when the answer was composed from them.
                if !s.text.trim().is_empty() && s.text.trim() != t.narration.trim() {
                    said.insert(s.agent_id.clone(), s.text.clone());
                }
            }
            PastTurn {
                user: t.user_text.clone(),
                answer: t.narration.clone(),
                consulted,
                said,
            }
        })
        .collect();
    let agents: Vec<String> = if turn.routing.calls.is_empty() {
        turn.routing.invoked.clone()
    } else {
        turn.routing
            .calls
            .iter()
            .map(|c| c.agent_id.clone())
            .collect()
    };
    let mut tags = vec!["captured".to_owned()];
    tags.push(
        match agents.len() {
            0 => "fastpath",
            1 => "single",
            _ => "mixed",
        }
        .to_owned(),
    );
    let previous = past.last().and_then(|p| p.consulted.first());
    if let (Some(from), Some(to)) = (previous, agents.first())
        && from != to
    {
        tags.push("switch".to_owned());
    }
    let route = if agents.is_empty() {
        RouteExpect::Fastpath(super::FastpathWord::Fastpath)
    } else {
        RouteExpect::Agents {
            agents,
            mode: MatchMode::Exact,
        }
    };
    Some(Case {
        id: format!("captured-{}-{}", turn.episode_id, turn.seq),
        tags,
        history: past,
        turn: turn.user_text.clone(),
        pictures: Vec::new(),
        picture_bytes: Vec::new(),
        compact: false,
        unavailable: Vec::new(),
        earlier: Vec::new(),
        expect: Expect {
            route: Some(route),
            ..Expect::default()
        },
    })
}
