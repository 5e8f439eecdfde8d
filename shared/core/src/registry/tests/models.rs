//! `models.yaml`: a file that does not parse, a capability that does not exist.

use super::fixtures::{edit, expect_error, load_errors, sources};
use crate::registry::LoadErrors;

#[test]
fn malformed_tools_and_models_files_are_named() {
    let mut s = sources();
    edit(&mut s, "tools.yaml", "tools:\n", "tools: [\n");
    edit(&mut s, "models.yaml", "models:\n", "modles:\n");
    let errors = load_errors(&s);
    expect_error(&errors, "tools.yaml", "(file)", "");
    let e = expect_error(&errors, "models.yaml", "(file)", "");
    assert!(e.problem.contains("modles"), "{e}");
}

#[test]
fn an_unknown_reasoning_capability_is_named() {
    let mut s = sources();
    edit(
        &mut s,
        "models.yaml",
        "parallel_tool_calls: true}",
        "parallel_tool_calls: true, reasoning_effort: telepathy}",
    );
    let errors = load_errors(&s);
    assert!(
        errors.iter().any(|e| e.file == "models.yaml"),
        "{}",
        LoadErrors(errors.clone())
    );
}
