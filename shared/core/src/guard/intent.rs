//! The `intent_count` failsafe (D-7).

/// How many calls are missing: the largest reported intent count minus the calls made.
pub fn shortfall(reported: &[u32], calls: usize) -> u32 {
    let largest = reported.iter().copied().max().unwrap_or(0);
    largest.saturating_sub(calls as u32)
}

/// The reminder given to the orchestrator when calls are missing.
pub fn reminder(reported: u32, calls: usize, tools: &[&str]) -> String {
    format!(
        "<reminder>You reported {reported} distinct requests in the user's latest message but made {calls} tool call(s). \
         Call the tool for each request you have not yet handled, from: {}. Do not repeat calls already made.</reminder>",
        tools.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortfall_uses_the_largest_report() {
        assert_eq!(shortfall(&[2], 1), 1);
        assert_eq!(shortfall(&[1, 3], 2), 1);
        assert_eq!(shortfall(&[1], 1), 0);
        assert_eq!(shortfall(&[], 0), 0);
    }
}
