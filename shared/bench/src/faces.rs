//! What a protocol face adds to a turn, against `baton serve`: the reference turn asked
//! through `/v1/turns` and through each face (chat completions, AG-UI, A2A, MCP), one after the other on one keep-alive
//! connection, in alternating blocks. The server's CPU comes from its threads' own
//! counters (`/proc/PID/task/*/schedstat`, nanoseconds), so the client's work is not in
//! it. Every turn's text is checked against the workload's, whatever the face.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::inproc::expected_texts;
use crate::serve_load::start;
use crate::stats::{median, percentile};
use crate::workload::{self, Latencies, SINGLE_PROMPT};

/// Numbers AG-UI runs and threads, and A2A messages, apart.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// CPU time of every thread of process `pid` so far.
fn server_cpu(pid: u32) -> anyhow::Result<Duration> {
    let mut ns: u64 = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(Duration::from_nanos(ns))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Face {
    Turns,
    ChatCompletions,
    AgUi,
    A2a,
    Mcp,
}

impl Face {
    fn name(self) -> &'static str {
        match self {
            Face::Turns => "turns",
            Face::ChatCompletions => "chat_completions",
            Face::AgUi => "ag_ui",
            Face::A2a => "a2a",
            Face::Mcp => "mcp",
        }
    }
}

/// The answer text a client of `face` reads from a whole response body.
fn text_of(face: Face, body: &str) -> anyhow::Result<String> {
    let mut text = String::new();
    for data in body.lines().filter_map(|l| l.strip_prefix("data:")) {
        let data = data.trim_start();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(data).context("a frame that is not JSON")?;
        let piece = match face {
            Face::Turns => match v["type"].as_str() {
                Some("text") | Some("delegated_text") => v["text"].as_str(),
                _ => None,
            },
            Face::ChatCompletions => v["choices"][0]["delta"]["content"].as_str(),
            Face::AgUi => match v["type"].as_str() {
                Some("TEXT_MESSAGE_CONTENT") => v["delta"].as_str(),
                _ => None,
            },
            Face::A2a => {
                let parts = v["result"]["artifactUpdate"]["artifact"]["parts"].as_array();
                for part in parts.into_iter().flatten() {
                    text.push_str(part["text"].as_str().unwrap_or_default());
                }
                None
            }
            // The answer comes whole, in the call's result.
            Face::Mcp => v["result"]["content"][0]["text"].as_str(),
        };
        text.push_str(piece.unwrap_or_default());
    }
    Ok(text)
}

/// One turn through `face`: time to the first byte of the body, and the text.
async fn turn(
    client: &reqwest::Client,
    base: &str,
    face: Face,
) -> anyhow::Result<(Duration, String)> {
    let t0 = Instant::now();
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let request = match face {
        Face::Turns => client
            .post(format!("{base}/v1/turns"))
            .json(&json!({ "message": SINGLE_PROMPT })),
        Face::ChatCompletions => client
            .post(format!("{base}/v1/chat/completions"))
            .json(&json!({
                "model": "baton",
                "stream": true,
                "messages": [{ "role": "user", "content": SINGLE_PROMPT }],
            })),
        // A new thread a run, as the other faces start a new episode a turn.
        Face::AgUi => client.post(format!("{base}/v1/agui")).json(&json!({
            "threadId": format!("bench-thread-{run}"),
            "runId": format!("bench-run-{run}"),
            "messages": [{ "id": "m", "role": "user", "content": SINGLE_PROMPT }],
        })),
        // A new context a message, likewise.
        Face::A2a => client.post(format!("{base}/a2a")).json(&json!({
            "jsonrpc": "2.0", "id": run, "method": "SendStreamingMessage",
            "params": { "message": {
                "messageId": format!("bench-message-{run}"), "role": "ROLE_USER",
                "parts": [{ "text": SINGLE_PROMPT }],
            } },
        })),
        Face::Mcp => client
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({
                "jsonrpc": "2.0", "id": run, "method": "tools/call",
                "params": { "name": "ask", "arguments": { "message": SINGLE_PROMPT } },
            })),
    };
    let response = request.header("x-baton-principal", "bench").send().await?;
    if !response.status().is_success() {
        bail!("{} answered {}", face.name(), response.status());
    }
    let mut body = response.bytes_stream();
    let mut bytes = Vec::new();
    let mut first = None;
    while let Some(chunk) = body.next().await {
        first.get_or_insert_with(|| t0.elapsed());
        bytes.extend_from_slice(&chunk?);
    }
    let text = text_of(face, &String::from_utf8_lossy(&bytes))?;
    Ok((first.unwrap_or_default(), text))
}

/// `rounds` rounds of `n` single-intent turns through each face, the order rotating.
pub(crate) async fn overhead(
    baton: &Path,
    dir: &Path,
    n: usize,
    rounds: usize,
) -> anyhow::Result<Value> {
    workload::write(dir, workload::FAITHFUL, Latencies::default())?;
    let expected = expected_texts(workload::FAITHFUL, SINGLE_PROMPT);
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir, data.path()).await?;
    let pid = server.child.id();
    let client = reqwest::Client::new();
    let faces = [
        Face::Turns,
        Face::ChatCompletions,
        Face::AgUi,
        Face::A2a,
        Face::Mcp,
    ];
    // Warm-up: connections, caches, the store's first pages.
    for face in faces {
        for _ in 0..50 {
            turn(&client, &server.base, face).await?;
        }
    }
    let mut cpu: [Vec<f64>; 5] = Default::default();
    let mut ttfb: [Vec<f64>; 5] = Default::default();
    for round in 0..rounds {
        // Each round starts with another face.
        let order: Vec<usize> = (0..faces.len())
            .map(|i| (i + round) % faces.len())
            .collect();
        for i in order {
            let face = faces[i];
            let before = server_cpu(pid)?;
            for _ in 0..n {
                let (first, text) = turn(&client, &server.base, face).await?;
                if !expected.contains(&text) {
                    bail!(
                        "{} gave {text:?}; expected {:?}",
                        face.name(),
                        expected.first()
                    );
                }
                ttfb[i].push(first.as_secs_f64() * 1000.0);
            }
            let used = server_cpu(pid)?.saturating_sub(before);
            cpu[i].push(used.as_secs_f64() * 1000.0 / n as f64);
        }
    }
    let report = |i: usize| {
        json!({
            "server_cpu_ms_per_turn_median": median(&cpu[i]),
            "server_cpu_ms_per_turn_over_rounds": cpu[i],
            "ttfb_ms_p50": percentile(&ttfb[i], 50.0),
            "ttfb_ms_p99": percentile(&ttfb[i], 99.0),
        })
    };
    let base = median(&cpu[0]);
    let added = |i: usize| {
        if base > 0.0 {
            (median(&cpu[i]) - base) / base * 100.0
        } else {
            0.0
        }
    };
    Ok(json!({
        "what": "the single-intent reference turn against baton serve, sequential on one keep-alive connection, the server's CPU from /proc/PID/task/*/schedstat",
        "turns_per_block": n,
        "rounds": rounds,
        "turns": report(0),
        "chat_completions": report(1),
        "ag_ui": report(2),
        "a2a": report(3),
        "mcp": report(4),
        "chat_completions_added_cpu_percent": added(1),
        "ag_ui_added_cpu_percent": added(2),
        "a2a_added_cpu_percent": added(3),
        "mcp_added_cpu_percent": added(4),
    }))
}
