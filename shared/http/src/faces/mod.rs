//! Protocol faces: the same turn, spoken in another protocol (see `docs/design.md`, §14).
//! Each face is a folder with a `routes()` that `routes()` here merges (and `endpoints()`
//! lists); it reaches the engine only through `AppState`, as `/v1/turns` does.

mod a2a;
mod agui;
mod answer;
pub(crate) mod mcp;
mod message;
mod openai;
mod summary;

use axum::Router;

use crate::catalog::{Endpoint, endpoint};
use crate::state::AppState;

/// A face: its routes, and the entry points it lists.
type Face = (fn() -> Router<AppState>, &'static [Endpoint]);

/// Every face: its routes and the entry points it lists. A new face is its folder and a
/// line here.
const FACES: [Face; 4] = [
    (openai::routes, openai::ENDPOINTS),
    (agui::routes, agui::ENDPOINTS),
    (a2a::routes, a2a::ENDPOINTS),
    (mcp::routes, mcp::ENDPOINTS),
];

/// Every face's routes.
pub(crate) fn routes() -> Router<AppState> {
    FACES
        .iter()
        .fold(Router::new(), |router, (routes, _)| router.merge(routes()))
}

/// The ways in that `state`'s app serves, for clients and the console to list: the
/// native stream, then each face's entry points.
pub(crate) fn endpoints(state: &AppState) -> Vec<Endpoint> {
    let mut all = vec![endpoint("Baton events (SSE)", "POST", "/v1/turns")];
    all.extend(
        FACES
            .iter()
            .flat_map(|(_, endpoints)| endpoints.iter().copied()),
    );
    if state.metrics.is_some() {
        all.push(endpoint("Prometheus metrics", "GET", "/metrics"));
    }
    all
}
