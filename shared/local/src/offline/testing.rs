//! Test helpers: a small registry and ways to read a collected stream.

use std::sync::Arc;

use baton_core::message::Message;
use baton_core::ports::model::{CallPurpose, Model, ModelEvent, ModelRequest};
use baton_core::registry::{LoadOptions, Registry, RegistrySources, SourceFile};
use futures::StreamExt;
use serde_json::Value;

const MODELS: &str = "
models:
  offline:
    provider: offline
    model_id: offline-v1
    context_window: 100000
    prices: {input: 0, output: 0}
";

const TOOLS: &str = "
tools:
  search_offers:
    description: Searches current deals and offers by keyword.
    connector: {kind: http, url: 'http://localhost/offers'}
    schema:
      type: object
      properties:
        query: {type: string}
        limit: {type: integer, minimum: 1}
      required: [query]
    result_template: '{title} for ${price} at {store.name}'
  list_categories:
    description: Lists the product categories of the shop.
    connector: {kind: http, url: 'http://localhost/categories'}
    schema: {type: object, properties: {}}
  lookup_receipt:
    description: Looks up the scan status of an uploaded receipt.
    connector: {kind: http, url: 'http://localhost/receipts'}
    schema:
      type: object
      properties: {receipt_id: {type: string}}
";

const ASSISTANT: &str = "
id: assistant
description: Routes each request to the right specialist.
role: orchestrator
model: offline
sub_agents: [support, shop, rewards]
fastpath: {allow: [greeting, acknowledgement], fallback: support}
";

const SUPPORT: &str = "
id: support
description: Helps with receipts that did not scan, missing points and account login problems.
role: native
model: offline
tools: [lookup_receipt]
ask_args:
  topic: {type: string, enum: [receipts, points, account]}
routing:
  examples:
    - my receipt didn't scan
    - I uploaded a receipt but got no points
    - I can't log into my account
  keywords: [receipt, scan, upload, login, account]
";

const SHOP: &str = "
id: shop
description: Finds deals, offers and products to buy in the shop.
role: native
model: offline
tools: [search_offers, list_categories]
routing:
  examples:
    - find me coffee deals
    - any offers on snacks?
    - discounts on groceries
  keywords: [deal, offer, discount, coupon, product]
";

const REWARDS: &str = "
id: rewards
description: Explains your points balance, rewards and how to redeem gift cards.
role: native
model: offline
routing:
  examples:
    - what's my points balance
    - how do I redeem a gift card
  keywords: [points, balance, redeem, reward, gift card]
";

fn file(path: &str, text: &str) -> SourceFile {
    SourceFile {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// The test registry: an orchestrator over support, shop and rewards. Not the test kit's
/// registry: the offline model routes by the cards' descriptions, examples and keywords and
/// fills arguments from tool schemas, so its cards are written for that.
pub(crate) fn registry() -> Arc<Registry> {
    let sources = RegistrySources {
        agents: vec![
            file("agents/assistant.yaml", ASSISTANT),
            file("agents/support.yaml", SUPPORT),
            file("agents/shop.yaml", SHOP),
            file("agents/rewards.yaml", REWARDS),
        ],
        blocks: ["persona", "format", "safety"]
            .into_iter()
            .map(|category| {
                file(
                    &format!("blocks/{category}.md"),
                    &format!(
                        "---\nowner: platform\ncategory: {category}\nrequired: true\n---\nThe platform's {category}.\n"
                    ),
                )
            })
            .collect(),
        models: Some(file("models.yaml", MODELS)),
        tools: Some(file("tools.yaml", TOOLS)),
    };
    match Registry::load(&sources, &LoadOptions::default()) {
        Ok(r) => Arc::new(r),
        Err(e) => panic!("{e}"),
    }
}

/// A request from `agent` (its registry tools, or none for an unknown id) with one user text.
pub(crate) fn request(agent: &str, purpose: CallPurpose, text: &str) -> ModelRequest {
    let registry = registry();
    let mut req = match registry.agent(agent) {
        Some(a) => a.request(purpose, Vec::new()),
        None => ModelRequest {
            agent_id: Arc::from(agent),
            model_id: Arc::from("offline-v1"),
            purpose,
            system: Vec::new(),
            messages: Vec::new(),
            tools: Arc::from(Vec::new()),
            tool_choice: Default::default(),
            inference: Default::default(),
        },
    };
    req.messages.push(Message::user(text));
    req
}

/// Every event of one call (errors fail the test).
pub(crate) async fn collect(model: &dyn Model, request: ModelRequest) -> Vec<ModelEvent> {
    model
        .stream(&request)
        .map(|e| e.expect("the offline model never fails"))
        .collect()
        .await
}

/// The concatenated answer text.
pub(crate) fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Tool calls as (id, name, parsed arguments); checks that each came in 2+ fragments.
pub(crate) fn calls_of(events: &[ModelEvent]) -> Vec<(String, String, Value)> {
    let mut out: Vec<(String, String, String, usize)> = Vec::new();
    for e in events {
        match e {
            ModelEvent::ToolUseStart { id, name } => {
                out.push((id.clone(), name.clone(), String::new(), 0))
            }
            ModelEvent::ToolUseDelta { id, fragment } => {
                let call = out
                    .iter_mut()
                    .find(|c| &c.0 == id)
                    .expect("delta before start");
                call.2.push_str(fragment);
                call.3 += 1;
            }
            _ => {}
        }
    }
    out.into_iter()
        .map(|(id, name, json, fragments)| {
            assert!(
                fragments >= 2,
                "{name} arguments in {fragments} fragment(s)"
            );
            let args = serde_json::from_str(&json).expect("arguments are JSON");
            (id, name, args)
        })
        .collect()
}

/// The arguments of the call to `name`.
pub(crate) fn args_of<'a>(calls: &'a [(String, String, Value)], name: &str) -> &'a Value {
    &calls.iter().find(|c| c.1 == name).expect("no such call").2
}
