//! `baton-bench --pictures`: what a phone photo costs a turn (D-42).
//!
//! The photo is made here ([`photo`]): 4000×3000 pixels, a JPEG of about 4 MB with the
//! EXIF (GPS position, device, owner, time, thumbnail) and XMP a phone writes.
//!
//! - **The check alone**: `baton_core::picture::take` on the photo (type from its bytes,
//!   limits, EXIF and XMP removed, the rest decoded once), on a blocking thread as the
//!   runtime runs it: CPU, wall time and the peak of this process's resident memory; and
//!   the JPEG decode alone (the `image` crate, as the check decodes it).
//! - **In process**: the shipped registry and the offline model on the heap journal (the
//!   store `inproc.rs` measures with; `baton serve` below runs the embedded SQLite store),
//!   turns "this one didn't scan" one after another, without and with the photo, in
//!   alternating batches: process CPU per turn, each turn's peak of resident memory above
//!   its start, and what each batch left resident (the heap journal keeps each committed
//!   photo). The difference is what the photo costs a turn; the check's share of it is the
//!   check alone over that difference.
//! - **Against `baton serve`** (the `baton` binary next to this one, offline model, shipped
//!   registry, a fresh embedded store, the default limits): `--picture-clients` (100)
//!   `POST /v1/turns` at once, each carrying the photo in base64; the server's resident
//!   memory sampled while they run, its peak above idle, and a bound that memory must stay
//!   within, computed beside it. Every turn must complete, with the GPS position on its
//!   privacy receipt as removed; otherwise the run fails.
//!
//! Resident memory shows what a turn took only when freed pages go back to the system:
//! `./infra/bench.sh pictures` runs this process with jemalloc's decay at zero, as `baton
//! serve` runs itself.

mod photo;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::picture::{Bytes, HiddenData, Picture, PictureLimits};
use baton_inproc::HeapStore;
use baton_local::offline::OfflineModel;
use baton_runtime::registry_folder::{load_sources, read_sources};
use baton_runtime::{Runtime, RuntimeConfig, TurnRequest};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::Args;
use crate::serve_load::Server;
use crate::stats::{cpu_of, median, percentile, process_cpu, reset_peak_rss, rss_mib, spread};

/// The user's words beside the photo.
pub(crate) const MESSAGE: &str = "this one didn't scan";
/// `baton_http::DEFAULT_MAX_BODY_BYTES`: the body limit of a request, before the room a
/// turn's pictures add to it.
const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// How much a run does.
struct Sizes {
    width: u32,
    height: u32,
    /// Turns per batch in process.
    turns: usize,
    /// Batches of each kind (without, with), alternating.
    rounds: usize,
    /// Runs of the check alone.
    checks: usize,
    /// Concurrent photo turns against `baton serve`.
    clients: usize,
    /// How long the server is left before its memory is read: after the warm-up turn and
    /// after the load (freed pages go back within about a second, idle blocking threads
    /// end after 10 s).
    settle: Duration,
}

