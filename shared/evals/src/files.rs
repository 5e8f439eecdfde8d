//! Where suites come from: the `*.yaml` files of a registry's `evals/` folder, read and
//! checked against the orchestrator they are for.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::Suite;

/// The registry's `evals/*.yaml` (and `*.yml`), sorted.
///
/// # Errors
/// No `evals/` folder, or no suite in it, in plain words.
pub fn suite_files(registry: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = registry.join("evals");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("there is no evals folder at {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no suites (*.yaml) in {}", dir.display()));
    }
    Ok(files)
}

/// The suites under a registry's `evals/` (`*.yaml`, sorted) for the orchestrator `entry`
/// (those naming another orchestrator are left out), checked against `specialists`.
///
/// # Errors
/// No suite, an unreadable file, or every problem of the malformed ones, in plain words.
pub fn read_suites(
    registry: &Path,
    entry: &str,
    specialists: &BTreeSet<String>,
) -> Result<Vec<Suite>, String> {
    read_suite_files(&suite_files(registry)?, entry, specialists)
}

/// Reads the pictures `suite`'s cases send, each relative to the suite's `file`.
fn read_pictures(file: &Path, suite: &mut Suite) -> Result<(), String> {
    let dir = file.parent().unwrap_or(Path::new("."));
    for case in &mut suite.cases {
        case.picture_bytes = case
            .pictures
            .iter()
            .map(|name| {
                std::fs::read(dir.join(name))
                    .map(baton_core::picture::Bytes::from)
                    .map_err(|e| {
                        format!(
                            "{}: case {:?}: the picture {name} cannot be read: {e}",
                            file.display(),
                            case.id
                        )
                    })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

/// The suites in `files` for the orchestrator `entry`, checked against `specialists`.
///
/// # Errors
/// An unreadable file, or every problem of the malformed ones.
pub fn read_suite_files(
    files: &[PathBuf],
    entry: &str,
    specialists: &BTreeSet<String>,
) -> Result<Vec<Suite>, String> {
    let mut suites = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("reading the suite {}: {e}", file.display()))?;
        match crate::load_suite_for(&file.display().to_string(), &text, entry, specialists) {
            Ok(Some(mut s)) => match read_pictures(file, &mut s) {
                Ok(()) => suites.push(s),
                Err(problem) => problems.push(problem),
            },
            // A suite of another orchestrator.
            Ok(None) => {}
            Err(errors) => problems.extend(errors.into_iter().map(|e| e.to_string())),
        }
    }
    if problems.is_empty() && suites.is_empty() {
        Err(format!(
            "none of the suites is for the orchestrator {entry} (a suite's `orchestrator:` names the one it is for)"
        ))
    } else if problems.is_empty() {
        Ok(suites)
    } else {
        Err(format!(
            "the eval suites are not valid:\n  {}",
            problems.join("\n  ")
        ))
    }
}
