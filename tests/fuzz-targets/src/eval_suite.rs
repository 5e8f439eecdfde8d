//! An eval suite (`evals/*.yaml`) over any text: a suite, or problems that each name the
//! file, never a panic.

use std::collections::BTreeSet;

/// One input: the bytes as the suite's text.
pub fn run(data: &[u8]) {
    let Some(text) = crate::common::input::<&str>(data) else {
        return;
    };
    let specialists: BTreeSet<String> = ["shop", "support", "rewards", "strategist", "stores"]
        .map(str::to_owned)
        .into();
    if let Err(problems) = baton_evals::load_suite("evals/fuzzed.yaml", text, &specialists) {
        assert!(!problems.is_empty());
        assert!(
            problems
                .iter()
                .all(|p| p.to_string().contains("evals/fuzzed.yaml"))
        );
    }
}
