//! A whole turn through the engine over the fake.

use super::*;
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::obligation::ObligationSource;
use baton_core::ports::store::TurnStore as _;
use baton_core::registry::{LoadOptions, Registry, RegistrySources, SourceFile};
use baton_core::trace::{ObligationMet, ObligationRecord};
use baton_core::turn::{TurnOutcome, TurnRecord};
use baton_inproc::HeapStore;
use baton_runtime::{Runtime, TurnRequest};
use baton_tests::fake_bedrock::{SystemPart, WireToolChoice};

const ENGINE_MODEL: &str = "fake.claude-v1";

/// Not the test kit's registry: its model is served by the Bedrock adapter (a `bedrock`
/// provider with the reasoning capability under test), and its blocks mark the shop's
/// requests so the fake can tell them apart.
fn registry() -> Registry {
    registry_with(false)
}

/// [`registry`], its model seeing pictures and `support` taking them when `pictures`
/// (D-42).
pub(super) fn registry_with(pictures: bool) -> Registry {
    let file = |path: &str, text: &str| SourceFile {
        path: path.into(),
        text: text.into(),
    };
    let block = |owner: &str, category: &str, required: bool, text: &str| {
        format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{text}\n")
    };
    let models = format!(
        "models:\n  m1:\n    provider: bedrock\n    model_id: {ENGINE_MODEL}\n    context_window: 100000\n    \
         prices: {{ input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25 }}\n    \
         capabilities: {{ tool_choice: true, cache_points: true, parallel_tool_calls: true, \
         reasoning_effort: thinking, pictures: {pictures} }}\n"
    );
    let support_takes = if pictures {
        "takes_pictures: true\n"
    } else {
        ""
    };
    let sources = RegistrySources {
        agents: vec![
            file(
                "agents/orchestrator.yaml",
                "id: orchestrator\ndescription: Routes each request to the right specialist.\n\
                 role: orchestrator\nmodel: m1\nprompt_blocks: [routing]\nsub_agents: [shop, support]\n\
                 composition: mediated\n\
                 obligations: [{ agent: support, keywords: [refund] }]\n",
            ),
            file(
                "agents/support.yaml",
                &format!(
                    "id: support\ndescription: Refunds and receipt problems.\nrole: native\n\
                     model: m1\nprompt_blocks: [support-instructions]\n{support_takes}"
                ),
            ),
            file(
                "agents/shop.yaml",
                "id: shop\ndescription: Offers, deals and product search.\nrole: native\n\
                 model: m1\nprompt_blocks: [shop-instructions]\n\
                 tuning: { max_output_tokens: 300, reasoning_effort: high }\n",
            ),
        ],
        blocks: vec![
            file(
                "blocks/persona.md",
                &block("platform", "persona", true, "You are a helpful assistant."),
            ),
            file(
                "blocks/format.md",
                &block("platform", "format", true, "Answer briefly."),
            ),
            file(
                "blocks/safety.md",
                &block("platform", "safety", true, "Never guess."),
            ),
            file(
                "blocks/routing.md",
                &block("platform", "instructions", false, "Route each request."),
            ),
            file(
                "blocks/shop-instructions.md",
                &block("vertical", "instructions", false, "SHOP: find offers."),
            ),
            file(
                "blocks/support-instructions.md",
                &block("vertical", "instructions", false, "SUPPORT: fix refunds."),
            ),
        ],
        models: Some(file("models.yaml", &models)),
        tools: Some(file("tools.yaml", "tools: {}\n")),
    };
    Registry::load(&sources, &LoadOptions::default()).unwrap()
}

/// One turn of `text` through the engine over the fake, with an in-memory journal: its
/// events.
async fn turn_over(fake: &FakeBedrock, text: &str) -> Vec<Event> {
    turn_and_record(fake, text).await.0
}

/// One turn of `text` through the engine over the fake: its events and the turn's record
/// in the journal.
async fn turn_and_record(fake: &FakeBedrock, text: &str) -> (Vec<Event>, TurnRecord) {
    let alice = Principal::new("alice").unwrap();
    let request = TurnRequest {
        turn_id: Some("t1".into()),
        locale: Some("en-US".into()),
        ..TurnRequest::new(alice, text)
    };
    run_over(fake, registry(), request).await
}

