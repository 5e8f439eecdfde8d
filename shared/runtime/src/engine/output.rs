//! The turn's output: passes every outbound text through the privacy guard (D-23), numbers
//! events, sends them to the client while it listens, and keeps what the user was shown
//! (the narration) for the journal.
//!
//! Streamed text is masked per source with a bounded hold-back, so a value split across
//! deltas is still masked; a source's held text is released when another source starts
//! and before any event that closes a piece of the answer (a delegated answer, the
//! consulted record, an error, completion).
//!
//! Events go to the stream's outbox, bounded in bytes; when it is full the turn waits for
//! the reader between events, never while it holds the order lock, and cuts off a reader
//! that stays behind for the stall limit.

use std::sync::{Arc, Mutex};

use baton_core::events::{DirectLineState, Event, PROTOCOL_VERSION, WireEvent};
use baton_core::privacy::{PrivacyGuard, PrivacyReceipt, StreamMasker};
use baton_core::turn::{AgentStatus, TurnOutcome};
use tokio::sync::broadcast;

use crate::stream::{Outbox, Pushed, STALLED};

struct State {
    seq: u64,
    narration: String,
    client_gone: bool,
    /// The next answer text starts a new paragraph.
    paragraph: bool,
    /// The source of the last answer text sent: a new source starts a new paragraph.
    last_source: Option<String>,
    /// Status events sent (a metric per turn).
    status_events: u32,
    /// The answer text being streamed now: its source and masker.
    text: Option<(String, StreamMasker)>,
    /// Texts streaming beside the answer, each with its masker.
    side: Vec<(Side, StreamMasker)>,
    receipt: PrivacyReceipt,
}

/// A text that streams beside the answer, masked on its own: reasoning, or a specialist's
/// Direct Line answer.
#[derive(PartialEq)]
enum Side {
    Reasoning { source: String },
    Delegated { agent: String, label: String },
}

impl Side {
    /// The event that carries a piece of it.
    fn event(&self, text: String) -> Event {
        match self {
            Side::Reasoning { source } => Event::Reasoning {
                source: source.clone(),
                text,
            },
            Side::Delegated { agent, label } => Event::DelegatedText {
                agent: agent.clone(),
                label: label.clone(),
                text,
            },
        }
    }
}

/// Shared by every task of a turn; emission order is seq order.
pub(crate) struct Output {
    turn_id: Arc<str>,
    outbox: Arc<Outbox>,
    guard: Arc<PrivacyGuard>,
    state: Mutex<State>,
    /// Whoever watches the turn besides its reader (`Runtime::watch`): they get every
    /// event from when they started, also after the reader left.
    watch: broadcast::Sender<WireEvent>,
}

/// Events a watcher may fall behind by before it is cut off.
pub(crate) const WATCH_BACKLOG: usize = 256;

impl Output {
    pub(crate) fn new(
        turn_id: Arc<str>,
        outbox: Arc<Outbox>,
        guard: Arc<PrivacyGuard>,
        watch: broadcast::Sender<WireEvent>,
    ) -> Self {
        Output {
            turn_id,
            outbox,
            guard,
            watch,
            state: Mutex::new(State {
                seq: 0,
                narration: String::new(),
                client_gone: false,
                paragraph: false,
                last_source: None,
                status_events: 0,
                text: None,
                side: Vec::new(),
                receipt: PrivacyReceipt::default(),
            }),
        }
    }

    /// Sends one event. A client that left does not stop the turn: later events are
    /// simply not sent.
    pub(crate) async fn emit(&self, event: Event) {
        self.emit_now(event);
        self.paced().await;
    }