impl Sizes {
    fn of(args: &Args) -> Sizes {
        if args.smoke {
            Sizes {
                width: 400,
                height: 300,
                turns: 2,
                rounds: 1,
                checks: 2,
                clients: 3,
                settle: Duration::from_millis(300),
            }
        } else {
            Sizes {
                width: 4000,
                height: 3000,
                turns: args.picture_turns,
                rounds: 3,
                checks: 10,
                clients: args.picture_clients,
                settle: Duration::from_secs(15),
            }
        }
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs the pictures benchmark and returns its JSON results.
pub(crate) async fn run(args: &Args) -> anyhow::Result<Value> {
    let sizes = Sizes::of(args);
    anyhow::ensure!(
        sizes.turns > 0 && sizes.clients > 0,
        "--picture-turns and --picture-clients must be positive"
    );
    let root = crate::memory::registry_root(args);
    let root = root
        .canonicalize()
        .with_context(|| format!("the registry {} is not there", root.display()))?;
    let baton = crate::report::baton_of(args.baton.as_deref())?;

    let made = Instant::now();
    let sent = Bytes::from(photo::phone_photo(sizes.width, sizes.height)?);
    let made_ms = ms(made.elapsed());
    eprintln!(
        "the photo: {}×{} pixels, {} bytes ({:.2} MiB), made in {made_ms:.0} ms",
        sizes.width,
        sizes.height,
        sent.len(),
        sent.len() as f64 / MIB
    );

    let (check, picture) = check_alone(&sent, sizes.checks).await?;
    let in_process = in_process(&root, &sent, &sizes).await?;
    let serve = serve(&baton, &root, &sent, &picture, &sizes).await?;

    let mut out = json!({
        "mode": "pictures",
        "version": env!("CARGO_PKG_VERSION"),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "config": {
            "smoke": args.smoke,
            "runtime": if args.current_thread { "tokio current_thread" } else { "tokio multi_thread, 2 workers" },
            "message": MESSAGE,
            "registry": root.display().to_string(),
            "model": "offline (baton_local::offline::OfflineModel)",
            "in_process_store": "heap (baton_inproc::HeapStore, as inproc.rs): it keeps each committed picture in memory, once per episode, where the embedded store writes a file",
            "serve_store": "embedded (SQLite and picture files in a fresh data folder)",
            "turns_per_batch": sizes.turns,
            "rounds": sizes.rounds,
            "check_runs": sizes.checks,
            "clients": sizes.clients,
            "settle_s": sizes.settle.as_secs_f64(),
            "malloc_conf": std::env::var("MALLOC_CONF").ok(),
            "limits": PictureLimits::default(),
            "picture_checks": RuntimeConfig::default().picture_checks,
        },
        "photo": {
            "width": sizes.width,
            "height": sizes.height,
            "bytes": sent.len(),
            "made_ms": round(made_ms, 1),
            "what": "a receipt on a wooden table with sensor noise, baseline JPEG at quality 90, EXIF (GPS, device, lens, owner, time, thumbnail) and XMP after its start",
        },
        "check_alone": check,
        "in_process": in_process,
        "serve": serve,
    });
    let share = out["check_alone"]["cpu_ms"]["median"]
        .as_f64()
        .zip(out["in_process"]["per_photo_turn"]["cpu_ms"].as_f64())
        .filter(|(_, d)| *d > 0.0)
        .map(|(c, d)| round(c / d, 3));
    out["in_process"]["per_photo_turn"]["check_share_of_cpu"] = json!(share);
    Ok(out)
}

/// Takes the picture as the runtime does: on a blocking thread.
async fn take(sent: &Bytes) -> anyhow::Result<Picture> {
    let bytes = sent.clone();
    let limits = RuntimeConfig::default().pictures;
    Ok(tokio::task::spawn_blocking(move || baton_core::picture::take(&bytes, &limits)).await??)
}

/// `take` alone: memory first (on a heap that has not yet decoded the photo), then its
/// time, then the JPEG decode alone.
async fn check_alone(sent: &Bytes, runs: usize) -> anyhow::Result<(Value, Picture)> {
    let me = std::process::id();
    let reset = reset_peak_rss(me);
    let before = rss_mib(me).map(|r| r.0).unwrap_or_default();
    let picture = take(sent).await?;
    let (after, peak) = rss_mib(me).unwrap_or_default();
    for kind in [HiddenData::Location, HiddenData::Device, HiddenData::Xmp] {
        anyhow::ensure!(
            picture.removed.contains(&kind),
            "the check did not find the photo's {kind:?} ({:?}): the photo is not what a phone sends",
            picture.removed
        );
    }
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (c0, t0) = (process_cpu(), Instant::now());
        take(sent).await?;
        wall.push(ms(t0.elapsed()));
        cpu.push(ms(process_cpu().saturating_sub(c0)));
    }
    let mut decode = Vec::new();
    for _ in 0..runs {
        let bytes = sent.clone();
        let c0 = process_cpu();
        tokio::task::spawn_blocking(move || {
            image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).map(|_| ())
        })
        .await??;
        decode.push(ms(process_cpu().saturating_sub(c0)));
    }
    let value = json!({
        "what": "baton_core::picture::take on the photo, on a blocking thread: process CPU and wall time per run",
        "cpu_ms": spread(&cpu),
        "wall_ms": spread(&wall),
        "jpeg_decode_alone_cpu_ms": spread(&decode),
        "peak_rss_above_before_mib": if reset { Some(round(peak - before, 1)) } else { None },
        "rss_after_mib": after,
        "stripped_bytes": picture.bytes.len(),
        "removed": picture.removed,
    });
    Ok((value, picture))
}

