//! Long-term memory on AWS (D-43): `DynamoMemory` on DynamoDB Local and the S3 Vectors
//! fake, through the real SDK clients: the memory conformance suite unchanged, then what
//! only this store has (erasure read back from the raw table and the index, principals
//! kept apart in one shared index, concurrent saves, the requests a save and a search
//! cost), and the Titan embedder against the Bedrock-wire fake.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use baton_aws::bedrock::embed::{BedrockEmbedder, TITAN_V2};
use baton_aws::recall::{DynamoMemory, MemoryConfig, keys};
use baton_core::Principal;
use baton_core::ports::memory::{EmbedError, Embedder, MemoryStore};
use baton_core::ports::store::StoreError;
use baton_core::recall::embed::{Embedding, HashedWords, cosine};
use baton_core::recall::terms::query_terms;
use baton_core::recall::{
    DEFAULT_MAX_MEMORIES, Memory, MemoryFilter, MemoryKind, MemorySource, NewMemory, Origin, Saved,
};
use baton_testkit::recall::MemoryFixture;
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::fake_bedrock::{FakeBedrock, InvokeReply};
use baton_tests::requests::{RequestCounter, RequestCounts};
use baton_tests::s3_vectors::FakeS3Vectors;

const BUCKET: &str = "baton-memory";
const INDEX: &str = "memories";
const DIMENSIONS: usize = 256;
const T0: u64 = 1_795_305_600_000;
/// The service name the SDK gives S3 Vectors requests.
const S3_VECTORS: &str = "S3Vectors";

/// The store on a fresh table of DynamoDB Local and a fresh S3 Vectors fake, its
/// requests counted, with uncounted access to both for looking behind its back.
struct LocalMemory {
    store: DynamoMemory,
    counter: RequestCounter,
    dynamodb: DynamoDbLocal,
    table: String,
    vectors: FakeS3Vectors,
}

impl MemoryFixture for LocalMemory {
    fn memory_store(&self) -> &dyn MemoryStore {
        &self.store
    }
}

impl LocalMemory {
    async fn start() -> LocalMemory {
        let dynamodb = DynamoDbLocal::connect().await;
        // No TTL: nothing of memory has one, and the suite's clock is synthetic.
        let table = dynamodb.fresh_table_without_ttl().await;
        let vectors = FakeS3Vectors::start().await.unwrap();
        vectors.create_index(BUCKET, INDEX, DIMENSIONS, &[]);
        let counter = RequestCounter::new();
        let store = DynamoMemory::new(
            aws_sdk_dynamodb::Client::from_conf(
                dynamodb
                    .config_builder()
                    .interceptor(counter.clone())
                    .build(),
            ),
            aws_sdk_s3vectors::Client::from_conf(
                vectors
                    .config_builder()
                    .await
                    .interceptor(counter.clone())
                    .build(),
            ),
            MemoryConfig::new(&table, BUCKET, INDEX, DIMENSIONS),
        );
        LocalMemory {
            store,
            counter,
            dynamodb,
            table,
            vectors,
        }
    }

    async fn counted<T>(&self, op: impl Future<Output = T>) -> (T, RequestCounts) {
        let before = self.counter.snapshot();
        let out = op.await;
        (out, self.counter.snapshot().since(&before))
    }