    /// Waits while the reader is behind (never while holding the state lock); a reader
    /// that stays behind for the stall limit is cut off with one plain error event.
    async fn paced(&self) {
        if self.outbox.room().await.is_ok() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.client_gone {
            return;
        }
        state.seq += 1;
        state.client_gone = true;
        self.outbox.stall(WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: self.turn_id.clone(),
            seq: state.seq,
            event: Event::Error {
                message: STALLED.to_owned(),
            },
        });
        tracing::warn!(turn_id = %self.turn_id, "reader stalled; its output is dropped and the turn goes on");
    }

    /// Sends one event without waiting for the reader: for paths that cannot wait (a
    /// call's end sent as its future is dropped).
    pub(crate) fn emit_now(&self, event: Event) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let state = &mut *state;
        match event {
            Event::Text { source, text } => self.answer_text(state, &source, &text),
            Event::Reasoning { source, text } => {
                self.side_piece(state, Side::Reasoning { source }, &text);
            }
            Event::Status { codes, message } => {
                let message = self.guard.mask(&message, &mut state.receipt);
                self.send(state, Event::Status { codes, message });
            }
            Event::ToolCallStart { .. } | Event::ToolResult { .. } | Event::ToolCallEnd { .. } => {
                self.send(state, event);
            }
            Event::Error { message } => {
                self.flush(state);
                let message = self.guard.mask(&message, &mut state.receipt);
                self.send(state, Event::Error { message });
            }
            Event::DelegatedText { agent, label, text } => {
                self.side_piece(state, Side::Delegated { agent, label }, &text);
            }
            Event::DelegatedAnswer {
                agent,
                label,
                status,
                text,
            } => {
                // `delegated` is the way in (it also keeps the narration); whatever comes
                // this way is masked all the same.
                self.flush(state);
                let text = self.guard.mask(&text, &mut state.receipt);
                self.send(
                    state,
                    Event::DelegatedAnswer {
                        agent,
                        label,
                        status,
                        text,
                    },
                );
            }
            Event::Interruption(mut asked) => {
                // What the user is asked to approve passes the guard like any answer.
                self.flush(state);
                asked.action = self.guard.mask(&asked.action, &mut state.receipt);
                let args = std::mem::take(&mut asked.args);
                asked.args = mask_value(&self.guard, args, &mut state.receipt);
                self.send(state, Event::Interruption(asked));
            }
            other => {
                self.flush(state);
                self.send(state, other);
            }
        }
    }

    /// `value` with every string in it masked, not counted on the receipt: for what is
    /// stored of a text the user is shown (counted when it is sent).
    pub(crate) fn mask_stored_value(&self, value: serde_json::Value) -> serde_json::Value {
        mask_value(&self.guard, value, &mut PrivacyReceipt::default())
    }

    /// A piece of answer text from `source`, masked as part of that source's stream.
    fn answer_text(&self, state: &mut State, source: &str, text: &str) {
        if state.text.as_ref().is_some_and(|(s, _)| s != source) {
            self.flush_text(state);
        }
        let (source, masker) = state
            .text
            .get_or_insert_with(|| (source.to_owned(), StreamMasker::new(self.guard.clone())));
        let out = masker.push(text, &mut state.receipt);
        if out.is_empty() {
            return; // held back: it may still become a value
        }
        let source = source.clone();
        self.send_text(state, source, out);
    }

    /// Releases everything every stream holds back.
    fn flush(&self, state: &mut State) {
        self.flush_text(state);
        for (side, mut masker) in std::mem::take(&mut state.side) {
            let out = masker.finish(&mut state.receipt);
            self.send_side(state, &side, out);
        }
    }

    /// A piece of a side text: masked with its own masker, sent when anything is released.
    fn side_piece(&self, state: &mut State, side: Side, text: &str) {
        let i = match state.side.iter().position(|(s, _)| *s == side) {
            Some(i) => i,
            None => {
                state
                    .side
                    .push((side, StreamMasker::new(self.guard.clone())));
                state.side.len() - 1
            }
        };
        let out = state.side[i].1.push(text, &mut state.receipt);
        if !out.is_empty() {
            let event = state.side[i].0.event(out);
            self.send(state, event);
        }
    }

    fn send_side(&self, state: &mut State, side: &Side, text: String) {
        if !text.is_empty() {
            self.send(state, side.event(text));
        }
    }

    fn flush_text(&self, state: &mut State) {
        if let Some((source, mut masker)) = state.text.take() {
            let out = masker.finish(&mut state.receipt);
            self.send_text(state, source, out);
        }
    }

    fn send_text(&self, state: &mut State, source: String, mut text: String) {
        if text.is_empty() {
            return;
        }
        // Two sources' answers never run together (`direct` composition joins them).
        let new_source = state.last_source.as_deref() != Some(source.as_str());
        if (std::mem::take(&mut state.paragraph) || new_source)
            && !state.narration.is_empty()
            && !state.narration.ends_with("\n\n")
        {
            text.insert_str(0, "\n\n");
        }
        if new_source {
            state.last_source = Some(source.clone());
        }
        state.narration.push_str(&text);
        self.send(state, Event::Text { source, text });
    }

    fn send(&self, state: &mut State, event: Event) {
        state.seq += 1;
        if matches!(event, Event::Status { .. }) {
            state.status_events += 1;
        }
        let watched = self.watch.receiver_count() > 0;
        if state.client_gone && !watched {
            return;
        }
        let wire = WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: self.turn_id.clone(),
            seq: state.seq,
            event,
        };
        if watched {
            // A watcher that fell behind is cut off (it reads the task back instead).
            let _ = self.watch.send(wire.clone());
        }
        if state.client_gone {
            return;
        }
        match self.outbox.push(wire) {
            Pushed::Queued => {}
            // Its number was not used: the next event takes it.
            Pushed::Joined => state.seq -= 1,
            Pushed::Closed => {
                state.client_gone = true;
                tracing::info!(turn_id = %self.turn_id, "client left; the turn goes on and will commit");
            }
        }
    }

    /// Answer text from `source`.
    pub(crate) async fn text(&self, source: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Ok(mut state) = self.state.lock() {
            self.answer_text(&mut state, source, text);
        }
        self.paced().await;
    }

    /// A piece of a specialist's Direct Line answer as it streams, masked per agent.
    pub(crate) async fn delegated_text(&self, agent: &str, label: &str, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Ok(mut state) = self.state.lock() {
            let side = Side::Delegated {
                agent: agent.to_owned(),
                label: label.to_owned(),
            };
            self.side_piece(&mut state, side, text);
        }
        self.paced().await;
    }

    /// Delivers a specialist's answer on the Direct Line, masked but otherwise untouched;
    /// returns the text as delivered.
    pub(crate) async fn delegated(
        &self,
        agent: &str,
        label: &str,
        status: AgentStatus,
        text: &str,
    ) -> String {
        let text = self.deliver(agent, label, status, text);
        self.paced().await;
        text
    }

    fn deliver(&self, agent: &str, label: &str, status: AgentStatus, text: &str) -> String {
        let Ok(mut state) = self.state.lock() else {
            return String::new();
        };
        let state = &mut *state;
        self.flush_text(state);
        let streaming = state
            .side
            .iter()
            .position(|(s, _)| matches!(s, Side::Delegated { agent: a, .. } if a == agent));
        let streamed = match streaming {
            Some(i) => {
                let (side, mut masker) = state.side.remove(i);
                let tail = masker.finish(&mut state.receipt);
                self.send_side(state, &side, tail);
                true
            }
            None => false,
        };
        // What streamed was counted as it went; the whole text masks the same way (the
        // guard's streaming contract), so it is counted only when nothing streamed.
        let text = if streamed {
            self.guard.mask(text, &mut PrivacyReceipt::default())
        } else {
            self.guard.mask(text, &mut state.receipt)
        };
        if !state.narration.is_empty() {
            state.narration.push_str("\n\n");
        }
        // The narration is what the orchestrator reads next turn: attributed, verbatim.
        state
            .narration
            .push_str(&format!("{label} (direct): {text}"));
        self.send(
            state,
            Event::DelegatedAnswer {
                agent: agent.to_owned(),
                label: label.to_owned(),
                status,
                text: text.clone(),
            },
        );
        text
    }

    /// Tells the client this turn (or the lasting conversation) is on the Direct Line.
    pub(crate) async fn direct_line(
        &self,
        agent: &str,
        label: &str,
        mode: baton_core::directive::DirectMode,
        state: DirectLineState,
    ) {
        self.emit_now(Event::DirectLine {
            agent: agent.to_owned(),
            label: label.to_owned(),
            mode,
            state,
        });
    }

    /// Starts a new paragraph before the next answer text (if any text came before).
    pub(crate) async fn paragraph(&self) {
        if let Ok(mut s) = self.state.lock() {
            self.flush_text(&mut s);
            s.paragraph = true;
        }
    }

    /// Releases whatever the privacy guard still holds back.
    pub(crate) async fn flush_all(&self) {
        if let Ok(mut s) = self.state.lock() {
            self.flush(&mut s);
        }
    }

    /// Everything shown so far as one text (after the privacy guard).
    /// Status events sent so far.
    pub(crate) fn status_events(&self) -> u32 {
        self.state
            .lock()
            .map(|s| s.status_events)
            .unwrap_or_default()
    }

    /// How long the narration is now (a mark for [`Output::narration_from`]).
    pub(crate) fn narration_len(&self) -> usize {
        self.state
            .lock()
            .map(|s| s.narration.len())
            .unwrap_or_default()
    }

    /// The narration after `mark`.
    pub(crate) fn narration_from(&self, mark: usize) -> String {
        self.state
            .lock()
            .map(|s| s.narration.get(mark..).unwrap_or_default().to_owned())
            .unwrap_or_default()
    }

    /// The answer as shown, taken out of the output: the turn's record gets it without a
    /// second copy. Only once the answer is complete.
    pub(crate) fn take_narration(&self) -> String {
        self.state
            .lock()
            .map(|mut s| std::mem::take(&mut s.narration))
            .unwrap_or_default()
    }

    /// What the privacy guard masked so far.
    pub(crate) async fn receipt(&self) -> PrivacyReceipt {
        self.state
            .lock()
            .map(|s| s.receipt.clone())
            .unwrap_or_default()
    }

    /// Puts on the receipt what was removed from the turn's pictures (D-42).
    pub(crate) fn pictures_stripped(&self, pictures: &[baton_core::picture::Picture]) {
        if let Ok(mut state) = self.state.lock() {
            state.receipt.pictures = baton_core::picture::removed_by_kind(pictures);
        }
    }

    /// Masks a text that is stored but not streamed (a sub-agent's segment), without
    /// counting it on the receipt: the receipt counts what the user was shown.
    pub(crate) fn mask_stored(&self, text: &str) -> String {
        self.guard.mask(text, &mut PrivacyReceipt::default())
    }

    /// Ends the turn's stream with its outcome and privacy receipt.
    pub(crate) async fn complete(&self, outcome: TurnOutcome) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let state = &mut *state;
        self.flush(state);
        let privacy = state.receipt.clone();
        self.send(state, Event::Completed { outcome, privacy });
    }
}

