//! The coverage rule: a suite set must hold a few single-intent cases for every specialist
//! and an intent-switch case for every ordered pair of them, so a specialist added without
//! its cases shows.

use std::collections::BTreeSet;

use super::{Suite, expected_agents};

/// Single-intent cases each specialist needs at least.
pub const MIN_SINGLE_CASES: usize = 2;

/// What the suites lack, each in plain words; empty when they cover every specialist.
pub fn coverage(suites: &[Suite], specialists: &BTreeSet<String>) -> Vec<String> {
    let mut singles = std::collections::BTreeMap::<String, usize>::new();
    let mut switches = BTreeSet::<(String, String)>::new();
    for case in suites.iter().flat_map(|s| &s.cases) {
        let expected = expected_agents(case);
        if case.tags.iter().any(|t| t == "single")
            && let [one] = expected.as_slice()
        {
            *singles.entry(one.clone()).or_default() += 1;
        }
        if case.tags.iter().any(|t| t == "switch")
            && let (Some(from), Some(to)) = (
                case.history.last().and_then(|t| t.consulted.first()),
                expected.first(),
            )
            && from != to
        {
            switches.insert((from.clone(), to.clone()));
        }
    }
    let mut missing = Vec::new();
    for s in specialists {
        let n = singles.get(s).copied().unwrap_or(0);
        if n < MIN_SINGLE_CASES {
            missing.push(format!(
                "{s} has {n} single-intent eval case(s); add at least {MIN_SINGLE_CASES} (tag `single`)"
            ));
        }
    }
    for from in specialists {
        for to in specialists {
            if from != to && !switches.contains(&(from.clone(), to.clone())) {
                missing.push(format!(
                    "no eval case switches from {from} to {to} (tag `switch`, with {from} consulted in its history)"
                ));
            }
        }
    }
    missing
}
