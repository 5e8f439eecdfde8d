//! The turn function end to end: the router built by the function's own Init
//! (`baton_turn::init_with`) over the real SDK clients, pointed at DynamoDB Local, the
//! in-process S3 and the Bedrock-wire fake; events from `events/` driven through
//! lambda_http's streaming adapter as the Lambda runtime drives them.
//!
//! The fake answers each call by who is asking: the orchestrator offers `ask_*` tools, the
//! shopping specialist offers `search_offers`, the rewards specialist `get_points_balance`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
use axum::body::Bytes;
use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_aws::sdk::Clients;
use baton_core::Principal;
use baton_core::ports::store::StoreError;
use baton_core::ports::store::TurnStore as _;
use baton_core::turn::{AgentStatus, TurnOutcome};
use baton_http::sse::decode;
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::fake_bedrock::{FakeBedrock, FakeRequest, Reply, ToolCall};
use baton_tests::fixtures::{event, registry_dir};
use baton_tests::requests::{RequestCounter, RequestCounts};
use baton_tests::s3::InProcessS3;
use baton_tests::s3_vectors::FakeS3Vectors;
use baton_turn::{Config, Function, LambdaPrincipal, MetricsSink};
use futures::StreamExt;
use futures::stream::BoxStream;
use lambda_http::request::LambdaRequest;
use lambda_http::tower::Service;
use lambda_http::{Context, LambdaEvent, StreamAdapter};
use serde_json::{Value, json};

const ALICE: &str = "arn:aws:iam::123456789012:user/alice";
const BUCKET: &str = "baton-bodies";

fn event_with(message: &str) -> Vec<u8> {
    event_with_body(&json!({ "message": message }))
}

/// The function URL sample event carrying `body` (as a JSON string, as the front door sends
/// it).
fn event_with_body(body: &Value) -> Vec<u8> {
    let mut event: Value = serde_json::from_slice(&event("function-url-turn.json")).unwrap();
    event["body"] = body.to_string().into();
    serde_json::to_vec(&event).unwrap()
}

/// The function, its journal and the fake behind it.
struct Rig {
    function: Function,
    /// Counts the function's DynamoDB and S3 requests (and only the function's).
    counter: RequestCounter,
    /// The journal on uncounted clients, for reading behind the function's back.
    store: DynamoStore,
    bedrock: FakeBedrock,
    _s3: InProcessS3,
    /// Long-term memory's vector index, when the function keeps memory.
    vectors: Option<FakeS3Vectors>,
}

impl Rig {
    async fn new(bedrock: FakeBedrock) -> Rig {
        Rig::with(bedrock, &[]).await
    }

    /// A rig whose function keeps long-term memory (D-43), on by default: its items in the
    /// table, its vectors in the S3 Vectors fake, Titan's embeddings from the Bedrock fake.
    async fn with_memory(bedrock: FakeBedrock) -> Rig {
        let vectors = FakeS3Vectors::start().await.unwrap();
        vectors.create_index("baton-memory", "memories", 256, &[]);
        let arn = "arn:aws:s3vectors:us-east-1:123456789012:bucket/baton-memory/index/memories";
        let vars = [
            ("BATON_MEMORY_VECTOR_INDEX_ARN", arn),
            ("BATON_MEMORY", "true"),
        ];
        Rig::build(bedrock, &vars, Some(vectors)).await
    }

    /// A rig whose function also reads `more` variables.
    async fn with(bedrock: FakeBedrock, more: &[(&str, &str)]) -> Rig {
        Rig::build(bedrock, more, None).await
    }