/// One turn's figures as the client sees them.
struct Ran {
    cpu: Duration,
    outcome: String,
    consulted: Vec<String>,
    location_removed: bool,
}

/// One turn "this one didn't scan", with `pictures`, read to its end.
async fn turn(rt: &Runtime, principal: &Principal, pictures: Vec<Bytes>) -> anyhow::Result<Ran> {
    let request = TurnRequest {
        pictures,
        ..TurnRequest::new(principal.clone(), MESSAGE)
    };
    let c0 = process_cpu();
    let mut stream = rt
        .run_turn(request)
        .await
        .map_err(|e| anyhow::anyhow!("the turn was refused: {e}"))?;
    let (mut outcome, mut consulted, mut location_removed) = (None, Vec::new(), false);
    while let Some(wire) = stream.next().await {
        match wire.event {
            Event::AgentsConsulted { agents, .. } => {
                consulted = agents.into_iter().map(|a| a.agent_id).collect();
            }
            Event::Completed {
                outcome: o,
                privacy,
            } => {
                outcome = Some(o.as_str().to_owned());
                location_removed = privacy.pictures.contains_key(&HiddenData::Location);
            }
            _ => {}
        }
    }
    let cpu = process_cpu().saturating_sub(c0);
    let Some(outcome) = outcome else {
        bail!("the turn did not complete");
    };
    Ok(Ran {
        cpu,
        outcome,
        consulted,
        location_removed,
    })
}

/// One batch's figures.
struct Batch {
    cpu_ms_per_turn: f64,
    wall_ms_per_turn: f64,
    /// A turn's peak resident memory above the resident memory at its start (the median
    /// turn of the batch): what it took while it ran.
    peak_above_turn_start_mib: Option<f64>,
    /// Resident memory at the batch's end over its start, a turn: what each turn left.
    kept_mib_per_turn: f64,
}

/// What the turns came to, by kind of turn.
#[derive(Default)]
struct Seen {
    outcomes: BTreeMap<String, usize>,
    consulted: BTreeMap<String, usize>,
}

/// `n` turns one after another, with `photo` or without.
async fn batch(
    rt: &Runtime,
    principal: &Principal,
    photo: Option<&Bytes>,
    n: usize,
    seen: &mut Seen,
) -> anyhow::Result<Batch> {
    let me = std::process::id();
    let start = rss_mib(me).map(|r| r.0).unwrap_or_default();
    let (mut cpu, mut wall) = (Duration::ZERO, Duration::ZERO);
    let mut peaks = Vec::new();
    for _ in 0..n {
        // Memory is read between turns, outside their CPU and wall time.
        let reset = reset_peak_rss(me);
        let before = rss_mib(me).map(|r| r.0).unwrap_or_default();
        let t0 = Instant::now();
        let ran = turn(rt, principal, photo.into_iter().cloned().collect()).await?;
        wall += t0.elapsed();
        if reset && let Some((_, peak)) = rss_mib(me) {
            peaks.push(peak - before);
        }
        if photo.is_some() && !ran.location_removed {
            bail!("a photo turn's privacy receipt does not name the GPS position as removed");
        }
        cpu += ran.cpu;
        *seen.outcomes.entry(ran.outcome).or_default() += 1;
        *seen.consulted.entry(ran.consulted.join("+")).or_default() += 1;
    }
    let end = rss_mib(me).map(|r| r.0).unwrap_or_default();
    Ok(Batch {
        cpu_ms_per_turn: ms(cpu) / n as f64,
        wall_ms_per_turn: ms(wall) / n as f64,
        peak_above_turn_start_mib: (!peaks.is_empty()).then(|| round(median(&peaks), 1)),
        kept_mib_per_turn: (end - start) / n as f64,
    })
}

