//! A card's tuning and limits, each setting checked against what its model takes.

use super::Loader;
use super::card::Card;
use crate::model::{Inference, LEVELS, ReasoningEffort, TextVerbosity};
use crate::registry::raw::RawTuning;
use crate::registry::{AgentLimits, ModelSpec, ReasoningSupport};

impl Loader<'_> {
    /// The inference settings on every request of the card.
    pub(super) fn card_inference(
        &mut self,
        card: Card<'_>,
        model: Option<&ModelSpec>,
    ) -> Inference {
        let tuning = &card.raw.tuning;
        let inference = Inference {
            max_output_tokens: tuning.max_output_tokens,
            temperature: tuning.temperature,
            ..self.tuning_for_model(tuning, model, card.file)
        };
        if let Some(t) = tuning.temperature
            && !(0.0..=2.0).contains(&t)
        {
            self.problems.add(
                card.file,
                "tuning.temperature",
                t.to_string(),
                "must be between 0 and 2",
            );
        }
        inference
    }

    /// A card's reasoning effort and text verbosity, typed, each checked against what its
    /// model takes: a setting a model cannot take would otherwise be dropped without a word.
    fn tuning_for_model(
        &mut self,
        tuning: &RawTuning,
        model: Option<&ModelSpec>,
        file: &str,
    ) -> Inference {
        let p = &mut self.problems;
        let mut out = Inference::default();
        if let Some(word) = &tuning.reasoning_effort {
            let field = "tuning.reasoning_effort";
            match (ReasoningEffort::parse(word), model) {
                (None, _) => p.add(file, field, word, format!("must be one of {LEVELS}")),
                (Some(_), Some(m)) if m.capabilities.reasoning_effort.is_none() => p.add(
                    file,
                    field,
                    word,
                    format!(
                        "model {} ({}) takes no reasoning effort (models.yaml: capabilities.reasoning_effort)",
                        m.key, m.model_id
                    ),
                ),
                (Some(effort), _) => out.reasoning_effort = Some(effort),
            }
            if let (Some(m), Some(t)) = (model, tuning.temperature)
                && m.capabilities.reasoning_effort == Some(ReasoningSupport::Thinking)
            {
                p.add(
                    file,
                    "tuning.temperature",
                    t.to_string(),
                    format!(
                        "model {} thinks at its own temperature when reasoning_effort is set; drop one of the two",
                        m.key
                    ),
                );
            }
        }
        if let Some(word) = &tuning.text_verbosity {
            let field = "tuning.text_verbosity";
            match (TextVerbosity::parse(word), model) {
                (None, _) => p.add(file, field, word, format!("must be one of {LEVELS}")),
                (Some(_), Some(m)) if !m.capabilities.text_verbosity => p.add(
                    file,
                    field,
                    word,
                    format!(
                        "model {} ({}) takes no text verbosity (models.yaml: capabilities.text_verbosity)",
                        m.key, m.model_id
                    ),
                ),
                (Some(verbosity), _) => out.text_verbosity = Some(verbosity),
            }
        }
        out
    }

    /// The card's own limits.
    pub(super) fn card_limits(&mut self, card: Card<'_>) -> AgentLimits {
        let mut limits = AgentLimits::default();
        if let Some(n) = card.raw.limits.max_tool_calls {
            limits.max_tool_calls = n;
        }
        if let Some(ms) = card.raw.limits.timeout_ms {
            if ms == 0 {
                self.problems
                    .add(card.file, "limits.timeout_ms", "0", "must be positive");
            }
            limits.timeout_ms = ms;
        }
        limits
    }
}
