//! Serving the app on a socket until told to stop.

use std::future::Future;

use tokio::net::TcpListener;

use crate::app::app;
use crate::state::AppState;

/// Serves [`app`](crate::app) on `listener` until `shutdown` completes, then stops accepting
/// and waits for open requests (running turn streams) to finish.
///
/// # Errors
/// The listener fails.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await
}
