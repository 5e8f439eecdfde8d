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

use baton_core::events::WireEvent;
use futures::Stream;
use tokio::runtime::Handle;
use tokio::sync::mpsc;

/// The rest of a turn's work.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A running (or replayed) turn.
pub struct TurnStream {
    /// The turn id.
    pub turn_id: String,
    /// The episode id.
    pub episode_id: String,
    /// Whether this replays a turn that already completed (D-25).
    pub replay: bool,
    // Boxed: the channel allocates slots in blocks, and a pointer keeps each block small.
    pub(crate) events: mpsc::UnboundedReceiver<Box<WireEvent>>,
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
            if let Poll::Ready(event) = this.events.poll_recv(cx) {
                return Poll::Ready(event.map(|e| *e));
            }
            let Some(driver) = this.driver.as_mut() else {
                // Senders live only inside the driver; without it the channel is closing.
                return Poll::Pending;
            };
            if driver.as_mut().poll(cx).is_ready() {
                this.driver = None;
                continue; // drain what it sent; then the closed channel ends the stream
            }
            // Still running: hand over whatever this step emitted, or wait for its wake-up.
            return this.events.poll_recv(cx).map(|e| e.map(|e| *e));
        }
    }
}

impl Drop for TurnStream {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            // The reader left: the turn goes on by itself and commits.
            drop(self.runtime.spawn(driver));
        }
    }
}
