//! `GET /v1/agents`: who the caller is talking to, which specialists it can reach, and how
//! to address one directly (the Direct Line settings a client needs to write `#<id> …`),
//! and the endpoints the server offers.

use axum::Json;
use axum::extract::State;

use crate::caller::Caller;
use crate::catalog::{Catalog, catalog};
use crate::faces;
use crate::state::AppState;

/// The list is the same for every caller, but it is still asked with a principal: the
/// service answers no one it does not know (D-30).
pub(crate) async fn get_agents(State(state): State<AppState>, _caller: Caller) -> Json<Catalog> {
    Json(Catalog {
        endpoints: faces::endpoints(&state),
        ..catalog(state.runtime.registry(), state.runtime.entry())
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::principal::LocalPrincipal;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use baton_connectors::ConfiguredConnector;
    use baton_core::Principal;
    use baton_core::registry::Registry;
    use baton_inproc::HeapStore;
    use baton_inproc::scripted::ScriptedModel;
    use baton_runtime::Runtime;
    use baton_testkit::registry::TestRegistry;
    use serde_json::json;
    use tower::ServiceExt;

    /// The test kit's registry, its orchestrator labelled "Helper" and carrying `extra`.
    fn registry(extra: &str) -> Registry {
        TestRegistry {
            orchestrator_extra: format!("label: Helper\n{extra}"),
            ..TestRegistry::default()
        }
        .load()
        .unwrap()
    }

    /// App state over the test registry, with `default` as the principal when the request
    /// names none.
    pub(crate) fn state(default: Option<&str>) -> AppState {
        let model = ScriptedModel::from_yaml("agents: {}").unwrap();
        let runtime = Runtime::builder(Arc::new(registry("")))
            .model_override(Arc::new(model))
            .store(Arc::new(HeapStore::new()))
            .connector("test", Arc::new(ConfiguredConnector))
            .build()
            .unwrap();
        let default = default.map(|p| Principal::new(p).unwrap());
        AppState::new(runtime, Arc::new(LocalPrincipal::new(default)))
    }

    /// `GET path` through the whole app: status and body.
    pub(crate) async fn get(state: AppState, path: &str) -> (StatusCode, String) {
        let response = crate::app(state)
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_route_answers_the_entrys_catalog_as_json() {
        let (status, body) = get(state(Some("alice")), "/v1/agents").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            value["assistant"],
            json!({ "id": "orchestrator", "label": "Helper" })
        );
        let ids: Vec<&str> = value["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["shop", "support", "rewards"]);
    }

    #[tokio::test]
    async fn the_route_needs_a_principal_like_every_other() {
        let (status, body) = get(state(None), "/v1/agents").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }

    fn catalog_json(orchestrator_extra: &str) -> serde_json::Value {
        let registry = registry(orchestrator_extra);
        let entry = registry.agent("orchestrator").unwrap();
        serde_json::to_value(catalog(&registry, entry)).unwrap()
    }

    #[test]
    fn the_catalog_lists_the_assistant_and_its_specialists_in_declared_order() {
        assert_eq!(
            catalog_json(""),
            json!({
                "assistant": { "id": "orchestrator", "label": "Helper" },
                "direct_line": {
                    "enabled": true, "prefix": "#", "exit": "end", "sticky": true, "mode": "strict"
                },
                "agents": [
                    { "id": "shop", "label": "Shop", "description": "Offers, deals and product search." },
                    { "id": "support", "label": "Support", "description": "Receipt problems and missing points." },
                    { "id": "rewards", "label": "Rewards", "description": "Points balance and redemptions." }
                ]
            })
        );
    }

    #[test]
    fn the_direct_line_settings_are_the_cards() {
        let value = catalog_json("direct_line: {prefix: '!', mode: additive, sticky: false}\n");
        assert_eq!(
            value["direct_line"],
            json!({
                "enabled": true, "prefix": "!", "exit": "end", "sticky": false, "mode": "additive"
            })
        );
        let off = catalog_json("direct_line: {enabled: false}\n");
        assert_eq!(off["direct_line"]["enabled"], json!(false));
    }

    #[test]
    fn a_specialist_on_its_own_has_no_direct_line() {
        let registry = registry("");
        let shop = registry.agent("shop").unwrap();
        let value = serde_json::to_value(catalog(&registry, shop)).unwrap();
        assert_eq!(value["assistant"]["id"], "shop");
        assert_eq!(value["agents"], json!([]));
        assert_eq!(value["direct_line"]["enabled"], json!(false));
    }
}
