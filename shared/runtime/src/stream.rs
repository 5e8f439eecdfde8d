//! The stream of one turn's events.

use std::pin::Pin;
use std::task::{Context, Poll};

use baton_core::events::WireEvent;
use futures::Stream;
use tokio::sync::mpsc;

/// A running (or replayed) turn. Dropping it does not stop the turn: the turn still
/// commits, and its answer can be read from the episode's history.
#[derive(Debug)]
pub struct TurnStream {
    /// The turn id.
    pub turn_id: String,
    /// The episode id.
    pub episode_id: String,
    /// Whether this replays a turn that already completed (D-25).
    pub replay: bool,
    // Boxed: the channel allocates slots in blocks, and a pointer keeps each block small.
    pub(crate) events: mpsc::UnboundedReceiver<Box<WireEvent>>,
}

impl Stream for TurnStream {
    type Item = WireEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WireEvent>> {
        self.events.poll_recv(cx).map(|e| e.map(|e| *e))
    }
}
