//! Time to first token and tokens per second through Baton's OpenAI-compatible provider
//! against the same server read raw, in the same run (`--local-model URL`, e.g. llama.cpp's
//! server started by `./infra/bench.sh local-model`).
//!
//! Each round sends the identical request twice, alternating which goes first: once with
//! a bare reqwest client reading the SSE lines itself (the floor), once through
//! `OpenAiCompatible` (HTTP, the event parser, chunk assembly, normalized events). At
//! temperature 0 both get the same tokens, and the run checks they received the same text.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::message::Message;
use baton_core::ports::model::{
    CallPurpose, Inference, Model as _, ModelEvent, ModelRequest, SystemBlock, ToolChoice,
};
use baton_core::registry::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices};
use baton_openai::OpenAiCompatible;
use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::stats::{median, spread};

const SYSTEM: &str = "You are a helpful assistant for a shopping rewards app.";
const PROMPT: &str = "Explain in a few sentences how earning points on receipts works.";
const MAX_TOKENS: u32 = 96;

/// One answer as a client saw it.
struct Read {
    ttft: Duration,
    total: Duration,
    tokens: usize,
    text: String,
}

impl Read {
    /// Tokens per second after the first (generation speed, as the user sees it).
    fn rate(&self) -> f64 {
        let after = self.total.saturating_sub(self.ttft).as_secs_f64();
        if self.tokens < 2 || after <= 0.0 {
            0.0
        } else {
            (self.tokens - 1) as f64 / after
        }
    }
}

/// Runs `rounds` rounds against the server at `base_url` (serving `model`).
pub(crate) async fn run(base_url: &str, model: &str, rounds: usize) -> anyhow::Result<Value> {
    let spec = ModelSpec {
        key: "bench".into(),
        provider: baton_openai::PROVIDER.into(),
        model_id: model.into(),
        context_window: 8_192,
        prices: Prices::default(),
        capabilities: ModelCapabilities::default(),
        endpoint: Some(ModelEndpoint {
            base_url: base_url.trim_end_matches('/').into(),
            api_key_env: None,
        }),
    };
    let baton = OpenAiCompatible::serving_every_card(&spec)?;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    // The body Baton sends for this request, byte for byte the same keys.
    let body = json!({
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
    });
    // Warm both paths (the server's prompt cache, the connection pools).
    raw(&client, &url, &body).await?;
    through_baton(&baton, model).await?;
    let (mut raw_reads, mut baton_reads) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            raw_reads.push(raw(&client, &url, &body).await?);
            baton_reads.push(through_baton(&baton, model).await?);
        } else {
            baton_reads.push(through_baton(&baton, model).await?);
            raw_reads.push(raw(&client, &url, &body).await?);
        }
    }
    for (r, b) in raw_reads.iter().zip(&baton_reads) {
        if r.text != b.text {
            bail!(
                "the raw client and Baton received different text:\n{:?}\n{:?}",
                r.text,
                b.text
            );
        }
    }
    let ms = |reads: &[Read], f: fn(&Read) -> Duration| -> Vec<f64> {
        reads.iter().map(|r| f(r).as_secs_f64() * 1000.0).collect()
    };
    let rates = |reads: &[Read]| -> Vec<f64> { reads.iter().map(Read::rate).collect() };
    let (raw_ttft, baton_ttft) = (ms(&raw_reads, |r| r.ttft), ms(&baton_reads, |r| r.ttft));
    let (raw_rate, baton_rate) = (rates(&raw_reads), rates(&baton_reads));
    // Paired differences: each round's two reads ran back to back.
    let ttft_added: Vec<f64> = baton_ttft
        .iter()
        .zip(&raw_ttft)
        .map(|(b, r)| b - r)
        .collect();
    Ok(json!({
        "server": base_url,
        "model": model,
        "rounds": rounds,
        "tokens_per_answer": raw_reads.first().map(|r| r.tokens),
        "raw": {"ttft_ms": spread(&raw_ttft), "tokens_per_s": spread(&raw_rate)},
        "baton": {"ttft_ms": spread(&baton_ttft), "tokens_per_s": spread(&baton_rate)},
        "ttft_added_ms_median": median(&ttft_added),
        "throughput_ratio": median(&baton_rate) / median(&raw_rate),
        "same_text": true,
    }))
}

