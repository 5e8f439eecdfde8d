//! An eval suite (`evals/*.yaml`) over any text: a suite, or problems that each name the
//! file, never a panic.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
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
});
