//! `/v1/memory` (D-43): the caller's own memories, listed, searched, saved, exported and
//! erased; another principal's are "not found" on every route; bad input is a plain 4xx.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use baton_core::Principal;
use baton_core::ports::memory::HashedWordsEmbedder;
use baton_http::{AppState, LocalPrincipal, PRINCIPAL_HEADER};
use baton_inproc::scripted::ScriptedModel;
use baton_inproc::{HeapMemory, HeapStore};
use baton_runtime::{MemorySettings, Runtime, RuntimeConfig};
use serde_json::{Value, json};

use crate::support::*;

fn state() -> AppState {
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(&script(0, 0)).unwrap()))
        .store(Arc::new(HeapStore::new()))
        .memory(
            Arc::new(HeapMemory::new()),
            Arc::new(HashedWordsEmbedder::default()),
        )
        .connector("test", Arc::new(ConfiguredConnector))
        .config(RuntimeConfig {
            memory: MemorySettings {
                on_by_default: true,
                ..MemorySettings::default()
            },
            ..RuntimeConfig::default()
        })
        .build()
        .unwrap();
    AppState::new(
        runtime,
        Arc::new(LocalPrincipal::new(Some(Principal::new("alice").unwrap()))),
    )
}

fn request(
    method: &str,
    path: &str,
    body: Option<Value>,
    principal: Option<&str>,
) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(p) = principal {
        req = req.header(PRINCIPAL_HEADER, p);
    }
    match body {
        Some(b) => req
            .header("content-type", "application/json")
            .body(Body::from(b.to_string()))
            .unwrap(),
        None => req.body(Body::empty()).unwrap(),
    }
}

