//! The open connections of `baton_http::serve`: which are serving a request and which
//! only hold a socket (idle between requests, or still sending a request head), so that a
//! server at its connection limit closes the oldest of the latter for a new client instead
//! of making it wait for a timeout.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Request, Response};
use tokio::sync::Notify;

/// Every open connection, oldest first.
#[derive(Default)]
pub(crate) struct Connections {
    next: AtomicUsize,
    open: Mutex<BTreeMap<usize, Arc<Connection>>>,
}

/// One open connection.
#[derive(Default)]
pub(crate) struct Connection {
    /// Requests being served (their responses included, to their last byte).
    busy: AtomicUsize,
    /// Told to close.
    shed: Notify,
}

impl Connections {
    /// Registers a new connection; it leaves the register when `Registered` is dropped.
    pub(crate) fn open(self: &Arc<Self>) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection::default());
        self.lock().insert(id, connection.clone());
        Registered {
            connections: self.clone(),
            id,
            connection,
        }
    }

    /// Tells the oldest connection that serves no request to close; whether there was one.
    pub(crate) fn shed_oldest_idle(&self) -> bool {
        let open = self.lock();
        let idle = open.values().find(|c| c.busy.load(Ordering::Acquire) == 0);
        match idle {
            Some(connection) => {
                // A permit is stored if the task is not waiting yet: the close still happens.
                connection.shed.notify_one();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, Arc<Connection>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place in the register.
pub(crate) struct Registered {
    connections: Arc<Connections>,
    id: usize,
    connection: Arc<Connection>,
}

impl Registered {
    /// Completes when the connection is told to close.
    pub(crate) async fn shed(&self) {
        self.connection.shed.notified().await;
    }

    /// The connection, for the service that marks its requests.
    pub(crate) fn handle(&self) -> Arc<Connection> {
        self.connection.clone()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

impl Connection {
    /// Marks one request as being served until the returned guard is dropped.
    pub(crate) fn serving(self: &Arc<Self>) -> Serving {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Serving(self.clone())
    }
}

/// A request being served.
pub(crate) struct Serving(Arc<Connection>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request marked as served until it is sent or dropped.
struct Marked {
    inner: Body,
    _serving: Serving,
}

impl HttpBody for Marked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Marks `request` as served by `connection` from now until its response's last byte.
pub(crate) async fn marked<S>(
    connection: Arc<Connection>,
    service: S,
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Body>, std::convert::Infallible>
where
    S: tower::Service<
            Request<hyper::body::Incoming>,
            Response = Response<Body>,
            Error = std::convert::Infallible,
        >,
{
    use tower::ServiceExt as _;
    let serving = connection.serving();
    let response = service.oneshot(request).await?;
    Ok(response.map(|inner| {
        Body::new(Marked {
            inner,
            _serving: serving,
        })
    }))
}
