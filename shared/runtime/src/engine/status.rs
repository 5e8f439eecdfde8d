//! Status events (D-12): sub-agents and connectors emit typed codes; the orchestrator's
//! card gives the words and a policy per code. Concurrent batched codes within a short
//! window merge into one line; unknown codes are dropped and logged; a sub-agent silent
//! for too long gets a generic progress line.
//!
//! One board per dispatch, borrowed by the sub-agents and the renderer (they run on the
//! same task). Codes are queued on it and wake the renderer; liveness is not: each
//! sub-agent stamps an atomic clock on its lane whenever it does anything, so the hot
//! streaming path never wakes the renderer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::events::Event;
use baton_core::ports::metrics::UNKNOWN_STATUS_CODE_TOTAL;
use baton_core::registry::{StatusMessages, StatusPolicy};
use tokio::sync::Notify;
use tokio::time::{Duration, Instant, sleep_until};

use super::context::TurnCtx;

struct Lane {
    agent: Arc<str>,
    /// Milliseconds after the board's start of the lane's last sign of life.
    last_ms: AtomicU64,
    done: AtomicBool,
}

/// A status code as it arrived: from which sub-agent, and the fields of the call that
/// emitted it (its arguments, for `transform` words).
struct Code {
    agent: Arc<str>,
    code: Arc<str>,
    fields: Fields,
}

/// The arguments of the tool call that emitted a code (an object).
pub(crate) type Fields = Arc<serde_json::Value>;

/// The status board of one dispatch.
pub(crate) struct Board {
    start: Instant,
    lanes: Vec<Lane>,
    codes: Mutex<Vec<Code>>,
    wake: Notify,
    closed: AtomicBool,
}

impl Board {
    /// A board with one lane per sub-agent.
    pub(crate) fn new(agents: impl IntoIterator<Item = Arc<str>>) -> Self {
        Board {
            start: Instant::now(),
            lanes: agents
                .into_iter()
                .map(|agent| Lane {
                    agent,
                    last_ms: AtomicU64::new(0),
                    done: AtomicBool::new(false),
                })
                .collect(),
            codes: Mutex::new(Vec::new()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
        }
    }

    fn lane(&self, agent: &str) -> Option<&Lane> {
        self.lanes.iter().find(|l| &*l.agent == agent)
    }

    /// The sub-agent did something (text, a tool call ...).
    pub(crate) fn activity(&self, agent: &str) {
        if let Some(lane) = self.lane(agent) {
            let ms = self.start.elapsed().as_millis() as u64;
            lane.last_ms.store(ms, Ordering::Relaxed);
        }
    }

    /// A typed status code from `agent`'s call with `fields`.
    pub(crate) fn code(&self, agent: &Arc<str>, code: &Arc<str>, fields: &Fields) {
        self.activity(agent);
        if let Ok(mut codes) = self.codes.lock() {
            codes.push(Code {
                agent: agent.clone(),
                code: code.clone(),
                fields: fields.clone(),
            });
        }
        self.wake.notify_one();
    }

    /// Every sub-agent is over: the renderer finishes.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// The sub-agent is over: no progress lines for it any more.
    pub(crate) fn finished(&self, agent: &str) {
        if let Some(lane) = self.lane(agent) {
            lane.done.store(true, Ordering::Relaxed);
        }
    }
}

/// Renders status lines until the dispatch closes the board.
pub(crate) async fn render(ctx: &TurnCtx, board: &Board) {
    let default = StatusMessages::default();
    let config = ctx
        .orchestrator
        .orchestration
        .as_ref()
        .map(|o| &o.status)
        .unwrap_or(&default);
    let window = Duration::from_millis(config.merge_window_ms);
    let idle = config.idle_after_ms;
    let mut batch: Vec<(String, String)> = Vec::new();
    let mut batch_due: Option<Instant> = None;
    // Per lane: the activity stamp for which an idle line was already shown.
    let mut shown: Vec<Option<u64>> = vec![None; board.lanes.len()];
    let sleep = sleep_until(board.start);
    tokio::pin!(sleep);
    loop {
        let arrived = board
            .codes
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default();
        for Code {
            agent,
            code,
            fields,
        } in arrived
        {
            let Some(m) = config.codes.get(&*code) else {
                tracing::warn!(%agent, %code, "unknown status code dropped");
                ctx.inner
                    .metrics
                    .count(UNKNOWN_STATUS_CODE_TOTAL, 1, &[("code", &code)]);
                continue;
            };
            let text = m.line(&ctx.label_of(&agent), &fields);
            match m.policy {
                StatusPolicy::Suppress => {}
                StatusPolicy::Forward | StatusPolicy::Transform => {
                    ctx.out
                        .emit(Event::Status {
                            codes: vec![code.to_string()],
                            message: text,
                        })
                        .await;
                }
                StatusPolicy::Batch => {
                    batch.push((code.to_string(), text));
                    batch_due.get_or_insert_with(|| Instant::now() + window);
                }
            }
        }
        if board.closed.load(Ordering::Acquire) {
            break;
        }
        let idle_due = board
            .lanes
            .iter()
            .enumerate()
            .filter(|(i, l)| {
                !l.done.load(Ordering::Relaxed)
                    && shown[*i] != Some(l.last_ms.load(Ordering::Relaxed))
            })
            .map(|(i, l)| {
                (
                    board.start + Duration::from_millis(l.last_ms.load(Ordering::Relaxed) + idle),
                    i,
                )
            })
            .min();
        let next = match (batch_due, idle_due) {
            (Some(b), Some((i, _))) => Some(b.min(i)),
            (b, i) => b.or(i.map(|(at, _)| at)),
        };
        if let Some(at) = next {
            sleep.as_mut().reset(at);
        }
        tokio::select! {
            () = board.wake.notified() => {}
            () = &mut sleep, if next.is_some() => {
                let now = Instant::now();
                if batch_due.is_some_and(|b| b <= now) {
                    batch_due = None;
                    let line = merge(&batch);
                    let codes = batch.drain(..).map(|(c, _)| c).collect();
                    if !line.is_empty() {
                        ctx.out.emit(Event::Status { codes, message: line }).await;
                    }
                }
                if let Some((at, i)) = idle_due
                    && at <= now
                {
                    let lane = &board.lanes[i];
                    shown[i] = Some(lane.last_ms.load(Ordering::Relaxed));
                    let message = config.idle_text.replace("{agent}", &ctx.label_of(&lane.agent));
                    ctx.out.emit(Event::Status { codes: Vec::new(), message }).await;
                }
            }
        }
    }
}

/// Merges lines into one: "Looking for offers and checking your receipt…".
fn merge(lines: &[(String, String)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (_, text) in lines {
        let t = text
            .trim()
            .trim_end_matches(['…', '.'])
            .trim_end_matches("...")
            .trim()
            .to_owned();
        if !t.is_empty() && !parts.contains(&t) {
            parts.push(t);
        }
    }
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == parts.len() { " and " } else { ", " });
            let mut c = p.chars();
            if let Some(first) = c.next() {
                out.extend(first.to_lowercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push_str(p);
        }
    }
    if !out.is_empty() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_lines_read_as_one_sentence() {
        let lines = vec![
            ("a".to_owned(), "Looking for offers…".to_owned()),
            ("b".to_owned(), "Checking your receipt...".to_owned()),
            ("c".to_owned(), "Looking for offers…".to_owned()),
        ];
        assert_eq!(
            merge(&lines),
            "Looking for offers and checking your receipt…"
        );
        assert_eq!(merge(&[]), "");
    }
}
