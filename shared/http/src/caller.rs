//! The caller of a request, as the state's principal source names them (D-30).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use baton_core::Principal;

use crate::error::Error;
use crate::state::AppState;

/// Extracts the caller's principal through the state's principal source.
pub(crate) struct Caller(pub(crate) Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        match state.principals.principal(parts) {
            Ok(p) => Ok(Caller(p)),
            Err(e) => {
                tracing::info!(error = %e, "request refused: no usable principal");
                Err(Error::Unauthorized(e))
            }
        }
    }
}
