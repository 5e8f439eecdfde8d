//! Runtime settings that are not part of any card.

use crate::stream::OutputLimits;

/// Runtime settings.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Longest accepted user message, in characters.
    pub max_message_chars: usize,
    /// How long a claimed turn holds its episode before another turn may take over.
    pub lease_ms: u64,
    /// Recent turns loaded as history for the orchestrator.
    pub history_turns: usize,
    /// Pacing between flushed chunks of a buffered sub-agent (direct composition).
    pub flush_pacing_ms: u64,
    /// Deadline of a whole turn.
    pub turn_timeout_ms: u64,
    /// How long a turn waits for the user's answer before it counts as declined (D-36).
    pub interruption_ttl_ms: u64,
    /// Orchestrator to start turns at (`None`: the registry's only top-level one).
    pub orchestrator: Option<String>,
    /// How much output may wait for a slow reader, and for how long.
    pub output: OutputLimits,
    /// Compact an episode right after a turn leaves it due, on the turn's task after its
    /// stream ended (for a local server, which has no scheduled compaction). Off where a
    /// scheduled compaction function runs (Lambda).
    pub compact_after_turn: bool,
    /// How long one summarizer call may take.
    pub summarize_timeout_ms: u64,
    /// Turns stop after the orchestrator's decision (routing, guards, obligations), which
    /// the routing record keeps: nobody is consulted and nothing is composed. For evals'
    /// routing mode only.
    pub routing_only: bool,
    /// Put the user's message, the answer and each specialist's query and answer on the
    /// turn's spans, masked by the privacy guard (D-33). Off unless asked for.
    pub capture_content: bool,
    /// What a turn's pictures may be (D-42).
    pub pictures: baton_core::picture::PictureLimits,
    /// Pictures checked at once in this process: each decode holds up to 8 bytes a pixel
    /// of `pictures.max_pixels`, so this bounds the memory pictures take however many
    /// turns bring them.
    pub picture_checks: usize,
    /// What pictures become for an orchestrator whose model cannot see them (D-42).
    pub blind_pictures: BlindPictures,
    /// Long-term memory across conversations (D-43).
    pub memory: MemorySettings,
}

/// What a turn's pictures become when the orchestrator's model cannot see them (its
/// card's model says `capabilities.pictures: false`): never dropped in silence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlindPictures {
    /// The model is told of each picture in a sentence (its type and size) and answers
    /// knowing the user sent one it cannot see.
    #[default]
    Describe,
    /// The turn is refused before it runs, saying the assistant cannot see pictures.
    Refuse,
}

impl BlindPictures {
    /// The setting as configuration spells it: `describe` or `refuse`.
    pub fn parse(text: &str) -> Option<BlindPictures> {
        match text.trim().to_ascii_lowercase().as_str() {
            "describe" => Some(BlindPictures::Describe),
            "refuse" => Some(BlindPictures::Refuse),
            _ => None,
        }
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_message_chars: 4_000,
            lease_ms: 150_000,
            history_turns: 12,
            flush_pacing_ms: 15,
            turn_timeout_ms: 120_000,
            interruption_ttl_ms: baton_core::interruption::DEFAULT_TTL_MS,
            orchestrator: None,
            output: OutputLimits::default(),
            compact_after_turn: false,
            summarize_timeout_ms: 60_000,
            routing_only: false,
            capture_content: false,
            pictures: baton_core::picture::PictureLimits::default(),
            picture_checks: 2,
            blind_pictures: BlindPictures::default(),
            memory: MemorySettings::default(),
        }
    }
}

/// Long-term memory across conversations (D-43): how it behaves in this deployment.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// Memory for principals without a setting of their own: on for the local `baton`,
    /// which serves its own user; a template parameter on Lambda.
    pub on_by_default: bool,
    /// Extract on the turn's task after its stream ended (a local server); off where the
    /// history writer extracts from the journal's stream (Lambda).
    pub extract_after_turn: bool,
    /// Current memories one principal keeps at most.
    pub max_memories: usize,
    /// Tokens the prompt's memory block may take.
    pub prompt_tokens: u64,
    /// Hits each search (text, vector) takes before they are fused.
    pub search_depth: usize,
    /// How long one extraction call may take.
    pub extract_timeout_ms: u64,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            on_by_default: false,
            extract_after_turn: false,
            max_memories: baton_core::recall::DEFAULT_MAX_MEMORIES,
            prompt_tokens: baton_core::recall::block::DEFAULT_TOKENS,
            search_depth: 20,
            extract_timeout_ms: 30_000,
        }
    }
}
