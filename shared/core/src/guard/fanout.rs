//! Fan-out cap (D-9): calls beyond the cap never run.

use serde::{Deserialize, Serialize};

/// Fan-out relative to the cap (D-9), ordered from within to over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapBehavior {
    /// Fewer calls than the cap.
    #[default]
    Within,
    /// Exactly the cap.
    At,
    /// More calls than the cap: the extra ones were dropped.
    Over,
}

impl CapBehavior {
    /// Classifies `calls` against `cap`.
    pub fn of(calls: usize, cap: usize) -> Self {
        match calls.cmp(&cap) {
            std::cmp::Ordering::Less => CapBehavior::Within,
            std::cmp::Ordering::Equal => CapBehavior::At,
            std::cmp::Ordering::Greater => CapBehavior::Over,
        }
    }
}

/// Splits `calls` at the cap: (kept, dropped) and the cap behaviour.
pub fn apply_cap<T>(mut calls: Vec<T>, cap: usize) -> (Vec<T>, Vec<T>, CapBehavior) {
    let behavior = CapBehavior::of(calls.len(), cap);
    let dropped = if calls.len() > cap {
        calls.split_off(cap)
    } else {
        Vec::new()
    };
    (calls, dropped, behavior)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_cap_calls_are_split_off_in_order() {
        let (kept, dropped, b) = apply_cap(vec![1, 2, 3, 4], 3);
        assert_eq!(
            (kept, dropped, b),
            (vec![1, 2, 3], vec![4], CapBehavior::Over)
        );
        let (_, _, b) = apply_cap(vec![1, 2, 3], 3);
        assert_eq!(b, CapBehavior::At);
    }
}
