//! The reference turn (`bench/WORKLOAD.md` of the project's benchmark brief): two
//! specialists, `shopping` (tool `search_offers`) and `support` (tool
//! `lookup_support_article`), under one orchestrator, written as a real registry folder
//! and a scripted-model file so that the in-process runs and `baton serve` run the same
//! thing.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

/// The composition policy that sends the client what the reference sends: the
/// specialists' answers streamed through the live slot, then the composed answer.
pub(crate) const FAITHFUL: &str = "direct_then_compose";

/// Preamble chunks of the orchestrator's first call.
pub(crate) const PREAMBLE_CHUNKS: usize = 5;
/// Answer chunks of each specialist and of the composition.
pub(crate) const ANSWER_CHUNKS: usize = 20;

pub(crate) const SINGLE_PROMPT: &str = "Find me running shoes under 100";
pub(crate) const SUPPORT_PROMPT: &str = "I need support with a refund";
/// The single request addressed to the shopping specialist on the Direct Line: the
/// runtime asks it directly, with no orchestrator call (strict mode).
pub(crate) const DIRECT_PROMPT: &str = "#shopping Find me running shoes under 100";
pub(crate) const MIXED_PROMPT: &str =
    "[mixed] Find me running shoes under 100 and I want a refund for order 1234";

/// Milliseconds slept once per model call, before its first event.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Latencies {
    pub(crate) orchestrator: u64,
    pub(crate) shopping: u64,
    pub(crate) support: u64,
}

impl Latencies {
    /// The reference's fixed latencies.
    pub(crate) const FIXED: Latencies = Latencies {
        orchestrator: 50,
        shopping: 100,
        support: 300,
    };
}

fn chunks(prefix: &str, n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("\"{prefix}{i} \"")).collect();
    format!("[{}]", items.join(", "))
}

/// The scripted model's answers for the reference turn.
pub(crate) fn script(lat: Latencies) -> String {
    let mut s = String::from("agents:\n  orchestrator:\n");
    let pre = chunks("pre", PREAMBLE_CHUNKS);
    let o = lat.orchestrator;
    let _ = write!(
        s,
        r#"    - when: {{ purpose: route, user_contains: "[mixed]" }}
      delay_ms: {o}
      text: {pre}
      tool_calls:
        - {{ name: ask_shopping, args: {{ query: "find running shoes under 100", intent_count: 2 }} }}
        - {{ name: ask_support, args: {{ query: "refund for order 1234", support_category: refund, support_summary: "customer wants a refund", intent_count: 2 }} }}
    - when: {{ purpose: route, user_contains: "refund" }}
      delay_ms: {o}
      text: {pre}
      tool_calls:
        - {{ name: ask_support, args: {{ query: "refund for order 1234", support_category: refund, intent_count: 1 }} }}
    - when: {{ purpose: route }}
      delay_ms: {o}
      text: {pre}
      tool_calls:
        - {{ name: ask_shopping, args: {{ query: "find running shoes under 100", intent_count: 1 }} }}
    - when: {{ purpose: compose }}
      delay_ms: {o}
      text: {final_}
"#,
        final_ = chunks("final", ANSWER_CHUNKS)
    );
    for (agent, tool, latency) in [
        ("shopping", "search_offers", lat.shopping),
        ("support", "lookup_support_article", lat.support),
    ] {
        let _ = write!(
            s,
            r#"  {agent}:
    - when: {{ after_tool_results: false }}
      delay_ms: {latency}
      tool_calls: [{{ name: {tool}, args: {{ query: "the request" }} }}]
    - when: {{ after_tool_results: true }}
      delay_ms: {latency}
      text: {answer}
"#,
            answer = chunks(agent, ANSWER_CHUNKS)
        );
    }
    s
}

/// The reference turn's script, except that the composed answer is `pieces` pieces of
/// about 1 KB: a large answer, for readers that do not read it.
pub(crate) fn big_answer_script(pieces: usize) -> String {
    let piece = format!("\"{} \"", "lorem ipsum dolor sit amet ".repeat(37));
    let big = format!("[{}]", vec![piece; pieces].join(", "));
    script(Latencies::default()).replace(&chunks("final", ANSWER_CHUNKS), &big)
}

