//! A whole turn over a model that answers each call with any sequence of events: text,
//! reasoning, tool calls started, fed and stopped in any order under any ids, arguments
//! cut anywhere or broken, stop reasons, usage, and failures. The engine assembles the
//! calls, runs the specialists and their tools, and composes. Time is paused, so retries
//! and deadlines pass at once.
//!
//! What must hold: no panic; the stream ends with `completed` and nothing after it; each
//! consulted specialist made exactly the tool calls the stream showed for it, and none
//! that is not consulted showed any.

// `expect` only on what the harness builds from fixed values (runtimes, servers, requests)
// and on its own locks: a failure there is a broken harness, not a finding.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use arbitrary::Arbitrary;
use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::model::{ModelError, ModelEvent, StopReason, TokenUsage};
use baton_core::ports::model::{Model, ModelRequest, ModelStream};
use baton_core::registry::Registry;
use baton_inproc::HeapStore;
use baton_runtime::{Runtime, TurnRequest};
use baton_testkit::registry::TestRegistry;
use futures::StreamExt as _;

use crate::common;

#[derive(Debug, Arbitrary)]
enum Name {
    AskShop,
    AskSupport,
    AskRewards,
    SearchOffers,
    LookupReceipt,
    PointsBalance,
    Other(String),
}

impl Name {
    fn text(&self) -> String {
        match self {
            Name::AskShop => "ask_shop".into(),
            Name::AskSupport => "ask_support".into(),
            Name::AskRewards => "ask_rewards".into(),
            Name::SearchOffers => "search_offers".into(),
            Name::LookupReceipt => "lookup_receipt".into(),
            Name::PointsBalance => "points_balance".into(),
            Name::Other(s) => s.clone(),
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Fragment {
    /// Arguments every tool here accepts, whole.
    Valid,
    /// The first or second half of them.
    Half(bool),
    Raw(String),
}

const VALID: &str = r#"{"query": "coffee deals", "intent_count": 1}"#;

#[derive(Debug, Arbitrary)]
enum Ev {
    Text(String),
    Reasoning(String),
    Start { id: u8, name: Name },
    Delta { id: u8, fragment: Fragment },
    Stop { id: u8 },
    End(u8),
    Usage(u16, u16),
    Fail(u8),
}

fn event(ev: &Ev) -> Result<ModelEvent, ModelError> {
    let id = |n: &u8| format!("c{}", n % 4);
    Ok(match ev {
        Ev::Text(t) => ModelEvent::TextDelta(t.clone()),
        Ev::Reasoning(t) => ModelEvent::ReasoningDelta(t.clone()),
        Ev::Start { id: n, name } => ModelEvent::ToolUseStart {
            id: id(n),
            name: name.text(),
        },
        Ev::Delta { id: n, fragment } => ModelEvent::ToolUseDelta {
            id: id(n),
            fragment: match fragment {
                Fragment::Valid => VALID.to_owned(),
                Fragment::Half(false) => VALID[..20].to_owned(),
                Fragment::Half(true) => VALID[20..].to_owned(),
                Fragment::Raw(s) => s.clone(),
            },
        },
        Ev::Stop { id: n } => ModelEvent::ToolUseStop { id: id(n) },
        Ev::End(n) => ModelEvent::Stop(match n % 4 {
            0 => StopReason::EndTurn,
            1 => StopReason::ToolUse,
            2 => StopReason::MaxTokens,
            _ => StopReason::Other,
        }),
        Ev::Usage(i, o) => ModelEvent::Usage(TokenUsage {
            input: u64::from(*i),
            output: u64::from(*o),
            cache_read: 0,
            cache_write: 0,
        }),
        Ev::Fail(n) => {
            return Err(match n % 5 {
                0 => ModelError::Throttled,
                1 => ModelError::Unavailable("down".into()),
                2 => ModelError::Invalid("refused".into()),
                3 => ModelError::Timeout,
                _ => ModelError::Malformed("garbage".into()),
            });
        }
    })
}

#[derive(Debug, Arbitrary)]
struct Input {
    message: String,
    /// One answer per model call, in the order the calls are made.
    answers: Vec<Vec<Ev>>,
}

/// Answers each call with the next scripted answer; once they run out, a plain reply.
#[derive(Default)]
struct Scripted(Mutex<VecDeque<Vec<Result<ModelEvent, ModelError>>>>);

impl Model for Scripted {
    fn stream(&self, _request: &ModelRequest) -> ModelStream {
        let next = self.0.lock().expect("not poisoned").pop_front();
        let events = next.unwrap_or_else(|| {
            vec![
                Ok(ModelEvent::TextDelta("Done.".into())),
                Ok(ModelEvent::Stop(StopReason::EndTurn)),
            ]
        });
        futures::stream::iter(events).boxed()
    }
}

struct Fixed {
    runtime: tokio::runtime::Runtime,
    registry: Arc<Registry>,
    model: Arc<Scripted>,
}

fn fixed() -> &'static Fixed {
    static FIXED: OnceLock<Fixed> = OnceLock::new();
    FIXED.get_or_init(|| Fixed {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime"),
        registry: Arc::new(TestRegistry::default().load().expect("the test registry")),
        model: Arc::new(Scripted::default()),
    })
}

/// One input: the message and the model's answers.
pub fn run(data: &[u8]) {
    let Some(input) = common::input::<Input>(data) else {
        return;
    };
    let fixed = fixed();
    *fixed.model.0.lock().expect("not poisoned") = input
        .answers
        .iter()
        .map(|answer| answer.iter().map(event).collect())
        .collect();
    let events = fixed.runtime.block_on(async {
        let runtime = Runtime::builder(fixed.registry.clone())
            .model_override(fixed.model.clone())
            .store(Arc::new(HeapStore::new()))
            .connector("test", Arc::new(ConfiguredConnector))
            .build()
            .expect("the runtime");
        let alice = Principal::new("alice").expect("a principal");
        match runtime
            .run_turn(TurnRequest::new(alice, input.message))
            .await
        {
            Ok(stream) => stream.map(|e| e.event).collect::<Vec<Event>>().await,
            // A message the turn refuses (empty, too long) is a plain refusal.
            Err(_) => Vec::new(),
        }
    });
    common::show(&events);
    if events.is_empty() {
        return;
    }
    let ends = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(ends, 1, "one end: {events:#?}");
    assert!(events.last().is_some_and(Event::is_terminal), "{events:#?}");
    let mut shown: BTreeMap<&str, u32> = BTreeMap::new();
    for e in &events {
        if let Event::ToolCallStart { agent, .. } = e {
            *shown.entry(agent.as_str()).or_default() += 1;
        }
    }
    // A specialist asked twice in a turn has an entry for each time.
    let mut consulted: BTreeMap<&str, u32> = BTreeMap::new();
    for e in &events {
        if let Event::AgentsConsulted { agents, .. } = e {
            for a in agents {
                *consulted.entry(a.agent_id.as_str()).or_default() += a.tool_calls;
            }
        }
    }
    for (agent, calls) in &shown {
        assert_eq!(consulted.get(agent), Some(calls), "{agent}: {events:#?}");
    }
    for (agent, calls) in &consulted {
        assert_eq!(
            shown.get(agent).copied().unwrap_or(0),
            *calls,
            "{agent}: {events:#?}"
        );
    }
}
