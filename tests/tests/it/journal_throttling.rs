//! The journal under DynamoDB throttling (D-38): the production client's retries
//! (`baton_aws::journal::dynamodb_config`) against DynamoDB Local behind a proxy that
//! answers chosen attempts with `ProvisionedThroughputExceededException`. Each test checks
//! a claim `docs/scale.md` makes: a throttle is retried and the turn goes on; at most four
//! attempts are made; then the user is told plainly, before any model call; the retry
//! budget stops retrying a table that refuses everything; a commit that cannot be made
//! ends the turn with a plain error and saves nothing.

use std::sync::Arc;

use aws_sdk_dynamodb::config::retry::RetryPartition;
use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::ports::store::TurnStore as _;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::{RejectionKind, Runtime, TurnRequest};
use baton_tests::dynamodb_local::{BODIES_BUCKET, DynamoDbLocal};
use baton_tests::dynamodb_proxy::{Attempt, DynamoProxy, Throttle};
use baton_tests::fixtures::{SHOP_SCRIPT, registry_at, registry_dir};
use baton_tests::s3::InProcessS3;
use futures::StreamExt;

/// What a throttled claim tells the user.
const UNAVAILABLE: &str =
    "Conversation storage is unavailable right now; please try again shortly.";

/// The journal as the functions build it, through the proxy; a retry partition of its own
/// (`partition`), so that no other test's retries spend its budget.
struct Throttled {
    proxy: DynamoProxy,
    store: Arc<DynamoStore>,
    _s3: InProcessS3,
}

impl Throttled {
    async fn start(partition: &'static str) -> Throttled {
        let dynamodb = DynamoDbLocal::connect().await;
        let table = dynamodb.fresh_table_without_ttl().await;
        let proxy = DynamoProxy::start(dynamodb.endpoint()).await;
        let sdk = dynamodb
            .sdk_config()
            .to_builder()
            .endpoint_url(proxy.endpoint_url())
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(
            baton_aws::journal::dynamodb_config(&sdk)
                .retry_partition(RetryPartition::new(partition))
                .build(),
        );
        let s3 = InProcessS3::start();
        s3.create_bucket(BODIES_BUCKET).await;
        let store = DynamoStore::new(
            client,
            aws_sdk_s3::Client::from_conf(s3.config_builder().build()),
            JournalConfig::new(&table, BODIES_BUCKET),
        );
        Throttled {
            proxy,
            store: Arc::new(store),
            _s3: s3,
        }
    }

    /// The episode's turns in the journal, read with the throttling stopped.
    async fn saved(&self, episode: &str) -> Vec<baton_core::turn::TurnRecord> {
        self.proxy.throttle(Throttle::Never);
        self.store
            .turns(&Principal::new("alice").unwrap(), episode, 10)
            .await
            .unwrap()
    }

    fn runtime(&self, script: &str) -> Runtime {
        let (registry, connectors) = registry_at(&registry_dir());
        Runtime::builder(registry)
            .model_override(Arc::new(ScriptedModel::from_yaml(script).unwrap()))
            .store(self.store.clone())
            .connectors(connectors)
            .build()
            .unwrap()
    }
}

fn request(turn_id: &str) -> TurnRequest {
    TurnRequest {
        turn_id: Some(turn_id.to_owned()),
        ..TurnRequest::new(Principal::new("alice").unwrap(), "find me coffee deals")
    }
}

/// Runs a turn to its end: the episode and the events.
async fn run(runtime: &Runtime, request: TurnRequest) -> (String, Vec<Event>) {
    let mut stream = runtime.run_turn(request).await.unwrap();
    let mut events = Vec::new();
    while let Some(wire) = stream.next().await {
        events.push(wire.event);
    }
    (stream.episode_id.clone(), events)
}

