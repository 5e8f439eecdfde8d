//! Baton's engine end to end against a real model on a real OpenAI-compatible server
//! (llama.cpp's, serving SmolLM2-135M-Instruct): the shipped registry, every card served
//! by that model, the embedded store in a temporary folder.
//!
//! The model is tiny, so this asserts the protocol, not the answers: text streams, a tool
//! call the model makes is parsed and runs, the turn completes and is committed, and the
//! consulted record is exactly what ran.

use std::collections::BTreeSet;
use std::sync::Arc;

use baton_core::Principal;
use baton_core::events::{Event, WireEvent};
use baton_core::ports::store::Store;
use baton_core::registry::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices};
use baton_core::trace::ObligationMet;
use baton_core::turn::{TurnOutcome, TurnRecord};
use baton_local::embedded_store::EmbeddedStore;
use baton_openai::OpenAiCompatible;
use baton_runtime::{Runtime, TurnRequest};
use baton_tests::fixtures::registry_dir;
use baton_tests::local_model::{LocalModelServer, MODEL_ALIAS};
use futures::StreamExt;

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

async fn runtime(server: &LocalModelServer, store: Arc<dyn Store>) -> Runtime {
    let root = registry_dir();
    let connectors = baton_connectors::default_connectors(&root);
    let registry =
        baton_runtime::registry_folder::load_registry(&root, &connectors, &Default::default())
            .await
            .unwrap();
    let spec = ModelSpec {
        key: Arc::from("llama-cpp"),
        provider: Arc::from(baton_openai::PROVIDER),
        model_id: Arc::from(MODEL_ALIAS),
        context_window: 8_192,
        prices: Prices::default(),
        capabilities: ModelCapabilities {
            tool_choice: true,
            ..ModelCapabilities::default()
        },
        endpoint: Some(ModelEndpoint {
            base_url: Arc::from(server.base_url()),
            api_key_env: None,
        }),
    };
    let model = OpenAiCompatible::serving_every_card(&spec).unwrap();
    let mut builder = Runtime::builder(Arc::new(registry))
        .model_override(Arc::new(model))
        .store(store);
    builder = builder.connectors(connectors);
    builder.build().unwrap()
}

async fn turn(runtime: &Runtime, request: TurnRequest) -> (String, Vec<WireEvent>) {
    let stream = runtime.run_turn(request).await.unwrap();
    let episode = stream.episode_id.clone();
    (episode, stream.collect().await)
}

async fn committed(store: &Arc<dyn Store>, episode: &str) -> TurnRecord {
    store
        .turns(&alice(), episode, 1)
        .await
        .unwrap()
        .pop()
        .expect("the turn was committed")
}

