//! Figures for the `turn` binary under a local Lambda Runtime API: cold start and peak
//! memory. Not a test: it prints measurements.
//!
//! ```text
//! cargo build --release -p baton-turn --bin turn
//! cargo run --release -p baton-tests --example turn_figures [-- <path to turn> [starts] [turns]]
//! ```
//!
//! - cold start: `init_us` as the binary logs it (from `main` to registry validated and
//!   clients built, before the connection warm-up), and from process spawn to the binary's
//!   first request for an event (everything, warm-up against the local emulators included);
//! - memory: `VmHWM` (peak RSS) and `VmRSS` from `/proc/<pid>/status` after each batch of
//!   turns, each turn a new episode through DynamoDB Local and the Bedrock-wire fake.
//!
//! Needs DynamoDB Local (`BATON_TEST_DYNAMODB`, or `./infra/emulators.sh install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton_tests::fixtures::event;
use baton_tests::function_process::{Running, Services, shop_answers};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let binary = args.get(1).map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap();
        // <target>/<profile>/examples/turn_figures
        exe.parent().and_then(Path::parent).unwrap().join("turn")
    });
    let starts: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let turns: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(50);
    println!("binary: {}", binary.display());

    let services = Services::start(shop_answers).await;
    let mut vars = services.env();
    // As the template sets it.
    vars.push((
        "BATON_MODEL_IDS".into(),
        "claude-haiku=us.anthropic.claude-haiku-4-5-20251001-v1:0,\
         claude-sonnet=us.anthropic.claude-sonnet-4-5-20250929-v1:0,\
         nova-micro=us.amazon.nova-micro-v1:0"
            .into(),
    ));

    // Cold starts: a fresh process each time.
    let mut init_ms = Vec::new();
    let mut ready_ms = Vec::new();
    for _ in 0..starts {
        let api = FakeRuntimeApi::start().await.unwrap();
        let started = Instant::now();
        let running = Running::spawn(&binary, &vars, &api.address());
        assert!(api.wait_for_next_calls(1, WAIT).await, "never ready");
        ready_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        // The init line is written before the warm-up, so it is there by now.
        let init = running
            .lines()
            .iter()
            .find_map(|l| serde_json::from_str::<Value>(l).ok()?["init_us"].as_u64())
            .expect("an init_us line");
        init_ms.push(init as f64 / 1000.0);
    }
    println!(
        "cold start over {starts} starts: init (main -> registry validated, clients built) median {:.2} ms, min {:.2} ms; spawn -> first /next (incl. warm-up) median {:.1} ms",
        median(init_ms.clone()),
        init_ms.iter().copied().fold(f64::MAX, f64::min),
        median(ready_ms),
    );

    // Memory over turns in one process.
    let api = FakeRuntimeApi::start().await.unwrap();
    let running = Running::spawn(&binary, &vars, &api.address());
    assert!(api.wait_for_next_calls(1, WAIT).await);
    let pid = running.pid();
    println!(
        "after init: VmRSS {} kB, VmHWM {} kB",
        status_kb(pid, "VmRSS:"),
        status_kb(pid, "VmHWM:")
    );
    let mut sample: Value = serde_json::from_slice(&event("function-url-turn.json")).unwrap();
    for i in 1..=turns {
        sample["body"] = json!({"message": "find me coffee deals", "turn_id": format!("t-{i}")})
            .to_string()
            .into();
        api.push(&format!("req-{i}"), serde_json::to_vec(&sample).unwrap());
        let posted = api.next_post(WAIT).await.expect("an answer");
        assert_eq!(posted.kind, PostKind::Response);
        assert!(String::from_utf8_lossy(&posted.body()).contains("event: completed"));
        if i == 1 || i % 10 == 0 || i == turns {
            // The invocation is over once the binary asks for the next event.
            assert!(api.wait_for_next_calls(i + 1, WAIT).await);
            println!(
                "after {i} turns: VmRSS {} kB, VmHWM {} kB",
                status_kb(pid, "VmRSS:"),
                status_kb(pid, "VmHWM:")
            );
        }
    }
}