fn errors(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Error { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn max_attempt(attempts: &[Attempt]) -> u32 {
    attempts.iter().map(|a| a.attempt).max().unwrap_or(0)
}

#[tokio::test]
async fn a_throttled_request_is_retried_and_the_turn_goes_on() {
    let t = Throttled::start("throttling-retried").await;
    let runtime = t.runtime(SHOP_SCRIPT);
    // Each request's first attempt is refused, then each of its first three.
    for (plan, turn) in [(1, "t-once"), (3, "t-thrice")] {
        t.proxy.throttle(Throttle::FirstAttempts(plan));
        let from = t.proxy.attempts().len();
        let (episode, events) = run(&runtime, request(turn)).await;
        assert_eq!(errors(&events), Vec::<String>::new(), "plan {plan}");
        assert!(
            matches!(events.last(), Some(Event::Completed { .. })),
            "plan {plan}: {events:?}"
        );
        let sent = t.proxy.attempts_since(from);
        // Every request got through at attempt plan + 1, after `plan` throttles.
        assert_eq!(max_attempt(&sent), plan + 1, "{sent:?}");
        let through: Vec<&Attempt> = sent.iter().filter(|a| !a.throttled).collect();
        assert!(through.iter().all(|a| a.attempt == plan + 1), "{sent:?}");
        assert_eq!(sent.len(), through.len() * (plan as usize + 1), "{sent:?}");

        let turns = t.saved(&episode).await;
        assert_eq!(turns.len(), 1, "plan {plan}");
        assert_eq!(turns[0].turn_id, turn);
    }
}

#[tokio::test]
async fn four_refusals_refuse_the_turn_plainly_before_any_model_call() {
    let t = Throttled::start("throttling-refused").await;
    let model_called = "agents:\n  orchestrator:\n    - text: [\"a model was called\"]\n";
    let runtime = t.runtime(model_called);
    t.proxy.throttle(Throttle::FirstAttempts(4));
    let refused = match runtime.run_turn(request("t-refused")).await {
        Err(rejection) => rejection,
        Ok(_) => panic!("a turn whose claim was refused four times started"),
    };
    assert_eq!(refused.kind, RejectionKind::Unavailable);
    assert_eq!(refused.message, UNAVAILABLE);
    let sent = t.proxy.attempts();
    assert_eq!(
        sent.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2, 3, 4],
        "one request, four attempts: {sent:?}"
    );
    assert!(sent.iter().all(|a| a.throttled));

    // Nothing was claimed: once the table has room, the same turn id runs.
    t.proxy.throttle(Throttle::Never);
    let (_, events) = run(&runtime, request("t-refused")).await;
    assert!(matches!(events.last(), Some(Event::Completed { .. })));
}

#[tokio::test]
async fn the_retry_budget_stops_retrying_a_table_that_refuses_everything() {
    let t = Throttled::start("throttling-budget").await;
    let runtime = t.runtime(SHOP_SCRIPT);
    t.proxy.throttle(Throttle::Always);
    const TURNS: usize = 80;
    let turns = (0..TURNS).map(|i| {
        let runtime = &runtime;
        async move { runtime.run_turn(request(&format!("t-{i}"))).await.err() }
    });
    let refusals = futures::future::join_all(turns).await;
    assert!(
        refusals
            .iter()
            .all(|r| r.as_ref().is_some_and(|r| r.message == UNAVAILABLE)),
        "every turn is refused plainly"
    );
    let sent = t.proxy.attempts();
    let first = sent.iter().filter(|a| a.attempt == 1).count();
    assert_eq!(first, TURNS, "one claim request a turn: {sent:?}");
    // Without a budget each would make four attempts; with it, retries stop once it is
    // spent (a retried throttle takes 5 of 500 tokens, lost when it is retried again).
    let retries = sent.len() - first;
    assert!(
        retries < TURNS * 3 / 2,
        "{retries} retries for {TURNS} refused requests"
    );
    assert!(retries > 0, "throttles are retried while the budget lasts");
}

#[tokio::test]
async fn a_commit_the_table_refuses_ends_the_turn_with_a_plain_error_and_saves_nothing() {
    let t = Throttled::start("throttling-commit").await;
    // The composition waits, so that the table can start refusing after the claim.
    let slow = SHOP_SCRIPT.replace(
        "- when: { purpose: compose }",
        "- when: { purpose: compose }\n      delay_ms: 300",
    );
    let runtime = t.runtime(&slow);
    let mut stream = runtime.run_turn(request("t-unsaved")).await.unwrap();
    // The stream exists once the claim is made.
    let episode_id = stream.episode_id.clone();
    t.proxy.throttle(Throttle::Always);
    let mut events = Vec::new();
    while let Some(wire) = stream.next().await {
        events.push(wire.event);
    }
    assert_eq!(
        errors(&events),
        [
            "I couldn't save this turn of the conversation, so it is not in its history; please send it again."
        ]
    );
    let saved = t.saved(&episode_id).await;
    assert_eq!(saved.len(), 0, "nothing of the turn was saved");
    // The release was refused too, so the claim holds the episode until its lease ends:
    // the same turn is told it is still running.
    let again = match runtime
        .run_turn(TurnRequest {
            episode_id: Some(episode_id),
            ..request("t-unsaved")
        })
        .await
    {
        Err(rejection) => rejection,
        Ok(_) => panic!("the claim still holds"),
    };
    assert_eq!(again.kind, RejectionKind::InFlight);
}
