//! The run as one self-contained HTML page: inline CSS, no script, no external resource, so
//! it can be kept as a CI artifact and opened anywhere. Per suite: the headline figures, the
//! accuracy by tag, the specialists' precision/recall/F1, the confusion matrix as a heat map
//! (`<table id="confusion-<suite>" class="confusion">`, each cell with `data-expected` and
//! `data-consulted`), the switch pairs below 100% and the failing and errored cases.
//!
//! Every text from a suite or a run (ids, turns, reasons, arguments) goes through
//! [`escape`], and the page's Content-Security-Policy forbids scripts besides: a case whose
//! text holds `<script>` shows it and runs nothing.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{EvalMode, SuiteRun};
use crate::{Case, CaseResult, NOBODY, Suite, Verdict};

use super::{money, percent};

/// The page for `runs` (one per suite, in the order of `suites`).
pub fn render(suites: &[Suite], runs: &[SuiteRun]) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str(HEAD);
    let (mut cases, mut passed) = (0, 0);
    for run in runs {
        cases += run.metrics.cases;
        passed += run.metrics.passed;
    }
    let _ = writeln!(
        out,
        "<h1>baton eval</h1>\n<p class=\"lede\">{} suite{}, {cases} case{}, {passed} passed.</p>",
        runs.len(),
        plural(runs.len()),
        plural(cases)
    );
    let mut ids = BTreeSet::new();
    for (i, run) in runs.iter().enumerate() {
        // Runs come in the order of the suites; without its suite a run still shows (only
        // the turn texts are missing).
        let id = unique_id(&run.suite, &mut ids);
        suite_section(&mut out, suites.get(i), run, &id);
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Everything before the first suite: the policy, the styles.
const HEAD: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>baton eval</title>
<style>
:root { color-scheme: light; --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0 auto; padding: 24px; max-width: 1200px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 4px; padding-top: 16px; border-top: 2px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 8px; }
.lede, .meta, .note { color: var(--muted); margin: 0 0 12px; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 8px; margin: 12px 0; }
.figure { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.figure dt { color: var(--muted); font-size: 12px; }
.figure dd { margin: 0; font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
.figure.ok dd { color: var(--ok); } .figure.bad dd { color: var(--bad); } .figure.warn dd { color: var(--warn); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 4px 10px; text-align: right; }
th { background: #f6f8fa; font-weight: 600; }
th:first-child, td.name { text-align: left; }
table.confusion td { min-width: 64px; text-align: center; }
table.confusion td.diagonal { outline: 2px solid var(--ok); outline-offset: -3px; font-weight: 700; }
table.confusion td.hot { color: #fff; }
table.confusion td.total { background: #f6f8fa; color: var(--muted); }
table.confusion th.corner { font-weight: 400; color: var(--muted); font-size: 12px; }
.legend { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; border-radius: 2px; margin: 0 4px 0 10px; }
.case { border: 1px solid var(--line); border-left: 4px solid var(--bad); border-radius: 6px; padding: 10px 14px; margin: 10px 0; }
.case.errored { border-left-color: var(--warn); }
.case h4 { margin: 0 0 6px; font-size: 14px; }
.badge { display: inline-block; font-size: 11px; font-weight: 700; padding: 1px 6px; border-radius: 10px; color: #fff; background: var(--bad); margin-right: 6px; }
.errored .badge { background: var(--warn); }
.tag { display: inline-block; font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 10px; padding: 0 6px; margin-left: 4px; }
.case ul { margin: 6px 0; padding-left: 20px; }
.case table { margin: 6px 0; }
.case pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 4px; padding: 8px; margin: 6px 0 0; white-space: pre-wrap; word-break: break-word; }
.turn { margin: 0 0 6px; }
</style>
</head>
<body>
"#;

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The name of a mode, as `--mode` spells it.
fn mode_name(mode: EvalMode) -> &'static str {
    match mode {
        EvalMode::Routing => "routing",
        EvalMode::EndToEnd => "end-to-end",
    }
}

/// `name` as an `id` attribute: HTML ids cannot hold whitespace and CSS selectors are
/// easiest without punctuation, so anything but ASCII letters, digits, `-` and `_` becomes
/// `-`; a second suite with the same name gets `-2`, and so on.
fn unique_id(name: &str, used: &mut BTreeSet<String>) -> String {
    let base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let base = if base.is_empty() {
        "suite".to_owned()
    } else {
        base
    };
    let mut id = base.clone();
    let mut n = 1;
    while !used.insert(id.clone()) {
        n += 1;
        id = format!("{base}-{n}");
    }
    id
}

fn suite_section(out: &mut String, suite: Option<&Suite>, run: &SuiteRun, id: &str) {
    let m = &run.metrics;
    let _ = writeln!(
        out,
        "<section class=\"suite\" id=\"suite-{id}\" data-suite=\"{}\">\n<h2>Suite {}</h2>\n\
         <p class=\"meta\"><code>{}</code> · {} mode · {} ms</p>",
        escape(&run.suite),
        escape(&run.suite),
        escape(&run.file),
        mode_name(run.mode),
        run.duration_ms
    );

    // The headline figures.
    out.push_str("<dl class=\"figures\">\n");
    let mut figure = |label: &str, value: String, class: &str| {
        let _ = writeln!(
            out,
            "<div class=\"figure {class}\"><dt>{label}</dt><dd>{}</dd></div>",
            escape(&value)
        );
    };
    let grade = |x: f64| if x >= 1.0 { "ok" } else { "bad" };
    figure("cases", m.cases.to_string(), "");
    figure("passed", m.passed.to_string(), "ok");
    figure(
        "failed",
        m.failed.to_string(),
        if m.failed > 0 { "bad" } else { "" },
    );
    figure(
        "errored",
        m.errored.to_string(),
        if m.errored > 0 { "warn" } else { "" },
    );
    figure(
        "routing accuracy",
        format!(
            "{} ({}/{})",
            percent(m.routing.accuracy),
            m.routing.routed,
            m.routing.cases
        ),
        grade(m.routing.accuracy),
    );
    if let Some(r) = m.mixed_recall {
        figure("mixed-intent recall", percent(r), grade(r));
    }
    if let Some(r) = m.args_rate {
        figure("arguments matched", percent(r), grade(r));
    }
    if let Some(r) = m.answer_rate {
        figure("answers passed", percent(r), grade(r));
    }
    for (name, r) in m.context.named() {
        if let Some(r) = r {
            figure(name, percent(r), grade(r));
        }
    }
    figure(
        "latency p50 / p95",
        format!("{} / {} ms", m.latency_p50_ms, m.latency_p95_ms),
        "",
    );
    figure("tokens", m.tokens.to_string(), "");
    figure("cost", money(m.cost_usd), "");
    figure(
        "failsafe re-asks",
        m.failsafe_reasks.to_string(),
        if m.failsafe_reasks > 0 { "warn" } else { "" },
    );
    figure(
        "dropped calls",
        m.dropped_calls.to_string(),
        if m.dropped_calls > 0 { "warn" } else { "" },
    );
    figure(
        "obligations forced",
        m.obligations_forced.to_string(),
        if m.obligations_forced > 0 { "warn" } else { "" },
    );
    out.push_str("</dl>\n");

    if !m.by_tag.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Routing accuracy by tag</h3>\n<table class=\"tags\" id=\"tags-{id}\">\n\
             <thead><tr><th>tag</th><th>accuracy</th><th>routed</th><th>cases</th></tr></thead>\n<tbody>"
        );
        for (tag, f) in &m.by_tag {
            let _ = writeln!(
                out,
                "<tr data-tag=\"{0}\"><td class=\"name\">{0}</td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
                escape(tag),
                percent(f.accuracy),
                f.routed,
                f.cases
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }

    if !m.specialists.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Specialists</h3>\n<table class=\"specialists\" id=\"specialists-{id}\">\n\
             <thead><tr><th>specialist</th><th>precision</th><th>recall</th><th>F1</th>\
             <th>true pos.</th><th>false pos.</th><th>false neg.</th></tr></thead>\n<tbody>"
        );
        for (name, f) in &m.specialists {
            let _ = writeln!(
                out,
                "<tr data-specialist=\"{0}\"><td class=\"name\">{0}</td><td>{1}</td><td>{2}</td>\
                 <td>{3:.2}</td><td>{4}</td><td>{5}</td><td>{6}</td></tr>",
                escape(name),
                percent(f.precision),
                percent(f.recall),
                f.f1,
                f.true_positives,
                f.false_positives,
                f.false_negatives
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }

    confusion(out, run, id);

    out.push_str("<h3>Intent switches</h3>\n");
    let low: Vec<_> = m
        .switch_pairs
        .iter()
        .filter(|(_, f)| f.accuracy < 1.0)
        .collect();
    if m.switch_pairs.is_empty() {
        out.push_str("<p class=\"note\">No switch cases.</p>\n");
    } else if low.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note\">All {} pairs routed.</p>",
            m.switch_pairs.len()
        );
    } else {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} of {} pairs below 100%:</p>\n<table class=\"switches\" id=\"switches-{id}\">\n\
             <thead><tr><th>from → to</th><th>accuracy</th><th>routed</th><th>cases</th></tr></thead>\n<tbody>",
            low.len(),
            m.switch_pairs.len()
        );
        for (pair, f) in low {
            let _ = writeln!(
                out,
                "<tr data-pair=\"{0}\"><td class=\"name\">{0}</td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
                escape(pair),
                percent(f.accuracy),
                f.routed,
                f.cases
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }

    let bad: Vec<&CaseResult> = run
        .results
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Passed))
        .collect();
    let _ = writeln!(
        out,
        "<h3>Failing and errored cases</h3>\n<div class=\"cases\" id=\"cases-{id}\">"
    );
    if bad.is_empty() {
        out.push_str("<p class=\"note\">Every case passed.</p>\n");
    }
    for result in bad {
        let case = suite.and_then(|s| s.cases.iter().find(|c| c.id == result.id));
        case_block(out, case, result);
    }
    out.push_str("</div>\n</section>\n");
}

/// The confusion matrix as a heat map: a cell's colour is its count over its row's total
/// (the share of that expected specialist's calls that went there), green on the diagonal
/// (right) and red off it (wrong); the diagonal is outlined even when empty.
fn confusion(out: &mut String, run: &SuiteRun, id: &str) {
    let c = &run.metrics.confusion;
    let _ = writeln!(
        out,
        "<h3>Confusion matrix</h3>\n<p class=\"note\">Rows: expected; columns: consulted; \
         <code>{}</code> is the Fastpath or a missed call.</p>\n\
         <table id=\"confusion-{id}\" class=\"confusion\">\n<thead><tr>\
         <th class=\"corner\">expected ↓ · consulted →</th>",
        escape(NOBODY)
    );
    for label in &c.labels {
        let _ = write!(
            out,
            "<th scope=\"col\" data-consulted=\"{0}\">{0}</th>",
            escape(label)
        );
    }
    out.push_str("<th scope=\"col\">total</th></tr></thead>\n<tbody>\n");
    for (i, (expected, row)) in c.labels.iter().zip(&c.cells).enumerate() {
        let total: usize = row.iter().sum();
        let _ = write!(
            out,
            "<tr data-expected=\"{0}\"><th scope=\"row\">{0}</th>",
            escape(expected)
        );
        for (j, &count) in row.iter().enumerate() {
            let consulted = c.labels.get(j).map_or("", String::as_str);
            let share = if total == 0 {
                0.0
            } else {
                count as f64 / total as f64
            };
            let diagonal = i == j;
            let mut class = String::from(if diagonal { "diagonal" } else { "off" });
            if share > 0.55 {
                // White text where the colour is dark enough to need it.
                class.push_str(" hot");
            }
            let _ = write!(
                out,
                "<td class=\"{class}\" data-expected=\"{}\" data-consulted=\"{}\" \
                 data-count=\"{count}\" style=\"background-color: {}\" \
                 title=\"expected {}, consulted {}: {count} of {total}\">{count}</td>",
                escape(expected),
                escape(consulted),
                heat(share, diagonal),
                escape(expected),
                escape(consulted),
            );
        }
        let _ = writeln!(out, "<td class=\"total\">{total}</td></tr>");
    }
    let _ = writeln!(
        out,
        "</tbody>\n</table>\n<p class=\"legend\">Colour: the cell's share of its row.\
         <span class=\"swatch\" style=\"background-color: {}\"></span>routed right\
         <span class=\"swatch\" style=\"background-color: {}\"></span>routed elsewhere</p>",
        heat(1.0, true),
        heat(1.0, false)
    );
}

/// The background of a cell holding `share` of its row: transparent at 0, then from a
/// visible tint to a strong colour.
fn heat(share: f64, diagonal: bool) -> String {
    if share <= 0.0 {
        return "transparent".to_owned();
    }
    let alpha = 0.12 + 0.78 * share.min(1.0);
    let (r, g, b) = if diagonal {
        (26, 127, 55)
    } else {
        (207, 34, 46)
    };
    format!("rgba({r}, {g}, {b}, {alpha:.2})")
}

fn case_block(out: &mut String, case: Option<&Case>, result: &CaseResult) {
    let (class, badge, reasons): (&str, &str, Vec<&str>) = match &result.verdict {
        Verdict::Passed => return,
        Verdict::Failed { reasons } => (
            "failed",
            "FAILED",
            reasons.iter().map(String::as_str).collect(),
        ),
        Verdict::Errored { error } => ("errored", "ERRORED", vec![error.as_str()]),
    };
    let _ = write!(
        out,
        "<article class=\"case {class}\" data-case=\"{0}\">\n<h4><span class=\"badge\">{badge}</span><code>{0}</code>",
        escape(&result.id)
    );
    for tag in &result.tags {
        let _ = write!(out, "<span class=\"tag\">{}</span>", escape(tag));
    }
    out.push_str("</h4>\n");
    if let Some(case) = case {
        let _ = writeln!(
            out,
            "<p class=\"turn\">Turn: <q>{}</q></p>",
            escape(&case.turn)
        );
    }
    out.push_str("<ul class=\"reasons\">\n");
    for reason in reasons {
        let _ = writeln!(out, "<li>{}</li>", escape(reason));
    }
    out.push_str("</ul>\n");
    let expected = if !result.expected.is_empty() {
        result.expected.join(", ")
    } else if case.is_some_and(|c| c.expect.route.is_none()) {
        "(no route expectation)".to_owned()
    } else {
        // The Fastpath: the orchestrator answers by itself.
        NOBODY.to_owned()
    };
    let consulted = match &result.observed {
        None => "(not observed)".to_owned(),
        Some(o) if o.consulted.is_empty() => NOBODY.to_owned(),
        Some(o) => o.consulted.join(", "),
    };
    let _ = writeln!(
        out,
        "<table class=\"route\"><tr><th>expected</th><td class=\"name expected\">{}</td></tr>\
         <tr><th>consulted</th><td class=\"name consulted\">{}</td></tr></table>",
        escape(&expected),
        escape(&consulted)
    );
    if let Some(o) = &result.observed
        && !o.args.is_empty()
    {
        let json = serde_json::to_string_pretty(&o.args).unwrap_or_default();
        let _ = writeln!(out, "<pre class=\"args\">{}</pre>", escape(&json));
    }
    out.push_str("</article>\n");
}

/// `text` safe in HTML text and in quoted attribute values: the five characters that can
/// end a text run or an attribute, or start markup or a character reference.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
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
suite: routing
cases:
  - id: coffee
    tags: [single]
    turn: find me coffee deals
    expect: { route: { agents: [shop] } }
  - id: "<script>alert('id')</script>"
    tags: [single, "<b>tag</b>"]
    turn: "<img src=x onerror=alert(1)> & more"
    expect:
      route: { agents: [shop] }
      args: { shop: { query: "something else" } }
  - id: points
    tags: [single]
    turn: my points
    expect: { route: { agents: [support] } }
  - id: hello
    tags: [fastpath]
    turn: hello
    expect: { route: fastpath }
  - id: down
    turn: hi
    expect: { route: fastpath }
"#;

    fn fixture() -> (Vec<Suite>, Vec<SuiteRun>) {
        let specialists: BTreeSet<String> = ["shop", "support"].map(String::from).into();
        let suite = load_suite("evals/routing.yaml", SUITE, &specialists).unwrap();
        let seen = |consulted: &[&str], args: serde_json::Value| Observation {
            consulted: consulted.iter().map(|s| (*s).to_owned()).collect(),
            args: serde_json::from_value(args).unwrap(),
            fastpath: consulted.is_empty(),
            latency_ms: 7,
            tokens: 120,
            cost_usd: 0.0015,
            ..Observation::default()
        };
        let results = vec![
            judge(&suite.cases[0], seen(&["shop"], json!({}))),
            judge(
                &suite.cases[1],
                seen(
                    &["shop"],
                    json!({ "shop": { "query": "</pre><script>alert(\"args\")</script>" } }),
                ),
            ),
            judge(&suite.cases[2], seen(&["shop"], json!({}))),
            judge(&suite.cases[3], seen(&[], json!({}))),
            CaseResult::errored(&suite.cases[4], "model <down> & \"out\""),
        ];
        let metrics = metrics(&suite.cases, &results, &specialists);
        let run = SuiteRun {
            suite: suite.name.clone(),
            file: suite.file.clone(),
            mode: EvalMode::Routing,
            duration_ms: 42,
            results,
            metrics,
            repeated: None,
        };
        (vec![suite], vec![run])
    }

    /// The text between `<tag` and its closing `</tag>` after `start` (no nesting of the
    /// same tag in this page).
    fn element<'a>(page: &'a str, start: &str, tag: &str) -> &'a str {
        let from = page
            .find(start)
            .unwrap_or_else(|| panic!("{start} not in the page"));
        let close = format!("</{tag}>");
        let to = page[from..].find(&close).expect("closed") + from;
        &page[from..to + close.len()]
    }

    #[test]
    fn escaping_covers_markup_quotes_and_ampersands() {
        assert_eq!(
            escape("<script>a & \"b\" 'c'</script>"),
            "&lt;script&gt;a &amp; &quot;b&quot; &#39;c&#39;&lt;/script&gt;"
        );
        assert_eq!(escape("&lt;"), "&amp;lt;");
        assert_eq!(escape("é → ok"), "é → ok");
    }

    #[test]
    fn no_case_text_reaches_the_page_as_markup() {
        let (suites, runs) = fixture();
        let page = render(&suites, &runs);
        // The only tags are the page's own: no script, no image, no bold from a case.
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<b>"), "{page}");
        assert_eq!(page.matches("</pre>").count(), 1, "{page}");
        assert!(page.contains("&lt;script&gt;alert(&#39;id&#39;)&lt;/script&gt;"));
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt; &amp; more"));
        assert!(page.contains("&lt;/pre&gt;&lt;script&gt;alert(\\&quot;args\\&quot;)"));
        assert!(page.contains("model &lt;down&gt; &amp; &quot;out&quot;"));
        assert!(page.contains("<span class=\"tag\">&lt;b&gt;tag&lt;/b&gt;</span>"));
        // Scripts are refused even if something slipped through.
        assert!(page.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
        assert!(!page.contains("src=\"http") && !page.contains("href="));
    }

    #[test]
    fn the_page_has_the_figures_and_the_tables_of_each_suite() {
        let (suites, runs) = fixture();
        let page = render(&suites, &runs);
        assert!(page.starts_with("<!doctype html>\n<html lang=\"en\">"));
        assert!(page.ends_with("</body>\n</html>\n"));
        assert_eq!(
            page.matches("<section").count(),
            page.matches("</section>").count()
        );
        let section = element(
            &page,
            "<section class=\"suite\" id=\"suite-routing\"",
            "section",
        );
        for figure in [
            "<dt>cases</dt><dd>5</dd>",
            "<dt>passed</dt><dd>2</dd>",
            "<dt>failed</dt><dd>2</dd>",
            "<dt>errored</dt><dd>1</dd>",
            "<dt>routing accuracy</dt><dd>60.0% (3/5)</dd>",
            "<dt>arguments matched</dt><dd>0.0%</dd>",
            "<dt>latency p50 / p95</dt><dd>7 / 7 ms</dd>",
            "<dt>tokens</dt><dd>480</dd>",
            "<dt>cost</dt><dd>$0.006000</dd>",
        ] {
            assert!(section.contains(figure), "{figure} missing:\n{section}");
        }
        let tags = element(section, "<table class=\"tags\"", "table");
        assert!(tags.contains("<td class=\"name\">single</td><td>66.7%</td><td>2</td><td>3</td>"));
        let specialists = element(section, "<table class=\"specialists\"", "table");
        assert_eq!(specialists.matches("<tr data-specialist=").count(), 2);
        assert!(specialists.contains(
            "<tr data-specialist=\"shop\"><td class=\"name\">shop</td><td>66.7%</td><td>100.0%</td><td>0.80</td><td>2</td><td>1</td><td>0</td></tr>"
        ));
        let cases = element(section, "<div class=\"cases\"", "div");
        assert_eq!(cases.matches("<article class=\"case failed\"").count(), 2);
        assert_eq!(cases.matches("<article class=\"case errored\"").count(), 1);
        assert!(!cases.contains("data-case=\"coffee\""));
        let points = element(cases, "data-case=\"points\"", "article");
        assert!(points.contains("<td class=\"name expected\">support</td>"));
        assert!(points.contains("<td class=\"name consulted\">shop</td>"));
        assert!(points.contains("<p class=\"turn\">Turn: <q>my points</q></p>"));
        let down = element(cases, "data-case=\"down\"", "article");
        assert!(down.contains("<td class=\"name expected\">(nobody)</td>"));
        assert!(down.contains("<td class=\"name consulted\">(not observed)</td>"));
        assert!(!down.contains("<pre"));
    }

    #[test]
    fn the_confusion_matrix_is_a_heat_map_scaled_by_row() {
        let (suites, runs) = fixture();
        let page = render(&suites, &runs);
        let table = element(
            &page,
            "<table id=\"confusion-routing\" class=\"confusion\">",
            "table",
        );
        let labels = &runs[0].metrics.confusion.labels;
        assert_eq!(labels, &["shop", "support", NOBODY]);
        assert_eq!(table.matches("<tr data-expected=").count(), labels.len());
        assert_eq!(
            table.matches("<td class=\"diagonal").count(),
            labels.len(),
            "{table}"
        );
        // shop's row: both shop cases went to shop.
        assert!(table.contains(
            "<td class=\"diagonal hot\" data-expected=\"shop\" data-consulted=\"shop\" data-count=\"2\" style=\"background-color: rgba(26, 127, 55, 0.90)\""
        ), "{table}");
        // support's row: its one case went to shop (red, full share), none to support.
        assert!(table.contains(
            "<td class=\"off hot\" data-expected=\"support\" data-consulted=\"shop\" data-count=\"1\" style=\"background-color: rgba(207, 34, 46, 0.90)\""
        ), "{table}");
        assert!(table.contains(
            "<td class=\"diagonal\" data-expected=\"support\" data-consulted=\"support\" data-count=\"0\" style=\"background-color: transparent\""
        ), "{table}");
        assert!(table.contains(">1</td><td class=\"total\">1</td></tr>"));
        assert_eq!(heat(0.5, false), "rgba(207, 34, 46, 0.51)");
    }

    #[test]
    fn switch_pairs_below_full_accuracy_are_listed() {
        let (suites, mut runs) = fixture();
        let pairs = &mut runs[0].metrics.switch_pairs;
        let figures = |routed: usize, cases: usize| crate::TagFigures {
            cases,
            routed,
            accuracy: routed as f64 / cases as f64,
        };
        pairs.insert("shop→support".into(), figures(1, 1));
        pairs.insert("support→<shop>".into(), figures(1, 2));
        let page = render(&suites, &runs);
        let table = element(&page, "<table class=\"switches\"", "table");
        assert_eq!(table.matches("<tr data-pair=").count(), 1);
        assert!(table.contains("<td class=\"name\">support→&lt;shop&gt;</td><td>50.0%</td>"));
        assert!(page.contains("<p class=\"note\">1 of 2 pairs below 100%:</p>"));
    }

    #[test]
    fn suite_names_become_distinct_ids() {
        let mut used = BTreeSet::new();
        assert_eq!(unique_id("routing", &mut used), "routing");
        assert_eq!(unique_id("routing", &mut used), "routing-2");
        assert_eq!(unique_id("my suite <1>", &mut used), "my-suite--1-");
        assert_eq!(unique_id("", &mut used), "suite");
    }
}