    /// Every item under a partition key, read directly.
    async fn items(&self, pk: &str) -> Vec<HashMap<String, AttributeValue>> {
        self.dynamodb
            .client()
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(pk.into()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default()
    }

    async fn sort_keys(&self, who: &Principal) -> Vec<String> {
        self.items(&format!("PR#{}", who.as_str()))
            .await
            .iter()
            .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
            .collect()
    }

    /// The keys of the index's vectors of a principal.
    fn vector_keys(&self, who: &Principal) -> Vec<String> {
        let mine = format!("{}/", keys::pseudonym(who.as_str()));
        self.vectors
            .vectors(BUCKET, INDEX)
            .into_iter()
            .map(|v| v.key)
            .filter(|k| k.starts_with(&mine))
            .collect()
    }
}

async fn memory() -> LocalMemory {
    LocalMemory::start().await
}

baton_testkit::memory_store_conformance!(memory().await);

fn alice() -> Principal {
    Principal::new("alice").unwrap()
}

fn bob() -> Principal {
    Principal::new("bob").unwrap()
}

fn said(subject: &str, text: &str, at: u64) -> Memory {
    NewMemory {
        kind: MemoryKind::Fact,
        subject: subject.to_owned(),
        text: text.to_owned(),
        origin: Origin::Said,
        source: MemorySource {
            episode_id: Some("ep_1".to_owned()),
            turn_id: Some(format!("t{at}")),
            specialist: None,
        },
        ttl_ms: None,
    }
    .build(at)
    .unwrap()
}

fn extracted(subject: &str, text: &str, at: u64) -> Memory {
    Memory {
        origin: Origin::Extracted,
        ..said(subject, text, at)
    }
}

fn vector(text: &str) -> Embedding {
    HashedWords::default().embed(text)
}

async fn put(store: &DynamoMemory, who: &Principal, memory: &Memory) -> Saved {
    store
        .save(
            who,
            memory,
            Some(&vector(&memory.text)),
            DEFAULT_MAX_MEMORIES,
        )
        .await
        .unwrap()
}

// ---- erasure, read back from the raw table and the index ----

#[tokio::test]
async fn forgetting_leaves_no_item_posting_pointer_or_vector_of_the_memory() {
    let m = memory().await;
    let old = said("address", "I live at 12 Elm Street", T0);
    let new = said("address", "I live at 40 Quay Road", T0 + 1);
    let dog = said("dog", "my dog is called Biscuit", T0 + 2);
    for x in [&old, &new, &dog] {
        put(&m.store, &alice(), x).await;
    }
    assert_eq!(m.vector_keys(&alice()).len(), 3);

    assert_eq!(m.store.forget(&alice(), &new.id).await.unwrap(), 2);

    let left = m.sort_keys(&alice()).await;
    for id in [&old.id, &new.id] {
        assert!(
            !left.iter().any(|sk| sk.contains(id.as_str())),
            "{id} left {left:?}"
        );
        assert!(
            !m.vector_keys(&alice())
                .iter()
                .any(|k| k.ends_with(id.as_str()))
        );
    }
    assert!(!left.contains(&"MEM#S#address".to_owned()), "{left:?}");
    // The words are gone from the table, not only unreachable.
    for item in m.items("PR#alice").await {
        let text = format!("{item:?}");
        for words in ["Elm", "Quay", "street", "quay", "elm"] {
            assert!(!text.contains(words), "{words} in {text}");
        }
    }
    // What stays is the dog's: its item, pointer, postings, and the count.
    assert!(left.contains(&format!("MEM#I#{}", dog.id)));
    assert!(left.contains(&"MEM#S#dog".to_owned()));
    assert!(left.contains(&format!("MEM#T#biscuit#{}", dog.id)));
    assert_eq!(m.vector_keys(&alice()).len(), 1);
}

#[tokio::test]
async fn forgetting_everything_leaves_only_the_setting_and_touches_no_one_else() {
    let m = memory().await;
    m.store.set_setting(&alice(), Some(true)).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..4 {
        let x = said(&format!("s{i}"), &format!("fact {i} Biscuit"), T0 + i);
        put(&m.store, &alice(), &x).await;
        ids.push(x.id);
    }
    let replaced = said("s0", "fact zero now Rex", T0 + 9);
    put(&m.store, &alice(), &replaced).await;
    let bobs = said("dog", "my dog is Rex", T0);
    put(&m.store, &bob(), &bobs).await;

    assert_eq!(m.store.forget_all(&alice()).await.unwrap(), 5);

    assert_eq!(m.sort_keys(&alice()).await, ["MEMSET"]);
    assert!(m.vector_keys(&alice()).is_empty());
    assert_eq!(m.vector_keys(&bob()).len(), 1);
    assert!(m.sort_keys(&bob()).await.len() > 1);
    assert_eq!(m.store.setting(&alice()).await.unwrap(), Some(true));
}

#[tokio::test]
async fn the_cap_erases_what_it_lets_go_as_forget_does() {
    let m = memory().await;
    let a = extracted("a", "fact alpha", T0);
    let b = extracted("b", "fact beta", T0 + 1);
    let c = extracted("c", "fact gamma", T0 + 2);
    for x in [&a, &b] {
        m.store
            .save(&alice(), x, Some(&vector(&x.text)), 2)
            .await
            .unwrap();
    }
    let saved = m
        .store
        .save(&alice(), &c, Some(&vector(&c.text)), 2)
        .await
        .unwrap();
    assert_eq!(
        saved,
        Saved::New {
            replaced: None,
            evicted: vec![a.id.clone()]
        }
    );
    let left = m.sort_keys(&alice()).await;
    assert!(
        !left.iter().any(|sk| sk.contains(a.id.as_str())),
        "{left:?}"
    );
    assert!(!left.contains(&"MEM#S#a".to_owned()));
    assert_eq!(m.vector_keys(&alice()).len(), 2);
}

// ---- principals in one shared index ----

#[tokio::test]
async fn one_index_keeps_principals_apart_and_names_no_one() {
    let m = memory().await;
    let dog = said("dog", "my dog is called Biscuit", T0);
    put(&m.store, &alice(), &dog).await;
    // Bob saves the very same memory (same id): his own item, his own vector.
    put(&m.store, &bob(), &dog).await;
    let stored = m.vectors.vectors(BUCKET, INDEX);
    assert_eq!(stored.len(), 2);
    for v in &stored {
        let shown = format!("{} {}", v.key, v.metadata);
        assert!(
            !shown.contains("alice") && !shown.contains("bob"),
            "{shown}"
        );
        assert_eq!(v.metadata["model"], "hashed-words-256");
        assert_eq!(v.metadata["current"], true);
    }
    let now = MemoryFilter::current(T0 + 1);
    let hits = m
        .store
        .search_vector(&alice(), &vector("dog Biscuit"), &now, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    m.store.forget(&bob(), &dog.id).await.unwrap();
    assert!(
        m.store
            .search_vector(&bob(), &vector("dog Biscuit"), &now, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        m.store
            .search_vector(&alice(), &vector("dog Biscuit"), &now, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_replaced_memorys_vector_is_marked_as_history_in_the_index() {
    let m = memory().await;
    let fx2 = said("saving", "I'm saving for a Trek FX 2", T0);
    let fx3 = said("saving", "I'm saving for a Trek FX 3", T0 + 1);
    put(&m.store, &alice(), &fx2).await;
    put(&m.store, &alice(), &fx3).await;
    let current: HashMap<String, bool> = m
        .vectors
        .vectors(BUCKET, INDEX)
        .into_iter()
        .map(|v| (v.key, v.metadata["current"].as_bool().unwrap()))
        .collect();
    let pseudonym = keys::pseudonym("alice");
    assert!(!current[&keys::vector_key(&pseudonym, fx2.id.as_str())]);
    assert!(current[&keys::vector_key(&pseudonym, fx3.id.as_str())]);
    // With history asked for, both are near.
    let all = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(T0 + 2)
    };
    let hits = m
        .store
        .search_vector(&alice(), &vector("Trek FX"), &all, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
}

// ---- concurrency ----

#[tokio::test]
async fn concurrent_saves_of_one_subject_leave_one_current_memory() {
    let m = memory().await;
    let saves: Vec<Memory> = (0..4)
        .map(|i| said("locker", &format!("my locker code is {i}41{i}"), T0 + i))
        .collect();
    let who = alice();
    let results =
        futures::future::join_all(saves.iter().map(|x| m.store.save(&who, x, None, 100))).await;
    let saved = results.iter().filter(|r| r.is_ok()).count();
    assert!(saved >= 1, "{results:?}");
    let current = m
        .store
        .list(&alice(), &MemoryFilter::current(T0 + 10), 10)
        .await
        .unwrap();
    assert_eq!(current.len(), 1, "{current:?}");
    let all = MemoryFilter {
        include_history: true,
        ..MemoryFilter::current(T0 + 10)
    };
    let history = m.store.list(&alice(), &all, 10).await.unwrap();
    assert_eq!(history.len(), saved, "every saved one is kept, one current");
}

#[tokio::test]
async fn concurrent_saves_past_the_cap_end_within_it() {
    let m = memory().await;
    let cap = 3;
    let saves: Vec<Memory> = (0..6)
        .map(|i| extracted(&format!("s{i}"), &format!("fact number {i}"), T0 + i))
        .collect();
    let who = alice();
    let results =
        futures::future::join_all(saves.iter().map(|x| m.store.save(&who, x, None, cap))).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let current = m
        .store
        .list(&alice(), &MemoryFilter::current(T0 + 10), 10)
        .await
        .unwrap();
    assert!(current.len() <= cap, "{}", current.len());
}

// ---- what a save and a search cost ----

#[tokio::test]
async fn a_save_and_a_search_cost_a_known_number_of_requests() {
    let m = memory().await;
    let dog = said("dog", "my dog is called Biscuit", T0);
    let (saved, sent) = m.counted(put(&m.store, &alice(), &dog)).await;
    assert!(matches!(saved, Saved::New { .. }));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.BatchGetItem=1 DynamoDB.BatchWriteItem=1 DynamoDB.GetItem=1 \
         DynamoDB.TransactWriteItems=1 S3Vectors.PutVectors=1"
    );

    let again = said("dog", "My dog is called biscuit.", T0 + 1);
    let (unchanged, sent) = m.counted(put(&m.store, &alice(), &again)).await;
    assert_eq!(unchanged, Saved::Unchanged(dog.id.clone()));
    assert_eq!(sent.to_string(), "DynamoDB.BatchGetItem=1");

    let rex = said("dog", "my dog is called Rex", T0 + 2);
    let (replaced, sent) = m.counted(put(&m.store, &alice(), &rex)).await;
    assert!(matches!(
        replaced,
        Saved::New {
            replaced: Some(_),
            ..
        }
    ));
    assert_eq!(
        sent.to_string(),
        "DynamoDB.BatchGetItem=1 DynamoDB.BatchWriteItem=1 DynamoDB.GetItem=1 \
         DynamoDB.TransactWriteItems=1 S3Vectors.GetVectors=1 S3Vectors.PutVectors=2"
    );

    let now = MemoryFilter::current(T0 + 3);
    let terms = query_terms("what is my dog called?");
    let (hits, sent) = m
        .counted(m.store.search_text(&alice(), &terms, &now, 5))
        .await;
    assert_eq!(hits.unwrap()[0].memory.id, rex.id);
    assert_eq!(sent.get("DynamoDB", "Query"), terms.len() as u64);
    assert_eq!(sent.to_string(), "DynamoDB.BatchGetItem=1 DynamoDB.Query=2");

    let (hits, sent) = m
        .counted(m.store.search_vector(&alice(), &vector("dog"), &now, 5))
        .await;
    assert_eq!(hits.unwrap().len(), 1);
    assert_eq!(
        sent.to_string(),
        "DynamoDB.BatchGetItem=1 S3Vectors.QueryVectors=1"
    );

    let (status, sent) = m.counted(m.store.status(&alice(), T0 + 3)).await;
    assert!(status.unwrap().holds_any);
    assert_eq!(sent.to_string(), "DynamoDB.BatchGetItem=1 DynamoDB.Query=1");

    let (forgot, sent) = m.counted(m.store.forget(&alice(), &rex.id)).await;
    assert_eq!(forgot.unwrap(), 2);
    // The memory, the one it replaced, its pointer; postings, then history, then the
    // memory with its pointer and the count.
    assert_eq!(
        sent.to_string(),
        "DynamoDB.BatchWriteItem=2 DynamoDB.GetItem=3 DynamoDB.TransactWriteItems=1 \
         S3Vectors.DeleteVectors=1"
    );
    assert_eq!(sent.get(S3_VECTORS, "DeleteVectors"), 1);
}

// ---- failures ----

#[tokio::test]
async fn s3_vectors_failures_are_typed_store_errors_and_change_nothing() {
    let m = memory().await;
    let dog = said("dog", "my dog is called Biscuit", T0);
    m.vectors
        .fail_next(429, "TooManyRequestsException", "slow down");
    let err = m
        .store
        .save(&alice(), &dog, Some(&vector(&dog.text)), 10)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Unavailable(message) if message.contains("busy")),
        "{err:?}"
    );
    assert_eq!(m.store.memory(&alice(), &dog.id).await.unwrap(), None);
    // The retried save completes it.
    put(&m.store, &alice(), &dog).await;
    m.vectors.fail_next(500, "InternalServerException", "oops");
    let err = m
        .store
        .search_vector(&alice(), &vector("dog"), &MemoryFilter::current(T0 + 1), 5)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
}

#[tokio::test]
async fn a_vector_the_index_cannot_hold_is_not_stored_and_never_found() {
    let m = memory().await;
    let dog = said("dog", "my dog is called Biscuit", T0);
    let small = HashedWords::new(64).embed(&dog.text);
    m.store
        .save(&alice(), &dog, Some(&small), 10)
        .await
        .unwrap();
    assert!(m.vector_keys(&alice()).is_empty());
    assert!(m.store.memory(&alice(), &dog.id).await.unwrap().is_some());
    let hits = m
        .store
        .search_vector(&alice(), &small, &MemoryFilter::current(T0 + 1), 5)
        .await
        .unwrap();
    assert!(hits.is_empty());
}

// ---- the fake's wire: what the real service refuses ----

#[tokio::test]
async fn the_fake_refuses_what_the_service_refuses() {
    let fake = FakeS3Vectors::start().await.unwrap();
    fake.create_index(BUCKET, INDEX, 4, &["text"]);
    let client = aws_sdk_s3vectors::Client::from_conf(fake.config_builder().await.build());
    let put = |key: &str, data: Vec<f32>| {
        aws_sdk_s3vectors::types::PutInputVector::builder()
            .key(key)
            .data(aws_sdk_s3vectors::types::VectorData::Float32(data))
            .metadata(aws_smithy_types::Document::Object(HashMap::from([(
                "genre".to_owned(),
                aws_smithy_types::Document::String("mystery".into()),
            )])))
            .build()
            .unwrap()
    };
    let code = |e: &dyn aws_sdk_s3vectors::error::ProvideErrorMetadata| {
        e.code().unwrap_or_default().to_owned()
    };
    let err = client
        .put_vectors()
        .vector_bucket_name(BUCKET)
        .index_name(INDEX)
        .vectors(put("a", vec![1.0, 0.0, 0.0]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "ValidationException");
    client
        .put_vectors()
        .vector_bucket_name(BUCKET)
        .index_name(INDEX)
        .vectors(put("a", vec![1.0, 0.0, 0.0, 0.0]))
        .vectors(put("b", vec![0.0, 1.0, 0.0, 0.0]))
        .send()
        .await
        .unwrap();
    let query = |top_k: i32| {
        client
            .query_vectors()
            .vector_bucket_name(BUCKET)
            .index_name(INDEX)
            .query_vector(aws_sdk_s3vectors::types::VectorData::Float32(vec![
                1.0, 0.1, 0.0, 0.0,
            ]))
            .top_k(top_k)
            .return_distance(true)
            .return_metadata(true)
    };
    let err = query(101).send().await.unwrap_err();
    assert_eq!(code(&err), "ValidationException");
    let err = query(0).send().await.unwrap_err();
    assert_eq!(code(&err), "ValidationException");
    let out = query(1).send().await.unwrap();
    assert_eq!(out.vectors().len(), 1);
    assert_eq!(out.vectors()[0].key(), "a");
    assert!(out.vectors()[0].distance().unwrap() < 0.01);
    assert_eq!(out.distance_metric().unwrap().as_str(), "cosine");
    let filtered = query(5)
        .filter(aws_smithy_types::Document::Object(HashMap::from([(
            "genre".to_owned(),
            aws_smithy_types::Document::Object(HashMap::from([(
                "$ne".to_owned(),
                aws_smithy_types::Document::String("mystery".into()),
            )])),
        )])))
        .send()
        .await
        .unwrap();
    assert!(filtered.vectors().is_empty());
    let err = query(5)
        .filter(aws_smithy_types::Document::Object(HashMap::from([(
            "text".to_owned(),
            aws_smithy_types::Document::String("x".into()),
        )])))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "ValidationException");
    let err = client
        .query_vectors()
        .vector_bucket_name(BUCKET)
        .index_name("nope")
        .query_vector(aws_sdk_s3vectors::types::VectorData::Float32(vec![1.0; 4]))
        .top_k(1)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "NotFoundException");
    client
        .delete_vectors()
        .vector_bucket_name(BUCKET)
        .index_name(INDEX)
        .keys("a")
        .keys("never-there")
        .send()
        .await
        .unwrap();
    let got = client
        .get_vectors()
        .vector_bucket_name(BUCKET)
        .index_name(INDEX)
        .keys("a")
        .keys("b")
        .return_data(true)
        .send()
        .await
        .unwrap();
    assert_eq!(got.vectors().len(), 1);
    let listed = client
        .list_vectors()
        .vector_bucket_name(BUCKET)
        .index_name(INDEX)
        .max_results(1)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.vectors().len(), 1);
    assert!(listed.next_token().is_none());
}

// ---- the Titan embedder against the Bedrock-wire fake ----

async fn titan(fake: &FakeBedrock) -> BedrockEmbedder {
    let client = baton_aws::bedrock::client(&fake.sdk_config().await);
    BedrockEmbedder::new(client, DIMENSIONS).unwrap()
}

#[tokio::test]
async fn the_titan_embedder_sends_one_request_a_text_and_near_texts_are_near() {
    let fake = FakeBedrock::start().await.unwrap();
    let embedder = titan(&fake).await;
    assert_eq!(embedder.model(), format!("{TITAN_V2}/256"));
    let texts = [
        "I'm saving for a Trek bike",
        "which bike am I saving for?",
        "my dog is called Biscuit",
    ];
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.model, embedder.model());
        assert_eq!(v.vector.len(), DIMENSIONS);
        let norm: f32 = v.vector.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-3);
    }
    assert!(
        cosine(&vectors[0].vector, &vectors[1].vector)
            > cosine(&vectors[0].vector, &vectors[2].vector)
    );
    let sent = fake.invocations();
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|r| r.model_id == TITAN_V2));
    let mut inputs: Vec<&str> = sent
        .iter()
        .map(|r| r.body["inputText"].as_str().unwrap())
        .collect();
    inputs.sort_unstable();
    let mut expected = texts.to_vec();
    expected.sort_unstable();
    assert_eq!(inputs, expected);
    assert!(
        sent.iter()
            .all(|r| r.body["dimensions"] == 256 && r.body["normalize"] == true)
    );
    // ConverseStream's log is its own.
    assert_eq!(fake.request_count(), 0);
}

