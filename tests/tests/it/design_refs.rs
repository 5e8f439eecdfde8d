//! Every design reference in the repository resolves: each decision (`D-16`) and section
//! (`DESIGN §3`) cited in a source file, script, setting or document has a heading in
//! `docs/design.md`, so a reader of the code can always look it up.

use std::collections::BTreeSet;
use std::path::Path;

/// The design document, relative to the workspace root.
const DESIGN: &str = "docs/design.md";

/// The kinds of file whose text is searched for references.
const EXTENSIONS: &[&str] = &["rs", "md", "yaml", "yml", "toml", "sh"];

/// One file of the repository: its path relative to the root (with `/`) and its text.
struct SourceFile {
    path: String,
    text: String,
}

/// What a check found: how many references there are, and each one without a heading.
struct Findings {
    references: usize,
    dangling: Vec<String>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The run of ASCII digits at the start of `s`, if any.
fn leading_number(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// Decisions cited in `line` (`D-16` as `"D-16"`): `D-` and digits standing as a word of
/// their own, so `PRD-201` and `D-16a` are none.
fn decisions(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    for (i, c) in line.char_indices() {
        if c == 'D' && !previous.is_some_and(is_word) {
            let rest = &line[i + 1..];
            if let Some(digits) = rest.strip_prefix('-').and_then(leading_number) {
                let after = rest[1 + digits.len()..].chars().next();
                if !after.is_some_and(is_word) {
                    found.push(format!("D-{digits}"));
                }
            }
        }
        previous = Some(c);
    }
    found
}

/// Sections cited in `line` (`DESIGN §3`, `design.md §4`, any case, as `"§3"`).
fn sections(line: &str) -> Vec<String> {
    const WORD: &str = "design";
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    for (i, c) in line.char_indices() {
        let starts = line
            .get(i..i + WORD.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(WORD));
        if starts && !previous.is_some_and(is_word) {
            let rest = &line[i + WORD.len()..];
            let rest = rest.strip_prefix(".md").unwrap_or(rest);
            let spaced = rest.trim_start_matches(' ');
            if spaced.len() < rest.len()
                && let Some(digits) = spaced.strip_prefix('§').and_then(leading_number)
            {
                found.push(format!("§{digits}"));
            }
        }
        previous = Some(c);
    }
    found
}

/// Sections a heading names (`## §3 A turn` as `"§3"`).
fn heading_sections(line: &str) -> Vec<String> {
    line.match_indices('§')
        .filter_map(|(i, s)| leading_number(&line[i + s.len()..]))
        .map(|digits| format!("§{digits}"))
        .collect()
}

/// Every decision and section the design document has a heading for.
fn headings(design: &str) -> BTreeSet<String> {
    design
        .lines()
        .filter(|line| line.starts_with('#'))
        .flat_map(|line| {
            let mut tokens = decisions(line);
            tokens.extend(heading_sections(line));
            tokens
        })
        .collect()
}

/// Checks every reference in `files` (the design document itself excepted) against the
/// headings of `design`, naming each one that has none.
fn check(files: &[SourceFile], design: &str) -> Findings {
    let known = headings(design);
    let mut findings = Findings {
        references: 0,
        dangling: Vec::new(),
    };
    for file in files.iter().filter(|f| f.path != DESIGN) {
        for (n, line) in file.text.lines().enumerate() {
            let mut cited = decisions(line);
            cited.extend(sections(line));
            for token in cited {
                findings.references += 1;
                if !known.contains(&token) {
                    findings.dangling.push(format!(
                        "{}:{} cites {token}, which {DESIGN} has no heading for",
                        file.path,
                        n + 1
                    ));
                }
            }
        }
    }
    findings
}

/// Whether `relative` is this file, whose fixtures cite missing decisions on purpose.
fn is_this_file(relative: &Path) -> bool {
    Path::new(file!()).ends_with(relative)
}

/// The searched files under `root`, in path order, with paths relative to it.
fn collect(root: &Path) -> Vec<SourceFile> {
    baton_tests::fixtures::files_under(root, EXTENSIONS)
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(root).expect("under the root");
            if is_this_file(relative) {
                return None;
            }
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            Some(SourceFile {
                path: relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            })
        })
        .collect()
}

#[test]
fn every_design_reference_has_a_heading() {
    let root = baton_testkit::workspace_root();
    let design = std::fs::read_to_string(root.join(DESIGN))
        .unwrap_or_else(|e| panic!("cannot read {DESIGN}: {e}"));
    let files = collect(&root);
    let findings = check(&files, &design);
    assert!(
        findings.dangling.is_empty(),
        "{}",
        findings.dangling.join("\n")
    );
    assert!(
        findings.references >= 100,
        "only {} design references found under {}: is the walk reading the repository?",
        findings.references,
        root.display()
    );
}

#[test]
fn a_reference_without_a_heading_is_named() {
    let design = "# Design\n\n## §13 Evals\n\n### D-4 Models\n\nD-99 in the text is no heading.\n";
    let files = [
        SourceFile {
            path: "shared/x/src/lib.rs".into(),
            text: "//! Models (D-4), limits (D-99).\n//! DESIGN §13, then design.md §1.\n".into(),
        },
        SourceFile {
            path: "docs/other.md".into(),
            text: "Ids such as PRD-201, RD-7781 and D-4a are not references; D-40 is.\n".into(),
        },
        SourceFile {
            path: DESIGN.into(),
            text: "Its own D-77 is never checked.\n".into(),
        },
    ];
    let findings = check(&files, design);
    assert_eq!(
        findings.dangling,
        [
            "shared/x/src/lib.rs:1 cites D-99, which docs/design.md has no heading for",
            "shared/x/src/lib.rs:2 cites §1, which docs/design.md has no heading for",
            "docs/other.md:1 cites D-40, which docs/design.md has no heading for",
        ]
    );
    assert_eq!(findings.references, 5);
}

#[test]
fn citations_are_read_as_whole_tokens() {
    assert_eq!(decisions("(D-7 … D-9, D-14)"), ["D-7", "D-9", "D-14"]);
    assert!(decisions("PRD-201 RD-7781 D-16a xD-3 D-").is_empty());
    assert_eq!(
        sections("DESIGN §3 step 5; Design.md §11; design  §4; redesign §9; DESIGN § 2"),
        ["§3", "§11", "§4"]
    );
    assert_eq!(
        headings("## §1 Layout\n### D-2 Loading\nD-3 §5 in a paragraph\n"),
        BTreeSet::from(["§1".to_owned(), "D-2".to_owned()])
    );
}
