//! Per-turn overhead of the Lambda handler path over the in-process engine.
//!
//! Both sides run the same turn (the shipped registry, a zero-latency scripted model, the
//! in-memory store) on one thread:
//!
//! - engine: `Runtime::run_turn`, every event read;
//! - handler: the function URL event's JSON parsed into a `LambdaRequest` (as the runtime
//!   does), lambda_http's `StreamAdapter` over the function's router (principal from the
//!   request context, body checks, SSE frames, the outgoing guard), every frame read, then
//!   the invocation's end (turn tracker, EMF flush into a sink).
//!
//! Run: `cargo bench -p baton-turn --bench handler_overhead` (release profile). Prints the
//! mean per turn of each side over interleaved rounds, and the difference.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_core::Principal;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::TurnRequest;
use baton_tests::fixtures::{SHOP_SCRIPT, event, registry_dir};
use baton_turn::{Adapters, Config, Function, LambdaPrincipal, ModelServing};
use futures::StreamExt;
use lambda_http::request::LambdaRequest;
use lambda_http::tower::Service;
use lambda_http::{Context, LambdaEvent, StreamAdapter};

const ROUNDS: usize = 10;
const TURNS_PER_ROUND: usize = 2_000;

async fn function() -> Function {
    let vars = [
        ("BATON_TABLE", "unused".to_owned()),
        ("BATON_BUCKET", "unused".to_owned()),
        ("BATON_REGISTRY", registry_dir().display().to_string()),
    ];
    let config = Config::from_lookup(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    })
    .unwrap();
    let model = Arc::new(ScriptedModel::from_yaml(SHOP_SCRIPT).unwrap());
    baton_turn::assemble(
        &config,
        Adapters {
            model: ModelServing::Override(model),
            store: Arc::new(HeapStore::new()),
            principals: Arc::new(LambdaPrincipal),
            memory: None,
        },
    )
    .await
    .unwrap()
}

async fn engine_turn(function: &Function) {
    let request = TurnRequest::new(
        Principal::new("arn:aws:iam::123456789012:user/alice").unwrap(),
        "find me coffee deals",
    );
    let mut stream = function.runtime.run_turn(request).await.unwrap();
    while let Some(event) = stream.next().await {
        black_box(event);
    }
}

/// One turn through the handler; returns the time spent ending the invocation.
async fn handler_turn(function: &Function, event: &[u8]) -> Duration {
    let payload: LambdaRequest = serde_json::from_slice(event).unwrap();
    let mut context = Context::default();
    context.request_id = "bench".into();
    let mut adapter = StreamAdapter::from(function.router.clone());
    let response = adapter
        .call(LambdaEvent::new(payload, context))
        .await
        .unwrap();
    assert_eq!(response.metadata_prelude.status_code, 200);
    let mut stream = response.stream;
    while let Some(frame) = stream.next().await {
        black_box(frame.unwrap());
    }
    let sink: baton_turn::MetricsSink = Arc::new(Mutex::new(std::io::sink()));
    let t = Instant::now();
    function.invocation_layer(sink).after("bench", 0).await;
    t.elapsed()
}

fn main() {
    let event = event("function-url-turn.json");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let function = function().await;
        // Warm both paths (allocator, lazy statics, caches).
        for _ in 0..TURNS_PER_ROUND {
            engine_turn(&function).await;
            handler_turn(&function, &event).await;
        }
        let mut engine = Duration::ZERO;
        let mut handler = Duration::ZERO;
        let mut ending = Duration::ZERO;
        for _ in 0..ROUNDS {
            let t = Instant::now();
            for _ in 0..TURNS_PER_ROUND {
                engine_turn(&function).await;
            }
            engine += t.elapsed();
            let t = Instant::now();
            for _ in 0..TURNS_PER_ROUND {
                ending += handler_turn(&function, &event).await;
            }
            handler += t.elapsed();
        }
        let turns = (ROUNDS * TURNS_PER_ROUND) as f64;
        let e = engine.as_secs_f64() * 1e6 / turns;
        let h = handler.as_secs_f64() * 1e6 / turns;
        println!("turns per side:          {}", ROUNDS * TURNS_PER_ROUND);
        println!("engine (in process):     {e:.1} us/turn");
        println!("lambda handler path:     {h:.1} us/turn");
        println!("handler overhead:        {:.1} us/turn", h - e);
        println!(
            "  of which invocation end (turn tracker, EMF lines): {:.1} us/turn",
            ending.as_secs_f64() * 1e6 / turns
        );
    });
}