/// The turns in process, without and with the photo, in alternating batches.
async fn in_process(root: &Path, sent: &Bytes, sizes: &Sizes) -> anyhow::Result<Value> {
    let connectors = baton_connectors::default_connectors(root);
    let registry = read_sources(root)
        .and_then(|s| load_sources(&s, &connectors, &Default::default()))
        .map_err(|e| anyhow::anyhow!("the registry {} is not valid: {e}", root.display()))?;
    let registry = Arc::new(registry);
    let rt = Runtime::builder(registry.clone())
        .model_override(Arc::new(OfflineModel::new(registry)))
        .store(Arc::new(HeapStore::new()))
        .connectors(connectors)
        .config(RuntimeConfig::default())
        .build()?;
    let principal = Principal::new("bench-user").map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut without_seen, mut with_seen) = (Seen::default(), Seen::default());
    // Warm-up: each kind of turn a few times (the journal's first episodes, the code's
    // first run).
    for _ in 0..sizes.turns.min(3) {
        turn(&rt, &principal, Vec::new()).await?;
        turn(&rt, &principal, vec![sent.clone()]).await?;
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..sizes.rounds {
        without.push(batch(&rt, &principal, None, sizes.turns, &mut without_seen).await?);
        with.push(batch(&rt, &principal, Some(sent), sizes.turns, &mut with_seen).await?);
    }
    let over = |runs: &[Batch], f: &dyn Fn(&Batch) -> Option<f64>| {
        let xs: Vec<f64> = runs.iter().filter_map(f).collect();
        (!xs.is_empty()).then(|| spread(&xs))
    };
    let kind = |runs: &[Batch], seen: &Seen| {
        json!({
            "cpu_ms_per_turn": over(runs, &|b| Some(b.cpu_ms_per_turn)),
            "wall_ms_per_turn": over(runs, &|b| Some(b.wall_ms_per_turn)),
            "peak_rss_above_turn_start_mib": over(runs, &|b| b.peak_above_turn_start_mib),
            "rss_kept_mib_per_turn": over(runs, &|b| Some(b.kept_mib_per_turn)),
            "outcomes": seen.outcomes,
            "consulted": seen.consulted,
        })
    };
    // Paired by round, so that a change in the machine's speed between rounds cancels.
    let diff = |f: &dyn Fn(&Batch) -> Option<f64>| {
        let xs: Vec<f64> = without
            .iter()
            .zip(&with)
            .filter_map(|(a, b)| Some(f(b)? - f(a)?))
            .collect();
        (!xs.is_empty()).then(|| median(&xs))
    };
    Ok(json!({
        "what": "turns one after another on one runtime, each on a new episode; per batch: process CPU summed over its turns, each turn's peak resident memory above its start (the median turn's), resident memory at the batch's end over its start",
        "without_photo": kind(&without, &without_seen),
        "with_photo": kind(&with, &with_seen),
        "per_photo_turn": {
            "what": "median over rounds of (with − without), each round's batches side by side",
            "cpu_ms": diff(&|b| Some(b.cpu_ms_per_turn)).map(|x| round(x, 3)),
            "wall_ms": diff(&|b| Some(b.wall_ms_per_turn)).map(|x| round(x, 3)),
            "peak_rss_mib": diff(&|b| b.peak_above_turn_start_mib).map(|x| round(x, 1)),
            "rss_kept_mib": diff(&|b| Some(b.kept_mib_per_turn)).map(|x| round(x, 3)),
        },
    }))
}