/// The table for a run's results.
pub(crate) fn table(v: &Value) -> String {
    let f = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(f64::NAN);
    format!(
        "local model {} at {} ({} rounds, {} tokens an answer, same text both ways)\n\
         {:<28}{:>12}{:>12}\n{:<28}{:>12.2}{:>12.2}\n{:<28}{:>12.1}{:>12.1}\n\
         time to first token added by Baton (median of paired rounds): {:.3} ms\n\
         throughput through Baton / raw: {:.4}\n",
        v["model"].as_str().unwrap_or_default(),
        v["server"].as_str().unwrap_or_default(),
        v["rounds"],
        v["tokens_per_answer"],
        "",
        "raw",
        "Baton",
        "time to first token (ms)",
        f("/raw/ttft_ms/median"),
        f("/baton/ttft_ms/median"),
        "tokens/s after the first",
        f("/raw/tokens_per_s/median"),
        f("/baton/tokens_per_s/median"),
        f("/ttft_added_ms_median"),
        f("/throughput_ratio"),
    )
}

/// The bare client: the request, then `data:` lines until `[DONE]`.
async fn raw(client: &reqwest::Client, url: &str, body: &Value) -> anyhow::Result<Read> {
    let started = Instant::now();
    let response = client
        .post(url)
        .json(body)
        .send()
        .await?
        .error_for_status()?;
    let mut bytes = response.bytes_stream();
    let (mut buf, mut text, mut tokens, mut ttft) = (Vec::new(), String::new(), 0, None);
    'read: while let Some(piece) = bytes.next().await {
        buf.extend_from_slice(&piece?);
        while let Some(at) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=at).collect();
            let Some(data) = line.strip_prefix(b"data: ") else {
                continue;
            };
            let data = std::str::from_utf8(data)?.trim();
            if data == "[DONE]" {
                break 'read;
            }
            let chunk: Value = serde_json::from_str(data)?;
            if let Some(t) = chunk
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                && !t.is_empty()
            {
                ttft.get_or_insert_with(|| started.elapsed());
                tokens += 1;
                text.push_str(t);
            }
        }
    }
    Ok(Read {
        ttft: ttft.context("the raw answer had no text")?,
        total: started.elapsed(),
        tokens,
        text,
    })
}

/// The same request through Baton's provider.
async fn through_baton(model: &OpenAiCompatible, id: &str) -> anyhow::Result<Read> {
    let request = ModelRequest {
        agent_id: "bench".into(),
        model_id: id.into(),
        purpose: CallPurpose::Route,
        system: vec![SystemBlock {
            text: SYSTEM.into(),
            cache_point: true,
        }],
        messages: vec![Message::user(PROMPT)],
        tools: std::sync::Arc::from(Vec::new()),
        tool_choice: ToolChoice::Auto,
        inference: Inference {
            max_output_tokens: Some(MAX_TOKENS),
            temperature: Some(0.0),
            ..Inference::default()
        },
    };
    let started = Instant::now();
    let mut events = model.stream(&request);
    let (mut text, mut tokens, mut ttft) = (String::new(), 0, None);
    while let Some(event) = events.next().await {
        if let ModelEvent::TextDelta(t) = event? {
            ttft.get_or_insert_with(|| started.elapsed());
            tokens += 1;
            text.push_str(&t);
        }
    }
    Ok(Read {
        ttft: ttft.context("Baton's answer had no text")?,
        total: started.elapsed(),
        tokens,
        text,
    })
}