/// `value` with every string in it (keys left as they are) masked by `guard`.
fn mask_value(
    guard: &PrivacyGuard,
    value: serde_json::Value,
    receipt: &mut PrivacyReceipt,
) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(guard.mask(&s, receipt)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| mask_value(guard, v, receipt))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, mask_value(guard, v, receipt)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use baton_core::directive::DirectMode;
    use baton_core::privacy::{PiiKind, PrivacyPolicy};

    use super::*;

    const EMAIL: &str = "jane.doe@example.com";

    fn output() -> (Output, Arc<Outbox>) {
        let outbox = Arc::new(Outbox::new(crate::stream::OutputLimits::default()));
        let guard = Arc::new(PrivacyGuard::new(&PrivacyPolicy::default()));
        (
            Output::new(
                Arc::from("t1"),
                outbox.clone(),
                guard,
                broadcast::channel(1).0,
            ),
            outbox,
        )
    }

    /// Every way text leaves a turn, each with the address split across pieces where it
    /// streams: nothing of it reaches the wire, and each is counted once.
    #[tokio::test]
    async fn every_outbound_text_passes_the_guard() {
        let (out, outbox) = output();
        let (a, b) = EMAIL.split_at(7);
        out.text("orchestrator", &format!("Write to {a}")).await;
        out.text("orchestrator", &format!("{b} today.")).await;
        out.emit(Event::Reasoning {
            source: "orchestrator".into(),
            text: format!("the user is {a}"),
        })
        .await;
        out.emit(Event::Reasoning {
            source: "orchestrator".into(),
            text: b.into(),
        })
        .await;
        out.emit(Event::Status {
            codes: vec![],
            message: format!("Mailing {EMAIL}…"),
        })
        .await;
        out.direct_line(
            "support",
            "Support",
            DirectMode::Strict,
            DirectLineState::Single,
        )
        .await;
        out.delegated_text("support", "Support", &format!("Mail {a}"))
            .await;
        out.delegated_text("support", "Support", b).await;
        let delivered = out
            .delegated(
                "support",
                "Support",
                AgentStatus::Ok,
                &format!("Mail {EMAIL}"),
            )
            .await;
        out.paragraph().await;
        out.text(baton_core::events::SOURCE_NOTE, &format!("Or {EMAIL}."))
            .await;
        out.emit(Event::Error {
            message: format!("Could not reach {EMAIL}"),
        })
        .await;
        out.complete(TurnOutcome::Answered).await;

        assert_eq!(delivered, "Mail [email]");
        let events = outbox.drain();
        for e in &events {
            let json = serde_json::to_string(e).unwrap();
            assert!(
                !json.contains("example.com") && !json.contains("jane"),
                "{json}"
            );
        }
        let Some(Event::Completed { privacy, .. }) = events.last().map(|e| e.event.clone()) else {
            panic!("the stream ends with completed");
        };
        // Text, reasoning, status, the delegated answer (once), the note, the error.
        assert_eq!(privacy.by_kind.get(&PiiKind::Email), Some(&6));
        let narration = out.narration_from(0);
        assert!(
            narration.starts_with("Write to [email] today."),
            "{narration}"
        );
        assert!(
            narration.contains("Support (direct): Mail [email]"),
            "{narration}"
        );
    }
}
