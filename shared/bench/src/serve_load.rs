//! Against the real server: `baton serve` started as a child process, driven over HTTP
//! from this process. Cold start (spawn → `/healthz` answers) and resident memory idle
//! and while holding many concurrent streaming turns.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::stats::{median, rss_mib, rss_parts_mib};
use crate::workload::SINGLE_PROMPT;
use crate::workload::{self, Latencies, MIXED_PROMPT};

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Spawns `baton serve` on a free loopback port; returns when `/healthz` answers.
pub(crate) async fn start(
    baton: &Path,
    dir: &Path,
    data: &Path,
) -> anyhow::Result<(Server, Duration)> {
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    let child = Command::new(baton)
        .arg("serve")
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--registry")
        .arg(dir)
        .arg("--model")
        .arg(format!("scripted:{}", dir.join("script.yaml").display()))
        .arg("--data-dir")
        .arg(data)
        .env("BATON_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", baton.display()))?;
    let server = Server {
        child,
        base: base.clone(),
    };
    loop {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            return Ok((server, t0.elapsed()));
        }
        if t0.elapsed() > Duration::from_secs(10) {
            bail!("baton serve did not become ready within 10 s");
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

/// Process start to ready (registry loaded and validated, store opened, listening).
pub(crate) async fn cold_start(baton: &Path, dir: &Path, runs: usize) -> anyhow::Result<Value> {
    workload::write(dir, "mediated", Latencies::default())?;
    let mut ready = Vec::new();
    let mut rss = Vec::new();
    for i in 0..=runs {
        let data = tempfile::tempdir()?;
        let (server, took) = start(baton, dir, data.path()).await?;
        if i == 0 {
            continue; // warms the page cache
        }
        ready.push(took.as_secs_f64() * 1000.0);
        if let Some((now, _)) = rss_mib(server.child.id()) {
            rss.push(now);
        }
    }
    Ok(json!({
        "what": "spawn `baton serve` -> GET /healthz answers (registry loaded and validated, store opened, socket bound); polled every 0.5 ms",
        "runs": runs,
        "ready_ms_median": median(&ready),
        "ready_ms": ready,
        "rss_idle_mib_median": median(&rss),
    }))
}

/// `n` concurrent streaming mixed turns held open by slow model calls.
pub(crate) async fn streams(baton: &Path, dir: &Path, n: usize) -> anyhow::Result<Value> {
    let hold = Latencies {
        orchestrator: 500,
        shopping: 1000,
        support: 2000,
    };
    workload::write(dir, workload::FAITHFUL, hold)?;
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir, data.path()).await?;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let idle_parts = rss_parts_mib(pid);

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let url = format!("{}/v1/turns", server.base);
    // Idle again after one turn, once it has settled as long as after the load: what the
    // load leaves behind is measured against this, not against a server that has not yet
    // run a turn's code or filled its caches.
    if !one_stream(&client, &url, "bench-warm-up", &AtomicUsize::new(0)).await? {
        bail!("the warm-up turn ended without completed");
    }
    tokio::time::sleep(SETTLE).await;
    let warm = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let warm_parts = rss_parts_mib(pid);

    let opened = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = client.clone();
            let url = url.clone();
            let opened = opened.clone();
            tokio::spawn(
                async move { one_stream(&client, &url, &format!("bench-{i}"), &opened).await },
            )
        })
        .collect();
    // Sample the server's memory while the streams are open.
    let mut all_open_rss = None;
    let mut max_rss: f64 = 0.0;
    let mut timeline: Vec<(u64, f64, usize)> = Vec::new();
    while tasks.iter().any(|t| !t.is_finished()) {
        if let Some((now, _)) = rss_mib(pid) {
            max_rss = max_rss.max(now);
            let done = tasks.iter().filter(|t| t.is_finished()).count();
            timeline.push((t0.elapsed().as_millis() as u64, now, done));
            if all_open_rss.is_none() && opened.load(Ordering::Relaxed) == n {
                all_open_rss = Some((now, t0.elapsed().as_secs_f64() * 1000.0));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = t0.elapsed();
    let mut completed = 0;
    let mut failures = Vec::new();
    for t in tasks {
        match t.await? {
            Ok(true) => completed += 1,
            Ok(false) => failures.push("stream ended without completed".to_owned()),
            Err(e) => failures.push(e.to_string()),
        }
    }
    let peak = rss_mib(pid).map(|r| r.1).unwrap_or_default();
    drop(client);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    tokio::time::sleep(SETTLE - Duration::from_secs(1)).await;
    let settled = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let settled_parts = rss_parts_mib(pid);
    failures.truncate(3);
    Ok(json!({
        "streams": n,
        "rss_after_streams_mib": after,
        "rss_15s_after_streams_mib": settled,
        "completed": completed,
        "failures_sample": failures,
        "model_latencies_ms": { "orchestrator": hold.orchestrator, "shopping": hold.shopping, "support": hold.support },
        "wall_ms": wall.as_secs_f64() * 1000.0,
        "rss_idle_mib": idle,
        "rss_anon_file_idle_mib": idle_parts,
        "rss_idle_after_one_turn_mib": warm,
        "rss_anon_file_idle_after_one_turn_mib": warm_parts,
        "rss_anon_file_15s_after_mib": settled_parts,
        "rss_with_all_streams_open_mib": all_open_rss.map(|r| r.0),
        "all_streams_open_after_ms": all_open_rss.map(|r| r.1),
        "rss_max_sampled_mib": max_rss,
        "peak_rss_vmhwm_mib": peak,
        "rss_timeline_ms_mib_done": timeline.iter().step_by(10).collect::<Vec<_>>(),
    }))
}

/// How long the server is left before memory is read again: after the warm-up turn and
/// after the load. Freed pages go back within about a second (`baton serve`'s allocator
/// decay), and the runtime's idle blocking threads end after 10 s.
const SETTLE: Duration = Duration::from_secs(15);

/// One streaming mixed turn as `principal`, read to its end: whether it completed.
/// `opened` counts the streams that sent their first bytes.
async fn one_stream(
    client: &reqwest::Client,
    url: &str,
    principal: &str,
    opened: &AtomicUsize,
) -> anyhow::Result<bool> {
    let r = client
        .post(url)
        .header("x-baton-principal", principal)
        .json(&json!({ "message": MIXED_PROMPT }))
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("status {}", r.status());
    }
    let mut body = r.bytes_stream();
    let mut first = true;
    let mut tail = String::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if first {
            first = false;
            opened.fetch_add(1, Ordering::Relaxed);
        }
        tail.push_str(&String::from_utf8_lossy(&chunk));
        if tail.contains("event: completed") {
            return Ok(true);
        }
        let keep = tail.len().saturating_sub(64);
        tail.drain(..keep);
    }
    Ok(false)
}

