//! A turn's memories from earlier conversations (D-43): the ones relevant to the message,
//! found before routing and given to the orchestrator as a block after its cache point.
//! The routing record names each one, so the consulted record can say what Baton
//! remembered. A memory store that cannot be read costs the turn its memories, not its
//! answer.

use baton_core::consulted::Recalled;
use baton_core::privacy::PrivacyReceipt;
use baton_core::recall::MemoryFilter;
use baton_core::recall::block::render;

use super::context::TurnCtx;
use crate::recall::{MEMORIES_RECALLED_TOTAL, MEMORY_FAILURES_TOTAL, search};

/// Finds the memories relevant to the turn's message and keeps their block for the
/// orchestrator's prompt.
pub(crate) async fn load(ctx: &mut TurnCtx) {
    let inner = ctx.inner.clone();
    let Some(recall) = &inner.memory else {
        return;
    };
    if ctx.asked.user_text.trim().is_empty() {
        return;
    }
    let principal = &ctx.ids.principal;
    let found = async {
        if !inner.memory_to_search(principal).await? {
            return Ok(Vec::new());
        }
        let filter = MemoryFilter::current(inner.clock.now_ms());
        let depth = inner.config.memory.search_depth;
        search(recall, principal, &ctx.asked.user_text, &filter, depth).await
    }
    .await;
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(turn_id = %ctx.ids.turn_id, error = %e, "the turn goes on without its memories");
            inner
                .metrics
                .count(MEMORY_FAILURES_TOTAL, 1, &[("stage", "read")]);
            return;
        }
    };
    if found.is_empty() {
        return;
    }
    let memories: Vec<_> = found.iter().map(|f| &f.memory).collect();
    // What the guard masks here is not the turn's output: its receipt stays out of the
    // turn's own.
    let mut receipt = PrivacyReceipt::default();
    let block = render(
        &memories,
        inner.config.memory.prompt_tokens,
        &inner.privacy,
        &mut receipt,
    );
    if block.ids.is_empty() {
        return;
    }
    let recalled: Vec<Recalled> = block
        .ids
        .iter()
        .filter_map(|id| memories.iter().find(|m| &m.id == id))
        .map(|m| Recalled {
            id: m.id.clone(),
            subject: m.subject.clone(),
        })
        .collect();
    inner
        .metrics
        .count(MEMORIES_RECALLED_TOTAL, recalled.len() as u64, &[]);
    ctx.trace(|t| t.memories = recalled);
    ctx.asked.memory = Some(block.text);
}
