//! The web console in a real headless browser: Chromium driven through chromedriver
//! (WebDriver) against the real `baton serve` with its offline model.
//!
//! Chromium and chromedriver come from `infra/browser.sh`, which this test runs itself when
//! chromedriver is not on PATH; if they are still missing afterwards the test fails and
//! says so (it never skips). With `BATON_CONSOLE_SCREENSHOT` set, the Direct Line test
//! saves a PNG of the page to `/tmp/console.png` (or to the variable's value when that
//! ends in `.png`).

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use futures::FutureExt;
use serde_json::{Value, json};

use crate::browser::{DEADLINE, Process, eval, with_browser};
use crate::support::*;

mod memory;
mod pictures;
mod waits;

const FIRST_MESSAGE: &str = "my receipt didn't scan and find me coffee deals";
const DIRECT_PAYLOAD: &str = "what are three risks in my plan to save for a bike?";

/// `baton serve` over the shipped registry and the offline model; its address, and its
/// log so far (for failure messages).
struct Served {
    _sandbox: Sandbox,
    _server: Process,
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// `baton` with `global` options before `serve`.
    fn start_with(global: &[&str]) -> Self {
        Self::start_in(Sandbox::new(), registry(), global)
    }

    /// `baton` over `registry` in `sandbox`, with `global` options before `serve`.
    fn start_in(sandbox: Sandbox, registry: &str, global: &[&str]) -> Self {
        Self::start_at(sandbox, registry, global, "127.0.0.1:0")
    }

    /// As [`Served::start_in`], listening at `addr`.
    fn start_at(sandbox: Sandbox, registry: &str, global: &[&str], addr: &str) -> Self {
        let child = sandbox
            .baton()
            .args(global)
            .args(["serve", "--log-json", "--addr", addr])
            .args(["--registry", registry, "--principal", "console-user"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server = Process(child);
        let stderr = server.0.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let lines = log.clone();
        // Keeps reading to the end: a full pipe would stall the server's logging.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && let Some(addr) = v["fields"]["addr"].as_str()
                {
                    let _ = tx.send(addr.to_owned());
                }
                if let Ok(mut lines) = lines.lock() {
                    lines.push(line);
                }
            }
        });
        let addr = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("baton serve did not announce its address: {:?}", log));
        Served {
            _sandbox: sandbox,
            _server: server,
            addr,
            log,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log_tail(&self) -> String {
        let lines = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// `GET path` over a plain socket: status line and JSON body.
    fn get_json(&self, path: &str) -> (String, Value) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        let status = head.lines().next().unwrap_or_default().to_owned();
        let value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {response}"));
        (status, value)
    }
}

/// Runs `body` with a browser on the console of a fresh `baton serve`, then closes the
/// browser and stops both processes, whether `body` passed or not.
async fn with_console<F, Fut>(body: F)
where
    F: FnOnce(Client, Arc<Served>) -> Fut,
    Fut: Future<Output = ()>,
{
    with_console_of(&[], body).await;
}

/// As [`with_console`], with `global` options given to `baton` before `serve`.
async fn with_console_of<F, Fut>(global: &[&str], body: F)
where
    F: FnOnce(Client, Arc<Served>) -> Fut,
    Fut: Future<Output = ()>,
{
    let served = Arc::new(Served::start_with(global));
    let page = served.clone();
    let outcome = AssertUnwindSafe(with_browser(|client| body(client, page)))
        .catch_unwind()
        .await;
    if let Err(panic) = outcome {
        eprintln!("baton serve log (last lines):\n{}", served.log_tail());
        std::panic::resume_unwind(panic);
    }
}

// ---- reading the page --------------------------------------------------------------------

