//! `baton eval --html --junit`: the files written for the shipped suite agree with the
//! JSON report of the same run, and the HTML page, opened in headless Chromium (driven
//! through chromedriver, as the web console's test does), shows the confusion matrix as a
//! table with one row per label and the run's counts on its diagonal. A hostile suite's
//! `<script>` shows as text and adds nothing to the page.
//!
//! The browser comes from `browser.rs`, shared with the console test.

use std::path::Path;

use fantoccini::Locator;
use serde_json::{Value, json};

use crate::browser::{eval, with_browser};
use crate::support::*;

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

// ---- the reports ---------------------------------------------------------------------------

/// The number of `attribute="…"` on the first `<element ` of `xml`.
fn xml_count(xml: &str, element: &str, attribute: &str) -> u64 {
    let start = xml
        .find(&format!("<{element} "))
        .unwrap_or_else(|| panic!("no <{element}> in {xml}"));
    let tag = &xml[start..start + xml[start..].find('>').unwrap()];
    let key = format!(" {attribute}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {attribute} in {tag}"))
        + key.len();
    let value = &tag[at..at + tag[at..].find('"').unwrap()];
    value
        .parse()
        .unwrap_or_else(|e| panic!("{attribute}={value:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_reports_confusion_matrix_and_the_junit_counts_match_the_json_report() {
    let sandbox = Sandbox::new();
    let html = sandbox.path().join("report.html");
    let junit = sandbox.path().join("report.xml");
    // One run writes all three, so they describe the same results.
    let run = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        &format!("{}/evals/routing.yaml", registry()),
        "--json",
        "--html",
        html.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert!(matches!(run.code, 0 | 3), "{run:?}");
    let runs: Value = serde_json::from_str(&run.stdout).unwrap();
    let suite = &runs[0];
    assert_eq!(suite["suite"], "routing", "{suite}");
    let m = &suite["metrics"];
    let (cases, failed, errored) = (
        m["cases"].as_u64().unwrap(),
        m["failed"].as_u64().unwrap(),
        m["errored"].as_u64().unwrap(),
    );
    assert_eq!(cases, 60, "{m}");

    // JUnit: the same counts, overall and for the suite, one testcase per case.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert!(xml.trim_end().ends_with("</testsuites>"));
    for element in ["testsuites", "testsuite"] {
        assert_eq!(xml_count(&xml, element, "tests"), cases, "{element}");
        assert_eq!(xml_count(&xml, element, "failures"), failed, "{element}");
        assert_eq!(xml_count(&xml, element, "errors"), errored, "{element}");
    }
    assert_eq!(xml.matches("<testcase ").count() as u64, cases);
    assert_eq!(xml.matches("<failure ").count() as u64, failed);
    assert_eq!(xml.matches("<error ").count() as u64, errored);
    assert!(xml.contains("<property name=\"mode\" value=\"routing\"/>"));

    // The confusion matrix of the JSON report.
    let labels: Vec<String> = m["confusion"]["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    let mut specialists = labels.clone();
    specialists.sort();
    assert_eq!(
        specialists,
        [
            "(nobody)",
            "memory",
            "rewards",
            "shop",
            "stores",
            "strategist",
            "support"
        ],
        "the shipped orchestrator's six specialists and (nobody)"
    );
    let diagonal: Vec<u64> = m["confusion"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, row)| row[i].as_u64().unwrap())
        .collect();
    assert!(diagonal.iter().sum::<u64>() > 0, "{m}");

    with_browser(|client| async move {
        client.goto(&file_url(&html)).await.unwrap();
        let table = client
            .find(Locator::Css("table#confusion-routing.confusion"))
            .await
            .unwrap_or_else(|e| panic!("no confusion matrix table: {e}"));
        assert!(table.is_displayed().await.unwrap());
        let view = eval(
            &client,
            r#"(() => {
                const table = document.getElementById('confusion-routing');
                const rows = [...table.tBodies[0].rows];
                const cell = (e, c) => [...table.querySelectorAll('td')]
                    .find((td) => td.dataset.expected === e && td.dataset.consulted === c);
                const labels = arguments[0];
                const off = cell(labels[0], labels[1]);
                return {
                    rows: rows.map((r) => r.dataset.expected),
                    headers: rows.map((r) => r.cells[0].textContent),
                    diagonal: labels.map((l) => {
                        const td = cell(l, l);
                        return td ? Number(td.textContent) : null;
                    }),
                    diagonal_outlined: labels.map((l) =>
                        getComputedStyle(cell(l, l)).outlineStyle),
                    off_outline: getComputedStyle(off).outlineStyle,
                    scripts: document.scripts.length,
                };
            })()"#,
            vec![json!(labels)],
        )
        .await;
        // One row per label, in the report's order, each headed by its label.
        assert_eq!(view["rows"], json!(labels), "{view:#}");
        assert_eq!(view["headers"], json!(labels), "{view:#}");
        // The diagonal carries the run's counts and stands out from the other cells.
        assert_eq!(view["diagonal"], json!(diagonal), "{view:#}");
        assert_eq!(
            view["diagonal_outlined"],
            json!(vec!["solid"; labels.len()]),
            "{view:#}"
        );
        assert_eq!(view["off_outline"], "none", "{view:#}");
        assert_eq!(view["scripts"], 0);

        // A cell with calls is coloured; an empty one is not.
        let colours = eval(
            &client,
            r#"(() => [...document.querySelectorAll('#confusion-routing td[data-count]')]
                .map((td) => [Number(td.dataset.count), getComputedStyle(td).backgroundColor]))()"#,
            Vec::new(),
        )
        .await;
        for pair in colours.as_array().unwrap() {
            let (count, colour) = (pair[0].as_u64().unwrap(), pair[1].as_str().unwrap());
            let transparent = colour == "rgba(0, 0, 0, 0)";
            assert_eq!(count == 0, transparent, "{pair}");
        }

        // The failing cases are listed, as many as the JSON has.
        let listed = eval(
            &client,
            "document.querySelectorAll('#cases-routing article.case').length",
            Vec::new(),
        )
        .await;
        assert_eq!(listed, json!(failed + errored));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suites_markup_shows_as_text_and_adds_nothing_to_the_page() {
    const TURN: &str = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\"> find me coffee deals";
    let sandbox = Sandbox::new();
    let suite = sandbox.path().join("hostile.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: \"xss <b>bold</b>\"\ncases:\n  - id: \"<script>window.pwned = 3</script>\"\n    \
             tags: [\"<i>tag</i>\"]\n    turn: {}\n    expect:\n      route: {{ agents: [shop] }}\n      \
             args: {{ shop: {{ query: \"</pre><script>window.pwned = 4</script>\" }} }}\n",
            serde_json::to_string(TURN).unwrap()
        ),
    )
    .unwrap();
    let html = sandbox.path().join("report.html");
    let junit = sandbox.path().join("report.xml");
    let run = sandbox.run(&[
        "eval",
        "--registry",
        registry(),
        suite.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 3, "the case fails on its arguments: {run:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(!xml.contains("<script") && !xml.contains("<img"), "{xml}");
    assert!(xml.contains("name=\"&lt;script&gt;window.pwned = 3&lt;/script&gt;\""));

    with_browser(|client| async move {
        client.goto(&file_url(&html)).await.unwrap();
        let view = eval(
            &client,
            r#"(() => {
                const article = document.querySelector('article.case');
                return {
                    pwned: window.pwned === undefined ? null : window.pwned,
                    injected: document.querySelectorAll('script, img, b, i').length,
                    table: document.querySelector('table.confusion').id,
                    title: document.querySelector('section.suite h2').textContent,
                    id: article.dataset.case,
                    heading: article.querySelector('h4 code').textContent,
                    tag: article.querySelector('.tag').textContent,
                    turn: article.querySelector('.turn q').textContent,
                    reasons: [...article.querySelectorAll('.reasons li')].map((li) => li.textContent),
                    args: article.querySelector('pre.args') ? article.querySelector('pre.args').textContent : null,
                };
            })()"#,
            Vec::new(),
        )
        .await;
        assert_eq!(view["pwned"], Value::Null, "{view:#}");
        assert_eq!(view["injected"], 0, "{view:#}");
        assert_eq!(view["table"], "confusion-xss--b-bold--b-", "{view:#}");
        assert_eq!(view["title"], "Suite xss <b>bold</b>", "{view:#}");
        assert_eq!(view["id"], "<script>window.pwned = 3</script>", "{view:#}");
        assert_eq!(view["heading"], view["id"], "{view:#}");
        assert_eq!(view["tag"], "<i>tag</i>", "{view:#}");
        assert_eq!(view["turn"], TURN, "{view:#}");
        // The offline model asks shop with the verbatim turn (the guards keep it), so the
        // reason and the arguments both carry the markup, as text.
        let reasons = view["reasons"].as_array().unwrap();
        assert!(
            reasons.iter().any(|r| {
                let r = r.as_str().unwrap();
                r.starts_with("args: shop.query differs")
                    && r.contains("<script>window.pwned = 1</script><img src=x onerror=")
            }),
            "{view:#}"
        );
        let args: Value = serde_json::from_str(view["args"].as_str().unwrap()).unwrap();
        assert_eq!(args["shop"]["query"], TURN, "{view:#}");
    })
    .await;
}
