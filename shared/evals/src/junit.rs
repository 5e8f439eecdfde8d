//! The run as JUnit XML: the conventional shape CI systems read (Jenkins, GitLab, GitHub
//! test reporters): `<testsuites>`, one `<testsuite>` per suite with its counts and time,
//! one `<testcase classname="<suite>" name="<case id>">` per case, a `<failure>` with the
//! reasons of a failed case and an `<error>` for an errored one. The suite's figures go in
//! `<properties>` so a CI job can read them without the JSON report.

use std::fmt::Write as _;

use super::{EvalMode, SuiteRun};
use crate::{Case, CaseResult, Suite, Verdict};

/// JUnit XML of `runs` (one per suite, in the order of `suites`).
pub fn render(suites: &[Suite], runs: &[SuiteRun]) -> String {
    let (mut tests, mut failures, mut errors, mut millis) = (0, 0, 0, 0);
    for run in runs {
        tests += run.metrics.cases;
        failures += run.metrics.failed;
        errors += run.metrics.errored;
        millis += run.duration_ms;
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"baton eval\" tests=\"{tests}\" failures=\"{failures}\" \
         errors=\"{errors}\" time=\"{}\">",
        seconds(millis)
    );
    for (i, run) in runs.iter().enumerate() {
        // Runs come in the order of the suites; a run without its suite still reports
        // (only the turn texts are missing).
        suite_element(&mut out, suites.get(i), run);
    }
    out.push_str("</testsuites>\n");
    out
}

/// The name of a mode, as `--mode` spells it.
fn mode_name(mode: EvalMode) -> &'static str {
    match mode {
        EvalMode::Routing => "routing",
        EvalMode::EndToEnd => "end-to-end",
    }
}

/// Milliseconds as the seconds JUnit's `time` attributes hold.
fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

fn suite_element(out: &mut String, suite: Option<&Suite>, run: &SuiteRun) {
    let m = &run.metrics;
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" \
         time=\"{}\" file=\"{}\">",
        escape(&run.suite),
        m.cases,
        m.failed,
        m.errored,
        seconds(run.duration_ms),
        escape(&run.file)
    );
    out.push_str("    <properties>\n");
    let mut property = |name: &str, value: String| {
        let _ = writeln!(
            out,
            "      <property name=\"{}\" value=\"{}\"/>",
            escape(name),
            escape(&value)
        );
    };
    property("mode", mode_name(run.mode).to_owned());
    property("routing.accuracy", ratio(m.routing.accuracy));
    property("routing.routed", m.routing.routed.to_string());
    property("routing.cases", m.routing.cases.to_string());
    for (tag, f) in &m.by_tag {
        property(&format!("routing.accuracy.{tag}"), ratio(f.accuracy));
    }
    if let Some(r) = m.mixed_recall {
        property("mixed_recall", ratio(r));
    }
    if let Some(r) = m.args_rate {
        property("args_rate", ratio(r));
    }
    if let Some(r) = m.answer_rate {
        property("answer_rate", ratio(r));
    }
    for (name, r) in m.context.named() {
        if let Some(r) = r {
            property(&name.replace([' ', '-'], "_"), ratio(r));
        }
    }
    property("latency_p50_ms", m.latency_p50_ms.to_string());
    property("latency_p95_ms", m.latency_p95_ms.to_string());
    property("tokens", m.tokens.to_string());
    property("cost_usd", format!("{:.6}", m.cost_usd));
    out.push_str("    </properties>\n");
    for result in &run.results {
        let case = suite.and_then(|s| s.cases.iter().find(|c| c.id == result.id));
        case_element(out, &run.suite, &run.file, case, result);
    }
    out.push_str("  </testsuite>\n");
}

/// A fraction with four decimals (what tools compare against thresholds).
fn ratio(x: f64) -> String {
    format!("{x:.4}")
}

