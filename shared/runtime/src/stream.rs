//! The stream of one turn's events.
//!
//! A turn runs on a task of its own and hands its events to the stream's reader through an
//! [`Outbox`]: a queue bounded in bytes. The turn never waits on the reader while it holds
//! anything shared (a store call, a lock): when the queue is full it waits for room only
//! between events, and a reader that makes no room for the stall limit is cut off — its
//! queued events are dropped, it gets one `error` event, and the turn goes on to its
//! commit without it. Dropping the stream early does the same without the error.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use baton_core::events::{Event, WireEvent};
use futures::Stream;
use std::sync::Arc;
use tokio::sync::Notify;

/// How much of a turn's output may wait for a slow reader, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes of events (approximately: their texts plus a fixed overhead each) queued for
    /// the reader before the turn waits for it.
    pub buffer_bytes: usize,
    /// How long the turn waits for a reader that makes no room before cutting it off.
    pub stall: Duration,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            buffer_bytes: 256 * 1024,
            stall: Duration::from_secs(20),
        }
    }
}

/// What the reader is told when it fell too far behind.
pub(crate) const STALLED: &str = "The connection fell behind, so the rest of this answer was not sent. It is saved in the conversation.";

/// Events waiting for the reader.
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
    /// Whether the queue is over its limit: read on every event without the lock.
    over: AtomicBool,
    /// Wakes a turn waiting for room.
    room: Notify,
    limits: OutputLimits,
}

#[derive(Default)]
struct OutboxState {
    queue: VecDeque<WireEvent>,
    /// The queue's weight (see [`weight`]).
    bytes: usize,
    /// The reader left, or was cut off: nothing more is queued.
    closed: bool,
    /// The turn is over: nothing more will come.
    finished: bool,
    /// The reader waiting for the next event.
    reader: Option<Waker>,
    /// A turn waits for room.
    waiting: bool,
}

/// The reader was cut off: it made no room within the stall limit.
#[derive(Debug)]
pub(crate) struct Stalled;

/// An event's share of the buffer: its texts, plus a fixed overhead for the frame.
fn weight(event: &Event) -> usize {
    64 + match event {
        Event::Text { text, .. }
        | Event::Reasoning { text, .. }
        | Event::DelegatedText { text, .. }
        | Event::DelegatedAnswer { text, .. } => text.len(),
        Event::Status { message, .. } | Event::Error { message } => message.len(),
        Event::AgentsConsulted {
            agents,
            footer,
            memories,
        } => footer.len() + 128 * (agents.len() + memories.len()),
        _ => 0,
    }
}

/// What became of a pushed event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued as an event of its own.
    Queued,
    /// Its text was appended to the unread piece before it, from the same source: its
    /// sequence number was not used (numbers stay contiguous for the reader).
    Joined,
    /// The reader has left or was cut off: nothing more is queued.
    Closed,
}

/// Appends `next`'s text to `last` when both are pieces of one source's text of the same
/// kind (the joined event keeps `last`'s number): the bytes added, or `None`.
fn join(last: &mut WireEvent, next: &WireEvent) -> Option<usize> {
    let (text, more) = match (&mut last.event, &next.event) {
        (Event::Text { source, text }, Event::Text { source: s, text: t })
        | (Event::Reasoning { source, text }, Event::Reasoning { source: s, text: t })
            if source == s =>
        {
            (text, t)
        }
        (
            Event::DelegatedText { agent, text, .. },
            Event::DelegatedText {
                agent: a, text: t, ..
            },
        ) if agent == a => (text, t),
        _ => return None,
    };
    text.push_str(more);
    Some(more.len())
}

impl Outbox {
    pub(crate) fn new(limits: OutputLimits) -> Self {
        Outbox {
            state: Mutex::new(OutboxState::default()),
            over: AtomicBool::new(false),
            room: Notify::new(),
            limits,
        }
    }

    /// Queues an event, or joins it to the piece before it (see [`Pushed`]).
    pub(crate) fn push(&self, event: WireEvent) -> Pushed {
        let Ok(mut s) = self.state.lock() else {
            return Pushed::Closed;
        };
        if s.closed {
            return Pushed::Closed;
        }
        // A piece of text the reader has not taken yet grows the piece before it from the
        // same source: a reader that falls behind holds one event, not one per delta (D-40).
        let pushed = match s.queue.back_mut().and_then(|last| join(last, &event)) {
            Some(added) => {
                s.bytes += added;
                Pushed::Joined
            }
            None => {
                s.bytes += weight(&event.event);
                s.queue.push_back(event);
                Pushed::Queued
            }
        };
        if s.bytes > self.limits.buffer_bytes {
            self.over.store(true, Ordering::Release);
        }
        if let Some(reader) = s.reader.take() {
            reader.wake();
        }
        pushed
    }

    /// Waits until the queue is under its limit (at once, almost always).
    ///
    /// # Errors
    /// [`Stalled`] when the reader made no room for the stall limit.
    pub(crate) async fn room(&self) -> Result<(), Stalled> {
        if !self.over.load(Ordering::Acquire) || !self.full() {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + self.limits.stall;
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before the check, so a pop between the two is not missed.
            notified.as_mut().enable();
            if !self.full() {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return if self.full() { Err(Stalled) } else { Ok(()) };
            }
        }
    }