/// Polls `expression` until it is truthy, at most [`DEADLINE`]; on timeout the failure
/// shows what the page's conversation said.
async fn until(client: &Client, what: &str, expression: &str) {
    let started = Instant::now();
    loop {
        let value = eval(client, expression, Vec::new()).await;
        let truthy = match &value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            _ => true,
        };
        if truthy {
            return;
        }
        if started.elapsed() > DEADLINE {
            let page = eval(
                client,
                "document.body ? document.body.innerText : ''",
                Vec::new(),
            )
            .await;
            panic!(
                "waited {DEADLINE:?} for {what}; the page says:\n{}",
                page.as_str().unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the page has `n` turns and the last is over; returns its final state.
async fn turn_finished(client: &Client, n: usize) -> String {
    until(
        client,
        &format!("turn {n} to finish"),
        &format!(
            "document.querySelectorAll('.turn').length === {n} && \
             document.querySelectorAll('.turn')[{n} - 1].dataset.state !== 'streaming'"
        ),
    )
    .await;
    let state = eval(
        client,
        "document.querySelectorAll('.turn')[arguments[0]].dataset.state",
        vec![json!(n - 1)],
    )
    .await;
    state.as_str().unwrap_or_default().to_owned()
}

/// What turn `index` shows: answer text, pills, Direct Line blocks, notes, receipt, cost.
async fn turn_view(client: &Client, index: usize) -> Value {
    eval(
        client,
        r#"(() => {
            const turn = document.querySelectorAll('.turn')[arguments[0]];
            const text = (sel) => { const n = turn.querySelector(sel); return n && !n.hidden ? n.textContent : null; };
            return {
                turn_id: turn.dataset.turnId || null,
                outcome: turn.dataset.outcome || null,
                answer: text('.answer'),
                pills: [...turn.querySelectorAll('.pill')].map((p) => ({
                    agent: p.dataset.agent || null,
                    status: p.dataset.status || null,
                    duration_ms: p.dataset.durationMs === undefined ? null : Number(p.dataset.durationMs),
                    tool_calls: p.dataset.toolCalls === undefined ? null : Number(p.dataset.toolCalls),
                    text: p.textContent,
                })),
                delegated: [...turn.querySelectorAll('.delegated')].map((d) => ({
                    agent: d.dataset.agent,
                    status: d.dataset.status,
                    head: d.querySelector('.delegated-head').textContent,
                    text: d.querySelector('.delegated-text').textContent,
                })),
                notes: [...turn.querySelectorAll('.note')].map((n) => n.textContent),
                errors: [...turn.querySelectorAll('.error')].map((n) => n.textContent),
                banner: text('.direct-banner'),
                receipt: text('.receipt'),
                cost: text('.cost'),
            };
        })()"#,
        vec![json!(index)],
    )
    .await
}

async fn type_and_send(client: &Client, text: &str) {
    let box_ = client.find(Locator::Css("#message")).await.unwrap();
    box_.send_keys(text).await.unwrap();
    client
        .find(Locator::Css("#send"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn open_console(client: &Client, served: &Served) {
    client.goto(&served.url("/")).await.unwrap();
    until(
        client,
        "the list of specialists",
        "document.body.dataset.agents === 'loaded'",
    )
    .await;
}

fn screenshot_path() -> Option<PathBuf> {
    let value = std::env::var("BATON_CONSOLE_SCREENSHOT").ok()?;
    if value.ends_with(".png") {
        Some(PathBuf::from(value))
    } else {
        Some(PathBuf::from("/tmp/console.png"))
    }
}

fn str_field<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_default()
}

// ---- the tests ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_turn_streams_its_answer_with_the_consulted_pills_the_receipt_and_the_cost() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;

        // The specialists panel is the server's catalog, in the card's order.
        let (status, catalog) = served.get_json("/v1/agents");
        assert!(status.contains(" 200 "), "{status}");
        assert_eq!(catalog["assistant"]["id"], "orchestrator");
        assert_eq!(catalog["direct_line"]["prefix"], "#");
        let listed = eval(
            &client,
            "[...document.querySelectorAll('#agents .agent')].map((a) => a.dataset.agent)",
            Vec::new(),
        )
        .await;
        let catalog_ids: Vec<Value> = catalog["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].clone())
            .collect();
        assert_eq!(listed, Value::Array(catalog_ids));
        assert_eq!(
            listed,
            json!([
                "shop",
                "support",
                "rewards",
                "strategist",
                "stores",
                "memory"
            ])
        );
        let title = client
            .find(Locator::Css("#assistant-label"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(title, catalog["assistant"]["label"].as_str().unwrap());

        // The endpoints panel lists the server's ways in, as full URLs.
        let endpoints = eval(
            &client,
            "[...document.querySelectorAll('#endpoints .endpoint')].map((e) => e.textContent)",
            Vec::new(),
        )
        .await;
        let endpoints: Vec<&str> = endpoints
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let offered: Vec<Value> = catalog["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].clone())
            .collect();
        assert_eq!(endpoints.len(), offered.len(), "{endpoints:?}");
        for path in ["/v1/turns", "/v1/chat/completions", "/v1/agui", "/a2a"] {
            assert!(offered.contains(&json!(path)), "{offered:?}");
            assert!(
                endpoints
                    .iter()
                    .any(|e| e.contains(" http://127.0.0.1:") && e.ends_with(path)),
                "{path} in {endpoints:?}"
            );
        }

        type_and_send(&client, FIRST_MESSAGE).await;
        let state = turn_finished(&client, 1).await;
        let view = turn_view(&client, 0).await;
        assert_eq!(state, "completed", "{view:#}");

        // The answer streamed into the page.
        assert!(
            !str_field(&view, "answer").trim().is_empty(),
            "no answer text: {view:#}"
        );
        assert_eq!(view["errors"], json!([]), "{view:#}");

        // One pill per consulted specialist, each with status, duration and tool calls...
        let pills = view["pills"].as_array().unwrap();
        assert!(!pills.is_empty(), "no pills: {view:#}");
        for pill in pills {
            assert!(pill["agent"].is_string(), "{pill}");
            assert!(pill["status"].is_string(), "{pill}");
            assert!(pill["duration_ms"].is_number(), "{pill}");
            assert!(pill["tool_calls"].is_number(), "{pill}");
            let text = str_field(pill, "text");
            assert!(text.contains("ms") || text.contains(" s"), "{text}");
            assert!(text.contains("tool call"), "{text}");
        }
        // ...exactly the record the server kept for this turn.
        let episode = eval(
            &client,
            "document.getElementById('episode').dataset.episode",
            Vec::new(),
        )
        .await;
        let episode = episode.as_str().unwrap();
        assert!(!episode.is_empty(), "the page kept no episode id");
        let (status, history) = served.get_json(&format!("/v1/episodes/{episode}"));
        assert!(status.contains(" 200 "), "{status}: {history}");
        let turn = history["turns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["turn_id"] == view["turn_id"])
            .unwrap_or_else(|| panic!("turn {} not in {history:#}", view["turn_id"]));
        let recorded: Vec<Value> = turn["consulted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                json!({
                    "agent": c["agent_id"],
                    "status": c["status"],
                    "duration_ms": c["duration_ms"],
                    "tool_calls": c["tool_calls"],
                })
            })
            .collect();
        let shown: Vec<Value> = pills
            .iter()
            .map(|p| {
                json!({
                    "agent": p["agent"],
                    "status": p["status"],
                    "duration_ms": p["duration_ms"],
                    "tool_calls": p["tool_calls"],
                })
            })
            .collect();
        assert_eq!(shown, recorded);

        // The privacy receipt and the cost.
        let receipt = str_field(&view, "receipt");
        assert!(receipt.starts_with("Privacy: "), "{view:#}");
        assert!(
            receipt.contains("nothing masked") || receipt.contains("masked:"),
            "{receipt}"
        );
        let cost = str_field(&view, "cost");
        assert!(cost.starts_with("Cost ") && cost.contains('$'), "{view:#}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_line_message_shows_the_specialists_own_answer_as_an_attributed_block() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        type_and_send(&client, FIRST_MESSAGE).await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let episode = eval(
            &client,
            "document.getElementById('episode').dataset.episode",
            Vec::new(),
        )
        .await;

        // "Talk directly" writes the directive into the box; Enter sends.
        client
            .find(Locator::Css(".talk[data-agent=strategist]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let message = client.find(Locator::Css("#message")).await.unwrap();
        assert_eq!(
            message.prop("value").await.unwrap().as_deref(),
            Some("#strategist ")
        );
        message.send_keys(DIRECT_PAYLOAD).await.unwrap();
        message.send_keys(&Key::Enter.to_string()).await.unwrap();
        let state = turn_finished(&client, 2).await;
        let view = turn_view(&client, 1).await;
        assert_eq!(state, "completed", "{view:#}");

        // The same conversation continues.
        let now = eval(
            &client,
            "document.getElementById('episode').dataset.episode",
            Vec::new(),
        )
        .await;
        assert_eq!(now, episode);
        // The box was cleared and the user's text shown as typed.
        assert_eq!(message.prop("value").await.unwrap().as_deref(), Some(""));
        let said = eval(
            &client,
            "document.querySelectorAll('.turn')[1].querySelector('.user-text').textContent",
            Vec::new(),
        )
        .await;
        assert_eq!(said, json!(format!("#strategist {DIRECT_PAYLOAD}")));

        if let Some(path) = screenshot_path() {
            // Tall enough for both turns.
            client.set_window_size(1280, 1800).await.unwrap();
            let png = client.screenshot().await.unwrap();
            std::fs::write(&path, png).unwrap();
            eprintln!("screenshot: {}", path.display());
        }

        let blocks = view["delegated"].as_array().unwrap();
        let block = blocks
            .iter()
            .find(|b| b["agent"] == "strategist")
            .unwrap_or_else(|| {
                panic!("no .delegated[data-agent=strategist] block (does the runtime emit delegated_answer?): {view:#}")
            });
        assert!(
            !str_field(block, "text").trim().is_empty(),
            "empty delegated text: {view:#}"
        );
        assert!(
            str_field(block, "head").contains("(direct)"),
            "not attributed: {view:#}"
        );
        let pills = view["pills"].as_array().unwrap();
        assert!(
            pills.iter().any(|p| p["agent"] == "strategist"),
            "no strategist pill: {view:#}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_stream_parser_reads_frames_split_anywhere() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        // Two frames (one with a comment and a two-line data field), with every line ending
        // the standard allows, fed whole and then split at every position.
        let result = eval(
            &client,
            r#"(() => {
                const stream = ': keep-alive\r\nid: 1\r\nevent: text\r\ndata: {"a":"é"}\r\n\r\n'
                    + 'id: 2\revent: status\rdata: x\rdata: y\r\r'
                    + 'event: completed\ndata: {}\n\n';
                const parse = (chunks) => {
                    const seen = [];
                    const parser = new window.batonConsole.SseParser((e) => seen.push(e));
                    for (const c of chunks) parser.push(c);
                    parser.end();
                    return JSON.stringify(seen);
                };
                const whole = parse([stream]);
                const failures = [];
                for (let i = 0; i <= stream.length; i++) {
                    for (let j = i; j <= stream.length; j++) {
                        const split = parse([stream.slice(0, i), stream.slice(i, j), stream.slice(j)]);
                        if (split !== whole) failures.push([i, j, split]);
                    }
                }
                return { whole: JSON.parse(whole), failures: failures.slice(0, 3) };
            })()"#,
            Vec::new(),
        )
        .await;
        assert_eq!(result["failures"], json!([]), "{result:#}");
        assert_eq!(
            result["whole"],
            json!([
                { "type": "text", "data": "{\"a\":\"é\"}", "id": "1" },
                { "type": "status", "data": "x\ny", "id": "2" },
                { "type": "completed", "data": "{}", "id": "2" },
            ])
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lasting_direct_conversation_shows_its_indicator_until_the_user_leaves() {
    with_console(|client, served| async move {
        open_console(&client, &served).await;
        let sticky = "(() => { const s = document.getElementById('sticky'); \
                      return s.hidden ? null : { agent: s.dataset.agent, text: s.textContent }; })()";

        // `#strategist` alone opens the conversation: the indicator shows.
        type_and_send(&client, "#strategist").await;
        let state = turn_finished(&client, 1).await;
        assert_eq!(state, "completed", "{:#}", turn_view(&client, 0).await);
        let shown = eval(&client, sticky, Vec::new()).await;
        assert_eq!(shown["agent"], "strategist", "{:#}", turn_view(&client, 0).await);
        let text = str_field(&shown, "text");
        assert!(
            text.contains("Talking directly with Savings strategist") && text.contains("#end"),
            "{text}"
        );

        // A plain message stays with the specialist; the indicator stays.
        type_and_send(&client, DIRECT_PAYLOAD).await;
        assert_eq!(turn_finished(&client, 2).await, "completed");
        let view = turn_view(&client, 1).await;
        assert!(
            view["delegated"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["agent"] == "strategist" && !str_field(b, "text").is_empty()),
            "{view:#}"
        );
        assert_eq!(eval(&client, sticky, Vec::new()).await["agent"], "strategist");

        // "Leave" sends the exit directive; the indicator goes.
        client
            .find(Locator::Css("#sticky-leave"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(turn_finished(&client, 3).await, "completed");
        let said = eval(
            &client,
            "document.querySelectorAll('.turn')[2].querySelector('.user-text').textContent",
            Vec::new(),
        )
        .await;
        assert_eq!(said, "#end");
        assert_eq!(
            eval(&client, sticky, Vec::new()).await,
            Value::Null,
            "{:#}",
            turn_view(&client, 2).await
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_turn_draws_its_plan_as_a_graph_that_fills_in() {
    with_console_of(&["--orchestrator", "planner"], |client, served| async move {
        open_console(&client, &served).await;
        type_and_send(
            &client,
            "what's my points balance, show my receipts that didn't scan, then search the help centre for how to fix them",
        )
        .await;
        assert_eq!(turn_finished(&client, 1).await, "completed");
        let graph = eval(
            &client,
            r#"(() => {
                const turn = document.querySelectorAll('.turn')[0];
                const plan = turn.querySelector('figure.plan');
                if (!plan) return null;
                const waves = [...plan.querySelectorAll('.wave')].map((w) => ({
                    wave: Number(w.dataset.wave),
                    nodes: [...w.querySelectorAll('.plan-node')].map((n) => ({
                        id: n.dataset.node,
                        state: n.dataset.state,
                        mission: n.querySelector('.node-mission').textContent,
                    })),
                }));
                const edges = [...plan.querySelectorAll('line.plan-edge')].map((l) => {
                    const [x1, x2] = [Number(l.getAttribute('x1')), Number(l.getAttribute('x2'))];
                    return { from: l.dataset.from, to: l.dataset.to, rightwards: x2 > x1 };
                });
                return { waves, edges };
            })()"#,
            Vec::new(),
        )
        .await;
        assert_eq!(
            graph["waves"],
            json!([
                {"wave": 1, "nodes": [
                    {"id": "get_points_balance", "state": "completed", "mission": "what's my points balance"},
                    {"id": "lookup_receipts", "state": "completed", "mission": "show my receipts that didn't scan"},
                ]},
                {"wave": 2, "nodes": [
                    {"id": "search_help_articles", "state": "completed", "mission": "search the help centre for how to fix them"},
                ]},
            ]),
            "{graph}"
        );
        assert_eq!(
            graph["edges"],
            json!([{"from": "lookup_receipts", "to": "search_help_articles", "rightwards": true}]),
            "{graph}"
        );
        if let Some(path) = screenshot_path() {
            let path = path.with_file_name("console-plan.png");
            client.set_window_size(1280, 1200).await.unwrap();
            // Arrows are drawn for the layout at this size.
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::fs::write(&path, client.screenshot().await.unwrap()).unwrap();
            eprintln!("screenshot: {}", path.display());
        }
        let view = turn_view(&client, 0).await;
        let pills: Vec<&str> = view["pills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["agent"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(pills, ["get_points_balance", "lookup_receipts", "search_help_articles"]);
    })
    .await;
}