fn case_element(
    out: &mut String,
    suite: &str,
    file: &str,
    case: Option<&Case>,
    result: &CaseResult,
) {
    let latency = result.observed.as_ref().map_or(0, |o| o.latency_ms);
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\" file=\"{}\"",
        escape(suite),
        escape(&result.id),
        seconds(latency),
        escape(file)
    );
    match &result.verdict {
        Verdict::Passed => out.push_str("/>\n"),
        Verdict::Failed { reasons } => {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                escape(&reasons.join("; ")),
                failure_type(result),
                escape_text(&details(case, result, reasons))
            );
        }
        Verdict::Errored { error } => {
            let _ = writeln!(
                out,
                ">\n      <error message=\"{}\" type=\"error\">{}</error>\n    </testcase>",
                escape(error),
                escape_text(&details(case, result, std::slice::from_ref(error)))
            );
        }
    }
}

/// Which expectation failed first: route, args, then answer (CI tools group by `type`).
fn failure_type(result: &CaseResult) -> &'static str {
    if result.route_ok == Some(false) {
        "route"
    } else if result.args_ok == Some(false) {
        "args"
    } else if result.answer_ok == Some(false) {
        "answer"
    } else {
        "failed"
    }
}

/// The body of a `<failure>` or `<error>`: each reason on a line, then the turn and who was
/// expected and consulted, so the CI page alone says what happened.
fn details(case: Option<&Case>, result: &CaseResult, reasons: &[String]) -> String {
    let mut text = reasons.join("\n");
    if let Some(case) = case {
        let _ = write!(text, "\nturn: {}", case.turn);
    }
    let _ = write!(text, "\nexpected: {}", names(&result.expected));
    if let Some(obs) = &result.observed {
        let _ = write!(text, "\nconsulted: {}", names(&obs.consulted));
        if !obs.args.is_empty() {
            let args = serde_json::to_string(&obs.args).unwrap_or_default();
            let _ = write!(text, "\nargs: {args}");
        }
    }
    text
}

fn names(ids: &[String]) -> String {
    if ids.is_empty() {
        "nobody".to_owned()
    } else {
        ids.join(", ")
    }
}

/// `text` safe in a double- or single-quoted XML 1.0 attribute value. Tab, newline and
/// carriage return are character references so the value keeps them (a parser normalises
/// raw ones to spaces).
fn escape(text: &str) -> String {
    escape_xml(text, true)
}

/// `text` safe as XML 1.0 element content; newlines and tabs stay as they are (readable).
fn escape_text(text: &str) -> String {
    escape_xml(text, false)
}

