//! The request on its way in: routed by the path the client asked for.
//!
//! For an API Gateway REST event, lambda_http puts the stage in front of the path
//! (`/prod/v1/turns`) unless `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set, which would
//! make every route miss on any stage but one. The event's own path, without the stage, is
//! kept in the request's extensions; the router sees that one.

use axum::Router;
use axum::extract::Request;
use axum::http::Uri;
use lambda_http::RequestExt as _;
use lambda_http::tower::ServiceBuilder;

/// `router`, reached through the event's own path.
pub(crate) fn by_event_path(router: Router) -> Router {
    let service = ServiceBuilder::new()
        .map_request(event_path as fn(Request) -> Request)
        .service(router);
    Router::new().fallback_service(service)
}

fn event_path(mut request: Request) -> Request {
    let raw = request.extensions().raw_http_path();
    if raw.is_empty() || raw == request.uri().path() || !raw.starts_with('/') {
        return request;
    }
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{raw}?{query}"),
        None => raw.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    let Ok(pq) = path_and_query.parse() else {
        return request;
    };
    parts.path_and_query = Some(pq);
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::request::LambdaRequest;

    #[test]
    fn a_rest_stage_is_not_part_of_the_routed_path() {
        let event = serde_json::json!({
            "resource": "/v1/{proxy+}",
            "path": "/v1/turns",
            "httpMethod": "POST",
            "headers": {"host": "api.example.com"},
            "multiValueHeaders": {"host": ["api.example.com"]},
            "queryStringParameters": {"a": "1"},
            "multiValueQueryStringParameters": {"a": ["1"]},
            "requestContext": {"stage": "prod", "httpMethod": "POST", "identity": {}},
            "body": null,
            "isBase64Encoded": false
        });
        let request: LambdaRequest = serde_json::from_value(event).unwrap();
        let request: lambda_http::Request = request.into();
        assert!(
            request.uri().path().starts_with("/prod/"),
            "{}",
            request.uri()
        );
        let (parts, body) = request.into_parts();
        let request = Request::from_parts(parts, axum::body::Body::new(body));
        let request = event_path(request);
        assert_eq!(request.uri().path(), "/v1/turns");
        assert_eq!(request.uri().query(), Some("a=1"));
    }

    #[test]
    fn a_request_outside_lambda_keeps_its_path() {
        let request = Request::post("/v1/turns?x=1")
            .body(axum::body::Body::empty())
            .unwrap();
        assert_eq!(event_path(request).uri().to_string(), "/v1/turns?x=1");
    }
}