/// [`streams`] `runs` times, each on a fresh server and data folder.
pub(crate) async fn streams_runs(baton: &Path, n: usize, runs: usize) -> anyhow::Result<Value> {
    let mut all = Vec::new();
    for _ in 0..runs {
        let d = tempfile::tempdir()?;
        all.push(streams(baton, d.path(), n).await?);
    }
    Ok(json!({ "streams": n, "runs": all }))
}

/// One line a run: idle, all open, peak and after, in MiB.
pub(crate) fn streams_table(results: &Value) -> String {
    let mut out = format!(
        "baton serve, {} streams: idle / idle after one turn / all open / peak / 1 s after / 15 s after (MiB); completed",
        results["streams"]
    );
    for r in results["runs"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\n{:.1} / {:.1} / {:.1} / {:.1} / {:.1} / {:.1}; {}",
            r["rss_idle_mib"].as_f64().unwrap_or_default(),
            r["rss_idle_after_one_turn_mib"]
                .as_f64()
                .unwrap_or_default(),
            r["rss_with_all_streams_open_mib"]
                .as_f64()
                .unwrap_or_default(),
            r["peak_rss_vmhwm_mib"].as_f64().unwrap_or_default(),
            r["rss_after_streams_mib"].as_f64().unwrap_or_default(),
            r["rss_15s_after_streams_mib"].as_f64().unwrap_or_default(),
            r["completed"],
        ));
        let parts = |key: &str| {
            let p = &r[key];
            format!("{} + {}", p[0], p[1])
        };
        out.push_str(&format!(
            " (anonymous + file: idle {}, after one turn {}, 15 s after {})",
            parts("rss_anon_file_idle_mib"),
            parts("rss_anon_file_idle_after_one_turn_mib"),
            parts("rss_anon_file_15s_after_mib")
        ));
    }
    out
}