    /// Whether a turn must wait before it queues more (marking that it does).
    fn full(&self) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        let full = !s.closed && s.bytes > self.limits.buffer_bytes;
        // Cleared by the read that makes room, which then wakes every waiting turn.
        s.waiting |= full;
        full
    }

    /// Cuts the reader off: drops what it has not read and leaves it `last` to read.
    pub(crate) fn stall(&self, last: WireEvent) {
        if let Ok(mut s) = self.state.lock() {
            s.closed = true;
            s.queue = VecDeque::from([last]);
            s.bytes = 0;
            self.over.store(false, Ordering::Release);
            if let Some(reader) = s.reader.take() {
                reader.wake();
            }
        }
    }

    /// The turn is over.
    pub(crate) fn finish(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.finished = true;
            if let Some(reader) = s.reader.take() {
                reader.wake();
            }
        }
    }

    /// Moves every queued event into `into` (the reader's own buffer), so that the reader
    /// takes the lock once per batch rather than once per event; false when nothing more
    /// will come. Registers the reader's waker when the queue is empty.
    fn poll_take(&self, into: &mut VecDeque<WireEvent>, cx: &mut Context<'_>) -> Poll<bool> {
        let Ok(mut s) = self.state.lock() else {
            return Poll::Ready(false);
        };
        if !s.queue.is_empty() {
            // Taken whole: the outbox starts again from no room at all, so that a turn at
            // rest holds no emptied queue (a thousand open turns held a megabyte of them).
            if into.is_empty() {
                *into = std::mem::take(&mut s.queue);
            } else {
                into.append(&mut s.queue);
            }
            s.bytes = 0;
            self.over.store(false, Ordering::Release);
            if std::mem::take(&mut s.waiting) {
                self.room.notify_waiters();
            }
            return Poll::Ready(true);
        }
        if s.finished || s.closed {
            return Poll::Ready(false);
        }
        if !s.reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.reader = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Everything queued so far (for tests of what a turn sends).
    #[cfg(test)]
    pub(crate) fn drain(&self) -> Vec<WireEvent> {
        let Ok(mut s) = self.state.lock() else {
            return Vec::new();
        };
        s.bytes = 0;
        s.queue.drain(..).collect()
    }

    fn reader_left(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.closed = true;
            s.queue = VecDeque::new();
            s.bytes = 0;
            s.reader = None;
        }
        self.over.store(false, Ordering::Release);
        self.room.notify_waiters();
    }
}

/// Marks the outbox finished when the turn's task ends, however it ends.
pub(crate) struct FinishOnDrop(pub(crate) Arc<Outbox>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// A running (or replayed) turn.
pub struct TurnStream {
    /// The turn id.
    pub turn_id: String,
    /// The episode id.
    pub episode_id: String,
    /// Whether this replays a turn that already completed (D-25).
    pub replay: bool,
    pub(crate) events: Arc<Outbox>,
    /// Events taken from the outbox, not yet handed to the reader. With the outbox this
    /// holds at most about twice the buffer limit.
    pub(crate) taken: VecDeque<WireEvent>,
}

impl fmt::Debug for TurnStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnStream")
            .field("turn_id", &self.turn_id)
            .field("episode_id", &self.episode_id)
            .field("replay", &self.replay)
            .finish_non_exhaustive()
    }
}

impl TurnStream {
    /// The next event taken; the buffer, once emptied, gives its room back at once rather
    /// than when the next events come.
    fn pop_taken(&mut self) -> Option<WireEvent> {
        let event = self.taken.pop_front();
        if self.taken.is_empty() && self.taken.capacity() > 0 {
            self.taken = VecDeque::new();
        }
        event
    }
}

