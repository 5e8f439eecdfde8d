//! Serving the app on a socket until told to stop, with the limits a public server needs:
//! no connection may sit on the server forever, and no number of them may starve it.
//!
//! At the connection limit a new client does not wait for a slot while idle connections
//! hold them: the oldest connection that serves no request (idle between requests, or
//! still sending its request head) is closed for it. Connections serving requests (turn
//! streams above all) are never shed; a new client waits for one of them only when every
//! connection is busy.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_core::ports::metrics::{CONNECTIONS_SHED_TOTAL, Metrics as _};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;

use crate::app::app;
use crate::connections::Connections;
use crate::state::AppState;

/// At most one log line per this long about connections shed at the limit: a reconnect
/// flood must not fill the disk with them (the metric counts each).
const SHED_LOG_EVERY: Duration = Duration::from_secs(10);

/// Counts shed connections between log lines.
#[derive(Debug, Default)]
struct ShedLog {
    last: Option<Instant>,
    since: u64,
}

impl ShedLog {
    /// Notes one shed connection at `now`; the count to log, when a line is due.
    fn shed(&mut self, now: Instant) -> Option<u64> {
        self.since += 1;
        let due = self
            .last
            .is_none_or(|last| now.duration_since(last) >= SHED_LOG_EVERY);
        if !due {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.since))
    }
}

/// The connection limits of [`serve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A connection must deliver a complete request head within this time of opening, and
    /// of finishing its previous response: it bounds slow headers and idle keep-alive
    /// connections alike. Then the connection is closed.
    pub header_timeout: Duration,
    /// A request body must arrive whole within this time of its head (else 408).
    pub body_timeout: Duration,
    /// A write the client does not take within this time closes the connection (a reader
    /// that stopped reading); its turn goes on and commits.
    pub send_timeout: Duration,
    /// Connections served at once. At the limit, the oldest connection that serves no
    /// request is closed for a new one; when all are serving, new ones wait in the listen
    /// backlog until one closes.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            max_connections: 4_096,
        }
    }
}

/// Bytes hyper queues per connection for writing (and reads a request head into).
const WRITE_QUEUE_BYTES: usize = 64 * 1024;

/// Pause after a failed `accept` (e.g. out of descriptors) before trying again, so the
/// loop does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves [`app`](crate::app) on `listener` under `limits` until `shutdown` completes, then
/// stops accepting and waits for open requests (running turn streams) to finish.
///
/// # Errors
/// None today: a failing `accept` is logged and retried.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state_metrics = state.metrics.clone();
    let router = app(state.with_body_timeout(limits.body_timeout));
    let mut shed_log = ShedLog::default();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        // What waits in a connection's write queue for a slow reader (hyper's default is
        // about 400 KB); the turn's own output queue is bounded apart.
        .max_buf_size(WRITE_QUEUE_BYTES);
    let connections = Arc::new(Connections::default());
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // At the limit, an idle or half-sent connection makes room for this one.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if connections.shed_oldest_idle() {
                    if let Some(metrics) = &state_metrics {
                        metrics.count(CONNECTIONS_SHED_TOTAL, 1, &[]);
                    }
                    if let Some(shed) = shed_log.shed(Instant::now()) {
                        tracing::info!(
                            shed,
                            "at the connection limit: idle connections were closed for new ones"
                        );
                    }
                }
                tokio::select! {
                    slot = Arc::clone(&slots).acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break, // never closed
                    },
                    () = &mut shutdown => break,
                }
            }
        };
        // Events should leave as soon as they are made, not wait to fill a segment.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.send_timeout));
        let io = TokioIo::new(Box::pin(stream));
        let registered = connections.open();
        let connection = registered.handle();
        let router = router.clone();
        let service = hyper::service::service_fn(move |request| {
            crate::connections::marked(connection.clone(), router.clone(), request)
        });
        let serving = graceful.watch(builder.serve_connection(io, service));
        tokio::spawn(async move {
            tokio::select! {
                ended = serving => if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                // Dropping the connection closes its socket.
                () = registered.shed() => {}
            }
            drop(registered);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_shed_connections_logs_one_line_per_period_with_its_count() {
        let mut log = ShedLog::default();
        let start = Instant::now();
        assert_eq!(log.shed(start), Some(1), "the first is said at once");
        for i in 1..1000 {
            assert_eq!(log.shed(start + Duration::from_millis(i)), None);
        }
        assert_eq!(log.shed(start + SHED_LOG_EVERY), Some(1000));
        assert_eq!(log.shed(start + SHED_LOG_EVERY * 3), Some(1));
    }
}
