//! The provider's parsing cost per streamed token: whole answers decoded by the same path a
//! live stream takes (SSE events, chunk JSON, assembly into normalized events), without
//! the network. One chunk carries one token, as OpenAI-compatible servers send them.
//!
//! `cargo bench -p baton-openai --bench stream_decode`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// Tokens per answer.
const TOKENS: usize = 1_000;

/// A text answer in llama.cpp's shape (one content delta per chunk), split into network
/// reads of about 1.4 kB.
fn text_answer() -> Vec<Bytes> {
    let mut body = String::new();
    for i in 0..TOKENS {
        body.push_str(&format!(
            "data: {{\"id\": \"chatcmpl-1\", \"model\": \"m\", \"created\": 1795500000, \"object\": \"chat.completion.chunk\", \"choices\": [{{\"index\": 0, \"delta\": {{\"content\": \" word{i}\"}}, \"logprobs\": null, \"finish_reason\": null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"id\": \"chatcmpl-1\", \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\ndata: [DONE]\n\n");
    reads(body)
}

/// A tool call whose arguments arrive one token a chunk, in vLLM's shape.
fn tool_answer() -> Vec<Bytes> {
    let mut body = String::from(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"index\":0,\"function\":{\"name\":\"ask_rewards\"}}]},\"finish_reason\":null}]}\n\n",
    );
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"request\\\": \\\"\"}}]},\"finish_reason\":null}]}\n\n");
    for i in 0..TOKENS {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"w{i} \"}}}}]}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    reads(body)
}

fn reads(body: String) -> Vec<Bytes> {
    let bytes = Bytes::from(body);
    (0..bytes.len())
        .step_by(1_400)
        .map(|at| bytes.slice(at..(at + 1_400).min(bytes.len())))
        .collect()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.measurement_time(Duration::from_secs(5));
    for (name, answer) in [("text", text_answer()), ("tool_call", tool_answer())] {
        let events = rt.block_on(baton_openai::decode(answer.clone())).unwrap();
        assert!(events.len() > TOKENS, "{name}: {} events", events.len());
        group.bench_with_input(BenchmarkId::new(name, TOKENS), &answer, |b, answer| {
            b.iter(|| rt.block_on(baton_openai::decode(answer.clone())).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