impl Stream for TurnStream {
    type Item = WireEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WireEvent>> {
        let this = &mut *self;
        if let Some(event) = this.pop_taken() {
            return Poll::Ready(Some(event));
        }
        match this.events.poll_take(&mut this.taken, cx) {
            Poll::Ready(true) => Poll::Ready(this.pop_taken()),
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for TurnStream {
    fn drop(&mut self) {
        // The turn goes on by itself and commits; its events are no longer kept.
        self.events.reader_left();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_core::events::PROTOCOL_VERSION;
    use futures::StreamExt;

    use super::*;

    fn text(seq: u64, text: &str) -> WireEvent {
        WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: Arc::from("t1"),
            seq,
            event: Event::Text {
                source: "orchestrator".into(),
                text: text.into(),
            },
        }
    }

    /// A piece from a source of its own, so that it is never joined to the one before.
    fn apart(seq: u64, piece: &str) -> WireEvent {
        WireEvent {
            event: Event::Text {
                source: format!("agent{seq}"),
                text: piece.into(),
            },
            ..text(seq, "")
        }
    }

    fn stream(outbox: &Arc<Outbox>) -> TurnStream {
        TurnStream {
            turn_id: "t1".into(),
            episode_id: "e1".into(),
            replay: false,
            events: outbox.clone(),
            taken: VecDeque::new(),
        }
    }

    const LIMITS: OutputLimits = OutputLimits {
        buffer_bytes: 1_000,
        stall: Duration::from_secs(5),
    };

    /// Once the reader has taken every event, neither side keeps the emptied queue's room.
    #[tokio::test]
    async fn a_stream_read_to_the_end_of_what_came_holds_no_room() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let mut reader = stream(&outbox);
        for seq in 1..=6 {
            assert_eq!(outbox.push(apart(seq, "piece")), Pushed::Queued);
        }
        for _ in 1..=6 {
            assert!(reader.next().await.is_some());
        }
        assert_eq!(reader.taken.capacity(), 0);
        let queued = outbox.state.lock().map(|s| s.queue.capacity());
        assert_eq!(queued.ok(), Some(0));
        // What comes next still arrives.
        assert_eq!(outbox.push(apart(7, "more")), Pushed::Queued);
        assert_eq!(reader.next().await.map(|e| e.seq), Some(7));
    }

    /// Over the limit the writer waits; a read makes room and lets it go on.
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_waits_for_the_reader() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let mut reader = stream(&outbox);
        for seq in 1..=3 {
            assert_eq!(outbox.push(apart(seq, &"x".repeat(400))), Pushed::Queued);
        }
        let writer = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.room().await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(
            !writer.is_finished(),
            "the writer waits while the queue is full"
        );
        assert_eq!(reader.next().await.map(|e| e.seq), Some(1));
        assert!(writer.await.unwrap(), "a read made room");
    }

    /// A reader that makes no room for the stall limit is cut off: its queue is dropped,
    /// it reads the last word and then the end.
    #[tokio::test(start_paused = true)]
    async fn a_reader_that_never_reads_is_cut_off() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let mut reader = stream(&outbox);
        for seq in 1..=3 {
            assert_eq!(outbox.push(apart(seq, &"x".repeat(400))), Pushed::Queued);
        }
        assert!(
            outbox.room().await.is_err(),
            "no room within the stall limit"
        );
        outbox.stall(text(4, "cut off"));
        assert_eq!(
            outbox.push(text(5, "after")),
            Pushed::Closed,
            "nothing is queued after the cut"
        );
        assert!(
            outbox.room().await.is_ok(),
            "a closed outbox never makes a turn wait"
        );
        let rest: Vec<u64> = reader.by_ref().map(|e| e.seq).collect().await;
        assert_eq!(rest, vec![4]);
    }

    /// Pieces of one source's text queued before a read arrive as one event, numbered as
    /// the first of them; another source, another kind or a read in between starts anew.
    #[tokio::test]
    async fn unread_pieces_of_one_source_are_joined() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let mut reader = stream(&outbox);
        assert_eq!(outbox.push(text(1, "Hel")), Pushed::Queued);
        assert_eq!(outbox.push(text(2, "lo")), Pushed::Joined);
        assert_eq!(outbox.push(apart(2, "!")), Pushed::Queued);
        let first = reader.next().await.expect("joined event");
        assert_eq!(
            (first.seq, first.event),
            (
                1,
                Event::Text {
                    source: "orchestrator".into(),
                    text: "Hello".into()
                }
            )
        );
        assert_eq!(reader.next().await.map(|e| e.seq), Some(2));
        assert_eq!(outbox.push(text(3, " again")), Pushed::Queued);
        let other_kind = WireEvent {
            event: Event::Reasoning {
                source: "orchestrator".into(),
                text: "hmm".into(),
            },
            ..text(4, "")
        };
        assert_eq!(outbox.push(other_kind), Pushed::Queued);
        assert_eq!(outbox.push(text(5, "after")), Pushed::Queued);
        drop(FinishOnDrop(outbox.clone()));
        let rest: Vec<u64> = reader.map(|e| e.seq).collect().await;
        assert_eq!(
            rest,
            vec![3, 4, 5],
            "a read and another kind both end a piece"
        );
    }

    /// Joined pieces count in full against the limit: a reader that never reads while one
    /// source streams is cut off as any other.
    #[tokio::test(start_paused = true)]
    async fn joined_pieces_still_fill_the_queue() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let _reader = stream(&outbox);
        assert_eq!(outbox.push(text(1, &"x".repeat(400))), Pushed::Queued);
        for seq in 2..=3 {
            assert_eq!(outbox.push(text(seq, &"x".repeat(400))), Pushed::Joined);
        }
        assert!(
            outbox.room().await.is_err(),
            "no room within the stall limit"
        );
    }

    /// The stream ends once the turn is over and everything was read.
    #[tokio::test]
    async fn the_stream_ends_after_the_last_event() {
        let outbox = Arc::new(Outbox::new(LIMITS));
        let reader = stream(&outbox);
        assert_eq!(outbox.push(text(1, "a")), Pushed::Queued);
        drop(FinishOnDrop(outbox.clone()));
        let all: Vec<u64> = reader.map(|e| e.seq).collect().await;
        assert_eq!(all, vec![1]);
    }
}
