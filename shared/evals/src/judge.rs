//! One case against what a run observed.

use serde_json::Value;

use baton_core::plan::record::describe_waves;

use super::{
    AnswerExpect, Case, CaseResult, ContextCounts, MatchMode, Observation, RouteExpect,
    TrustExpect, Verdict, expected_agents,
};

/// The case's result: each expectation it sets, checked; an answer expectation is checked
/// only when the run produced an answer (end-to-end mode).
pub fn judge(case: &Case, observed: Observation) -> CaseResult {
    let mut reasons = Vec::new();
    let route_ok = case.expect.route.as_ref().map(|route| {
        let ok = route_matches(route, &observed);
        if !ok {
            reasons.push(format!(
                "route: expected {}, consulted {}",
                describe_route(route),
                if observed.consulted.is_empty() {
                    "nobody".to_owned()
                } else {
                    observed.consulted.join(", ")
                }
            ));
        }
        ok
    });
    let args_ok = (!case.expect.args.is_empty()).then(|| {
        let mut ok = true;
        for (agent, expected) in &case.expect.args {
            match observed.args.get(agent) {
                None => {
                    ok = false;
                    reasons.push(format!("args: {agent} was not asked"));
                }
                Some(actual) => {
                    if let Err(path) = subset(expected, actual, &case.expect.ignore_args, agent) {
                        ok = false;
                        reasons.push(format!("args: {path} differs (asked with {actual})"));
                    }
                }
            }
        }
        ok
    });
    let answer_ok = match (&case.expect.answer, &observed.answer) {
        (Some(expect), Some(answer)) => {
            let failures = answer_failures(expect, answer);
            let ok = failures.is_empty();
            reasons.extend(failures);
            Some(ok)
        }
        _ => None,
    };
    let trust_ok = case.expect.trust.as_ref().map(|t| {
        let failures = trust_failures(t, &observed);
        let ok = failures.is_empty();
        reasons.extend(failures);
        ok
    });
    let plan_ok = case.expect.plan.as_ref().map(|plan| {
        let ok = same_waves(&plan.waves, &observed.plan);
        if !ok {
            reasons.push(format!(
                "plan: expected {}, planned {}",
                describe_waves(&plan.waves),
                if observed.plan.is_empty() {
                    "nothing".to_owned()
                } else {
                    describe_waves(&observed.plan)
                }
            ));
        }
        ok
    });
    let context = context_counts(case, &observed, &mut reasons);
    let verdict = if reasons.is_empty() {
        Verdict::Passed
    } else {
        Verdict::Failed { reasons }
    };
    CaseResult {
        id: case.id.clone(),
        tags: case.tags.clone(),
        expected: expected_agents(case),
        route_ok,
        args_ok,
        answer_ok,
        trust_ok,
        plan_ok,
        context,
        verdict,
        observed: Some(observed),
    }
}

fn route_matches(route: &RouteExpect, observed: &Observation) -> bool {
    let consulted = &observed.consulted;
    match route {
        RouteExpect::Fastpath(_) => consulted.is_empty(),
        RouteExpect::Agents { agents, mode } => match mode {
            MatchMode::Exact => consulted == agents,
            MatchMode::InOrder => {
                let mut rest = consulted.iter();
                agents.iter().all(|a| rest.any(|c| c == a))
            }
            MatchMode::AnyOrder => {
                let (mut a, mut c) = (agents.clone(), consulted.clone());
                a.sort();
                c.sort();
                a == c
            }
            MatchMode::Subset => {
                (!consulted.is_empty() || agents.is_empty())
                    && consulted.iter().all(|c| agents.contains(c))
            }
            MatchMode::Superset => agents.iter().all(|a| consulted.contains(a)),
        },
    }
}

fn describe_route(route: &RouteExpect) -> String {
    match route {
        RouteExpect::Fastpath(_) => "nobody (Fastpath)".into(),
        RouteExpect::Agents { agents, mode } => {
            let mode = match mode {
                MatchMode::Exact => "exactly",
                MatchMode::InOrder => "in order",
                MatchMode::AnyOrder => "in any order",
                MatchMode::Subset => "only among",
                MatchMode::Superset => "at least",
            };
            format!("{mode} {}", agents.join(", "))
        }
    }
}

/// Whether `expected` is found in `actual`: every key of an expected object (but the
/// ignored ones) present with a matching value, arrays element by element, text compared
/// trimmed and case-insensitively, anything else equal. `Err` holds the first path that
/// differs.
fn subset(expected: &Value, actual: &Value, ignore: &[String], path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                if ignore.iter().any(|i| i == key) {
                    continue;
                }
                let here = format!("{path}.{key}");
                match a.get(key) {
                    Some(found) => subset(value, found, ignore, &here)?,
                    None => return Err(here),
                }
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                subset(ev, av, ignore, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::String(e), Value::String(a)) if e.trim().eq_ignore_ascii_case(a.trim()) => Ok(()),
        (e, a) if e == a => Ok(()),
        _ => Err(path.to_owned()),
    }
}

fn answer_failures(expect: &AnswerExpect, answer: &str) -> Vec<String> {
    let lower = answer.to_lowercase();
    let mut out = Vec::new();
    for c in &expect.contains {
        if !lower.contains(&c.to_lowercase()) {
            out.push(format!("answer: does not contain {c:?}"));
        }
    }
    for c in &expect.not_contains {
        if lower.contains(&c.to_lowercase()) {
            out.push(format!("answer: contains {c:?}"));
        }
    }
    if let Some(schema) = &expect.schema {
        // Checked at load: a schema that does not compile never gets here.
        match (
            jsonschema::validator_for(schema),
            serde_json::from_str::<serde_json::Value>(answer.trim()),
        ) {
            (Ok(v), Ok(doc)) => {
                if let Some(e) = v.iter_errors(&doc).next() {
                    out.push(format!("answer: does not match its schema: {e}"));
                }
            }
            (_, Err(_)) => out.push("answer: is not JSON".to_owned()),
            (Err(_), _) => {}
        }
    }
    if let Some(pattern) = &expect.regex {
        // Checked at load: a pattern that does not compile never gets here.
        if let Ok(re) = regex::Regex::new(pattern)
            && !re.is_match(answer)
        {
            out.push(format!("answer: does not match /{pattern}/"));
        }
    }
    out
}

