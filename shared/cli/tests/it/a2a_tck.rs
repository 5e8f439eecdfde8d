//! The official A2A compatibility kit drives `baton serve`'s A2A face over JSON-RPC at the
//! MUST level: every test outside `tests/conformance/a2a-tck-baseline.txt` must pass, and
//! one listed there that passes fails the run too, so the baseline only shrinks.
//!
//! The kit is vendored beside the checkout (it is on no registry); `./infra/a2a-tck.sh`,
//! which this test runs, installs it once.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::*;

#[test]
fn baton_serve_passes_the_a2a_compatibility_kit_outside_its_baseline() {
    let root = baton_testkit::crate_dir().join("../..");
    let install = Command::new(root.join("infra/a2a-tck.sh"))
        .output()
        .expect("run infra/a2a-tck.sh");
    assert!(
        install.status.success(),
        "installing the A2A compatibility kit failed: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    let line = String::from_utf8(install.stdout).unwrap();
    let mut kit = line.split_whitespace();
    let (python, script) = (kit.next().unwrap(), Path::new(kit.next().unwrap()));

    let sandbox = Sandbox::new();
    let serving = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", "offline"],
        &[],
    );
    let run = Command::new(python)
        .arg(script)
        .args(["--sut-host", &format!("http://{}", serving.addr)])
        .args(["--transport", "jsonrpc", "--level", "must"])
        .current_dir(script.parent().unwrap())
        .output()
        .expect("run the A2A compatibility kit");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let failed: BTreeSet<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("FAILED "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|test| test.starts_with("tests/"))
        .collect();
    let passed: u32 = said
        .lines()
        .rev()
        .find_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words
                .windows(2)
                .find(|w| w[1].trim_end_matches(',') == "passed")
                .and_then(|w| w[0].parse().ok())
        })
        .unwrap_or_else(|| panic!("the kit did not say how many tests passed:\n{said}"));
    assert!(passed >= 50, "only {passed} tests passed:\n{said}");

    let listed = std::fs::read_to_string(
        baton_testkit::crate_dir().join("tests/conformance/a2a-tck-baseline.txt"),
    )
    .unwrap();
    let baseline: BTreeSet<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let unexpected: Vec<&&str> = failed.difference(&baseline).collect();
    assert!(
        unexpected.is_empty(),
        "the A2A compatibility kit failed outside its baseline: {unexpected:#?}\n{said}"
    );
    let now_passing: Vec<&&str> = baseline.difference(&failed).collect();
    assert!(
        now_passing.is_empty(),
        "these pass now: take them out of tests/conformance/a2a-tck-baseline.txt: {now_passing:#?}"
    );
}