/// Runs `request` (alice's) through the engine over `registry` and the fake, with an
/// in-memory journal: its events and the turn's record.
pub(super) async fn run_over(
    fake: &FakeBedrock,
    registry: Registry,
    request: TurnRequest,
) -> (Vec<Event>, TurnRecord) {
    let registry = Arc::new(registry);
    let model = fake.bedrock_model(registry.models()).await;
    let store = Arc::new(HeapStore::new());
    let runtime = Runtime::builder(registry)
        .provider("bedrock", Arc::new(model))
        .store(store.clone())
        .build()
        .unwrap();
    let alice = Principal::new("alice").unwrap();
    let stream = runtime.run_turn(request).await.unwrap();
    let events: Vec<Event> = stream.map(|e| e.event).collect().await;
    let episode = events
        .iter()
        .find_map(|e| match e {
            Event::ResponseId { episode_id, .. } => Some(episode_id.clone()),
            _ => None,
        })
        .unwrap();
    let record = store
        .turns(&alice, &episode, 1)
        .await
        .unwrap()
        .pop()
        .unwrap();
    (events, record)
}

#[tokio::test]
async fn an_engine_turn_answers_after_a_throttled_first_call() {
    let fake = FakeBedrock::with_handler(|req| {
        if req.system_text().contains("SHOP:") {
            Reply::text("Roast coffee earns 500 points.")
        } else if req.last_has_tool_results() {
            Reply::text("Good news: roast coffee earns 500 points.")
        } else {
            Reply::tool_use(
                "route_1",
                "ask_shop",
                json!({"query": "coffee deals", "intent_count": 1}),
            )
        }
    })
    .await
    .unwrap();
    fake.push(Reply::throttled());
    let events = turn_over(&fake, "any coffee deals?").await;
    let answer: String = events
        .iter()
        .filter_map(|e| match e {
            Event::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(answer.contains("Good news"), "answer: {answer:?}");
    assert!(!events.iter().any(|e| matches!(e, Event::Error { .. })));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Completed {
            outcome: TurnOutcome::Answered,
            ..
        }
    )));
    // The throttled call, its retry (routing), the shop's call, the composition.
    let requests = fake.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry resends the same request"
    );
    assert!(requests.iter().all(|r| r.model_id == ENGINE_MODEL));
    // The shop's card asks for high reasoning effort: its call thinks; the orchestrator's
    // card asks for none.
    let shop = requests
        .iter()
        .find(|r| r.system_text().contains("SHOP:"))
        .unwrap();
    assert_eq!(
        shop.body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 16384}})
    );
    assert_eq!(shop.max_tokens(), Some(300 + 16384));
    assert!(
        requests
            .iter()
            .filter(|r| !r.system_text().contains("SHOP:"))
            .all(|r| r.body.get("additionalModelRequestFields").is_none())
    );
    // The orchestrator's system prompt carries its cache point (capable model).
    assert!(requests[1].system().contains(&SystemPart::CachePoint));
}

#[tokio::test]
async fn an_obligation_forces_the_tool_choice_on_the_wire() {
    let fake = FakeBedrock::with_handler(|req| {
        if req.system_text().contains("SHOP:") {
            Reply::text("Roast coffee earns 500 points.")
        } else if req.system_text().contains("SUPPORT:") {
            Reply::text("Refunds take five days.")
        } else if req.last_has_tool_results() {
            Reply::text("Here you go.")
        } else if req.tool_choice() == Some(WireToolChoice::Tool("ask_support".into())) {
            Reply::tool_use(
                "remind_1",
                "ask_support",
                json!({"query": "refund", "intent_count": 2}),
            )
        } else {
            // The orchestrator leaves support out on its own.
            Reply::tool_use(
                "route_1",
                "ask_shop",
                json!({"query": "coffee deals", "intent_count": 1}),
            )
        }
    })
    .await
    .unwrap();
    let (events, record) = turn_and_record(&fake, "coffee deals, and where is my refund?").await;
    let consulted: Vec<String> = events
        .iter()
        .find_map(|e| match e {
            Event::AgentsConsulted { agents, .. } => {
                Some(agents.iter().map(|a| a.agent_id.clone()).collect())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(consulted, ["shop", "support"]);
    let forced: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.tool_choice() == Some(WireToolChoice::Tool("ask_support".into())))
        .collect();
    assert_eq!(forced.len(), 1, "one reminder was enough");
    assert!(forced[0].system_text().contains("must consult"));
    assert_eq!(
        record.routing.obligations,
        [ObligationRecord {
            agent_id: "support".into(),
            source: ObligationSource::Card,
            met: ObligationMet::AfterReminder,
            reminders: 1,
        }]
    );
}
