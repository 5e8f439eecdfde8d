//! A tool whose connector is missing at run time: the registry check at build refuses
//! such a runtime, so the runtime is taken apart here to reach the backstop.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_connectors::ConfiguredConnector;
use baton_core::Principal;
use baton_core::events::Event;
use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_testkit::registry::TestRegistry;
use futures::StreamExt;

use crate::{Runtime, TurnRequest};

const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_rewards, args: { query: "points", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Your balance is unavailable right now."]
  rewards:
    - { when: { after_tool_results: false }, tool_calls: [{ name: points_balance, args: {} }] }
    - { when: { after_tool_results: true }, text: ["Unavailable."] }
"#;

#[tokio::test(start_paused = true)]
async fn a_missing_connector_starts_no_call_and_the_turn_answers() {
    let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
        .model_override(Arc::new(ScriptedModel::from_yaml(SCRIPT).unwrap()))
        .store(Arc::new(HeapStore::new()))
        .connector("test", Arc::new(ConfiguredConnector))
        .build()
        .unwrap();
    let Ok(inner) = Arc::try_unwrap(runtime.inner) else {
        panic!("the runtime is not shared yet");
    };
    let inner = crate::services::Inner {
        connectors: BTreeMap::new(),
        ..inner
    };
    let request = TurnRequest {
        turn_id: Some("t1".into()),
        ..TurnRequest::new(Principal::new("alice").unwrap(), "my points")
    };
    let stream = crate::engine::start(Arc::new(inner), request, None)
        .await
        .unwrap();
    let events: Vec<_> = stream.collect().await;
    let names: Vec<&str> = events.iter().map(|e| e.event.name()).collect();
    assert!(
        !names.iter().any(|n| n.starts_with("tool_")),
        "no call was made, so none is announced: {names:?}"
    );
    assert!(matches!(
        events.last().map(|e| &e.event),
        Some(Event::Completed { .. })
    ));
}

/// Records the trace context each call carries, and answers as the configured connector.
#[derive(Debug, Default)]
struct Recording(std::sync::Mutex<Vec<Option<Arc<str>>>>);

#[async_trait::async_trait]
impl baton_core::ports::connector::Connector for Recording {
    async fn call(
        &self,
        request: baton_core::ports::connector::ConnectorRequest,
    ) -> Result<baton_core::ports::connector::Envelope, baton_core::ports::connector::ConnectorError>
    {
        self.0.lock().unwrap().push(request.traceparent.clone());
        ConfiguredConnector.call(request).await
    }
}

fn traceparent() -> Option<String> {
    Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into())
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_carries_the_trace_context_when_traces_are_exported() {
    for exported in [true, false] {
        let recording = Arc::new(Recording::default());
        let mut builder = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
            .model_override(Arc::new(ScriptedModel::from_yaml(SCRIPT).unwrap()))
            .store(Arc::new(HeapStore::new()))
            .connector("test", recording.clone());
        if exported {
            builder = builder.trace_context(traceparent);
        }
        let runtime = builder.build().unwrap();
        let stream = runtime
            .run_turn(TurnRequest::new(
                Principal::new("alice").unwrap(),
                "my points",
            ))
            .await
            .unwrap();
        let _: Vec<_> = stream.collect().await;
        let seen = recording.0.lock().unwrap().clone();
        let want: Option<Arc<str>> = exported.then(|| Arc::from(traceparent().unwrap()));
        assert_eq!(seen, vec![want], "exported: {exported}");
    }
}
