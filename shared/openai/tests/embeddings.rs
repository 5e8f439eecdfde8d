//! The OpenAI-compatible embedder (D-43) against a server of the wire's shape: vectors back
//! in input order and of unit length, one a token averaged, and every bad reply refused
//! whole in plain words.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use baton_core::ports::memory::{EmbedError, Embedder};
use baton_openai::OpenAiEmbedder;
use serde_json::{Value, json};

/// Serves `reply` to `POST /v1/embeddings`, after checking the request's shape.
async fn server(reply: Value, status: StatusCode) -> String {
    let app = axum::Router::new().route(
        "/v1/embeddings",
        post(move |headers: HeaderMap, Json(body): Json<Value>| {
            let reply = reply.clone();
            async move {
                assert_eq!(body["model"], "minilm");
                assert!(body["input"].is_array(), "{body}");
                assert_eq!(
                    headers.get("authorization").and_then(|v| v.to_str().ok()),
                    Some("Bearer k-123")
                );
                (status, Json(reply))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn embedder(base: &str) -> OpenAiEmbedder {
    OpenAiEmbedder::new(base, "minilm", Some("k-123".into()), 0.35).unwrap()
}

#[tokio::test]
async fn vectors_come_back_in_input_order_normalised() {
    let base = server(
        json!({"object": "list", "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 3.0, 4.0]},
            {"object": "embedding", "index": 0, "embedding": [2.0, 0.0, 0.0]}
        ], "model": "minilm"}),
        StatusCode::OK,
    )
    .await;
    let e = embedder(&base);
    assert_eq!(e.model(), "openai:minilm");
    assert!((e.min_similarity() - 0.35).abs() < 1e-6);
    let out = e.embed(&["first", "second"]).await.unwrap();
    assert_eq!(out[0].vector, [1.0, 0.0, 0.0]);
    assert_eq!(out[1].vector, [0.0, 0.6, 0.8]);
    assert_eq!(out[1].model, "openai:minilm");
    assert!(
        e.embed(&[]).await.unwrap().is_empty(),
        "no call for nothing"
    );
}

#[tokio::test]
async fn one_vector_a_token_is_averaged() {
    let base = server(
        json!({"data": [{"index": 0, "embedding": [[1.0, 0.0], [3.0, 0.0]]}]}),
        StatusCode::OK,
    )
    .await;
    let out = embedder(&base).embed(&["two tokens"]).await.unwrap();
    assert_eq!(out[0].vector, [1.0, 0.0]);
}

#[tokio::test]
async fn a_bad_reply_is_refused_whole() {
    for (reply, what) in [
        (
            json!({"data": [{"index": 0, "embedding": [1.0]}]}),
            "one vector for two texts",
        ),
        (
            json!({"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1.0]}]}),
            "an empty vector",
        ),
        (
            json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]}),
            "unequal lengths",
        ),
        (
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}),
            "an index twice",
        ),
        (
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 7, "embedding": [1.0]}]}),
            "an index out of range",
        ),
        (
            json!({"data": [{"index": 0, "embedding": [[1.0], [1.0, 2.0]]}, {"index": 1, "embedding": [1.0]}]}),
            "uneven token vectors",
        ),
        (json!({"error": "nope"}), "no data"),
        (json!("garbage"), "not an object"),
    ] {
        let base = server(reply, StatusCode::OK).await;
        let got = embedder(&base).embed(&["a", "b"]).await;
        assert!(
            matches!(got, Err(EmbedError::Malformed(_))),
            "{what}: {got:?}"
        );
    }
    let down = server(
        json!({"error": "overloaded"}),
        StatusCode::SERVICE_UNAVAILABLE,
    )
    .await;
    let got = embedder(&down).embed(&["a"]).await;
    assert!(
        matches!(got, Err(EmbedError::Unavailable(ref m)) if m.contains("503")),
        "{got:?}"
    );
    let nobody = embedder("http://127.0.0.1:9/v1").embed(&["a"]).await;
    assert!(
        matches!(nobody, Err(EmbedError::Unavailable(_))),
        "{nobody:?}"
    );
}