#[tokio::test]
async fn a_throttled_or_malformed_embedding_is_a_typed_error() {
    let fake = FakeBedrock::start().await.unwrap();
    let embedder = titan(&fake).await;
    fake.push_invoke(InvokeReply::throttled());
    assert!(matches!(
        embedder.embed(&["hello there"]).await,
        Err(EmbedError::Unavailable(_))
    ));
    fake.push_invoke(InvokeReply::malformed());
    assert!(matches!(
        embedder.embed(&["hello there"]).await,
        Err(EmbedError::Malformed(_))
    ));
    fake.push_invoke(InvokeReply::Body(r#"{"embedding": [0.5, 0.5]}"#.to_owned()));
    assert!(matches!(
        embedder.embed(&["hello there"]).await,
        Err(EmbedError::Malformed(_))
    ));
    assert!(embedder.embed(&["hello there"]).await.is_ok());
}

#[tokio::test]
async fn titan_vectors_are_stored_and_found_by_their_model_only() {
    let m = memory().await;
    let fake = FakeBedrock::start().await.unwrap();
    let embedder = titan(&fake).await;
    let bike = said("bike", "I'm saving for a Trek FX 2 bike", T0);
    let dog = said("dog", "my dog is called Biscuit", T0 + 1);
    for x in [&bike, &dog] {
        let v = embedder.embed(&[&x.text]).await.unwrap().remove(0);
        m.store.save(&alice(), x, Some(&v), 10).await.unwrap();
    }
    let now = MemoryFilter::current(T0 + 2);
    let query = embedder
        .embed(&["which bike am I saving for?"])
        .await
        .unwrap()
        .remove(0);
    let hits = m
        .store
        .search_vector(&alice(), &query, &now, 5)
        .await
        .unwrap();
    assert_eq!(hits[0].memory.id, bike.id);
    // The model-free embedder's vectors have the same length but another model.
    let other = m
        .store
        .search_vector(&alice(), &vector("which bike am I saving for?"), &now, 5)
        .await
        .unwrap();
    assert!(other.is_empty());
}
