//! Per-request system prompt assembly (D-3).
//!
//! The stable prefix (platform-required blocks, then the card's blocks in declared order)
//! is built once at load and ends with a cache point; each request appends a short dynamic
//! suffix (date, locale, location, user id). Per-user values never enter the prefix, so
//! every user of a card shares one cached prefix: its hash is the cohort.

use std::fmt::Write as _;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::model::SystemBlock;

/// The stable part of a card's system prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptPlan {
    /// The prefix text.
    pub prefix: Arc<str>,
    /// Hex hash of the prefix (the cache cohort); logged, never shown.
    pub cohort: Arc<str>,
    /// Estimated tokens of the prefix.
    pub estimated_tokens: u64,
}

impl PromptPlan {
    /// Joins block texts into a prefix.
    pub fn from_blocks<'a>(blocks: impl IntoIterator<Item = &'a str>) -> Self {
        let mut prefix = String::new();
        for text in blocks {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if !prefix.is_empty() {
                prefix.push_str("\n\n");
            }
            prefix.push_str(text);
        }
        let digest = Sha256::digest(prefix.as_bytes());
        let mut cohort = String::with_capacity(16);
        for byte in digest.iter().take(8) {
            let _ = write!(cohort, "{byte:02x}");
        }
        PromptPlan {
            estimated_tokens: estimate_tokens(&prefix),
            prefix: Arc::from(prefix),
            cohort: Arc::from(cohort),
        }
    }

    /// The system blocks for one request: the prefix with a cache point, then the suffix.
    pub fn system(&self, context: &DynamicContext<'_>, extra: Option<&str>) -> Vec<SystemBlock> {
        let mut suffix = String::with_capacity(96);
        suffix.push_str("<context>\n");
        let _ = writeln!(suffix, "date: {}", context.date);
        if let Some(locale) = context.locale {
            let _ = writeln!(suffix, "locale: {locale}");
        }
        if let Some(location) = context.location {
            let _ = writeln!(suffix, "location: {location}");
        }
        let _ = writeln!(suffix, "user_id: {}", context.user_id);
        suffix.push_str("</context>");
        if let Some(summary) = context.summary.filter(|s| !s.is_empty()) {
            suffix.push_str("\n\n<conversation_summary>\n");
            suffix.push_str(summary);
            suffix.push_str("\n</conversation_summary>");
        }
        if let Some(memory) = context.memory.filter(|m| !m.is_empty()) {
            suffix.push_str("\n\n");
            suffix.push_str(memory);
        }
        if let Some(extra) = extra {
            suffix.push_str("\n\n");
            suffix.push_str(extra);
        }
        vec![
            SystemBlock {
                text: self.prefix.clone(),
                cache_point: true,
            },
            SystemBlock {
                text: Arc::from(suffix),
                cache_point: false,
            },
        ]
    }
}

/// Per-request values that go after the cache point.
#[derive(Debug, Clone, Copy)]
pub struct DynamicContext<'a> {
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// Locale, e.g. `en-US`.
    pub locale: Option<&'a str>,
    /// Coarse location.
    pub location: Option<&'a str>,
    /// The principal.
    pub user_id: &'a str,
    /// What compaction summarised of the conversation before the turns the request
    /// carries, as this agent may see it: the orchestrator's summary, or a specialist's
    /// summary of its own work (D-17).
    pub summary: Option<&'a str>,
    /// What the user told Baton in earlier conversations that bears on this message (the
    /// orchestrator's only, D-43), as the recall module's block renders it.
    pub memory: Option<&'a str>,
}

/// The share of its model's context window a card's stable prefix may fill before loading
/// warns (D-3).
pub const PREFIX_WARN_SHARE: f64 = 0.25;

/// The share of its model's context window a card's stable prefix may not reach: loading
/// refuses the card (D-3).
pub const PREFIX_MAX_SHARE: f64 = 0.5;

/// The share of the orchestrator's context window one request's prompt may fill (the
/// prefix, the summary, the unsummarised turns and the new message) before older turns are
/// left out; the rest is for tool results, composition and the answer.
///
/// It bounds a different thing from [`PREFIX_MAX_SHARE`], the part of the prompt that is
/// the same for every request, and lies above it on purpose: a card that loads always
/// leaves at least a quarter of the window to the conversation itself.
pub const REQUEST_PROMPT_SHARE: f64 = 0.75;

// Checked when built, so the shares cannot drift apart.
const _: () = assert!(
    PREFIX_WARN_SHARE < PREFIX_MAX_SHARE
        && REQUEST_PROMPT_SHARE - PREFIX_MAX_SHARE >= 0.25
        && REQUEST_PROMPT_SHARE < 1.0
);

/// A rough token estimate (four characters a token), used only for budgets.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// `YYYY-MM-DD` of a Unix time in milliseconds (UTC).
pub fn civil_date(epoch_ms: u64) -> String {
    // Days to civil date: H. Hinnant's algorithm, valid for all u64 times of interest.
    let days = (epoch_ms / 86_400_000) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_date_matches_known_days() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(951_782_400_000), "2000-02-29");
        assert_eq!(civil_date(1_795_305_600_000), "2026-11-22");
    }

    #[test]
    fn user_values_stay_out_of_the_prefix() {
        let plan = PromptPlan::from_blocks(["persona", "rules"]);
        let ctx = DynamicContext {
            date: "2026-11-22",
            locale: Some("en-US"),
            location: None,
            user_id: "user-42",
            summary: None,
            memory: None,
        };
        let blocks = plan.system(&ctx, None);
        assert_eq!(blocks.len(), 2);
        assert!(blocks[0].cache_point);
        assert!(!blocks[0].text.contains("user-42"));
        assert!(blocks[1].text.contains("user-42"));
        let other = plan.system(
            &DynamicContext {
                user_id: "user-7",
                ..ctx
            },
            None,
        );
        assert_eq!(blocks[0], other[0], "the prefix is shared across users");
    }

    #[test]
    fn a_summary_goes_after_the_cache_point() {
        let plan = PromptPlan::from_blocks(["persona"]);
        let ctx = DynamicContext {
            date: "2026-11-22",
            locale: None,
            location: None,
            user_id: "u",
            summary: Some("The user wants tea."),
            memory: None,
        };
        let blocks = plan.system(&ctx, Some("note"));
        assert!(!blocks[0].text.contains("tea"));
        assert!(blocks[1].text.ends_with(
            "</context>\n\n<conversation_summary>\nThe user wants tea.\n</conversation_summary>\n\nnote"
        ));
    }
}
