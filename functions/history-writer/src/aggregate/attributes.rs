//! Attribute names of the `AGG` item and how numbers are written to it.
//!
//! Per-agent and per-outcome counters are flat top-level attributes (`agent#<id>#ok`)
//! rather than nested maps: DynamoDB's `ADD` creates a missing top-level number at zero,
//! whereas a path into a map that does not exist yet fails the whole update.

use baton_core::turn::TurnOutcome;

pub(crate) const EPISODE_ID: &str = "episode_id";
pub(crate) const OWNER: &str = "owner";
pub(crate) const APPLIED_SEQS: &str = "applied_seqs";
pub(crate) const TURNS: &str = "turns";
pub(crate) const TOKENS_INPUT: &str = "tokens_input";
pub(crate) const TOKENS_OUTPUT: &str = "tokens_output";
pub(crate) const TOKENS_CACHE_READ: &str = "tokens_cache_read";
pub(crate) const TOKENS_CACHE_WRITE: &str = "tokens_cache_write";
pub(crate) const COST_USD: &str = "cost_usd";
pub(crate) const LAST_SEQ: &str = "last_seq";
pub(crate) const LAST_TURN_ID: &str = "last_turn_id";
pub(crate) const LAST_TURN_MS: &str = "last_turn_ms";

pub(crate) const AGENT_PREFIX: &str = "agent#";
pub(crate) const OUTCOME_PREFIX: &str = "outcome#";
pub(crate) const INVOCATIONS: &str = "invocations";
pub(crate) const DURATION_MS: &str = "duration_ms";
pub(crate) const TOOL_CALLS: &str = "tool_calls";

/// `agent#<id>#<field>`.
pub(crate) fn agent_attribute(agent_id: &str, field: &str) -> String {
    format!("{AGENT_PREFIX}{agent_id}#{field}")
}

/// `outcome#<answered|limited|failed>`.
pub(crate) fn outcome_attribute(outcome: TurnOutcome) -> String {
    format!("{OUTCOME_PREFIX}{}", outcome.as_str())
}

/// Dollars as a decimal with at most 12 places.
///
/// DynamoDB adds numbers in exact decimal arithmetic, so sums of these strings do not
/// depend on the order turns arrive in (binary floats would); 12 places keep every value
/// well inside DynamoDB's 38 significant digits.
pub(crate) fn usd_decimal(usd: f64) -> String {
    if !usd.is_finite() {
        return "0".to_owned();
    }
    let fixed = format!("{usd:.12}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    match trimmed {
        "" | "-" | "-0" => "0".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_are_short_exact_decimals() {
        assert_eq!(usd_decimal(0.0), "0");
        assert_eq!(usd_decimal(-0.0), "0");
        assert_eq!(usd_decimal(0.1), "0.1");
        assert_eq!(usd_decimal(0.000_123_4), "0.0001234");
        assert_eq!(usd_decimal(12.5), "12.5");
        assert_eq!(usd_decimal(3.0), "3");
        assert_eq!(usd_decimal(5e-324), "0");
        assert_eq!(usd_decimal(f64::NAN), "0");
    }

    #[test]
    fn counters_are_flat_names() {
        assert_eq!(agent_attribute("billing", "ok"), "agent#billing#ok");
        assert_eq!(outcome_attribute(TurnOutcome::Limited), "outcome#limited");
    }
}
