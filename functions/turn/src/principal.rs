//! Who is calling, from the Lambda request context (D-30): never from the body or a header.
//!
//! `lambda_http` puts the event's request context in the request's extensions. The
//! candidates, most specific first:
//!
//! - function URL with `AWS_IAM` auth, or an HTTP API (payload v2,
//!   [`RequestContext::ApiGatewayV2`]): a JWT authorizer's `sub` claim, a Lambda
//!   authorizer's `principalId`, then the IAM caller (Cognito identity id, user ARN,
//!   caller id);
//! - API Gateway REST (payload v1, [`RequestContext::ApiGatewayV1`]): the authorizer's
//!   claims `sub` (Cognito user pools) or `principalId` (Lambda authorizer), then the IAM
//!   identity (Cognito identity id, user ARN, caller).
//!
//! A request with none of these is refused with 403: the front door let it through without
//! authentication, and no retry by the client can change that. A token (JWT claims) vouches
//! for its `sub` and nobody else: claims without a usable `sub` are refused with 401, never
//! passed over for another identity of the request.

use axum::http::request::Parts;
use baton_core::Principal;
use baton_http::{AuthError, CallerScheme, PrincipalSource};
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerIamDescription,
};
use lambda_http::request::RequestContext;
use serde_json::Value;

/// Reads the caller from the Lambda request context.
#[derive(Debug, Clone, Copy, Default)]
pub struct LambdaPrincipal;

impl PrincipalSource for LambdaPrincipal {
    fn principal(&self, parts: &Parts) -> Result<Principal, AuthError> {
        let Some(context) = parts.extensions.get::<RequestContext>() else {
            tracing::info!("request without a Lambda request context");
            return Err(AuthError::NoIdentity);
        };
        let candidates = candidates(context)?;
        if candidates.is_empty() {
            return Err(AuthError::NoIdentity);
        }
        for candidate in &candidates {
            if let Ok(principal) = Principal::new(candidate) {
                return Ok(principal);
            }
        }
        tracing::warn!(
            count = candidates.len(),
            "the request's identities are not valid principal ids"
        );
        Err(AuthError::Invalid(
            "the authenticated identity is not a usable id".to_owned(),
        ))
    }

    fn scheme(&self) -> Option<CallerScheme> {
        Some(CallerScheme::BearerOrSigV4)
    }
}

