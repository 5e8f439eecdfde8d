//! Reading a suite file: every problem names its file, line (when YAML knows it) and field.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::{Case, RouteExpect, Suite, Thresholds};

/// A problem in a suite file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {field}: {problem}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct EvalLoadError {
    /// The file.
    pub file: String,
    /// The line, when the YAML parser knows it.
    pub line: Option<usize>,
    /// The field (`cases[3].expect.route`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    #[serde(default)]
    suite: Option<String>,
    #[serde(default)]
    orchestrator: Option<String>,
    #[serde(default)]
    thresholds: Thresholds,
    #[serde(default)]
    mode: Option<crate::EvalMode>,
    cases: Vec<Case>,
}

/// Reads the suite in `text` (from `file`), checking every specialist it names against
/// `specialists` (the orchestrator's sub-agents).
///
/// # Errors
/// Every problem found; a file that does not parse gives one, at its line.
pub fn load_suite(
    file: &str,
    text: &str,
    specialists: &BTreeSet<String>,
) -> Result<Suite, Vec<EvalLoadError>> {
    check(file, parse(file, text)?, specialists)
}

/// As [`load_suite`], for the orchestrator `entry`: a suite that names another
/// orchestrator (`orchestrator:`) is not for it, `None`, and is not checked against its
/// specialists.
///
/// # Errors
/// As [`load_suite`].
pub fn load_suite_for(
    file: &str,
    text: &str,
    entry: &str,
    specialists: &BTreeSet<String>,
) -> Result<Option<Suite>, Vec<EvalLoadError>> {
    let raw = parse(file, text)?;
    if raw.orchestrator.as_deref().is_some_and(|o| o != entry) {
        return Ok(None);
    }
    check(file, raw, specialists).map(Some)
}

/// The file as written; a file that does not parse gives one problem, at its line.
fn parse(file: &str, text: &str) -> Result<RawSuite, Vec<EvalLoadError>> {
    serde_norway::from_str(text).map_err(|e| {
        let line = e.location().map(|l| l.line());
        // serde_norway prefixes the path it was at: `cases[2].expect: unknown field …`.
        let message = e.to_string();
        let (field, problem) = match message.split_once(": ") {
            Some((path, rest)) if !path.contains(' ') => (path.to_owned(), rest.to_owned()),
            _ => ("(file)".to_owned(), message),
        };
        vec![EvalLoadError {
            file: file.to_owned(),
            line,
            field,
            problem,
        }]
    })
}

/// What a case's context expectations need that the case does not set up.
fn context_problems(case: &Case) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if !case.expect.kept.is_empty() && !case.compact {
        out.push((
            ".expect.kept",
            "needs `compact: true`: only a compaction writes a summary",
        ));
    }
    if case.compact && case.history.is_empty() {
        out.push((".compact", "needs a history to fold"));
    }
    for agent in &case.expect.acknowledged {
        if !case.unavailable.contains(agent) {
            out.push((
                ".expect.acknowledged",
                "names a specialist that is not in `unavailable`: it has no failure to acknowledge",
            ));
        }
    }
    out
}

/// Every case's references, checked against `specialists`.
fn check(
    file: &str,
    raw: RawSuite,
    specialists: &BTreeSet<String>,
) -> Result<Suite, Vec<EvalLoadError>> {
    let mut problems = Vec::new();
    let mut add = |field: String, problem: String| {
        problems.push(EvalLoadError {
            file: file.to_owned(),
            line: None,
            field,
            problem,
        })
    };
    let mut ids = BTreeSet::new();
    for (i, case) in raw.cases.iter().enumerate() {
        let at = |f: &str| format!("cases[{i}]{f}");
        if case.id.trim().is_empty() {
            add(at(".id"), "must not be empty".into());
        } else if !ids.insert(case.id.as_str()) {
            add(at(".id"), format!("{:?} is used by another case", case.id));
        }
        // A picture may be the whole message.
        if case.turn.trim().is_empty() && case.pictures.is_empty() {
            add(
                at(".turn"),
                "must not be empty (unless the case sends pictures)".into(),
            );
        }
        let mut known = |field: String, id: &str| {
            if !specialists.contains(id) {
                add(
                    field,
                    format!(
                        "{id:?} is not a specialist of the orchestrator (known: {})",
                        specialists.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        };
        for (t, past) in case.history.iter().enumerate() {
            for id in &past.consulted {
                known(at(&format!(".history[{t}].consulted")), id);
            }
        }
        if let Some(RouteExpect::Agents { agents, .. }) = &case.expect.route {
            for id in agents {
                known(at(".expect.route.agents"), id);
            }
        }
        for id in case.expect.args.keys() {
            known(at(&format!(".expect.args.{id}")), id);
        }
        for (t, past) in case.history.iter().enumerate() {
            for id in past.said.keys() {
                known(at(&format!(".history[{t}].said.{id}")), id);
            }
        }
        for id in case.expect.told.keys() {
            known(at(&format!(".expect.told.{id}")), id);
        }
        for id in &case.unavailable {
            known(at(".unavailable"), id);
        }
        for id in &case.expect.acknowledged {
            known(at(".expect.acknowledged"), id);
        }
        if !case.expect.acknowledged.is_empty() && raw.mode != Some(crate::EvalMode::EndToEnd) {
            add(
                at(".expect.acknowledged"),
                "only an answer can acknowledge a failure: the suite needs `mode: end-to-end`"
                    .into(),
            );
        }
        let context_problems = context_problems(case);
        for (field, problem) in context_problems {
            add(at(field), problem.into());
        }
        for (w, wave) in case
            .expect
            .plan
            .iter()
            .flat_map(|p| p.waves.iter().enumerate())
        {
            if wave.is_empty() {
                add(
                    at(&format!(".expect.plan.waves[{w}]")),
                    "a wave has at least one sub-agent".into(),
                );
            }
            for node in wave {
                if node.split('+').any(|skill| !skill.contains('.')) {
                    add(
                        at(&format!(".expect.plan.waves[{w}]")),
                        format!(
                            "{node:?} is not a skill name (<domain>.<skill>, several joined by +)"
                        ),
                    );
                }
            }
        }
        if let Some(Err(e)) = case
            .expect
            .answer
            .as_ref()
            .and_then(|a| a.schema.as_ref())
            .map(jsonschema::validator_for)
        {
            add(
                at(".expect.answer.schema"),
                format!("not a JSON Schema: {e}"),
            );
        }
        if let Some(Err(e)) = case
            .expect
            .answer
            .as_ref()
            .and_then(|a| a.regex.as_deref())
            .map(regex::Regex::new)
        {
            add(
                at(".expect.answer.regex"),
                format!("not a regular expression: {e}"),
            );
        }
    }
    for id in raw.thresholds.specialists.keys() {
        if !specialists.contains(id) {
            problems.push(EvalLoadError {
                file: file.to_owned(),
                line: None,
                field: format!("thresholds.specialists.{id}"),
                problem: format!("{id:?} is not a specialist of the orchestrator"),
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let name = raw.suite.unwrap_or_else(|| {
        std::path::Path::new(file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(file)
            .to_owned()
    });
    Ok(Suite {
        name,
        orchestrator: raw.orchestrator,
        file: file.to_owned(),
        cases: raw.cases,
        thresholds: raw.thresholds,
        mode: raw.mode,
    })
}