/// Characters XML 1.0 forbids (most C0 controls, U+FFFE/U+FFFF; a `str` holds no lone
/// surrogates) become U+FFFD: a model's output can hold them, and one would make the whole
/// file unreadable to a CI system.
fn escape_xml(text: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' if attribute => out.push_str("&#10;"),
            // A parser turns a raw CR (in text too) into a newline.
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::{Observation, judge, load_suite, metrics};
    use serde_json::json;

    use super::*;

    const SUITE: &str = r#"
suite: "routing <&> \"quoted\""
cases:
  - id: coffee
    tags: [single]
    turn: find me coffee deals
    expect: { route: { agents: [shop] } }
  - id: "a<b>&'c\""
    tags: [single]
    turn: "<script>alert(1)</script>"
    expect:
      route: { agents: [shop] }
      args: { shop: { query: "something else" } }
  - id: down
    turn: hello
    expect: { route: fastpath }
  - id: points
    tags: [single]
    turn: my points
    expect: { route: { agents: [support] } }
"#;

    fn fixture() -> (Vec<Suite>, Vec<SuiteRun>) {
        let specialists: BTreeSet<String> = ["shop", "support"].map(String::from).into();
        let suite = load_suite("evals/a&b.yaml", SUITE, &specialists).unwrap();
        let seen = |consulted: &[&str], args: serde_json::Value| Observation {
            consulted: consulted.iter().map(|s| (*s).to_owned()).collect(),
            args: serde_json::from_value(args).unwrap(),
            latency_ms: 1250,
            ..Observation::default()
        };
        let results = vec![
            judge(&suite.cases[0], seen(&["shop"], json!({}))),
            judge(
                &suite.cases[1],
                seen(
                    &["shop"],
                    json!({ "shop": { "query": "<script>alert(1)</script>" } }),
                ),
            ),
            CaseResult::errored(&suite.cases[2], "model \"down\" <503>\nretry\u{7} later"),
            judge(&suite.cases[3], seen(&[], json!({}))),
        ];
        let metrics = metrics(&suite.cases, &results, &specialists);
        let run = SuiteRun {
            suite: suite.name.clone(),
            file: suite.file.clone(),
            mode: EvalMode::Routing,
            duration_ms: 2500,
            results,
            metrics,
            repeated: None,
        };
        (vec![suite], vec![run])
    }

    /// An element as [`parse`] reads it: its text is its direct text content, unescaped.
    #[derive(Debug)]
    struct Element {
        name: String,
        attributes: Vec<(String, String)>,
        text: String,
    }

    /// A small well-formedness check: every tag closes in order, attributes are quoted,
    /// and no raw `<`, `&` or quote appears where XML forbids it. Returns the elements in
    /// document order.
    fn parse(xml: &str) -> Vec<Element> {
        let body = xml
            .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
            .expect("the XML declaration");
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<(String, usize)> = Vec::new();
        let mut rest = body;
        while let Some(start) = rest.find('<') {
            let text = &rest[..start];
            check_text(text);
            if let Some(&(_, index)) = open.last() {
                elements[index].text.push_str(&unescape(text));
            }
            let end = rest[start..].find('>').expect("a closed tag") + start;
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let (top, _) = open.pop().expect("a closing tag has an opening one");
                assert_eq!(top, name, "tags close in order");
                continue;
            }
            let (tag, empty) = match tag.strip_suffix('/') {
                Some(t) => (t, true),
                None => (tag, false),
            };
            let (name, attributes) = tag.split_once(' ').unwrap_or((tag, ""));
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "{name:?}"
            );
            let attributes = parse_attributes(attributes);
            elements.push(Element {
                name: name.to_owned(),
                attributes,
                text: String::new(),
            });
            if !empty {
                open.push((name.to_owned(), elements.len() - 1));
            }
        }
        check_text(rest);
        assert!(rest.trim().is_empty(), "text after the root: {rest:?}");
        assert!(open.is_empty(), "unclosed: {open:?}");
        elements
    }

    fn parse_attributes(mut text: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        loop {
            text = text.trim_start();
            if text.is_empty() {
                return out;
            }
            let (name, after) = text.split_once("=\"").expect("name=\"value\"");
            let close = after.find('"').expect("a closing quote");
            let value = &after[..close];
            assert!(
                !value.contains(['<', '\n', '\t']),
                "raw <, newline or tab in an attribute: {value:?}"
            );
            check_text(value);
            out.push((name.to_owned(), unescape(value)));
            text = &after[close + 1..];
        }
    }

    /// Every `&` starts one of the references `escape` writes; no control characters.
    fn check_text(text: &str) {
        let mut rest = text;
        while let Some(i) = rest.find('&') {
            rest = &rest[i..];
            let known = [
                "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#9;", "&#10;", "&#13;",
            ];
            let r = known
                .iter()
                .find(|k| rest.starts_with(**k))
                .unwrap_or_else(|| panic!("a bare & in {text:?}"));
            rest = &rest[r.len()..];
        }
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "a raw control character in {text:?}"
        );
    }

    fn unescape(text: &str) -> String {
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&#9;", "\t")
            .replace("&#10;", "\n")
            .replace("&#13;", "\r")
            .replace("&amp;", "&")
    }

    fn attr<'e>(element: &'e Element, name: &str) -> &'e str {
        element
            .attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} on {element:?}"))
    }

    #[test]
    fn the_xml_is_well_formed_with_the_counts_of_the_run() {
        let (suites, runs) = fixture();
        let xml = render(&suites, &runs);
        let elements = parse(&xml);
        let root = &elements[0];
        assert_eq!(root.name, "testsuites");
        assert_eq!(
            (
                attr(root, "tests"),
                attr(root, "failures"),
                attr(root, "errors")
            ),
            ("4", "2", "1")
        );
        let suite = &elements[1];
        assert_eq!(suite.name, "testsuite");
        assert_eq!(attr(suite, "name"), "routing <&> \"quoted\"");
        assert_eq!(attr(suite, "file"), "evals/a&b.yaml");
        assert_eq!(attr(suite, "tests"), "4");
        assert_eq!(attr(suite, "failures"), "2");
        assert_eq!(attr(suite, "errors"), "1");
        assert_eq!(attr(suite, "time"), "2.500");
        let cases: Vec<_> = elements.iter().filter(|e| e.name == "testcase").collect();
        assert_eq!(cases.len(), 4);
        assert!(
            cases
                .iter()
                .all(|c| attr(c, "classname") == "routing <&> \"quoted\"")
        );
        assert_eq!(attr(cases[0], "name"), "coffee");
        assert_eq!(attr(cases[0], "time"), "1.250");
        assert_eq!(attr(cases[1], "name"), "a<b>&'c\"");
        assert_eq!(attr(cases[2], "time"), "0.000");
        let properties: Vec<_> = elements.iter().filter(|e| e.name == "property").collect();
        let property = |name: &str| {
            properties
                .iter()
                .find(|p| attr(p, "name") == name)
                .map(|p| attr(p, "value"))
        };
        assert_eq!(property("mode"), Some("routing"));
        assert_eq!(property("routing.accuracy"), Some("0.5000"));
        assert_eq!(property("routing.accuracy.single"), Some("0.6667"));
    }

    #[test]
    fn a_failure_carries_its_reasons_and_an_error_its_message_escaped() {
        let (suites, runs) = fixture();
        let xml = render(&suites, &runs);
        assert!(!xml.contains("<script>"), "{xml}");
        assert!(!xml.contains('\u{7}'), "a control character survived");
        let elements = parse(&xml);
        let failures: Vec<_> = elements.iter().filter(|e| e.name == "failure").collect();
        assert_eq!(failures.len(), 2);
        assert_eq!(attr(failures[1], "type"), "route");
        // The judge's wording is its own: the reasons are passed through whole.
        let reasons = match &runs[0].results[3].verdict {
            Verdict::Failed { reasons } => reasons.join("; "),
            other => panic!("{other:?}"),
        };
        assert!(reasons.starts_with("route: "), "{reasons}");
        assert_eq!(attr(failures[1], "message"), reasons);
        assert!(
            failures[1]
                .text
                .ends_with("\nexpected: support\nconsulted: nobody")
        );
        let failure = failures[0];
        assert_eq!(attr(failure, "type"), "args");
        let message = attr(failure, "message");
        assert!(
            message.starts_with("args: shop.query differs (asked with {")
                && message.contains("<script>alert(1)</script>"),
            "{message}"
        );
        assert!(
            failure.text.contains("\nturn: <script>alert(1)</script>"),
            "{failure:?}"
        );
        assert!(
            failure
                .text
                .contains("\nexpected: shop\nconsulted: shop\nargs: {\"shop\""),
            "{failure:?}"
        );
        let errors: Vec<_> = elements.iter().filter(|e| e.name == "error").collect();
        assert_eq!(errors.len(), 1);
        // The newline survives in the attribute as a character reference.
        assert_eq!(
            attr(errors[0], "message"),
            "model \"down\" <503>\nretry\u{fffd} later"
        );
        assert!(
            xml.contains("message=\"model &quot;down&quot; &lt;503&gt;&#10;retry\u{fffd} later\"")
        );
    }

    #[test]
    fn escaping_covers_markup_quotes_and_forbidden_characters() {
        assert_eq!(
            escape("a<b>&\"c'\t\n\r\u{0}\u{8}\u{ffff}é→"),
            "a&lt;b&gt;&amp;&quot;c&apos;&#9;&#10;&#13;\u{fffd}\u{fffd}\u{fffd}é→"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(
            escape_text("a<b>&\"c'\t\n\r\u{0}"),
            "a&lt;b&gt;&amp;\"c'\t\n&#13;\u{fffd}"
        );
    }

    #[test]
    fn no_runs_is_an_empty_but_valid_report() {
        let xml = render(&[], &[]);
        let elements = parse(&xml);
        assert_eq!(elements.len(), 1);
        assert_eq!(attr(&elements[0], "tests"), "0");
    }
}
