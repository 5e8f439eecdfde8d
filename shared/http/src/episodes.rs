//! `GET /v1/episodes/{id}`: the caller's own episode history, and how far its summary
//! reaches.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use baton_runtime::history::EpisodeHistory;
use baton_runtime::{RejectionKind, TurnRejection};

use crate::caller::Caller;
use crate::error::Error;
use crate::state::AppState;

/// Another principal's episode is "not found", exactly like an unknown one (D-30).
pub(crate) async fn get_episode(
    State(state): State<AppState>,
    Caller(principal): Caller,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<EpisodeHistory>, Error> {
    let Ok(Path(id)) = id else {
        return Err(Error::Rejected(TurnRejection {
            kind: RejectionKind::NotFound,
            message: "That conversation was not found.".to_owned(),
        }));
    };
    Ok(Json(state.runtime.history(&principal, &id).await?))
}
