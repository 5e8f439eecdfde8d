//! A turn's end as every face reports it: one typed summary — who was consulted (the
//! runtime's record, never model text), usage and cost, how the turn ended, what the
//! privacy guard masked, what it waits on, and the error it ended with — filled from the
//! turn's events once. Each face only formats it.

use baton_core::consulted::ConsultedAgent;
use baton_core::events::Event;
use baton_core::interruption::InterruptionKind;
use baton_core::privacy::PrivacyReceipt;
use baton_core::turn::{ModelUsage, TurnOutcome};
use serde::Serialize;
use serde_json::{Value, json};

/// What a failed or canceled turn says when its stream carried no error of its own.
pub(crate) const NO_ANSWER: &str = "The assistant could not answer this time.";

/// The end of one turn.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnSummary {
    /// The specialists consulted, from the runtime's trace.
    pub(crate) consulted: Vec<ConsultedAgent>,
    /// The consulted line, as the native stream words it.
    pub(crate) footer: String,
    /// Each model's tokens.
    pub(crate) usage: Vec<ModelUsage>,
    /// The turn's cost, USD; `None` where it is not known (a turn read back from history).
    pub(crate) cost_usd: Option<f64>,
    /// How it ended; `None` while it runs (or if its stream was cut).
    pub(crate) outcome: Option<TurnOutcome>,
    /// What the privacy guard masked.
    pub(crate) privacy: PrivacyReceipt,
    /// What it waits on (D-36), once it asked.
    pub(crate) interruption: Option<Waiting>,
    /// The error it ended with, in plain words.
    pub(crate) error: Option<String>,
}

/// What a turn waits on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Waiting {
    pub(crate) id: String,
    pub(crate) kind: InterruptionKind,
    pub(crate) agent: String,
    /// What the user is asked, in plain words.
    pub(crate) asks: String,
    pub(crate) expires_ms: u64,
    /// The sign-in page, for an account link.
    pub(crate) url: Option<String>,
}

/// Token counts as chat APIs report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tokens {
    /// Prompt tokens, cache reads and writes included.
    pub(crate) prompt: u64,
    /// Output tokens.
    pub(crate) completion: u64,
    /// Of the prompt, read from a cache.
    pub(crate) cached: u64,
}

impl TurnSummary {
    /// The summary of a committed turn, read back from its episode's history (its cost is
    /// not kept there).
    pub(crate) fn committed(turn: &baton_runtime::history::HistoryTurn) -> TurnSummary {
        TurnSummary {
            footer: baton_core::consulted::footer(&turn.consulted),
            consulted: turn.consulted.clone(),
            outcome: Some(turn.outcome),
            privacy: turn.privacy.clone(),
            ..TurnSummary::default()
        }
    }

    /// Takes in one event of the turn.
    pub(crate) fn take(&mut self, event: &Event) {
        match event {
            Event::AgentsConsulted { agents, footer, .. } => {
                self.consulted.clone_from(agents);
                self.footer.clone_from(footer);
            }
            Event::Usage { models, cost_usd } => {
                self.usage.clone_from(models);
                self.cost_usd = Some(*cost_usd);
            }
            Event::Interruption(asked) => {
                self.interruption = Some(Waiting {
                    id: asked.id.clone(),
                    kind: asked.kind,
                    agent: asked.agent.clone(),
                    asks: asked.action.clone(),
                    expires_ms: asked.expires_ms,
                    url: asked.url.clone(),
                });
            }
            Event::Error { message } => self.error = Some(message.clone()),
            Event::Completed { outcome, privacy } => {
                self.outcome = Some(*outcome);
                self.privacy = privacy.clone();
            }
            _ => {}
        }
    }

    /// What the turn waits on, when it ended waiting for the user.
    pub(crate) fn waiting(&self) -> Option<&Waiting> {
        self.interruption
            .as_ref()
            .filter(|_| self.outcome == Some(TurnOutcome::AwaitingUser))
    }

    /// Why a failed or canceled turn gave no answer, in plain words.
    pub(crate) fn failure_words(&self) -> String {
        self.error.clone().unwrap_or_else(|| NO_ANSWER.to_owned())
    }

    /// The turn's tokens over every model.
    pub(crate) fn tokens(&self) -> Tokens {
        let mut t = Tokens::default();
        for m in &self.usage {
            t.prompt += m.tokens.input + m.tokens.cache_read + m.tokens.cache_write;
            t.completion += m.tokens.output;
            t.cached += m.tokens.cache_read;
        }
        t
    }

    /// The consulted ids, comma-joined (a response header).
    pub(crate) fn consulted_ids(&self) -> String {
        let ids: Vec<&str> = self.consulted.iter().map(|c| c.agent_id.as_str()).collect();
        ids.join(",")
    }

    /// The record every face carries in its own extension field: the ids, who was
    /// consulted, the footer, the privacy receipt, the outcome and the cost.
    pub(crate) fn record(&self, turn_id: &str, episode_id: &str) -> Value {
        json!({
            "turn_id": turn_id,
            "episode_id": episode_id,
            "consulted": self.consulted,
            "footer": self.footer,
            "privacy": self.privacy,
            "outcome": self.outcome,
            "cost_usd": self.cost_usd,
        })
    }
}
