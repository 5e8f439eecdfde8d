//! What the summarizer reads and what is kept of what it writes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::message::Message;
use crate::model::{CallPurpose, Inference, ModelRequest, ModelSpec, SystemBlock};
use crate::privacy::{PrivacyGuard, PrivacyReceipt};
use crate::turn::TurnRecord;

const ORCHESTRATOR_INSTRUCTIONS: &str = "You keep the running summary of a conversation \
between a user and an assistant. Write one new summary from the previous summary and the \
turns that follow it. Start with what the user said about themselves: their name and the \
names of their people and pets, their goals and plans, what they own or have (such as \
points or savings) and their budget. Keep each of those from the previous summary, however \
long ago it was said, unless the user has said something newer about the same thing; then \
keep only the newer. Keep every name, id, number, date and amount the user will need \
again, what the user wants and has not got yet, and what was already done or decided. \
Leave out greetings and small talk. Write plain sentences, no headings, and nothing the \
turns do not say.";

const AGENT_INSTRUCTIONS: &str = "You keep the running summary of one specialist's work \
in a conversation. Write one new summary from the previous summary and the requests the \
specialist answered since. Keep every name, id, number, date and amount, and what is still \
open. Write plain sentences, no headings, and nothing the requests do not say.";

/// What the summarizer is given for one summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryInput {
    /// The system instructions.
    pub instructions: &'static str,
    /// The previous summary and the new material, already masked.
    pub text: String,
}

impl SummaryInput {
    /// The model request for this input, made as `agent_id` with the summarizer `spec`.
    pub fn request(&self, agent_id: &Arc<str>, spec: &ModelSpec, max_chars: usize) -> ModelRequest {
        ModelRequest {
            agent_id: agent_id.clone(),
            model_id: spec.model_id.clone(),
            purpose: CallPurpose::Summarize,
            system: vec![SystemBlock {
                text: Arc::from(self.instructions),
                cache_point: true,
            }],
            messages: vec![Message::user(self.text.clone())],
            tools: Arc::from(Vec::new()),
            tool_choice: Default::default(),
            inference: Inference {
                // A token is about four characters; some room for a summary a little long.
                max_output_tokens: Some(u32::try_from(max_chars / 3).unwrap_or(u32::MAX)),
                temperature: Some(0.0),
                ..Inference::default()
            },
        }
    }
}

/// The orchestrator's input: the previous summary and every turn of the batch as the user
/// saw it (user text and narration), masked.
pub fn orchestrator_input(
    previous: Option<&str>,
    turns: &[TurnRecord],
    guard: &PrivacyGuard,
) -> SummaryInput {
    let mut receipt = PrivacyReceipt::default();
    let mut text = previous_part(previous, guard, &mut receipt);
    text.push_str("<turns>\n");
    for turn in turns {
        let _ = writeln!(text, "Turn {}", turn.seq);
        let _ = writeln!(text, "User: {}", guard.mask(&turn.user_text, &mut receipt));
        if !turn.narration.is_empty() {
            let _ = writeln!(
                text,
                "Assistant: {}",
                guard.mask(&turn.narration, &mut receipt)
            );
        }
    }
    text.push_str("</turns>");
    SummaryInput {
        instructions: ORCHESTRATOR_INSTRUCTIONS,
        text,
    }
}

/// Each specialist's input, for the specialists with segments in the batch: its previous
/// summary and its own segments (the request it was given with its answer), masked.
pub fn agent_inputs(
    previous: &BTreeMap<String, String>,
    turns: &[TurnRecord],
    guard: &PrivacyGuard,
) -> BTreeMap<String, SummaryInput> {
    let mut receipt = PrivacyReceipt::default();
    let mut parts: BTreeMap<String, String> = BTreeMap::new();
    for turn in turns {
        for seg in turn.segments.iter().filter(|s| !s.text.is_empty()) {
            let text = parts.entry(seg.agent_id.clone()).or_insert_with(|| {
                let mut t = previous_part(
                    previous.get(&seg.agent_id).map(String::as_str),
                    guard,
                    &mut receipt,
                );
                t.push_str("<requests>\n");
                t
            });
            let _ = writeln!(text, "Turn {}", turn.seq);
            let _ = writeln!(text, "Asked: {}", guard.mask(&seg.query, &mut receipt));
            let _ = writeln!(text, "Answered: {}", guard.mask(&seg.text, &mut receipt));
        }
    }
    parts
        .into_iter()
        .map(|(agent, mut text)| {
            text.push_str("</requests>");
            (
                agent,
                SummaryInput {
                    instructions: AGENT_INSTRUCTIONS,
                    text,
                },
            )
        })
        .collect()
}

fn previous_part(
    previous: Option<&str>,
    guard: &PrivacyGuard,
    receipt: &mut PrivacyReceipt,
) -> String {
    match previous.filter(|p| !p.trim().is_empty()) {
        Some(p) => format!(
            "<previous_summary>\n{}\n</previous_summary>\n",
            guard.mask(p.trim(), receipt)
        ),
        None => String::new(),
    }
}

/// What is stored of the summarizer's answer: masked, trimmed to `max_chars` at a word
/// boundary; `None` when the answer is unusable (empty, or mostly control or replacement
/// characters), so the episode stays as it was.
pub fn finish_summary(raw: &str, guard: &PrivacyGuard, max_chars: usize) -> Option<String> {
    let raw = raw.trim();
    let total = raw.chars().count();
    if total == 0 {
        return None;
    }
    let junk = raw
        .chars()
        .filter(|c| (c.is_control() && !matches!(c, '\n' | '\t')) || *c == '\u{FFFD}')
        .count();
    if junk * 5 > total {
        return None;
    }
    let masked = guard.mask(raw, &mut PrivacyReceipt::default());
    if masked.chars().count() <= max_chars {
        return Some(masked);
    }
    let cut: String = masked.chars().take(max_chars).collect();
    // Cut at the last word boundary, so a mask label or a number is never left half.
    let end = cut.rfind(char::is_whitespace).unwrap_or(cut.len());
    Some(format!("{}…", cut[..end].trim_end()))
}