/// The HTTP share alone: `n` keep-alive connections to a fresh server that have each
/// served a health check and now sit idle.
pub(crate) async fn idle_connections(baton: &Path, dir: &Path, n: usize) -> anyhow::Result<Value> {
    workload::write(dir, "mediated", Latencies::default())?;
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir, data.path()).await?;
    let pid = server.child.id();
    let idle = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let keep = reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .build()?;
    let health = format!("{}/healthz", server.base);
    let checks = futures::future::join_all((0..n).map(|_| keep.get(&health).send())).await;
    let open = checks.iter().filter(|r| r.is_ok()).count();
    drop(checks);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let with = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    drop(keep);
    Ok(
        json!({ "connections": open, "rss_idle_mib": idle, "rss_with_connections_mib": with,
               "kib_per_connection": (with - idle) * 1024.0 / n.max(1) as f64 }),
    )
}

/// `n` clients that post a turn whose answer is about 4 MB and never read it, then leave:
/// the server's memory while they sit there and after they are gone, and whether it still
/// answers others meanwhile.
pub(crate) async fn stalled_readers(baton: &Path, dir: &Path, n: usize) -> anyhow::Result<Value> {
    use tokio::io::AsyncWriteExt as _;
    workload::write(dir, workload::FAITHFUL, Latencies::default())?;
    std::fs::write(dir.join("script.yaml"), workload::big_answer_script(4_000))?;
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir, data.path()).await?;
    let pid = server.child.id();
    let addr = server.base.trim_start_matches("http://").to_owned();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let body = json!({ "message": SINGLE_PROMPT }).to_string();
    let mut silent = Vec::new();
    for i in 0..n {
        let mut stream = tokio::net::TcpStream::connect(&addr).await?;
        let head = format!(
            "POST /v1/turns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-baton-principal: silent-{i}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        silent.push(stream);
    }
    // Each reads its response head (its turn has started), then nothing more.
    for stream in &mut silent {
        read_head(stream).await?;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let with = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let t = Instant::now();
    let health = reqwest::get(format!("{}/v1/agents", server.base)).await?;
    let other_ms = t.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(health.status().is_success(), "the server stopped answering");
    drop(silent);
    // Their turns go on without them and commit (4 MB each); wait for the last one.
    let t = Instant::now();
    while turns_done(&server.base).await? < n as u64 {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(120),
            "the turns did not finish"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_done_ms = t.elapsed().as_secs_f64() * 1000.0;
    // The allocator hands freed memory back over a few seconds: sampled 1, 5 and 15 s on.
    let mut after = serde_json::Map::new();
    let mut waited = 0;
    for s in [1, 5, 15] {
        tokio::time::sleep(Duration::from_secs(s - waited)).await;
        waited = s;
        let rss = rss_mib(pid).map(|r| r.0).unwrap_or_default();
        after.insert(format!("{s}s"), json!(rss));
    }
    let peak = rss_mib(pid).map(|r| r.1).unwrap_or_default();
    Ok(json!({
        "clients": n, "answer_bytes_each": 4_000 * 1_000,
        "rss_idle_mib": idle, "rss_with_clients_mib": with,
        "turns_committed_after_clients_left_ms": all_done_ms,
        "rss_after_their_turns_committed_mib": after,
        "peak_rss_vmhwm_mib": peak, "another_request_meanwhile_ms": other_ms,
    }))
}

/// Another client's reads while `n` clients commit answers of about 4.6 MB each (read in
/// full, so their turns commit together): how long `GET /v1/episodes/{id}` of a small
/// episode and `GET /healthz` take meanwhile, in ms.
pub(crate) async fn reads_during_commits(
    baton: &Path,
    dir: &Path,
    n: usize,
) -> anyhow::Result<Value> {
    use crate::stats::percentile;
    workload::write(dir, workload::FAITHFUL, Latencies::default())?;
    std::fs::write(dir.join("script.yaml"), workload::big_answer_script(4_600))?;
    let data = tempfile::tempdir()?;
    let (server, _) = start(baton, dir, data.path()).await?;
    let client = reqwest::Client::new();
    let turns = format!("{}/v1/turns", server.base);
    let body = json!({ "message": SINGLE_PROMPT });
    // The reader's own episode: one turn.
    let first = client
        .post(&turns)
        .header("x-baton-principal", "reader")
        .json(&body)
        .send()
        .await?;
    let episode = first
        .headers()
        .get("x-baton-episode-id")
        .context("no episode id")?
        .to_str()?
        .to_owned();
    first.bytes().await?;
    let writers = {
        let (client, turns, body) = (client.clone(), turns.clone(), body.clone());
        tokio::spawn(async move {
            let posts = (0..n).map(|i| {
                let (client, turns, body) = (client.clone(), turns.clone(), body.clone());
                async move {
                    let response = client
                        .post(&turns)
                        .header("x-baton-principal", format!("writer-{i}"))
                        .json(&body)
                        .send()
                        .await?;
                    anyhow::Ok(response.bytes().await?.len())
                }
            });
            futures::future::join_all(posts).await
        })
    };
    let history = format!("{}/v1/episodes/{episode}", server.base);
    let health = format!("{}/healthz", server.base);
    let (mut reads, mut checks) = (Vec::new(), Vec::new());
    while !writers.is_finished() {
        let t = Instant::now();
        let read = client
            .get(&history)
            .header("x-baton-principal", "reader")
            .send()
            .await?;
        anyhow::ensure!(read.status().is_success(), "reading the episode failed");
        read.bytes().await?;
        reads.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        client.get(&health).send().await?.bytes().await?;
        checks.push(t.elapsed().as_secs_f64() * 1000.0);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let written = writers.await?;
    let answered = written
        .iter()
        .filter(|w| matches!(w, Ok(b) if *b > 4_000_000))
        .count();
    anyhow::ensure!(
        answered == n,
        "only {answered} of {n} large answers arrived"
    );
    let summary = |xs: &[f64]| {
        json!({ "samples": xs.len(), "p50": percentile(xs, 50.0), "p99": percentile(xs, 99.0),
                "max": xs.iter().copied().fold(0.0, f64::max) })
    };
    Ok(json!({
        "writers": n, "answer_bytes_each": 4_600 * 1_000,
        "episode_read_ms": summary(&reads), "healthz_ms": summary(&checks),
    }))
}

/// Turns the server has finished, by its own counters.
async fn turns_done(base: &str) -> anyhow::Result<u64> {
    let metrics: Value = reqwest::get(format!("{base}/metrics"))
        .await?
        .json()
        .await?;
    Ok(metrics["counters"]
        .as_object()
        .map(|c| {
            c.iter()
                .filter(|(k, _)| k.starts_with("turns_total"))
                .filter_map(|(_, v)| v.as_u64())
                .sum()
        })
        .unwrap_or_default())
}

/// Reads a response head byte by byte, taking nothing of the body.
async fn read_head(stream: &mut tokio::net::TcpStream) -> anyhow::Result<()> {
    use tokio::io::AsyncReadExt as _;
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await?);
    }
    anyhow::ensure!(head.starts_with(b"HTTP/1.1 200"), "a turn was refused");
    Ok(())
}
