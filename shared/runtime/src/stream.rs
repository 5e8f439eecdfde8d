//! The stream of one turn's events.
//!
//! The turn runs inside the stream: whoever reads the events drives the turn, so a turn
//! costs no task hand-offs and no cross-thread wake-ups per event. Dropping the stream
//! before the end hands the rest of the turn to the runtime as its own task: the turn
//! still runs to its commit, and its answer can be read from the episode's history.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use baton_core::events::WireEvent;
use futures::Stream;
use tokio::runtime::Handle;

/// The rest of a turn's work.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Events waiting for the reader. Events are only made while the reader polls the turn,
/// so a plain queue needs no wake-ups; once the reader is gone, events are dropped.
#[derive(Default)]
pub(crate) struct Outbox {
    state: Mutex<OutboxState>,
}

#[derive(Default)]
struct OutboxState {
    queue: VecDeque<Box<WireEvent>>,
    reader_gone: bool,
}

impl Outbox {
    /// Queues an event; false when the reader has left.
    pub(crate) fn push(&self, event: Box<WireEvent>) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if s.reader_gone {
            return false;
        }
        s.queue.push_back(event);
        true
    }

    fn pop(&self) -> Option<Box<WireEvent>> {
        self.state.lock().ok()?.queue.pop_front()
    }

    /// Everything queued so far (for tests of what a turn sends).
    #[cfg(test)]
    pub(crate) fn drain(&self) -> Vec<WireEvent> {
        std::iter::from_fn(|| self.pop()).map(|e| *e).collect()
    }

    fn reader_left(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.reader_gone = true;
            s.queue = VecDeque::new();
        }
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
    /// The turn itself, until it ends.
    pub(crate) driver: Option<Driver>,
    /// Where the turn goes on if the stream is dropped early.
    pub(crate) runtime: Handle,
}

impl fmt::Debug for TurnStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TurnStream")
            .field("turn_id", &self.turn_id)
            .field("episode_id", &self.episode_id)
            .field("replay", &self.replay)
            .field("running", &self.driver.is_some())
            .finish()
    }
}

impl Stream for TurnStream {
    type Item = WireEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WireEvent>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.events.pop() {
                return Poll::Ready(Some(*event));
            }
            let Some(driver) = this.driver.as_mut() else {
                return Poll::Ready(None); // the turn is over and everything was read
            };
            if driver.as_mut().poll(cx).is_ready() {
                this.driver = None;
                continue;
            }
            // Still running: hand over what this step emitted, or wait for its wake-up
            // (the turn registered this task's waker on whatever it waits for).
            match this.events.pop() {
                Some(event) => return Poll::Ready(Some(*event)),
                None => return Poll::Pending,
            }
        }
    }
}

impl Drop for TurnStream {
    fn drop(&mut self) {
        self.events.reader_left();
        if let Some(driver) = self.driver.take() {
            // The reader left: the turn goes on by itself and commits.
            drop(self.runtime.spawn(driver));
        }
    }
}