async fn call(state: &AppState, req: Request<Body>) -> (StatusCode, Value) {
    let response = send(state, req).await;
    let status = response.status();
    let body = text(response).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_callers_memories_are_saved_listed_searched_exported_and_forgotten() {
    let state = state();
    let (status, saved) = call(
        &state,
        request(
            "POST",
            "/v1/memory",
            Some(json!({"text": "remember that my dog is called Biscuit"})),
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{saved}");
    assert_eq!(saved["memory"]["text"], "my dog is called Biscuit");
    assert_eq!(saved["memory"]["subject"], "dog");
    let id = saved["memory"]["id"].as_str().unwrap().to_owned();

    let (status, again) = call(
        &state,
        request(
            "POST",
            "/v1/memory",
            Some(json!({"text": "My dog is called Biscuit."})),
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["already_known"], id.as_str());

    call(
        &state,
        request(
            "POST",
            "/v1/memory",
            Some(json!({"text": "I'm saving for a Trek FX 2", "kind": "goal", "subject": "bike"})),
            None,
        ),
    )
    .await;
    let (status, listed) = call(&state, request("GET", "/v1/memory", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["memory"], "on");
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2);
    let (_, goals) = call(&state, request("GET", "/v1/memory?kind=goal", None, None)).await;
    assert_eq!(goals["memories"][0]["subject"], "bike");

    let (status, found) = call(
        &state,
        request(
            "GET",
            "/v1/memory/search?q=what%20is%20my%20dog%20called",
            None,
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(found["memories"][0]["memory"]["id"], id.as_str());
    assert!(found["memories"][0]["text_rank"].is_number());

    let (status, export) = call(&state, request("GET", "/v1/memory/export", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(export["principal"], "alice");
    assert_eq!(export["memories"].as_array().unwrap().len(), 2);

    let (status, gone) = call(
        &state,
        request("DELETE", &format!("/v1/memory/{id}"), None, None),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(gone["forgotten"], 1);
    let (_, found) = call(
        &state,
        request("GET", "/v1/memory/search?q=Biscuit", None, None),
    )
    .await;
    assert_eq!(found["memories"], json!([]));
    let (status, _) = call(
        &state,
        request("DELETE", &format!("/v1/memory/{id}"), None, None),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, refused) = call(&state, request("DELETE", "/v1/memory", None, None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let (status, all) = call(&state, request("DELETE", "/v1/memory?all=true", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(all["forgotten"], 1);
    let (_, listed) = call(
        &state,
        request("GET", "/v1/memory?history=true", None, None),
    )
    .await;
    assert_eq!(listed["memories"], json!([]));
}

#[tokio::test]
async fn another_principal_finds_nothing_on_any_route() {
    let state = state();
    let (_, saved) = call(
        &state,
        request(
            "POST",
            "/v1/memory",
            Some(json!({"text": "my locker code is 4417"})),
            None,
        ),
    )
    .await;
    let id = saved["memory"]["id"].as_str().unwrap().to_owned();
    let bob = Some("bob");
    let (_, listed) = call(&state, request("GET", "/v1/memory?history=true", None, bob)).await;
    assert_eq!(listed["memories"], json!([]));
    let (_, found) = call(
        &state,
        request("GET", "/v1/memory/search?q=locker%204417", None, bob),
    )
    .await;
    assert_eq!(found["memories"], json!([]));
    let (_, export) = call(&state, request("GET", "/v1/memory/export", None, bob)).await;
    assert_eq!(export["memories"], json!([]));
    let theirs = send(
        &state,
        request("DELETE", &format!("/v1/memory/{id}"), None, bob),
    )
    .await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let forged = send(
        &state,
        request(
            "DELETE",
            "/v1/memory/mem_0123456789abcdef0123456789abcdef",
            None,
            None,
        ),
    )
    .await;
    assert_eq!(forged.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_of(theirs).await, error_of(forged).await);
    let (_, all) = call(&state, request("DELETE", "/v1/memory?all=true", None, bob)).await;
    assert_eq!(all["forgotten"], 0);
    let (_, mine) = call(&state, request("GET", "/v1/memory", None, None)).await;
    assert_eq!(
        mine["memories"].as_array().unwrap().len(),
        1,
        "alice's memory stays"
    );
}

#[tokio::test]
async fn bad_input_is_a_plain_refusal_and_keeps_nothing() {
    let state = state();
    let megabyte = "a".repeat(1 << 20);
    let (status, body) = call(
        &state,
        request("POST", "/v1/memory", Some(json!({"text": megabyte})), None),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "a body over the limit: {body}"
    );
    let long = "a".repeat(2_000);
    let (status, body) = call(
        &state,
        request("POST", "/v1/memory", Some(json!({"text": long})), None),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 500 characters"),
        "{body}"
    );
    let (status, _) = call(
        &state,
        request(
            "POST",
            "/v1/memory",
            Some(json!({"text": "x", "kind": "opinion"})),
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(
        &state,
        request("POST", "/v1/memory", Some(json!({"words": "x"})), None),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let plain = send(
        &state,
        Request::post("/v1/memory")
            .body(Body::from("text"))
            .unwrap(),
    )
    .await;
    assert_eq!(plain.status(), StatusCode::BAD_REQUEST);
    let (status, _) = call(&state, request("GET", "/v1/memory/search", None, None)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, listed) = call(
        &state,
        request("GET", "/v1/memory?history=true", None, None),
    )
    .await;
    assert_eq!(listed["memories"], json!([]), "nothing kept");
}

#[tokio::test]
async fn the_callers_setting_turns_memory_off_and_back() {
    let state = state();
    let (status, off) = call(
        &state,
        request(
            "PUT",
            "/v1/memory/setting",
            Some(json!({"enabled": false})),
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(off, json!({"memory": "off", "own_setting": true}));
    let (_, bobs) = call(&state, request("GET", "/v1/memory", None, Some("bob"))).await;
    assert_eq!(bobs["memory"], "on", "bob keeps the deployment's default");
    let (_, cleared) = call(
        &state,
        request(
            "PUT",
            "/v1/memory/setting",
            Some(json!({"enabled": null})),
            None,
        ),
    )
    .await;
    assert_eq!(cleared, json!({"memory": "on", "own_setting": false}));
}
