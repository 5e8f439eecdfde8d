//! Who is calling: the principal comes from the auth context, never from the body (D-30).

use axum::http::HeaderName;
use axum::http::request::Parts;
use baton_core::Principal;

pub use crate::error::AuthError;

/// The header [`LocalPrincipal`] reads by default.
pub const PRINCIPAL_HEADER: &str = "x-baton-principal";

/// Where the caller's principal comes from. Locally a flag or a header; on AWS the
/// function URL's IAM context or the API Gateway authorizer.
pub trait PrincipalSource: Send + Sync {
    /// The principal of one request, read from its head only (the body is never consulted).
    ///
    /// # Errors
    /// No principal, or one that is not a valid id.
    fn principal(&self, parts: &Parts) -> Result<Principal, AuthError>;

    /// How a client proves who it is, for protocols that announce it (an A2A agent
    /// card's security schemes). `None` when the source cannot say.
    fn scheme(&self) -> Option<CallerScheme> {
        None
    }
}

/// How callers authenticate, as a protocol's discovery document states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerScheme {
    /// A request header that names the principal (the local server).
    Header(String),
    /// A bearer token whose subject is the principal, or an AWS SigV4-signed request
    /// (a function URL with IAM auth).
    BearerOrSigV4,
}

/// The local principal source: a header (`x-baton-principal` unless changed) when present,
/// else a configured default (`baton serve --principal`).
///
/// Anyone who can reach the server can name any principal with the header, which is why
/// `baton serve` binds to localhost by default.
#[derive(Debug, Clone)]
pub struct LocalPrincipal {
    header: HeaderName,
    default: Option<Principal>,
}

impl LocalPrincipal {
    /// Reads `x-baton-principal`, falling back to `default`.
    pub fn new(default: Option<Principal>) -> Self {
        LocalPrincipal {
            header: HeaderName::from_static(PRINCIPAL_HEADER),
            default,
        }
    }

    /// Reads `header` instead of `x-baton-principal`.
    pub fn with_header(mut self, header: HeaderName) -> Self {
        self.header = header;
        self
    }
}

impl PrincipalSource for LocalPrincipal {
    fn principal(&self, parts: &Parts) -> Result<Principal, AuthError> {
        let mut values = parts.headers.get_all(&self.header).iter();
        let Some(value) = values.next() else {
            return self.default.clone().ok_or(AuthError::Missing);
        };
        if values.next().is_some() {
            return Err(AuthError::Ambiguous);
        }
        let text = value
            .to_str()
            .map_err(|_| AuthError::Invalid("it is not plain text".to_owned()))?;
        Principal::new(text.trim()).map_err(|e| AuthError::Invalid(e.to_string()))
    }

    fn scheme(&self) -> Option<CallerScheme> {
        Some(CallerScheme::Header(self.header.as_str().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(header: Option<&str>) -> Parts {
        let mut req = Request::builder().uri("/v1/turns");
        if let Some(h) = header {
            req = req.header(PRINCIPAL_HEADER, h);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn header_wins_over_the_default() {
        let source = LocalPrincipal::new(Some(Principal::new("local-user").unwrap()));
        assert_eq!(
            source.principal(&parts(Some("alice"))).unwrap().as_str(),
            "alice"
        );
        assert_eq!(
            source.principal(&parts(None)).unwrap().as_str(),
            "local-user"
        );
    }

    #[test]
    fn two_principal_headers_are_ambiguous() {
        let source = LocalPrincipal::new(Some(Principal::new("local-user").unwrap()));
        let mut parts = parts(Some("alice"));
        parts
            .headers
            .append(PRINCIPAL_HEADER, "mallory".parse().unwrap());
        assert_eq!(source.principal(&parts), Err(AuthError::Ambiguous));
    }

    #[test]
    fn no_header_and_no_default_is_missing() {
        let source = LocalPrincipal::new(None);
        assert_eq!(source.principal(&parts(None)), Err(AuthError::Missing));
    }

    #[test]
    fn a_principal_with_spaces_is_invalid() {
        let source = LocalPrincipal::new(None);
        assert!(matches!(
            source.principal(&parts(Some("two words"))),
            Err(AuthError::Invalid(_))
        ));
    }
}