    async fn build(
        bedrock: FakeBedrock,
        more: &[(&str, &str)],
        vectors: Option<FakeS3Vectors>,
    ) -> Rig {
        let db = DynamoDbLocal::connect().await;
        let table = db.fresh_table().await;
        let s3 = InProcessS3::start();
        s3.create_bucket(BUCKET).await;
        let fake_sdk = bedrock.sdk_config().await;
        let counter = RequestCounter::new();
        let clients = Clients {
            config: db.sdk_config().clone(),
            bedrock: aws_sdk_bedrockruntime::Client::from_conf(
                aws_sdk_bedrockruntime::config::Builder::from(&fake_sdk)
                    .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
                    .build(),
            ),
            dynamodb: aws_sdk_dynamodb::Client::from_conf(
                db.config_builder().interceptor(counter.clone()).build(),
            ),
            s3: aws_sdk_s3::Client::from_conf(
                s3.config_builder().interceptor(counter.clone()).build(),
            ),
            s3vectors: match &vectors {
                Some(fake) => aws_sdk_s3vectors::Client::from_conf(
                    fake.config_builder()
                        .await
                        .interceptor(counter.clone())
                        .build(),
                ),
                None => aws_sdk_s3vectors::Client::new(db.sdk_config()),
            },
        };
        let vars: HashMap<&str, String> = HashMap::from([
            ("BATON_TABLE", table.clone()),
            ("BATON_BUCKET", BUCKET.to_owned()),
            ("BATON_REGISTRY", registry_dir().display().to_string()),
        ]);
        let mut vars = vars;
        for (k, v) in more {
            vars.insert(k, (*v).to_owned());
        }
        let config = Config::from_lookup(|name| vars.get(name).cloned()).unwrap();
        let function = baton_turn::init_with(&config, &clients, Arc::new(LambdaPrincipal))
            .await
            .expect("Init over the emulators");
        let store = DynamoStore::new(db.client(), s3.client(), JournalConfig::new(table, BUCKET));
        Rig {
            function,
            counter,
            store,
            bedrock,
            _s3: s3,
            vectors,
        }
    }