fn texts(events: &[WireEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The consulted record is the runtime's own: one entry per specialist that ran, the same
/// in the event, the journal and the routing record.
fn consulted_is_what_ran(events: &[WireEvent], record: &TurnRecord) {
    let shown: Vec<_> = events
        .iter()
        .find_map(|e| match &e.event {
            Event::AgentsConsulted { agents, .. } => Some(agents.clone()),
            _ => None,
        })
        .expect("an agents_consulted event");
    assert_eq!(shown, record.consulted);
    let consulted: BTreeSet<&str> = record
        .consulted
        .iter()
        .map(|c| c.agent_id.as_str())
        .collect();
    let ran: BTreeSet<&str> = record
        .routing
        .outcomes
        .iter()
        .map(|o| o.agent_id.as_str())
        .collect();
    assert_eq!(consulted, ran, "consulted {consulted:?}, ran {ran:?}");
    let answered: BTreeSet<&str> = record
        .segments
        .iter()
        .map(|s| s.agent_id.as_str())
        .collect();
    assert!(
        consulted.is_subset(&answered) || consulted.is_empty(),
        "{consulted:?} vs {answered:?}"
    );
}

#[tokio::test]
async fn a_real_model_answers_turns_through_the_engine() {
    let server = LocalModelServer::start().await;
    let data = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(data.path()).unwrap());
    let runtime = runtime(&server, store.clone()).await;

    // A plain turn: the model's text streams, and the turn is committed.
    let (episode, events) = turn(&runtime, TurnRequest::new(alice(), "Hello! Who are you?")).await;
    let pieces = texts(&events);
    assert!(
        pieces.len() > 1,
        "the answer streamed in pieces: {pieces:?}"
    );
    assert!(!pieces.concat().trim().is_empty());
    let record = committed(&store, &episode).await;
    assert_eq!(record.outcome, TurnOutcome::Answered, "{record:?}");
    assert!(record.usage.iter().all(|u| u.calls > 0));
    consulted_is_what_ran(&events, &record);

    // A turn that must consult rewards: the orchestrator's tool choice is forced to
    // ask_rewards, the real model makes that call (grammar-constrained), the call's
    // arguments are parsed and the specialist runs on the same model.
    let request = TurnRequest {
        episode_id: Some(episode.clone()),
        must_consult: vec!["rewards".into()],
        ..TurnRequest::new(alice(), "How many points do I have?")
    };
    let (_, events) = turn(&runtime, request).await;
    let record = committed(&store, &episode).await;
    assert_eq!(record.seq, 2);
    assert_eq!(record.outcome, TurnOutcome::Answered, "{record:?}");
    let obligation = &record.routing.obligations[0];
    assert!(
        matches!(
            obligation.met,
            ObligationMet::ByModel | ObligationMet::AfterReminder
        ),
        "the model itself called ask_rewards: {obligation:?}"
    );
    let call = record
        .routing
        .calls
        .iter()
        .find(|c| c.agent_id == "rewards")
        .expect("the parsed ask_rewards call is recorded");
    assert!(call.args.value().is_object(), "{:?}", call.args);
    assert!(record.consulted.iter().any(|c| c.agent_id == "rewards"));
    consulted_is_what_ran(&events, &record);
    assert!(!texts(&events).concat().trim().is_empty());
}

/// A model server that is overloaded, streams garbage, or drops the stream in the middle
/// of a tool call: the turn ends with the engine's plain acknowledgement, none of the
/// server's words reach the user, and the retries are counted.
#[tokio::test]
async fn a_failing_model_server_gets_the_plain_acknowledgement() {
    use axum::Router;
    use axum::http::{StatusCode, header};
    use axum::response::Response;
    use axum::routing::post;
    use baton_runtime::metrics::LocalMetrics;

    type Answer = fn() -> Response;
    let faults: [(&str, Answer); 3] = [
        ("overloaded", || {
            Response::builder()
                .status(StatusCode::SERVICE_UNAVAILABLE)
                .body("secret-detail: GPU 3 is on fire".into())
                .unwrap()
        }),
        ("garbage", || {
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body("data: secret-detail{{{\n\n".into())
                .unwrap()
        }),
        ("dropped mid tool call", || {
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(
                    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"ask_rewards\",\"arguments\":\"{\\\"secret-detail\"}}]}}]}\n\n"
                        .into(),
                )
                .unwrap()
        }),
    ];
    for (name, answer) in faults {
        let app = Router::new().route(
            "/v1/chat/completions",
            post(move || async move { answer() }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let spec = ModelSpec {
            key: Arc::from("mine"),
            provider: Arc::from(baton_openai::PROVIDER),
            model_id: Arc::from("m"),
            context_window: 8_192,
            prices: Prices::default(),
            capabilities: ModelCapabilities::default(),
            endpoint: Some(ModelEndpoint {
                base_url: Arc::from(format!("http://{addr}/v1")),
                api_key_env: None,
            }),
        };
        let root = registry_dir();
        let connectors = baton_connectors::default_connectors(&root);
        let registry =
            baton_runtime::registry_folder::load_registry(&root, &connectors, &Default::default())
                .await
                .unwrap();
        let metrics = Arc::new(LocalMetrics::default());
        let store: Arc<dyn Store> = Arc::new(baton_inproc::HeapStore::new());
        let runtime = Runtime::builder(Arc::new(registry))
            .model_override(Arc::new(
                OpenAiCompatible::serving_every_card(&spec).unwrap(),
            ))
            .store(store.clone())
            .metrics(metrics.clone())
            .connectors(connectors)
            .build()
            .unwrap();
        let (episode, events) = turn(
            &runtime,
            TurnRequest::new(alice(), "How many points do I have?"),
        )
        .await;
        let told: String = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::Text { text, .. } => Some(text.clone()),
                Event::Error { message } => Some(message.clone()),
                _ => None,
            })
            .collect();
        assert!(
            !told.trim().is_empty(),
            "{name}: the user is told something"
        );
        let everything = format!("{events:?}");
        assert!(
            !everything.contains("secret-detail"),
            "{name}: {everything}"
        );
        // The words the user is shown (ids are random hex and may contain "503").
        assert!(!told.contains("503"), "{name}: {told}");
        let record = committed(&store, &episode).await;
        assert_eq!(record.outcome, TurnOutcome::Failed, "{name}: {record:?}");
        if name == "overloaded" {
            assert!(
                metrics.counter("model_retries_total") >= 1,
                "{name}: {:?}",
                metrics.snapshot()
            );
        }
    }
}

/// Memory search (D-43) with vectors from a real model behind llama.cpp's OpenAI-compatible
/// `/v1/embeddings` (its Python server answers one vector a token; they are averaged): the
/// vectors are the model's and of unit length, and a search finds what was said.
#[tokio::test]
async fn a_real_models_embeddings_serve_memory_search() {
    use baton_core::ports::memory::{Embedder, MemoryStore};
    use baton_core::recall::embed::cosine;
    use baton_core::recall::{MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin};

    let server = LocalModelServer::start_embedding().await;
    let embedder =
        baton_openai::OpenAiEmbedder::new(&server.base_url(), MODEL_ALIAS, None, 0.3).unwrap();
    let vectors = embedder
        .embed(&["my dog is called Biscuit", "what is my dog called?"])
        .await
        .unwrap();
    assert_eq!(vectors.len(), 2);
    assert!(vectors[0].vector.len() >= 64, "{}", vectors[0].vector.len());
    assert!((cosine(&vectors[0].vector, &vectors[0].vector) - 1.0).abs() < 1e-3);
    assert_eq!(vectors[0].model, format!("openai:{MODEL_ALIAS}"));

    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path()).unwrap();
    let me = Principal::new("me").unwrap();
    for (i, text) in [
        "my dog is called Biscuit",
        "I live in Springfield",
        "my budget is $650 a month",
    ]
    .into_iter()
    .enumerate()
    {
        let memory = NewMemory {
            kind: MemoryKind::Fact,
            subject: String::new(),
            text: text.to_owned(),
            origin: Origin::Said,
            source: MemorySource::default(),
            ttl_ms: None,
        }
        .build(1_000 + i as u64)
        .unwrap();
        let vector = embedder.embed(&[text]).await.unwrap().pop();
        store
            .save(&me, &memory, vector.as_ref(), 100)
            .await
            .unwrap();
    }
    let query = embedder
        .embed(&["my dog Biscuit"])
        .await
        .unwrap()
        .pop()
        .unwrap();
    let found = store
        .search_vector(&me, &query, &MemoryFilter::current(2_000), 3)
        .await
        .unwrap();
    assert_eq!(found.len(), 3, "every vector is the query model's");
    assert_eq!(
        found[0].memory.text, "my dog is called Biscuit",
        "{found:?}"
    );
}
