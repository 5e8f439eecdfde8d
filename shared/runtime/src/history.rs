//! The narration history of an episode, as its owner may read it.

use baton_core::privacy::PrivacyReceipt;
use baton_core::turn::{ConsultedAgent, DirectExchange, TurnOutcome, TurnRecord};
use serde::{Deserialize, Serialize};

/// An episode's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeHistory {
    /// Episode id.
    pub episode_id: String,
    /// Committed turns, oldest first.
    pub turns: Vec<HistoryTurn>,
}

/// One turn as shown in history: narration only, no tool payloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryTurn {
    /// Position, from 1.
    pub seq: u64,
    /// Turn id.
    pub turn_id: String,
    /// Commit time, epoch ms.
    pub created_ms: u64,
    /// The user's text.
    pub user_text: String,
    /// The answer as shown.
    pub narration: String,
    /// Who was consulted.
    pub consulted: Vec<ConsultedAgent>,
    /// How it ended.
    pub outcome: TurnOutcome,
    /// What the Direct Line delivered, when the user addressed a specialist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<DirectExchange>,
    /// What the privacy guard masked in the answer.
    #[serde(default)]
    pub privacy: PrivacyReceipt,
}

impl From<&TurnRecord> for HistoryTurn {
    fn from(r: &TurnRecord) -> Self {
        HistoryTurn {
            seq: r.seq,
            turn_id: r.turn_id.clone(),
            created_ms: r.created_ms,
            user_text: r.user_text.clone(),
            narration: r.narration.clone(),
            consulted: r.consulted.clone(),
            outcome: r.outcome,
            direct: r.direct.clone(),
            privacy: r.privacy.clone(),
        }
    }
}
