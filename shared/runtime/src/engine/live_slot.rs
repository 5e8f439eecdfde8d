//! The live slot of `direct` composition (seed 000): the first sub-agent to produce text
//! streams live; the others buffer. When the live one finishes, the next buffered one is
//! flushed with a small pacing between chunks and then streams live itself. Text of two
//! sub-agents never interleaves, and each sub-agent's text is journalled as its own segment.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::Mutex;

use super::output::Output;

#[derive(Default)]
struct State {
    owner: Option<String>,
    /// Waiting agents in order of their first text, with their chunks and whether done.
    queue: VecDeque<(String, Vec<String>, bool)>,
}

/// Shared by the sub-agents of one `direct` turn.
pub(crate) struct LiveSlot {
    pacing: Duration,
    state: Mutex<State>,
}

impl LiveSlot {
    pub(crate) fn new(pacing: Duration) -> Self {
        LiveSlot {
            pacing,
            state: Mutex::new(State::default()),
        }
    }

    /// A text chunk from `agent`.
    pub(crate) async fn text(&self, out: &Output, agent: &str, text: &str) {
        let mut s = self.state.lock().await;
        match &s.owner {
            None => {
                s.owner = Some(agent.to_owned());
                out.text(agent, text).await;
            }
            Some(owner) if owner == agent => out.text(agent, text).await,
            Some(_) => match s.queue.iter_mut().find(|(a, _, _)| a == agent) {
                Some((_, chunks, _)) => chunks.push(text.to_owned()),
                None => s
                    .queue
                    .push_back((agent.to_owned(), vec![text.to_owned()], false)),
            },
        }
    }

    /// `agent` has finished; if it held the slot, pass the slot on.
    pub(crate) async fn done(&self, out: &Output, agent: &str) {
        let mut s = self.state.lock().await;
        if s.owner.as_deref() != Some(agent) {
            if let Some(entry) = s.queue.iter_mut().find(|(a, _, _)| a == agent) {
                entry.2 = true;
            }
            return;
        }
        s.owner = None;
        // Hand the slot down the queue; flush finished agents entirely, stop at one still running.
        while let Some((next, chunks, finished)) = s.queue.pop_front() {
            self.flush(out, &next, chunks).await;
            if !finished {
                s.owner = Some(next);
                break;
            }
        }
    }

    /// Flushes whatever is still buffered (all sub-agents have ended).
    pub(crate) async fn finish(&self, out: &Output) {
        let mut s = self.state.lock().await;
        while let Some((next, chunks, _)) = s.queue.pop_front() {
            self.flush(out, &next, chunks).await;
        }
        s.owner = None;
    }

    /// Sends a buffered sub-agent's text with a small pacing, so it still reads as a stream.
    async fn flush(&self, out: &Output, agent: &str, chunks: Vec<String>) {
        for chunk in chunks {
            if !self.pacing.is_zero() {
                tokio::time::sleep(self.pacing).await;
            }
            out.text(agent, &chunk).await;
        }
    }
}
