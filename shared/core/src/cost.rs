//! Cost of tokens (D-32): tokens by model times the price table.

use crate::model::{Prices, TokenUsage};

/// USD for `usage` at `prices` (USD per million tokens).
pub fn cost_usd(usage: &TokenUsage, prices: &Prices) -> f64 {
    let per_token = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
    per_token(usage.input, prices.input)
        + per_token(usage.output, prices.output)
        + per_token(usage.cache_read, prices.cache_read)
        + per_token(usage.cache_write, prices.cache_write)
}

/// A cost in USD with enough digits to show fractions of a cent: `$0.00`, `$0.000221`,
/// `$0.1235`.
pub fn display_usd(cost: f64) -> String {
    if cost == 0.0 {
        return "$0.00".to_owned();
    }
    let digits = if cost >= 0.01 { 4 } else { 6 };
    format!("${cost:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_tokens_are_priced_apart() {
        let prices = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = TokenUsage {
            input: 1_000,
            output: 100,
            cache_read: 10_000,
            cache_write: 0,
        };
        let c = cost_usd(&usage, &prices);
        assert!((c - (0.003 + 0.0015 + 0.003)).abs() < 1e-12);
    }
}
