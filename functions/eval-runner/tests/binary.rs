//! The real `eval-runner` binary under a local Lambda Runtime API, with the Bedrock-wire
//! fake as the deployed models and the S3 server for the reports: CI's invocation runs the
//! shipped suite, writes both reports and answers the gate's verdict.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;
use std::time::Duration;

use baton_tests::fake_bedrock::{FakeRequest, Reply, ToolCall, WireToolChoice};
use baton_tests::fixtures;
use baton_tests::function_process::{BUCKET, Running, Services};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// A keyword router standing in for the orchestrator's model; a specialist just answers.
fn router(r: &FakeRequest) -> Reply {
    if !r.offers_tool("ask_shop") {
        return Reply::text("Here is my answer.");
    }
    if let Some(WireToolChoice::Tool(name)) = r.tool_choice() {
        return Reply::tool_uses([ToolCall::new(
            "tu-forced",
            &name,
            json!({"query": "as asked", "intent_count": 1}),
        )]);
    }
    let text = r.last_user_text().unwrap_or_default().to_lowercase();
    // Asking to remember or forget is the memory specialist's, whatever else it names.
    if ["remember", "forget"].iter().any(|w| text.contains(w)) {
        return Reply::tool_uses([ToolCall::new(
            "tu-0",
            "ask_memory",
            json!({"query": text, "intent_count": 1}),
        )]);
    }
    let mut agents = Vec::new();
    for (agent, words) in [
        ("support", &["receipt", "refund", "scan"][..]),
        (
            "rewards",
            &["balance", "points worth", "expiring", "how many points"][..],
        ),
        ("strategist", &["plan", "budget", "store brands"][..]),
        ("stores", &["open late", "opening hours"][..]),
        (
            "shop",
            &["deal", "coupon", "coffee", "cold brew", "snack"][..],
        ),
    ] {
        if words.iter().any(|w| text.contains(w)) {
            agents.push(agent);
        }
    }
    // A model that sees: a photo routes by what it shows when the words name no need (a
    // tall slip is a receipt, anything else a product).
    if agents.is_empty()
        && let Some((_, bytes)) = r.images().first()
        && let Ok(photo) = baton_core::picture::take(bytes, &Default::default())
    {
        agents.push(if photo.height > photo.width * 3 / 2 {
            "support"
        } else {
            "shop"
        });
    }
    if agents.is_empty() {
        return Reply::text("Hello! How can I help?");
    }
    // A photo alone is still a request: the query says what to look at.
    let text = if text.trim().is_empty() {
        "what the user's photo shows".to_owned()
    } else {
        text
    };
    let n = agents.len();
    Reply::tool_uses(agents.into_iter().enumerate().map(|(i, a)| {
        ToolCall::new(
            format!("tu-{i}"),
            format!("ask_{a}"),
            json!({"query": text, "intent_count": n}),
        )
    }))
}

#[tokio::test]
async fn ci_runs_the_suite_against_the_deployed_models_and_gets_the_gate_and_the_reports() {
    let services = Services::start(router).await;
    let api = FakeRuntimeApi::start().await.unwrap();
    let binary = Path::new(env!("CARGO_BIN_EXE_eval-runner"));
    let running = Running::spawn(binary, &services.env(), &api.address());

    api.push("ci-1", fixtures::event("eval-runner-ci.json"));
    let posted = api
        .next_post(WAIT)
        .await
        .unwrap_or_else(|| panic!("no answer; stdout: {:#?}", running.lines()));
    assert_eq!(
        posted.kind,
        PostKind::Response,
        "{:#?} {}",
        running.lines(),
        String::from_utf8_lossy(&posted.body())
    );
    let answer: Value = serde_json::from_slice(&posted.body()).unwrap();
    assert_eq!(answer["suites"][0]["suite"], "routing", "{answer}");
    assert_eq!(answer["suites"][0]["cases"], 60, "{answer}");
    assert_eq!(answer["passed"], true, "{answer}");
    assert_eq!(answer["report_html"], "evals/ci-1/report.html");

    // Both reports are in the bucket, the HTML with its confusion matrix.
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(services.dynamodb.sdk_config())
            .endpoint_url(&services.s3)
            .force_path_style(true)
            .build(),
    );
    let get = |key: &'static str| {
        let s3 = s3.clone();
        async move {
            let o = s3
                .get_object()
                .bucket(BUCKET)
                .key(key)
                .send()
                .await
                .unwrap();
            String::from_utf8(o.body.collect().await.unwrap().into_bytes().to_vec()).unwrap()
        }
    };
    let html = get("evals/ci-1/report.html").await;
    assert!(html.contains("id=\"confusion-routing\""), "{html}");
    let json: Value = serde_json::from_str(&get("evals/ci-1/report.json").await).unwrap();
    assert_eq!(json[0]["metrics"]["cases"], 60);
    // EMF metrics on stdout.
    let emf = running
        .wait_line(WAIT, |l| l.contains("eval_routing_accuracy"))
        .await;
    assert!(emf.contains("\"suite\":\"routing\""), "{emf}");

    // A request it does not understand fails the invocation with the reason.
    api.push("ci-2", br#"{"mode": "sideways"}"#.to_vec());
    let posted = api.next_post(WAIT).await.unwrap();
    assert_eq!(posted.kind, PostKind::Error);
    assert!(String::from_utf8_lossy(&posted.body()).contains("sideways"));
}