fn trust_failures(expect: &TrustExpect, observed: &Observation) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(agent) = &expect.direct_line
        && observed.direct_line.as_ref() != Some(agent)
    {
        out.push(format!(
            "trust: expected the Direct Line to {agent}, got {}",
            observed.direct_line.as_deref().unwrap_or("none")
        ));
    }
    for agent in &expect.obligations_met {
        if !observed.obligations_met.contains(agent) {
            out.push(format!(
                "trust: the obligation to consult {agent} was not met"
            ));
        }
    }
    match expect.masked {
        Some(true) if observed.masked == 0 => {
            out.push("trust: nothing was masked".to_owned());
        }
        Some(false) if observed.masked > 0 => {
            out.push(format!("trust: {} value(s) were masked", observed.masked));
        }
        _ => {}
    }
    for agent in &expect.not_consulted {
        if observed.consulted.contains(agent) {
            out.push(format!("trust: {agent} was consulted"));
        }
    }
    out
}

/// The same waves in the same order, each with the same sub-agents in any order.
fn same_waves(expected: &[Vec<String>], observed: &[Vec<String>]) -> bool {
    expected.len() == observed.len()
        && expected.iter().zip(observed).all(|(e, o)| {
            let mut e = e.clone();
            let mut o = o.clone();
            e.sort();
            o.sort();
            e == o
        })
}

/// The context expectations, fact by fact: what each specialist was told (its query and
/// prior context as executed), what the compacted summary kept, and which failures the
/// answer acknowledged (checked only when the run produced an answer).
fn context_counts(case: &Case, observed: &Observation, reasons: &mut Vec<String>) -> ContextCounts {
    let mut counts = ContextCounts::default();
    for (agent, facts) in &case.expect.told {
        let heard = observed.args.get(agent).map(told_text).unwrap_or_default();
        for fact in facts {
            counts.told_expected += 1;
            if contains_fact(&heard, fact) {
                counts.told_found += 1;
            } else if observed.args.contains_key(agent) {
                reasons.push(format!("told: {agent} was not told {fact:?}"));
            } else {
                reasons.push(format!("told: {agent} was not asked, so not told {fact:?}"));
            }
        }
    }
    for fact in &case.expect.kept {
        counts.kept_expected += 1;
        match &observed.summary {
            Some(summary) if contains_fact(summary, fact) => counts.kept_found += 1,
            Some(_) => reasons.push(format!("kept: the summary lost {fact:?}")),
            None => reasons.push(format!("kept: no summary was written, so {fact:?} is lost")),
        }
    }
    for fact in &case.expect.recalled {
        counts.recalled_expected += 1;
        if observed.recalled.iter().any(|m| contains_fact(m, fact)) {
            counts.recalled_found += 1;
        } else {
            reasons.push(format!(
                "recalled: {fact:?} is not among the top five memories found"
            ));
        }
        if let Some(answer) = &observed.answer {
            counts.used_expected += 1;
            if contains_fact(answer, fact) {
                counts.used_found += 1;
            } else {
                reasons.push(format!("recalled: the answer does not use {fact:?}"));
            }
        }
    }
    if let Some(answer) = &observed.answer {
        for agent in &case.expect.acknowledged {
            counts.acknowledged_expected += 1;
            let Some((_, label)) = observed.failed.iter().find(|(id, _)| id == agent) else {
                reasons.push(format!(
                    "acknowledged: {agent} did not fail, so there was nothing to acknowledge"
                ));
                continue;
            };
            if acknowledges(answer, agent, label) {
                counts.acknowledged_found += 1;
            } else {
                reasons.push(format!(
                    "acknowledged: the answer does not say that {label} could not answer"
                ));
            }
        }
    }
    counts
}

/// What a specialist's call told it: its query and its prior context.
fn told_text(args: &Value) -> String {
    ["query", "prior_context"]
        .iter()
        .filter_map(|k| args.get(k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `fact` in `text`, case-insensitively and whatever the runs of white space.
fn contains_fact(text: &str, fact: &str) -> bool {
    let squash = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let fact = squash(fact);
    !fact.is_empty() && squash(text).contains(&fact)
}

/// Words that say something could not be done.
const FAILURE_WORDS: [&str; 16] = [
    "couldn't",
    "could not",
    "can't",
    "cannot",
    "unable",
    "unavailable",
    "not available",
    "isn't available",
    "not able",
    "no answer",
    "didn't answer",
    "did not answer",
    "took too long",
    "try again",
    "failed",
    "not responding",
];

/// Whether a sentence of `answer` names the specialist (its label or id) and says that it
/// could not answer: the plain-words acknowledgement D-11 asks for, however worded.
pub(crate) fn acknowledges(answer: &str, id: &str, label: &str) -> bool {
    let (id, label) = (id.to_lowercase(), label.to_lowercase());
    answer
        .split(['.', '!', '?', '\n'])
        .map(str::to_lowercase)
        .any(|sentence| {
            (sentence.contains(&label) || sentence.contains(&id))
                && FAILURE_WORDS.iter().any(|w| sentence.contains(w))
        })
}