/// Identities in the context, most specific first. A token's claims yield its `sub` alone:
/// the token vouches for nobody else, so nothing else of the request may stand in for it.
fn candidates(context: &RequestContext) -> Result<Vec<String>, AuthError> {
    let mut out = Vec::new();
    match context {
        RequestContext::ApiGatewayV2(c) => {
            if let Some(authorizer) = &c.authorizer {
                if let Some(jwt) = &authorizer.jwt {
                    return subject(jwt.claims.get("sub").map(String::as_str));
                }
                if let Some(claims) = claims(authorizer) {
                    return subject(claims.get("sub").and_then(Value::as_str));
                }
                principal_id(authorizer, &mut out);
                if let Some(iam) = &authorizer.iam {
                    iam_identity(iam, &mut out);
                }
            }
        }
        RequestContext::ApiGatewayV1(c) => {
            if let Some(claims) = claims(&c.authorizer) {
                return subject(claims.get("sub").and_then(Value::as_str));
            }
            principal_id(&c.authorizer, &mut out);
            let id = &c.identity;
            out.extend(
                [&id.cognito_identity_id, &id.user_arn, &id.caller]
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
        }
        _ => {}
    }
    out.retain(|s| !s.trim().is_empty());
    Ok(out)
}

/// A token's `sub`: present and not blank, or the token is refused.
fn subject(sub: Option<&str>) -> Result<Vec<String>, AuthError> {
    match sub {
        Some(sub) if !sub.trim().is_empty() => Ok(vec![sub.to_owned()]),
        _ => {
            tracing::warn!("the request's token claims name no subject");
            Err(AuthError::Invalid(
                "the token names no subject (sub)".to_owned(),
            ))
        }
    }
}

/// The claims of a token an authorizer verified (a REST Cognito user pools authorizer), if
/// any. Some REST integrations pass them as a JSON string; one that does not parse is claims
/// without a `sub`.
fn claims(authorizer: &ApiGatewayRequestAuthorizer) -> Option<Value> {
    match authorizer.fields.get("claims") {
        Some(Value::String(text)) => Some(serde_json::from_str(text).unwrap_or_default()),
        Some(Value::Null) | None => None,
        Some(claims) => Some(claims.clone()),
    }
}

/// A Lambda authorizer's `principalId` (REST, or an HTTP API's authorizer context).
fn principal_id(authorizer: &ApiGatewayRequestAuthorizer, out: &mut Vec<String>) {
    if let Some(id) = authorizer.fields.get("principalId").and_then(Value::as_str) {
        out.push(id.to_owned());
    }
}

fn iam_identity(iam: &ApiGatewayRequestAuthorizerIamDescription, out: &mut Vec<String>) {
    if let Some(id) = iam
        .cognito_identity
        .as_ref()
        .and_then(|c| c.identity_id.as_ref())
    {
        out.push(id.clone());
    }
    out.extend(
        [&iam.user_arn, &iam.caller_id]
            .into_iter()
            .flatten()
            .cloned(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::request::LambdaRequest;

    fn parts_of(event: &Value) -> Parts {
        let request: LambdaRequest = serde_json::from_value(event.clone()).unwrap();
        let request: lambda_http::Request = request.into();
        request.into_parts().0
    }

    fn principal(event: &Value) -> Result<Principal, AuthError> {
        LambdaPrincipal.principal(&parts_of(event))
    }

    /// A sample event from `events/`, as API Gateway sends it for the template's API.
    fn sample(name: &str) -> Value {
        let path = baton_testkit::crate_dir().join("../../events").join(name);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    fn v2(authorizer: Value) -> Value {
        serde_json::json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/v1/turns",
            "rawQueryString": "",
            "headers": {"content-type": "application/json", "x-baton-principal": "mallory"},
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "abc",
                "authorizer": authorizer,
                "domainName": "abc.lambda-url.us-east-1.on.aws",
                "domainPrefix": "abc",
                "http": {"method": "POST", "path": "/v1/turns", "protocol": "HTTP/1.1",
                         "sourceIp": "127.0.0.1", "userAgent": "test"},
                "requestId": "r1",
                "routeKey": "$default",
                "stage": "$default",
                "time": "21/Nov/2026:14:00:00 +0000",
                "timeEpoch": 1_790_000_000_000u64
            },
            "body": "{}",
            "isBase64Encoded": false
        })
    }

    fn v1(identity: Value, authorizer: Option<Value>) -> Value {
        let mut context = serde_json::json!({
            "accountId": "123456789012",
            "resourceId": "r",
            "stage": "v1",
            "requestId": "r1",
            "identity": identity,
            "resourcePath": "/v1/{proxy+}",
            "httpMethod": "POST",
            "apiId": "api"
        });
        if let Some(a) = authorizer {
            context["authorizer"] = a;
        }
        serde_json::json!({
            "resource": "/v1/{proxy+}",
            "path": "/v1/turns",
            "httpMethod": "POST",
            "headers": {"content-type": "application/json"},
            "multiValueHeaders": {"content-type": ["application/json"]},
            "requestContext": context,
            "body": "{}",
            "isBase64Encoded": false
        })
    }

    #[test]
    fn a_function_url_iam_caller_is_its_user_arn() {
        let event = v2(serde_json::json!({"iam": {
            "accessKey": "AKIA", "accountId": "123456789012", "callerId": "AIDAEXAMPLE",
            "userArn": "arn:aws:iam::123456789012:user/alice", "userId": "AIDAEXAMPLE"
        }}));
        assert_eq!(
            principal(&event).unwrap().as_str(),
            "arn:aws:iam::123456789012:user/alice"
        );
    }

    #[test]
    fn a_cognito_identity_wins_over_the_role_session() {
        let event = v2(serde_json::json!({"iam": {
            "callerId": "AROA:CognitoIdentityCredentials",
            "cognitoIdentity": {"amr": ["authenticated"], "identityId": "us-east-1:1234-abcd",
                                "identityPoolId": "us-east-1:pool"},
            "userArn": "arn:aws:sts::123456789012:assumed-role/app/CognitoIdentityCredentials"
        }}));
        assert_eq!(principal(&event).unwrap().as_str(), "us-east-1:1234-abcd");
    }

    #[test]
    fn a_jwt_sub_claim_is_the_principal() {
        let event = v2(serde_json::json!({"jwt": {"claims": {"sub": "user-42"}, "scopes": null}}));
        assert_eq!(principal(&event).unwrap().as_str(), "user-42");
    }

    #[test]
    fn no_authorizer_is_no_identity_even_with_a_principal_header() {
        let mut event = v2(Value::Null);
        event["requestContext"]
            .as_object_mut()
            .unwrap()
            .remove("authorizer");
        assert_eq!(principal(&event), Err(AuthError::NoIdentity));
    }

    #[test]
    fn a_rest_iam_identity_is_its_user_arn() {
        let event = v1(
            serde_json::json!({"userArn": "arn:aws:iam::123456789012:user/bob",
                                "caller": "AIDABOB", "sourceIp": "127.0.0.1"}),
            None,
        );
        assert_eq!(
            principal(&event).unwrap().as_str(),
            "arn:aws:iam::123456789012:user/bob"
        );
    }

    #[test]
    fn rest_authorizer_claims_win_over_the_identity() {
        let event = v1(
            serde_json::json!({"caller": "AIDABOB", "sourceIp": "127.0.0.1"}),
            Some(serde_json::json!({"claims": {"sub": "cognito-sub-1", "email": "x@example.com"}})),
        );
        assert_eq!(principal(&event).unwrap().as_str(), "cognito-sub-1");
        let event = v1(
            serde_json::json!({"sourceIp": "127.0.0.1"}),
            Some(serde_json::json!({"principalId": "lambda-auth-user"})),
        );
        assert_eq!(principal(&event).unwrap().as_str(), "lambda-auth-user");
    }

    #[test]
    fn the_sample_rest_events_name_their_callers() {
        let iam = sample("api-gateway-rest-turn.json");
        assert_eq!(
            principal(&iam).unwrap().as_str(),
            "arn:aws:iam::123456789012:user/bob"
        );
        // Cognito user pool authorizer: the ID token's sub, not the `principal` in the body.
        let cognito = sample("api-gateway-rest-turn-cognito.json");
        assert_eq!(
            principal(&cognito).unwrap().as_str(),
            cognito["requestContext"]["authorizer"]["claims"]["sub"]
                .as_str()
                .unwrap()
        );
        assert_eq!(
            principal(&cognito).unwrap().as_str(),
            "7d8ca528-4931-4254-9273-ea5ee853f271"
        );
        // The template's OIDC authorizer: principalId is the token's sub.
        let oidc = sample("api-gateway-rest-turn-lambda-authorizer.json");
        assert_eq!(principal(&oidc).unwrap().as_str(), "user-7f3a");
        assert_eq!(
            oidc["requestContext"]["authorizer"]["sub"],
            oidc["requestContext"]["authorizer"]["principalId"]
        );
    }

    #[test]
    fn token_claims_without_a_sub_are_refused_not_passed_over() {
        let mut event = sample("api-gateway-rest-turn-cognito.json");
        let claims = &mut event["requestContext"]["authorizer"]["claims"];
        claims.as_object_mut().unwrap().remove("sub");
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
        // Not even for an IAM identity or a principalId the request also carries.
        event["requestContext"]["identity"]["userArn"] =
            "arn:aws:iam::123456789012:user/bob".into();
        event["requestContext"]["authorizer"]["principalId"] = "someone".into();
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
        for blank in ["", "  "] {
            let mut event = sample("api-gateway-rest-turn-cognito.json");
            event["requestContext"]["authorizer"]["claims"]["sub"] = blank.into();
            assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
        }
        // A sub that is no valid principal is not passed over either.
        let mut event = sample("api-gateway-rest-turn-cognito.json");
        event["requestContext"]["authorizer"]["claims"]["sub"] = "x".repeat(129).into();
        event["requestContext"]["identity"]["userArn"] =
            "arn:aws:iam::123456789012:user/bob".into();
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
        let event =
            v2(serde_json::json!({"jwt": {"claims": {"email": "x@example.com"}, "scopes": null}}));
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
    }

    #[test]
    fn claims_passed_as_a_json_string_are_read_the_same() {
        let mut event = sample("api-gateway-rest-turn-cognito.json");
        let claims = event["requestContext"]["authorizer"]["claims"].to_string();
        event["requestContext"]["authorizer"]["claims"] = claims.into();
        assert_eq!(
            principal(&event).unwrap().as_str(),
            "7d8ca528-4931-4254-9273-ea5ee853f271"
        );
        event["requestContext"]["authorizer"]["claims"] = "{\"email\":\"x@example.com\"}".into();
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
        event["requestContext"]["authorizer"]["claims"] = "not json".into();
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
    }

    #[test]
    fn a_lambda_authorizer_without_a_principal_id_is_no_identity() {
        let mut event = sample("api-gateway-rest-turn-lambda-authorizer.json");
        event["requestContext"]["authorizer"]["principalId"] = "".into();
        assert_eq!(principal(&event), Err(AuthError::NoIdentity));
    }

    #[test]
    fn a_rest_request_without_identity_is_refused() {
        let event = v1(serde_json::json!({"sourceIp": "127.0.0.1"}), None);
        assert_eq!(principal(&event), Err(AuthError::NoIdentity));
    }

    #[test]
    fn a_request_outside_lambda_has_no_identity() {
        let parts = axum::http::Request::post("/v1/turns")
            .header("x-baton-principal", "alice")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(
            LambdaPrincipal.principal(&parts),
            Err(AuthError::NoIdentity)
        );
    }

    #[test]
    fn an_identity_too_long_for_a_principal_falls_back_to_the_next() {
        let long = format!(
            "arn:aws:sts::123456789012:assumed-role/{}/s",
            "r".repeat(200)
        );
        let event = v2(serde_json::json!({"iam": {"userArn": long, "callerId": "AROAX:s"}}));
        assert_eq!(principal(&event).unwrap().as_str(), "AROAX:s");
        let event = v2(serde_json::json!({"iam": {"userArn": long}}));
        assert!(matches!(principal(&event), Err(AuthError::Invalid(_))));
    }
}
