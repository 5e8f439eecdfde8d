//! Every fuzz target over every input of its committed corpus (`fuzz/corpus/<target>/`), on
//! every test run: an input that once found a bug keeps guarding against it without the
//! instrumented build. Coverage-guided fuzzing, which finds new inputs, is
//! `./infra/fuzz.sh` (see docs/testing.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Once;

/// `fuzz/` of the checkout the test runs in (a test binary may come from a build in another
/// checkout, so not the compile-time path).
fn fuzz_dir() -> PathBuf {
    baton_testkit::workspace_root().join("fuzz")
}

thread_local! {
    /// The panics on this thread so far, caught or not.
    static PANICS: Cell<usize> = const { Cell::new(0) };
}

/// Counts each panic on the thread it happens on, then reports it as before. libFuzzer's
/// harness aborts on any panic, even one that a task's join handle would catch (the targets'
/// servers and turns run as tasks on the thread that runs the input), so the replay fails
/// the input for those too.
fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|n| n.set(n.get() + 1));
            report(info);
        }));
    });
}

/// Runs `target` over each file of its corpus; fails naming every input that panicked, or
/// when the corpus is missing or empty (a replay of nothing would pass).
fn replay(target: &str, run: fn(&[u8])) {
    count_panics();
    let folder = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.expect("a folder entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no input", folder.display());
    let mut failed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // Each input on its own, so that one run names every failing input.
        let before = PANICS.with(Cell::get);
        let unwound = std::panic::catch_unwind(|| run(&data)).is_err();
        if unwound || PANICS.with(Cell::get) != before {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs panicked (each one's message is above):\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

/// The targets, by the name of their libFuzzer binary in `fuzz/Cargo.toml` and of their
/// module: one test each, so that a failure names it, and the list [`TARGETS`] that
/// `every_fuzz_target_is_replayed` holds against the manifest.
macro_rules! targets {
    ($($target:ident),* $(,)?) => {
        const TARGETS: &[&str] = &[$(stringify!($target)),*];
        $(
            #[test]
            fn $target() {
                replay(stringify!($target), baton_fuzz_targets::$target::run);
            }
        )*
    };
}

targets!(
    a2a_stream,
    bedrock_stream,
    directive,
    eval_suite,
    http_faces,
    mcp_stream,
    memory_text,
    model_events,
    openai_stream,
    picture,
    privacy_stream,
    registry,
    scripted_model,
);

/// The `name`s of the `[[bin]]` tables of a Cargo manifest, in order.
fn bin_names(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(value) = line
                .strip_prefix("name")
                .map(str::trim_start)
                .and_then(|rest| rest.strip_prefix('='))
        {
            names.push(value.trim().trim_matches('"').to_owned());
        }
    }
    names
}

#[test]
fn every_fuzz_target_is_replayed() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let mut bins = bin_names(&manifest);
    bins.sort();
    let mut listed: Vec<String> = TARGETS.iter().map(|name| (*name).to_owned()).collect();
    listed.sort();
    assert_eq!(
        listed, bins,
        "`targets!` must list exactly fuzz/Cargo.toml's [[bin]]s"
    );
}

#[test]
fn bin_names_reads_only_bin_tables() {
    let manifest = r#"
[package]
name = "baton-fuzz"

[[bin]]
name = "directive"
path = "x.rs"

[dependencies]
name = "no"

[[bin]]
name="registry"
"#;
    assert_eq!(bin_names(manifest), ["directive", "registry"]);
}