/// Spawns `baton serve` on a free loopback port with the offline model, the registry at
/// `registry` and a fresh embedded store in `data`, and nothing of this environment's
/// settings (no `BATON_*` variable, no `baton.toml`): the default limits. Returns when
/// `/healthz` answers.
async fn start(baton: &Path, registry: &Path, data: &Path, log: &Path) -> anyhow::Result<Server> {
    let port = crate::serve_load::free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let mut command = Command::new(baton);
    command
        .arg("serve")
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--registry")
        .arg(registry)
        .args(["--model", "offline"])
        .arg("--data-dir")
        .arg(data)
        // `baton.toml` is read from the working directory.
        .current_dir(data);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("BATON_") {
            command.env_remove(name);
        }
    }
    let child = command
        .env("BATON_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log)?)
        .spawn()
        .with_context(|| format!("starting {}", baton.display()))?;
    let mut server = Server {
        child,
        base: base.clone(),
    };
    let client = reqwest::Client::new();
    let t0 = Instant::now();
    loop {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            return Ok(server);
        }
        if let Some(status) = server.child.try_wait()? {
            bail!("baton serve exited ({status}): {}", tail_of(log));
        }
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("baton serve did not become ready within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The end of the server's log, for a failure's message.
fn tail_of(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let from = text.len().saturating_sub(2000);
    let from = (from..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    text[from..].trim().to_owned()
}

/// One photo turn over HTTP as the client saw it.
struct Posted {
    completed: bool,
    location_removed: bool,
    ms: f64,
}

/// `POST /v1/turns` with `body` as `principal`, read to its end.
async fn post_photo(
    client: &reqwest::Client,
    url: &str,
    principal: &str,
    body: Bytes,
) -> anyhow::Result<Posted> {
    let t0 = Instant::now();
    let r = client
        .post(url)
        .header("x-baton-principal", principal)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await?;
    let status = r.status();
    if !status.is_success() {
        let text = r.text().await.unwrap_or_default();
        bail!(
            "status {status}: {}",
            text.chars().take(400).collect::<String>()
        );
    }
    let mut stream = r.bytes_stream();
    let mut tail = Vec::new();
    while let Some(chunk) = stream.next().await {
        tail.extend_from_slice(&chunk?);
        if tail.len() > 64 * 1024 {
            tail.drain(..tail.len() - 16 * 1024);
        }
    }
    let text = String::from_utf8_lossy(&tail);
    // The last event, with the privacy receipt, which names what the pictures had removed.
    let completed = text.rfind("event: completed");
    Ok(Posted {
        completed: completed.is_some(),
        location_removed: completed.is_some_and(|at| text[at..].contains("\"location\"")),
        ms: ms(t0.elapsed()),
    })
}

/// `baton serve` holding `sizes.clients` photo turns at once.
async fn serve(
    baton: &Path,
    registry: &Path,
    sent: &Bytes,
    picture: &Picture,
    sizes: &Sizes,
) -> anyhow::Result<Value> {
    let n = sizes.clients;
    let limits = PictureLimits::default();
    let body = Bytes::from(serde_json::to_vec(&json!({
        "message": MESSAGE,
        "pictures": [{
            "media_type": "image/jpeg",
            "data": base64::engine::general_purpose::STANDARD.encode(sent),
        }],
    }))?);
    // The server runs with the defaults; the photo must fit them (and the warm-up turn
    // below shows it does).
    let body_limit = DEFAULT_MAX_BODY_BYTES + limits.max_total_bytes.div_ceil(3) * 4;
    let pixels = u64::from(picture.width) * u64::from(picture.height);
    anyhow::ensure!(
        sent.len() <= limits.max_bytes && sent.len() <= limits.max_total_bytes,
        "the photo's {} bytes are over the default limits ({} a picture, {} a turn)",
        sent.len(),
        limits.max_bytes,
        limits.max_total_bytes
    );
    anyhow::ensure!(
        body.len() <= body_limit,
        "the body's {} bytes are over the default limit of a turn's body ({body_limit})",
        body.len()
    );
    anyhow::ensure!(
        pixels <= limits.max_pixels && picture.width.max(picture.height) <= limits.max_side,
        "the photo's pixels are over the default limits"
    );

    let data = tempfile::tempdir()?;
    let logs = tempfile::tempdir()?;
    let log = logs.path().join("serve.log");
    let server = start(baton, registry, data.path(), &log).await?;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle_cold = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let url = format!("{}/v1/turns", server.base);
    let warm = post_photo(&client, &url, "pictures-warm-up", body.clone())
        .await
        .with_context(|| format!("the warm-up photo turn failed; {}", tail_of(&log)))?;
    anyhow::ensure!(
        warm.completed && warm.location_removed,
        "the warm-up photo turn did not complete with the GPS position removed"
    );
    tokio::time::sleep(sizes.settle).await;
    let idle = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    let idle_parts = crate::stats::rss_parts_mib(pid);

    let reset = reset_peak_rss(pid);
    let cpu0 = cpu_of(pid);
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (client, url, body) = (client.clone(), url.clone(), body.clone());
            tokio::spawn(
                async move { post_photo(&client, &url, &format!("pictures-{i}"), body).await },
            )
        })
        .collect();
    let mut max_sampled: f64 = 0.0;
    let mut timeline: Vec<(u64, f64, usize)> = Vec::new();
    while tasks.iter().any(|t| !t.is_finished()) {
        if let Some((now, _)) = rss_mib(pid) {
            max_sampled = max_sampled.max(now);
            let done = tasks.iter().filter(|t| t.is_finished()).count();
            timeline.push((t0.elapsed().as_millis() as u64, now, done));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = t0.elapsed();
    let (mut completed, mut location_removed) = (0, 0);
    let (mut turn_ms, mut failures) = (Vec::new(), Vec::new());
    for t in tasks {
        match t.await? {
            Ok(p) => {
                completed += usize::from(p.completed);
                location_removed += usize::from(p.location_removed);
                if p.completed {
                    turn_ms.push(p.ms);
                } else {
                    failures.push("the stream ended without completed".to_owned());
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    let cpu = cpu_of(pid)
        .zip(cpu0)
        .map(|(b, a)| ms(b.saturating_sub(a)) / n as f64);
    let (_, hwm) = rss_mib(pid).unwrap_or_default();
    let peak = if reset {
        hwm.max(max_sampled)
    } else {
        max_sampled
    };
    if completed != n || location_removed != n {
        failures.sort();
        failures.dedup();
        failures.truncate(5);
        bail!(
            "{completed} of {n} photo turns completed ({location_removed} with the GPS position removed); failures: {failures:?}; server log: {}",
            tail_of(&log)
        );
    }
    tokio::time::sleep(Duration::from_secs(1).min(sizes.settle)).await;
    let after = rss_mib(pid).map(|r| r.0).unwrap_or_default();
    tokio::time::sleep(sizes.settle.saturating_sub(Duration::from_secs(1))).await;
    let settled = rss_mib(pid).map(|r| r.0).unwrap_or_default();

    // The bound. A request holds at most, at any one time: its body twice (the bytes read,
    // and the JSON string they parse into) and the photo decoded from base64; after that,
    // less (the photo and its stripped copy). A check, at most `picture_checks` at once,
    // adds the decoder's memory (at most 8 bytes a pixel: 4 for RGBA and as much again for
    // its buffers, the runtime's own bound) and the copy it strips and the stripped bytes.
    let checks = RuntimeConfig::default().picture_checks;
    let (body_mib, sent_mib) = (body.len() as f64 / MIB, sent.len() as f64 / MIB);
    let stripped_mib = picture.bytes.len() as f64 / MIB;
    let decode_mib = pixels as f64 * 8.0 / MIB;
    let per_request = 2.0 * body_mib + sent_mib;
    let per_check = decode_mib + sent_mib + stripped_mib;
    let bound = idle + checks as f64 * per_check + n as f64 * per_request;
    let above = peak - idle;
    Ok(json!({
        "clients": n,
        "body_bytes": body.len(),
        "body_limit_bytes": body_limit,
        "photo_bytes": sent.len(),
        "stripped_bytes": picture.bytes.len(),
        "completed": completed,
        "gps_removed": location_removed,
        "wall_ms": round(ms(wall), 1),
        "turn_ms": { "p50": percentile(&turn_ms, 50.0), "p90": percentile(&turn_ms, 90.0), "max": percentile(&turn_ms, 100.0) },
        "server_cpu_ms_per_photo_turn": cpu.map(|c| round(c, 1)),
        "rss_idle_before_any_turn_mib": idle_cold,
        "rss_idle_mib": idle,
        "rss_anon_file_idle_mib": idle_parts,
        "idle_is": "after one photo turn, settled",
        "peak_rss_mib": peak,
        "peak_is": if reset { "VmHWM since the load began, or the highest sample if higher" } else { "the highest sample every 20 ms (the kernel did not reset VmHWM)" },
        "rss_max_sampled_mib": max_sampled,
        "peak_above_idle_mib": round(above, 1),
        "peak_above_idle_mib_per_photo_turn": round(above / n as f64, 2),
        "rss_1s_after_mib": after,
        "rss_settled_after_mib": settled,
        "bound": {
            "formula": "idle + picture_checks × (8 B × pixels + photo + stripped) + clients × (2 × body + photo)",
            "picture_checks": checks,
            "decode_mib": round(decode_mib, 1),
            "per_check_mib": round(per_check, 2),
            "per_request_mib": round(per_request, 2),
            "mib": round(bound, 1),
            "within": peak <= bound,
            "peak_share_of_bound": round(peak / bound, 3),
        },
        "rss_timeline_ms_mib_done": timeline.iter().step_by(5).collect::<Vec<_>>(),
    }))
}

/// A short account on stderr.
pub(crate) fn table(r: &Value) -> String {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let (p, c, i, s) = (
        &r["photo"],
        &r["check_alone"],
        &r["in_process"],
        &r["serve"],
    );
    let (without, with) = (&i["without_photo"], &i["with_photo"]);
    let per = &i["per_photo_turn"];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pictures: a {}×{} phone JPEG of {:.2} MB (EXIF with GPS, XMP), {MESSAGE:?}, the offline model",
        p["width"],
        p["height"],
        f(&p["bytes"]) / 1e6
    );
    let _ = writeln!(
        out,
        "in process, {} turns × {} rounds (medians): CPU {:.3} ms a turn without, {:.3} ms with: {:+.3} ms a photo turn",
        r["config"]["turns_per_batch"],
        r["config"]["rounds"],
        f(&without["cpu_ms_per_turn"]["median"]),
        f(&with["cpu_ms_per_turn"]["median"]),
        f(&per["cpu_ms"])
    );
    let _ = writeln!(
        out,
        "  the check alone (picture::take): {:.1} ms CPU ({:.0}% of that), its JPEG decode alone {:.1} ms; its peak {} MiB above before",
        f(&c["cpu_ms"]["median"]),
        f(&per["check_share_of_cpu"]) * 100.0,
        f(&c["jpeg_decode_alone_cpu_ms"]["median"]),
        c["peak_rss_above_before_mib"]
    );
    let _ = writeln!(
        out,
        "  memory: a turn's peak above its start {} MiB without, {} MiB with ({} MiB a photo turn); kept {:.3} / {:.3} MiB a turn (the heap store's copy)",
        without["peak_rss_above_turn_start_mib"]["median"],
        with["peak_rss_above_turn_start_mib"]["median"],
        per["peak_rss_mib"],
        f(&without["rss_kept_mib_per_turn"]["median"]),
        f(&with["rss_kept_mib_per_turn"]["median"])
    );
    let b = &s["bound"];
    let _ = writeln!(
        out,
        "baton serve, {} photo turns at once ({:.2} MB bodies): {} completed, GPS removed from {}; wall {:.1} s, server CPU {} ms a photo turn",
        s["clients"],
        f(&s["body_bytes"]) / 1e6,
        s["completed"],
        s["gps_removed"],
        f(&s["wall_ms"]) / 1000.0,
        s["server_cpu_ms_per_photo_turn"]
    );
    let _ = writeln!(
        out,
        "  RSS idle {:.1} MiB, peak {:.1} MiB: {:.1} MiB above idle, {:.2} MiB per concurrent photo turn; 1 s after {:.1}, settled {:.1} MiB",
        f(&s["rss_idle_mib"]),
        f(&s["peak_rss_mib"]),
        f(&s["peak_above_idle_mib"]),
        f(&s["peak_above_idle_mib_per_photo_turn"]),
        f(&s["rss_1s_after_mib"]),
        f(&s["rss_settled_after_mib"])
    );
    let _ = write!(
        out,
        "  bound {}: {:.1} MiB; the peak is {} ({:.0}% of it)",
        b["formula"].as_str().unwrap_or_default(),
        f(&b["mib"]),
        if b["within"].as_bool() == Some(true) {
            "within"
        } else {
            "OVER IT"
        },
        f(&b["peak_share_of_bound"]) * 100.0
    );
    out
}