const MODELS: &str = r#"models:
  bench:
    provider: scripted
    model_id: bench-scripted
    context_window: 200000
    prices: { input: 0.8, output: 4.0, cache_read: 0.08, cache_write: 1.0 }
    capabilities: { tool_choice: true, cache_points: true, parallel_tool_calls: true }
"#;

const TOOLS: &str = r#"tools:
  search_offers:
    description: Search offers for a product query.
    connector: { kind: fixture, file: fixtures/offers.yaml }
    schema: { type: object, properties: { query: { type: string } }, required: [query], additionalProperties: false }
    status: searching_offers
  lookup_support_article:
    description: Find the help article for a support question.
    connector: { kind: fixture, file: fixtures/article.yaml }
    schema: { type: object, properties: { query: { type: string } }, required: [query], additionalProperties: false }
    status: looking_up_article
"#;

const OFFERS: &str = r#"# DEMO DATA for the benchmark turn.
demo: true
envelope: { domain_type: offers, enricher_id: bench-offers, version: 1.0.0 }
payload:
  offers:
    - { sku: RS-100, name: Trail runner, price: 89.0 }
    - { sku: RS-200, name: Road runner, price: 95.0 }
"#;

const ARTICLE: &str = r#"# DEMO DATA for the benchmark turn.
demo: true
envelope: { domain_type: article, enricher_id: bench-articles, version: 1.0.0 }
payload:
  article: { id: KB-7, title: Refund policy, days: 30 }
"#;

fn orchestrator(composition: &str) -> String {
    format!(
        r#"id: orchestrator
description: Routes each request to the shopping or support specialist.
role: orchestrator
model: bench
prompt_blocks: [routing]
sub_agents: [shopping, support]
composition: {composition}
fanout_cap: 3
status_messages:
  codes:
    searching_offers: {{ text: "Looking for offers…", policy: batch }}
    looking_up_article: {{ text: "Checking the help center…", policy: batch }}
"#
    )
}

const SHOPPING: &str = r#"id: shopping
description: Product search, deals, recommendations and price comparisons.
role: native
model: bench
tools: [search_offers]
prompt_blocks: [shopping]
"#;

const SUPPORT: &str = r#"id: support
description: Customer support questions, refunds and order problems.
role: native
model: bench
tools: [lookup_support_article]
prompt_blocks: [support]
ask_args:
  support_category: { type: string }
  support_summary: { type: string }
"#;

fn block(owner: &str, category: &str, required: bool, text: &str) -> String {
    format!("---\nowner: {owner}\ncategory: {category}\nrequired: {required}\n---\n{text}\n")
}

/// Writes the registry for `composition` and the script for `lat` under `dir`.
pub(crate) fn write(dir: &Path, composition: &str, lat: Latencies) -> anyhow::Result<()> {
    let files = [
        ("models.yaml", MODELS.to_owned()),
        ("tools.yaml", TOOLS.to_owned()),
        ("fixtures/offers.yaml", OFFERS.to_owned()),
        ("fixtures/article.yaml", ARTICLE.to_owned()),
        ("agents/orchestrator.yaml", orchestrator(composition)),
        ("agents/shopping.yaml", SHOPPING.to_owned()),
        ("agents/support.yaml", SUPPORT.to_owned()),
        (
            "blocks/persona.md",
            block("platform", "persona", true, "You are a shopping assistant."),
        ),
        (
            "blocks/format.md",
            block("platform", "format", true, "Answer in short sentences."),
        ),
        (
            "blocks/safety.md",
            block("platform", "safety", true, "Never guess a price."),
        ),
        (
            "blocks/routing.md",
            block(
                "platform",
                "instructions",
                false,
                "Call one tool per request.",
            ),
        ),
        (
            "blocks/shopping.md",
            block(
                "vertical",
                "instructions",
                false,
                "Find products and offers.",
            ),
        ),
        (
            "blocks/support.md",
            block(
                "vertical",
                "instructions",
                false,
                "Answer support questions.",
            ),
        ),
        ("script.yaml", script(lat)),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_big_answer_replaces_the_composed_one() {
        let script = big_answer_script(3);
        assert_eq!(script.matches("lorem ipsum").count(), 3 * 37);
        assert!(!script.contains("final0"));
        assert!(script.contains("pre0"));
    }
}