    /// One request to `path` with `method` and a JSON body, as the function URL delivers
    /// it; its status and body.
    async fn http(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
        let mut event: Value = serde_json::from_slice(&event("function-url-turn.json")).unwrap();
        event["rawPath"] = path.into();
        event["requestContext"]["http"]["method"] = method.into();
        event["requestContext"]["http"]["path"] = path.into();
        event["body"] = body.map_or(Value::Null, |b| b.to_string().into());
        let (status, mut stream) = self.start(&serde_json::to_vec(&event).unwrap()).await;
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.unwrap());
        }
        self.end_invocation().await;
        (status, String::from_utf8(out).unwrap())
    }

    async fn start(&self, event: &[u8]) -> (u16, BoxStream<'static, Result<Bytes, axum::Error>>) {
        let payload: LambdaRequest = serde_json::from_slice(event).unwrap();
        let mut context = Context::default();
        context.request_id = "req-e2e".into();
        let response = StreamAdapter::from(self.function.router.clone())
            .call(LambdaEvent::new(payload, context))
            .await
            .unwrap();
        (
            response.metadata_prelude.status_code.as_u16(),
            response.stream.boxed(),
        )
    }

    /// One invocation, read to the end, then the invocation's end; the body and the EMF
    /// lines.
    async fn invoke(&self, message: &str) -> (String, Vec<Value>) {
        self.invoke_event(&event_with(message)).await
    }

    async fn invoke_event(&self, event: &[u8]) -> (String, Vec<Value>) {
        let (status, mut stream) = self.start(event).await;
        assert_eq!(status, 200);
        let mut body = Vec::new();
        while let Some(chunk) = stream.next().await {
            body.extend_from_slice(&chunk.expect("the body never yields an error"));
        }
        let lines = self.end_invocation().await;
        (String::from_utf8(body).unwrap(), lines)
    }

    /// One whole invocation of `body`; the stream and the DynamoDB and S3 requests the
    /// function sent for it, up to the invocation's end.
    async fn counted(&self, body: &Value) -> (String, RequestCounts) {
        let before = self.counter.snapshot();
        let (streamed, _) = self.invoke_event(&event_with_body(body)).await;
        (streamed, self.counter.snapshot().since(&before))
    }

    async fn end_invocation(&self) -> Vec<Value> {
        let sink = Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let as_sink: MetricsSink = sink.clone();
        self.function
            .invocation_layer(as_sink)
            .after("req-e2e", 0)
            .await;
        let text = String::from_utf8(sink.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    async fn turns_of(&self, episode: &str) -> Vec<baton_core::turn::TurnRecord> {
        self.store
            .turns(&Principal::new(ALICE).unwrap(), episode, 10)
            .await
            .unwrap()
    }
}

fn frames(body: &str) -> Vec<(String, Value)> {
    decode(body)
        .into_iter()
        .map(|f| {
            (
                f.event.unwrap_or_default(),
                serde_json::from_str(&f.data).unwrap(),
            )
        })
        .collect()
}

fn names(body: &str) -> Vec<String> {
    frames(body).into_iter().map(|(n, _)| n).collect()
}

fn text(body: &str) -> String {
    frames(body)
        .into_iter()
        .filter(|(n, _)| n == "text")
        .map(|(_, d)| d["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Everything a user is shown: answer text, status lines, error messages (not the random
/// ids and costs around them, which may hold any digits).
fn shown(body: &str) -> String {
    frames(body)
        .into_iter()
        .filter_map(|(n, d)| match n.as_str() {
            "text" => d["text"].as_str().map(str::to_owned),
            "status" | "error" => d["message"].as_str().map(str::to_owned),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn episode(body: &str) -> String {
    frames(body)
        .into_iter()
        .find(|(n, _)| n == "response_id")
        .map(|(_, d)| d["episode_id"].as_str().unwrap().to_owned())
        .unwrap()
}

fn consulted(body: &str) -> Vec<(String, String)> {
    frames(body)
        .into_iter()
        .find(|(n, _)| n == "agents_consulted")
        .map(|(_, d)| {
            d["agents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        a["agent_id"].as_str().unwrap().to_owned(),
                        a["status"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap()
}

fn is_orchestrator(r: &FakeRequest) -> bool {
    r.offers_tool("ask_shop")
}
fn is_shop(r: &FakeRequest) -> bool {
    r.offers_tool("search_offers")
}
fn is_rewards(r: &FakeRequest) -> bool {
    r.offers_tool("get_points_balance")
}

const SHOP_ANSWER: &str = "Bean Street coffee earns 1,000 points this week.";
const REWARDS_ANSWER: &str = "You have 12,400 points.";

/// Routes to shop (or shop and rewards), lets each answer, composes from the results.
fn answers(r: &FakeRequest, mixed: bool) -> Reply {
    if is_orchestrator(r) && !r.last_has_tool_results() {
        let mut calls = vec![ToolCall::new(
            "tu-shop",
            "ask_shop",
            json!({"query": "coffee deals", "intent_count": if mixed { 2 } else { 1 }}),
        )];
        if mixed {
            calls.push(ToolCall::new(
                "tu-rewards",
                "ask_rewards",
                json!({"query": "how many points do I have", "intent_count": 2}),
            ));
        }
        return Reply::text_then_tools("Let me check. ", calls);
    }
    if is_orchestrator(r) {
        // Compose from whatever the specialists said; say so when one was unavailable.
        let results = r.last_tool_results();
        let result_of = |id: &str| {
            results
                .iter()
                .find(|t| t.id == id)
                .map(|t| serde_json::to_string(&t.content).unwrap())
        };
        let mut answer = String::new();
        if result_of("tu-shop").is_some_and(|t| t.contains("Bean Street")) {
            answer.push_str(SHOP_ANSWER);
        }
        match result_of("tu-rewards") {
            Some(t) if t.contains("12,400") => {
                answer.push(' ');
                answer.push_str(REWARDS_ANSWER);
            }
            Some(_) => answer.push_str(" I couldn't reach the rewards team just now."),
            None => {}
        }
        return Reply::text(answer.trim());
    }
    if is_shop(r) {
        return Reply::text(SHOP_ANSWER);
    }
    if is_rewards(r) {
        return Reply::text(REWARDS_ANSWER);
    }
    Reply::validation_error("the fake does not know this caller")
}

#[tokio::test]
async fn a_single_intent_turn_streams_and_commits_to_dynamodb() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    let rig = Rig::new(fake).await;
    let (body, lines) = rig.invoke("find me coffee deals").await;
    let names = names(&body);
    assert_eq!(
        names.first().map(String::as_str),
        Some("thinking"),
        "{body}"
    );
    assert_eq!(
        names.last().map(String::as_str),
        Some("completed"),
        "{body}"
    );
    assert!(text(&body).ends_with(SHOP_ANSWER), "{body}");
    assert_eq!(consulted(&body), vec![("shop".to_owned(), "ok".to_owned())]);
    // Routing, the specialist, composition: three ConverseStream calls.
    assert_eq!(rig.bedrock.request_count(), 3);

    let turns = rig.turns_of(&episode(&body)).await;
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].outcome, TurnOutcome::Answered);
    assert!(turns[0].narration.ends_with(SHOP_ANSWER));
    // Usage from the fake's metadata reached the record and the metrics.
    assert!(turns[0].cost_usd > 0.0);
    assert!(lines.iter().any(|l| l.get("model_tokens_total").is_some()
        && l["model"] == "claude-haiku"
        && l["kind"] == "input"));
}

#[tokio::test]
async fn a_mixed_intent_turn_asks_both_specialists_at_once() {
    let fake = FakeBedrock::with_handler(|r| answers(r, true))
        .await
        .unwrap();
    let rig = Rig::new(fake).await;
    let (body, lines) = rig
        .invoke("find me coffee deals and how many points do I have")
        .await;
    assert_eq!(names(&body).last().map(String::as_str), Some("completed"));
    let mut consulted = consulted(&body);
    consulted.sort();
    assert_eq!(
        consulted,
        vec![
            ("rewards".to_owned(), "ok".to_owned()),
            ("shop".to_owned(), "ok".to_owned())
        ]
    );
    let requests = rig.bedrock.requests();
    assert_eq!(requests.iter().filter(|r| is_shop(r)).count(), 1);
    assert_eq!(requests.iter().filter(|r| is_rewards(r)).count(), 1);
    let answer = text(&body);
    assert!(
        answer.contains(SHOP_ANSWER) && answer.contains(REWARDS_ANSWER),
        "{answer}"
    );
    let width = lines
        .iter()
        .find(|l| l.get("fanout_width").is_some())
        .unwrap();
    assert_eq!(width["fanout_width"], json!([2.0]));
    let turns = rig.turns_of(&episode(&body)).await;
    assert_eq!(turns[0].segments.len(), 2);
}

#[tokio::test]
async fn a_failing_specialist_is_acknowledged_without_error_text() {
    let fake = FakeBedrock::with_handler(|r| {
        if is_rewards(r) {
            Reply::http_error(
                500,
                "InternalServerException",
                "rewards model exploded at 0x7f3a",
            )
        } else {
            answers(r, true)
        }
    })
    .await
    .unwrap();
    let rig = Rig::new(fake).await;
    let (body, _) = rig
        .invoke("find me coffee deals and how many points do I have")
        .await;
    assert_eq!(names(&body).last().map(String::as_str), Some("completed"));
    let mut consulted = consulted(&body);
    consulted.sort();
    assert_eq!(consulted[0], ("rewards".to_owned(), "error".to_owned()));
    assert_eq!(consulted[1], ("shop".to_owned(), "ok".to_owned()));
    let answer = text(&body);
    assert!(answer.contains(SHOP_ANSWER), "{answer}");
    assert!(
        answer.contains("couldn't reach the rewards team"),
        "{answer}"
    );
    for leak in ["exploded", "0x7f3a", "InternalServerException", "500"] {
        assert!(
            !shown(&body).contains(leak),
            "{leak} reached the client: {body}"
        );
    }
    let turns = rig.turns_of(&episode(&body)).await;
    let rewards = turns[0]
        .consulted
        .iter()
        .find(|c| c.agent_id == "rewards")
        .unwrap();
    assert_eq!(rewards.status, AgentStatus::Error);
}

#[tokio::test]
async fn a_throttled_call_is_retried_and_the_turn_answers() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    fake.push(Reply::throttled()); // the routing call, first time only
    let rig = Rig::new(fake).await;
    let (body, lines) = rig.invoke("find me coffee deals").await;
    assert!(!names(&body).contains(&"error".to_owned()), "{body}");
    assert!(text(&body).ends_with(SHOP_ANSWER), "{body}");
    let routing_calls = rig
        .bedrock
        .requests()
        .iter()
        .filter(|r| is_orchestrator(r) && !r.last_has_tool_results())
        .count();
    assert_eq!(routing_calls, 2, "one throttled, one answered");
    let retries = lines
        .iter()
        .find(|l| l.get("model_retries_total").is_some())
        .unwrap();
    assert_eq!(retries["model_retries_total"], 1);
    let turns = rig.turns_of(&episode(&body)).await;
    assert_eq!(turns[0].routing.retries, 1);
}

#[tokio::test]
async fn a_model_error_mid_stream_is_answered_in_plain_language() {
    let fake = FakeBedrock::with_handler(|r| {
        if is_orchestrator(r) && !r.last_has_tool_results() {
            Reply::text("Let me ").exception_mid_stream(
                "modelStreamErrorException",
                "upstream model crashed: stack at frame 12",
            )
        } else {
            answers(r, false)
        }
    })
    .await
    .unwrap();
    let rig = Rig::new(fake).await;
    let (body, _) = rig.invoke("find me coffee deals").await;
    let frames = frames(&body);
    let errors: Vec<&Value> = frames
        .iter()
        .filter(|(n, _)| n == "error")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(errors.len(), 1, "{body}");
    assert_eq!(
        errors[0]["message"],
        "I'm having trouble answering right now. Please try again in a moment."
    );
    assert_eq!(frames.last().map(|(n, _)| n.as_str()), Some("completed"));
    for leak in [
        "crashed",
        "stack",
        "modelStreamErrorException",
        "StreamError",
    ] {
        assert!(
            !shown(&body).contains(leak),
            "{leak} reached the client: {body}"
        );
    }
    // Nothing committed is lost: the failed turn is in the journal too.
    let turns = rig.turns_of(&episode(&body)).await;
    assert_eq!(turns[0].outcome, TurnOutcome::Failed);
}

#[tokio::test]
async fn a_client_that_disconnects_still_gets_its_turn_committed() {
    let composed = Arc::new(AtomicUsize::new(0));
    let seen = composed.clone();
    let fake = FakeBedrock::with_handler(move |r| {
        if is_orchestrator(r) && r.last_has_tool_results() {
            seen.fetch_add(1, Ordering::SeqCst);
            // Slow enough that the client is gone before composition streams.
            return answers(r, false).first_byte_delay(std::time::Duration::from_millis(100));
        }
        answers(r, false)
    })
    .await
    .unwrap();
    let rig = Rig::new(fake).await;
    let (status, mut stream) = rig.start(&event_with("find me coffee deals")).await;
    assert_eq!(status, 200);
    let mut head = String::new();
    while !head.contains("event: response_id") {
        let chunk = stream.next().await.unwrap().unwrap();
        head.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let episode = episode(&head);
    drop(stream); // the client leaves
    assert_eq!(rig.function.tracker.running(), 1);
    rig.end_invocation().await;
    assert_eq!(rig.function.tracker.running(), 0);
    assert_eq!(
        composed.load(Ordering::SeqCst),
        1,
        "the turn went on to compose"
    );
    let turns = rig.turns_of(&episode).await;
    assert_eq!(
        turns.len(),
        1,
        "the turn was committed after the client left"
    );
    assert!(
        turns[0].narration.ends_with(SHOP_ANSWER),
        "{}",
        turns[0].narration
    );
}

/// What an ordinary turn costs in requests: a single-intent turn (routing, one specialist,
/// composition) that starts an episode, then a second turn on that episode. The counts are
/// every DynamoDB and S3 request the function sent from the event to the invocation's end.
#[tokio::test]
async fn an_ordinary_turn_costs_two_transactions_and_a_follow_up_two_reads_more() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    let rig = Rig::new(fake).await;

    // A new episode: the claim (META, TURN-ID) and the commit (META, TURN, TURN-ID, any
    // inline bodies), one transaction each; nothing to read yet, no body large enough for
    // S3.
    let (body, first) = rig
        .counted(&json!({"message": "find me coffee deals"}))
        .await;
    assert!(text(&body).ends_with(SHOP_ANSWER), "{body}");
    assert_eq!(first.to_string(), "DynamoDB.TransactWriteItems=2");

    // The same episode again: the same two transactions, plus one GetItem (the episode's
    // META) and one Query (its last turns, the history the model is given).
    let episode = episode(&body);
    let (body, second) = rig
        .counted(&json!({"message": "find me coffee deals", "episode_id": episode}))
        .await;
    assert!(text(&body).ends_with(SHOP_ANSWER), "{body}");
    assert_eq!(
        second.to_string(),
        "DynamoDB.GetItem=1 DynamoDB.Query=1 DynamoDB.TransactWriteItems=2"
    );
    assert_eq!(rig.turns_of(&episode).await.len(), 2);
}

/// The REST events behind the template's token authorizers (a Cognito user pool, the OIDC
/// authorizer): the turn belongs to the token's `sub`, whatever the body says.
#[tokio::test]
async fn a_token_caller_owns_its_turn_as_the_tokens_sub() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    let rig = Rig::new(fake).await;
    for (name, sub) in [
        (
            "api-gateway-rest-turn-cognito.json",
            "7d8ca528-4931-4254-9273-ea5ee853f271",
        ),
        ("api-gateway-rest-turn-lambda-authorizer.json", "user-7f3a"),
    ] {
        let (body, _) = rig.invoke_event(&event(name)).await;
        assert_eq!(
            names(&body).last().map(String::as_str),
            Some("completed"),
            "{name}: {body}"
        );
        let episode = episode(&body);
        let turns_as = |p: &str| {
            let principal = Principal::new(p).unwrap();
            let store = &rig.store;
            let episode = episode.clone();
            async move { store.turns(&principal, &episode, 10).await }
        };
        assert_eq!(turns_as(sub).await.unwrap().len(), 1, "{name}");
        // The Cognito sample's body names `mallory`: ignored.
        for other in ["mallory", ALICE] {
            assert!(
                matches!(turns_as(other).await, Err(StoreError::NotFound)),
                "{name}: the episode must not be {other}'s"
            );
        }
    }
}

/// Token claims without a `sub` are refused before the turn runs: no journal request, no
/// model call.
#[tokio::test]
async fn a_token_without_a_sub_is_refused_before_any_work() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    let rig = Rig::new(fake).await;
    let mut event: Value =
        serde_json::from_slice(&event("api-gateway-rest-turn-cognito.json")).unwrap();
    event["requestContext"]["authorizer"]["claims"]
        .as_object_mut()
        .unwrap()
        .remove("sub");
    let before = rig.counter.snapshot();
    let (status, mut stream) = rig.start(&serde_json::to_vec(&event).unwrap()).await;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    assert_eq!(rig.counter.snapshot().since(&before).total(), 0);
    assert_eq!(rig.bedrock.request_count(), 0);
}

/// The shipped planner as the function's entry (`BATON_ORCHESTRATOR=planner`): a chain of
/// two planned sub-agents on Bedrock, each seeing only `use_skill` with its one skill, the
/// plan streamed and committed to DynamoDB.
#[tokio::test]
async fn a_planned_turn_runs_its_waves_on_bedrock_and_commits_the_plan() {
    let fake = FakeBedrock::with_handler(|r| {
        if r.offers_tool("dispatch_agent") {
            if !r.last_has_tool_results() {
                return Reply::tool_uses([
                    ToolCall::new(
                        "tu-1",
                        "dispatch_agent",
                        json!({"agent_id": "receipts", "mission": "find receipts that did not scan", "skills": ["support.lookup_receipts"]}),
                    ),
                    ToolCall::new(
                        "tu-2",
                        "dispatch_agent",
                        json!({"agent_id": "fixes", "mission": "find how to fix them", "skills": ["support.search_help_articles"], "depends_on": ["receipts"]}),
                    ),
                ]);
            }
            return Reply::text("One receipt was too blurry; rescan it flat in good light.");
        }
        if r.offers_tool("use_skill") {
            let Some(skill) = r
                .tool_schema("use_skill")
                .and_then(|s| s.pointer("/properties/skill/enum/0"))
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Reply::validation_error("use_skill has no skill");
            };
            if !r.last_has_tool_results() {
                return Reply::tool_use("tu-s", "use_skill", json!({"skill": skill, "arguments": {"query": "blurry"}}));
            }
            return Reply::text(&format!("{skill} answered."));
        }
        Reply::validation_error("the fake does not know this caller")
    })
    .await
    .unwrap();
    let rig = Rig::with(fake, &[("BATON_ORCHESTRATOR", "planner")]).await;
    let (body, _) = rig
        .invoke("show my receipts that didn't scan, then how to fix them")
        .await;
    let names = names(&body);
    for expected in [
        "plan",
        "node_start",
        "node_end",
        "agents_consulted",
        "completed",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {body}");
    }
    assert!(
        text(&body).ends_with("rescan it flat in good light."),
        "{body}"
    );
    assert_eq!(
        consulted(&body),
        vec![
            ("receipts".to_owned(), "ok".to_owned()),
            ("fixes".to_owned(), "ok".to_owned())
        ]
    );
    // The planner twice, each sub-agent twice.
    assert_eq!(rig.bedrock.request_count(), 6);
    let fixes = rig
        .bedrock
        .requests()
        .into_iter()
        .filter(|r| r.offers_tool("use_skill"))
        .find(|r| r.system_text().contains("<results_from_prior_agents>"))
        .expect("the dependent got its input");
    assert!(
        fixes
            .system_text()
            .contains("support.lookup_receipts answered.")
    );
    let turns = rig.turns_of(&episode(&body)).await;
    let plan = turns[0]
        .routing
        .plan
        .as_ref()
        .expect("the plan is recorded");
    assert_eq!(
        plan.waves(),
        [vec!["receipts".to_owned()], vec!["fixes".to_owned()]]
    );
}

/// Long-term memory on AWS (D-43): what a user saved in one conversation is in the
/// orchestrator's prompt in the next, found through the table's postings and the S3 Vectors
/// index with Titan's vectors; the consulted record names it; and forgetting it through
/// the function leaves nothing of it in either.
#[tokio::test]
async fn a_memory_saved_through_the_function_shapes_the_next_conversation_and_is_erased() {
    let fake = FakeBedrock::with_handler(|r| answers(r, false))
        .await
        .unwrap();
    let rig = Rig::with_memory(fake).await;
    let vectors = rig.vectors.as_ref().unwrap();

    let (status, body) = rig
        .http(
            "POST",
            "/v1/memory",
            Some(&json!({"text": "I always buy Bean Street coffee for my dog walker"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let saved: Value = serde_json::from_str(&body).unwrap();
    let id = saved["memory"]["id"]
        .as_str()
        .or_else(|| saved["id"].as_str())
        .unwrap_or_else(|| panic!("no id in {body}"))
        .to_owned();
    assert_eq!(vectors.vectors("baton-memory", "memories").len(), 1);
    assert!(
        !rig.bedrock.invocations().is_empty(),
        "Titan made the vector"
    );

    let (body, _) = rig.invoke("find me coffee deals").await;
    assert!(text(&body).ends_with(SHOP_ANSWER), "{body}");
    let routing = rig
        .bedrock
        .requests()
        .into_iter()
        .find(|r| is_orchestrator(r) && !r.last_has_tool_results())
        .unwrap();
    let prompt = format!("{}{}", routing.system_text(), json!(routing.messages()));
    assert!(
        prompt.contains("Bean Street coffee for my dog walker"),
        "{prompt}"
    );
    let (_, consulted) = frames(&body)
        .into_iter()
        .find(|(n, _)| n == "agents_consulted")
        .unwrap();
    assert_eq!(consulted["memories"][0]["id"], id.as_str(), "{consulted}");

    let (status, body) = rig.http("DELETE", &format!("/v1/memory/{id}"), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(vectors.vectors("baton-memory", "memories").is_empty());
    let (status, body) = rig.http("GET", "/v1/memory/export", None).await;
    assert_eq!(status, 200);
    assert!(!body.contains("Bean Street"), "{body}");
}
