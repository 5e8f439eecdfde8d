//! Init: which registries and models the function accepts.

use std::sync::Arc;

use baton_inproc::HeapStore;
use baton_inproc::scripted::ScriptedModel;
use baton_runtime::registry_folder::{DeployError, DeployedRegistryError};
use baton_turn::{Adapters, InitError, LambdaPrincipal, ModelServing};

use baton_tests::fixtures::copy_dir;

use crate::support::*;

fn bedrock_stand_in() -> Adapters {
    Adapters {
        model: ModelServing::Bedrock(Arc::new(ScriptedModel::from_yaml(SHOP_SCRIPT).unwrap())),
        store: Arc::new(HeapStore::new()),
        principals: Arc::new(LambdaPrincipal),
        memory: None,
    }
}

#[tokio::test]
async fn the_shipped_registry_is_served_by_bedrock_alone() {
    // models.yaml also lists the local `offline` model; no card uses it, so it is fine.
    assert!(
        baton_turn::assemble(&config(&[]), bedrock_stand_in())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_card_on_the_offline_model_fails_init_by_name() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&registry_dir(), dir.path());
    let card = dir.path().join("agents/shop.yaml");
    let text = std::fs::read_to_string(&card).unwrap();
    std::fs::write(&card, text.replace("model: claude-haiku", "model: offline")).unwrap();
    let registry = dir.path().display().to_string();
    let config = config(&[("BATON_REGISTRY", registry.as_str())]);

    let Err(error) = baton_turn::assemble(&config, bedrock_stand_in()).await else {
        panic!("a card on the offline model must fail Init");
    };
    assert!(matches!(error, InitError::ModelNotServed(_)));
    let text = error.to_string();
    assert!(
        text.contains("shop (model offline, provider offline)"),
        "{text}"
    );

    // With a model override (tests, benchmarks) every card is served.
    let overridden = Adapters {
        model: ModelServing::Override(Arc::new(ScriptedModel::from_yaml(SHOP_SCRIPT).unwrap())),
        ..bedrock_stand_in()
    };
    assert!(baton_turn::assemble(&config, overridden).await.is_ok());
}

#[tokio::test]
async fn a_missing_registry_names_the_folder_and_the_setting() {
    let config = config(&[("BATON_REGISTRY", "/nonexistent/registry")]);
    let Err(error) = baton_turn::assemble(&config, bedrock_stand_in()).await else {
        panic!("no registry must fail Init");
    };
    let text = error.to_string();
    assert!(
        text.contains("/nonexistent/registry") && text.contains("BATON_REGISTRY"),
        "{text}"
    );
}

#[tokio::test]
async fn an_invalid_registry_lists_its_problems() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&registry_dir(), dir.path());
    let card = dir.path().join("agents/shop.yaml");
    let text = std::fs::read_to_string(&card).unwrap();
    std::fs::write(
        &card,
        text.replace("model: claude-haiku", "model: no-such-model"),
    )
    .unwrap();
    let registry = dir.path().display().to_string();
    let Err(error) = baton_turn::assemble(
        &config(&[("BATON_REGISTRY", registry.as_str())]),
        bedrock_stand_in(),
    )
    .await
    else {
        panic!("an unknown model must fail Init");
    };
    assert!(matches!(
        error,
        InitError::Deploy(DeployError::Registry(DeployedRegistryError::Invalid { .. }))
    ));
    assert!(error.to_string().contains("no-such-model"), "{error}");
}

#[tokio::test]
async fn deployed_model_ids_replace_those_of_models_yaml() {
    let ids =
        "claude-haiku=eu.anthropic.claude-haiku-test-v1:0,nova-micro=eu.amazon.nova-micro-v1:0";
    let config = config(&[("BATON_MODEL_IDS", ids)]);
    let function = baton_turn::assemble(&config, bedrock_stand_in())
        .await
        .unwrap();
    let registry = function.runtime.registry();
    let haiku = registry.model("claude-haiku").unwrap();
    assert_eq!(&*haiku.model_id, "eu.anthropic.claude-haiku-test-v1:0");
    // Cards see the same spec, prices and capabilities unchanged.
    let orchestrator = registry.agent("orchestrator").unwrap();
    assert_eq!(
        &*orchestrator.model.model_id,
        "eu.anthropic.claude-haiku-test-v1:0"
    );
    assert!(orchestrator.model.capabilities.cache_points);
    assert_eq!(orchestrator.model.prices.input, 1.0);
    let sonnet = registry.model("claude-sonnet").unwrap();
    assert_eq!(
        &*sonnet.model_id,
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    );
}

#[tokio::test]
async fn a_deployed_model_id_for_an_unknown_model_fails_init_by_name() {
    let config = config(&[("BATON_MODEL_IDS", "claude-opus=us.anthropic.opus-v1:0")]);
    let Err(error) = baton_turn::assemble(&config, bedrock_stand_in()).await else {
        panic!("an unknown model key must fail Init");
    };
    assert!(matches!(
        error,
        InitError::Deploy(DeployError::Registry(
            DeployedRegistryError::UnknownModelKey(_)
        ))
    ));
    let text = error.to_string();
    assert!(
        text.contains("BATON_MODEL_IDS") && text.contains("claude-opus"),
        "{text}"
    );
}
