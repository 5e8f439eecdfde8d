//! The small test registry (an orchestrator over `support` and `shop`) and the helpers
//! every area's tests use to load it, edit it and find one error.

use crate::registry::{
    LoadError, LoadErrors, LoadOptions, Orchestration, Registry, RegistrySources, SourceFile,
};

const MODELS: &str = "\
summarizer: small
models:
  small:
    provider: offline
    model_id: small-1
    context_window: 100000
    prices: {input: 1.0, output: 2.0, cache_read: 0.1, cache_write: 1.25}
    capabilities: {tool_choice: true, cache_points: true, parallel_tool_calls: true}
";

const TOOLS: &str = "\
tools:
  search_offers:
    description: Search current offers by product words.
    connector: {kind: fixture, file: fixtures/offers.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Product words.}
      required: [query]
      additionalProperties: false
    timeout_ms: 5000
    status: searching_offers
    result_template: '{title} ({reward})'
  lookup_receipts:
    description: Find the user's receipts.
    connector: {kind: fixture, file: fixtures/receipts.yaml}
    schema:
      type: object
      properties:
        query: {type: string, description: Store or problem words.}
      additionalProperties: false
    status: matching_receipt
";

const ORCHESTRATOR: &str = "\
id: orchestrator
description: Routes requests to the specialists.
role: orchestrator
model: small
prompt_blocks: [routing]
sub_agents: [support, shop]
fastpath: {allow: [greeting, acknowledgement], fallback: shop}
status_messages:
  codes:
    searching_offers: {text: Looking for offers…, policy: batch}
";

pub(super) const SHOP: &str = "\
id: shop
label: Shopping
description: Finds offers and deals by product.
role: native
model: small
tools: [search_offers]
prompt_blocks: [persona-shop, instructions-shop]
routing:
  examples: [find me coffee deals]
  keywords: [deals]
";

const SUPPORT: &str = "\
id: support
description: Fixes receipt problems and missing points.
role: native
model: small
tools: [lookup_receipts]
prompt_blocks: [persona-support]
ask_args:
  support_category: {type: string, enum: [receipt_not_scanning, missing_points]}
";

pub(super) fn block(owner: &str, category: &str, required: bool, body: &str) -> String {
    format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{body}\n")
}

pub(super) fn file(path: &str, text: &str) -> SourceFile {
    SourceFile {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// A small valid registry: an orchestrator over `support` and `shop`.
pub(super) fn sources() -> RegistrySources {
    RegistrySources {
        agents: vec![
            file("agents/orchestrator.yaml", ORCHESTRATOR),
            file("agents/shop.yaml", SHOP),
            file("agents/support.yaml", SUPPORT),
        ],
        blocks: vec![
            // Named so that alphabetical order is not the required order.
            file(
                "blocks/a-safety.md",
                &block("platform", "safety", true, "SAFETY"),
            ),
            file(
                "blocks/b-format.md",
                &block("platform", "format", true, "FORMAT"),
            ),
            file(
                "blocks/c-persona.md",
                &block("platform", "persona", true, "PERSONA"),
            ),
            file(
                "blocks/routing.md",
                &block("platform", "instructions", false, "ROUTING"),
            ),
            file(
                "blocks/persona-shop.md",
                &block("vertical", "persona", false, "SHOP PERSONA"),
            ),
            file(
                "blocks/instructions-shop.md",
                &block("vertical", "instructions", false, "SHOP RULES"),
            ),
            file(
                "blocks/persona-support.md",
                &block("vertical", "persona", false, "SUPPORT PERSONA"),
            ),
        ],
        models: Some(file("models.yaml", MODELS)),
        tools: Some(file("tools.yaml", TOOLS)),
    }
}

pub(super) fn load(sources: &RegistrySources) -> Registry {
    Registry::load(sources, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn load_errors(sources: &RegistrySources) -> Vec<LoadError> {
    match Registry::load(sources, &LoadOptions::default()) {
        Ok(_) => panic!("the registry loaded, but a problem was expected"),
        Err(LoadErrors(errors)) => errors,
    }
}

/// Replaces `from` with `to` in the file at `path`; fails if `from` is not there, so a
/// test cannot pass by editing nothing.
pub(super) fn edit(sources: &mut RegistrySources, path: &str, from: &str, to: &str) {
    let all = sources
        .agents
        .iter_mut()
        .chain(sources.blocks.iter_mut())
        .chain(sources.models.iter_mut())
        .chain(sources.tools.iter_mut());
    let target = all
        .into_iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no file {path}"));
    assert!(target.text.contains(from), "{path} has no {from:?}");
    target.text = target.text.replacen(from, to, 1);
}

/// The one error naming `file` and `field`, checked to carry `value`.
pub(super) fn expect_error(
    errors: &[LoadError],
    file: &str,
    field: &str,
    value: &str,
) -> LoadError {
    let found: Vec<&LoadError> = errors
        .iter()
        .filter(|e| e.file == file && e.field == field)
        .collect();
    match found.as_slice() {
        [one] => {
            assert_eq!(one.value, value, "{one}");
            let shown = one.to_string();
            assert!(shown.contains(file) && shown.contains(field), "{shown}");
            (*one).clone()
        }
        _ => panic!(
            "expected one error at {file} {field}, got:\n{}",
            LoadErrors(errors.to_vec())
        ),
    }
}

/// Adds `yaml` (top-level keys) to the test orchestrator card.
pub(super) fn with_orchestrator_yaml(yaml: &str) -> RegistrySources {
    let mut s = sources();
    edit(
        &mut s,
        "agents/orchestrator.yaml",
        "fastpath:",
        &format!("{yaml}\nfastpath:"),
    );
    s
}

pub(super) fn orchestration(r: &Registry) -> &Orchestration {
    r.agent("orchestrator")
        .and_then(|a| a.orchestration.as_ref())
        .unwrap()
}
