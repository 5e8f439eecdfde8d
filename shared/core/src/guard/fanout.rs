//! Fan-out cap (D-9): calls beyond the cap never run.

use crate::trace::CapBehavior;

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
