//! The turn's output: numbers events, sends them to the client while it listens, and keeps
//! what the user was shown (the narration) for the journal.
//!
//! Events go to the stream's outbox, which its reader drains as it drives the turn; the
//! engine never waits on a slow (or vanished) client while it holds the order lock.

use std::sync::{Arc, Mutex};

use baton_core::events::{Event, PROTOCOL_VERSION, WireEvent};

use crate::stream::Outbox;

struct State {
    seq: u64,
    narration: String,
    client_gone: bool,
    /// The next answer text starts a new paragraph.
    paragraph: bool,
}

/// Shared by every task of a turn; emission order is seq order.
pub(crate) struct Output {
    turn_id: Arc<str>,
    outbox: Arc<Outbox>,
    state: Mutex<State>,
}

impl Output {
    pub(crate) fn new(turn_id: Arc<str>, outbox: Arc<Outbox>) -> Self {
        Output {
            turn_id,
            outbox,
            state: Mutex::new(State {
                seq: 0,
                narration: String::new(),
                client_gone: false,
                paragraph: false,
            }),
        }
    }

    /// Sends one event. A client that left does not stop the turn: later events are
    /// simply not sent.
    pub(crate) async fn emit(&self, event: Event) {
        self.emit_now(event);
    }

    fn emit_now(&self, mut event: Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Event::Text { text, .. } = &mut event {
            if std::mem::take(&mut state.paragraph) && !state.narration.is_empty() {
                text.insert_str(0, "\n\n");
            }
            state.narration.push_str(text);
        }
        state.seq += 1;
        if state.client_gone {
            return;
        }
        let wire = Box::new(WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: self.turn_id.clone(),
            seq: state.seq,
            event,
        });
        if !self.outbox.push(wire) {
            state.client_gone = true;
            tracing::info!(turn_id = %self.turn_id, "client left; the turn goes on and will commit");
        }
    }

    /// Answer text from `source`.
    pub(crate) async fn text(&self, source: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        self.emit_now(Event::Text {
            source: source.to_owned(),
            text: text.to_owned(),
        });
    }

    /// Starts a new paragraph before the next answer text (if any text came before).
    pub(crate) async fn paragraph(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.paragraph = true;
        }
    }

    /// Everything shown so far as one text.
    pub(crate) async fn narration(&self) -> String {
        self.state
            .lock()
            .map(|s| s.narration.clone())
            .unwrap_or_default()
    }
}
