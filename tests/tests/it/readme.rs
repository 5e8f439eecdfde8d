//! The README stays a front door: at most 300 lines, and every local link in it resolves.

/// The most lines the README may have.
const MAX_LINES: usize = 300;

#[test]
fn the_readme_is_short_and_its_local_links_resolve() {
    let root = baton_testkit::workspace_root();
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= MAX_LINES,
        "the README has {lines} lines; at most {MAX_LINES}"
    );
    let mut missing = Vec::new();
    for rest in text.match_indices("](").map(|(i, _)| &text[i + 2..]) {
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if target.contains("://") || target.starts_with('#') {
            continue;
        }
        let path = target.split('#').next().unwrap_or_default();
        if !root.join(path).exists() {
            missing.push(target.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "README links to missing files: {missing:?}"
    );
}
