//! A turn's view of the episode's memory (design.md §4): the summary and the turns after it,
//! trimmed when the prompt would not fit, and whether the turn leaves the episode due for
//! compaction.

use baton_core::memory::{EpisodeSummary, history_tokens};
use baton_core::ports::store::{EpisodeMeta, StoreError};
use baton_core::prompt::{REQUEST_PROMPT_SHARE, estimate_tokens};
use baton_core::trace::GuardName;

use super::context::TurnCtx;

/// Loads what the orchestrator remembers: the summary and the turns after it (at most
/// `history_turns` of them), trimmed to fit the model's window. What is left out is
/// recorded in the routing record, never silently dropped.
pub(crate) async fn load(ctx: &mut TurnCtx, meta: &EpisodeMeta) -> Result<(), StoreError> {
    let upto = EpisodeSummary::upto(meta.summary.as_ref());
    ctx.asked.summary = meta.summary.clone();
    let unsummarised = meta.version.saturating_sub(upto);
    // A new episode, or one whose every turn is summarised, has nothing more to read (on
    // DynamoDB a read is a billed request).
    if unsummarised == 0 {
        return Ok(());
    }
    let window = ctx.inner.config.history_turns;
    let mut history = ctx
        .inner
        .store
        .turns(&ctx.ids.principal, &ctx.ids.episode_id, window)
        .await?;
    history.retain(|t| t.seq > upto);
    let mut left_out = unsummarised.saturating_sub(history.len() as u64);
    let budget = budget(ctx);
    let fixed = fixed_tokens(ctx);
    while !history.is_empty() && fixed + history_tokens(&history) > budget {
        history.remove(0);
        left_out += 1;
    }
    if left_out > 0 {
        ctx.trace(|t| {
            t.guard(
                GuardName::HistoryTrim,
                format!("{left_out} older unsummarised turn(s) left out of the prompt"),
            )
        });
    }
    ctx.asked.history = history;
    Ok(())
}

/// Whether the episode is due for compaction once this turn, with `user_text` and
/// `narration`, is committed.
pub(crate) fn due_after(ctx: &TurnCtx, new_version: u64, user_text: &str, narration: &str) -> bool {
    let Some(policy) = ctx
        .orchestrator
        .orchestration
        .as_ref()
        .and_then(|o| o.memory.as_ref())
    else {
        return false;
    };
    let upto = EpisodeSummary::upto(ctx.asked.summary.as_ref());
    let unsummarised = new_version.saturating_sub(upto);
    let tokens = history_tokens(&ctx.asked.history)
        + estimate_tokens(user_text)
        + estimate_tokens(narration);
    policy.is_due(unsummarised, tokens, ctx.orchestrator.model.context_window)
}

/// The tokens the orchestrator's prompt may spend.
fn budget(ctx: &TurnCtx) -> u64 {
    (ctx.orchestrator.model.context_window as f64 * REQUEST_PROMPT_SHARE) as u64
}

/// The prompt's parts that do not shrink: the stable prefix, the summary and the user's
/// new text.
fn fixed_tokens(ctx: &TurnCtx) -> u64 {
    ctx.orchestrator.prompt.estimated_tokens
        + ctx
            .asked
            .summary
            .as_ref()
            .map_or(0, |s| estimate_tokens(&s.text))
        + estimate_tokens(&ctx.asked.user_text)
}
