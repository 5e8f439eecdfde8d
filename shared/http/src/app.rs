//! The router.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post, put};

use crate::error::Error;
use crate::state::AppState;
use crate::{
    account_links, agents, console, episode_pictures, episodes, faces, health, hosts, memory, turns,
};

/// The Baton HTTP app over `state`: every route, the body limit, the allowed hosts and
/// origins (403), and JSON refusals for unknown paths (404) and methods (405).
///
/// Serve it with `baton_http::serve` or any tower-compatible host (the turn Lambda);
/// tests drive it with `app(state).oneshot(request)`.
pub fn app(state: AppState) -> Router {
    let mut router = Router::new()
        .route("/v1/turns", post(turns::post_turn))
        .route("/v1/turns/{turn_id}/resume", post(turns::post_resume))
        .route("/v1/episodes/{id}", get(episodes::get_episode))
        .route(
            "/v1/episodes/{id}/pictures/{sha256}",
            get(episode_pictures::get_picture),
        )
        .route("/v1/agents", get(agents::get_agents))
        .route(
            "/v1/links",
            get(account_links::get_links).delete(account_links::delete_link),
        )
        .route("/v1/links/callback", get(account_links::get_callback))
        .route(
            "/v1/memory",
            get(memory::get_memory)
                .post(memory::post_memory)
                .delete(memory::delete_all),
        )
        .route("/v1/memory/search", get(memory::get_search))
        .route("/v1/memory/export", get(memory::get_export))
        .route("/v1/memory/setting", put(memory::put_setting))
        .route("/v1/memory/{id}", delete(memory::delete_one))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .merge(faces::routes());
    if state.metrics.is_some() {
        router = router.route("/metrics", get(health::metrics));
    }
    if state.console {
        router = router.merge(console::routes());
    }
    router
        .fallback(|| async { Error::NoRoute })
        .method_not_allowed_fallback(|| async { Error::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            state.hosts.clone(),
            hosts::guard,
        ))
        .with_state(state)
}
