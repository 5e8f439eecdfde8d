//! The narration history of an episode, as its owner may read it.

use baton_core::Principal;
use baton_core::memory::EpisodeSummary;
use baton_core::ports::store::EpisodeMeta;
use baton_core::privacy::PrivacyReceipt;
use baton_core::turn::{ConsultedAgent, DirectExchange, TurnOutcome, TurnRecord};
use serde::{Deserialize, Serialize};

use crate::request::{TurnRejection, store_rejection};
use crate::runtime::Runtime;

/// An episode's history: the answer of `GET /v1/episodes/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeHistory {
    /// Episode id.
    pub episode_id: String,
    /// Committed turns, oldest first.
    pub turns: Vec<HistoryTurn>,
    /// How far compaction has folded the episode; `None` (`null`) when it has not yet.
    pub summary: Option<SummaryReach>,
    /// What the episode waits for the user to answer (D-36), until it expires: a client
    /// that lost the stream, or a page reloaded, asks again from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingInterruption>,
}

/// A question or approval the episode waits on, and the turn that asked it: the reply
/// resumes that turn (`POST /v1/turns/{turn_id}/resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInterruption {
    /// The turn that waits.
    pub turn_id: String,
    /// What it asks, as its `interruption` event said.
    #[serde(flatten)]
    pub interruption: baton_core::events::InterruptionView,
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
    /// The interruption this turn answered or set aside (D-36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<baton_core::interruption::AnswerRecord>,
    /// The client's own id for the user's message, when its face gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The pictures sent with the user's message, by reference (D-42): each is read back
    /// at `GET /v1/episodes/{id}/pictures/{sha256}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pictures: Vec<baton_core::picture::PictureRef>,
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
            answered: r.routing.answered.clone(),
            message_id: r.message_id.clone(),
            pictures: r.pictures.clone(),
        }
    }
}

/// How far an episode's summary reaches; its text stays out of the history (it is what
/// the orchestrator reads, not what the user was shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryReach {
    /// Turns `1..=upto_seq` are in the summary; the later ones are not.
    pub upto_seq: u64,
}

impl From<&EpisodeSummary> for SummaryReach {
    fn from(s: &EpisodeSummary) -> Self {
        SummaryReach {
            upto_seq: s.upto_seq,
        }
    }
}

impl Runtime {
    /// The narration history of one of the caller's episodes, with how far its summary
    /// reaches.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's (D-30); the store
    /// unavailable.
    pub async fn history(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<EpisodeHistory, TurnRejection> {
        let (meta, turns) = self.stored_episode(principal, episode_id).await?;
        let now = self.inner.clock.now_ms();
        let pending = meta
            .state
            .awaiting
            .as_deref()
            .filter(|a| now < a.interruption.expires_ms)
            .map(|a| PendingInterruption {
                turn_id: a.turn_id.clone(),
                interruption: (&a.interruption).into(),
            });
        Ok(EpisodeHistory {
            episode_id: episode_id.to_owned(),
            turns: turns.iter().map(HistoryTurn::from).collect(),
            summary: meta.summary.as_ref().map(SummaryReach::from),
            pending,
        })
    }
}

impl Runtime {
    /// One of `principal`'s episodes as stored: its meta (with the summary) and every
    /// committed turn, oldest first. What the history and the replay both read.
    ///
    /// Two reads, not one snapshot, the summary first: a compaction in between then only
    /// makes the summary's reach look shorter than it is, and a turn committed in between
    /// shows up in the turns only; neither ever reaches past the turns returned.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's (D-30); the store
    /// unavailable.
    pub(crate) async fn stored_episode(
        &self,
        principal: &Principal,
        episode_id: &str,
    ) -> Result<(EpisodeMeta, Vec<TurnRecord>), TurnRejection> {
        let store = &self.inner.store;
        let meta = store
            .episode(principal, episode_id)
            .await
            .map_err(store_rejection)?;
        let turns = store
            .turns(principal, episode_id, usize::MAX)
            .await
            .map_err(store_rejection)?;
        Ok((meta, turns))
    }
}
