//! Concurrent fan-out (D-10, D-11): every job runs at once, each bounded by its card's
//! timeout; one failing or timing out never cancels the others. Status lines render
//! alongside.

use std::time::Duration;

use baton_core::events::Event;
use baton_core::plan::NodeStatus;
use baton_core::ports::metrics::{
    DISPATCH_OVERHEAD_MS, FAILURES_TOTAL, FANOUT_WIDTH, SUBAGENT_INVOCATIONS_TOTAL,
    SUBAGENT_LATENCY_MS,
};
use baton_core::turn::AgentStatus;
use futures::future::join_all;
use tracing::Instrument as _;

use super::context::TurnCtx;
use super::job_log::JobEnd;
use super::span_content;
use super::status::{self, Board};
use super::subagent;
use super::work::{AgentJob, AgentResult, TextMode};

/// Runs `jobs` concurrently; results come back in job order.
pub(crate) async fn dispatch(
    ctx: &TurnCtx,
    jobs: &[AgentJob],
    mode: &TextMode,
) -> Vec<AgentResult> {
    ctx.inner
        .metrics
        .measure(FANOUT_WIDTH, jobs.len() as f64, &[]);
    let board = Board::new(jobs.iter().map(|j| j.agent.id.clone()));
    let runs = async {
        let results = join_all(jobs.iter().map(|job| one(ctx, job, mode, &board))).await;
        board.close(); // Ends the renderer once every sub-agent is done.
        results
    };
    let started = tokio::time::Instant::now();
    let (results, ()) = tokio::join!(runs, status::render(ctx, &board));
    // D-10: the fan-out takes its slowest sub-agent plus this.
    let slowest = results.iter().map(|r| r.duration_ms).max().unwrap_or(0);
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    ctx.inner
        .metrics
        .measure(DISPATCH_OVERHEAD_MS, (wall - slowest as f64).max(0.0), &[]);
    if let TextMode::Slot(slot) = mode {
        slot.finish(&ctx.out).await;
    }
    results
}

async fn one(ctx: &TurnCtx, job: &AgentJob, mode: &TextMode, status: &Board) -> AgentResult {
    let agent = &job.agent;
    let started = tokio::time::Instant::now();
    let mut result = AgentResult {
        status: AgentStatus::Error,
        text: String::new(),
        tool_calls: 0,
        duration_ms: 0,
        started_ms: started.duration_since(ctx.started).as_millis() as u64,
        run: ctx.jobs.next_run(),
        failure_told: false,
        waiting: None,
        refused: false,
        carried: false,
    };
    ctx.jobs
        .job_started(&job.agent, &job.call_id, &job.query, result.started_ms);
    if let Some(brief) = &job.worker {
        ctx.out
            .emit(Event::NodeStart {
                node: agent.id.to_string(),
                wave: brief.wave,
            })
            .await;
    }
    let limit = Duration::from_millis(agent.limits.timeout_ms);
    // OpenTelemetry GenAI conventions: one `invoke_agent` span per sub-agent.
    let span = tracing::info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent.id,
        turn_id = %ctx.ids.turn_id,
        gen_ai.input.messages = tracing::field::Empty,
        gen_ai.output.messages = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    let calls_before = ctx.jobs.calls_started(&agent.id);
    let run = subagent::run(ctx, job, mode, status, &mut result).instrument(span.clone());
    if tokio::time::timeout(limit, run).await.is_err() {
        tracing::warn!(agent = %agent.id, timeout_ms = agent.limits.timeout_ms, "sub-agent timed out");
        result.status = AgentStatus::Timeout;
        result.duration_ms = started.elapsed().as_millis() as u64;
    }
    // What started, also what a timeout cut short (D-20), after what an earlier part of a
    // resumed turn made.
    result.tool_calls += ctx
        .jobs
        .calls_started(&agent.id)
        .saturating_sub(calls_before);
    // A specialist that stopped for the user resumes from this count.
    if let Some(waiting) = result.waiting.as_mut() {
        waiting.tool_calls = result.tool_calls;
    }
    ctx.jobs.job_ended(
        &job.agent.id,
        &job.call_id,
        JobEnd {
            status: result.status,
            tool_calls: result.tool_calls,
            duration_ms: result.duration_ms,
            refused: result.refused,
        },
    );
    span_content::record(ctx, &span, &job.query, &result.text, false);
    // A specialist that failed or timed out is an error on its span (a wait is not).
    if matches!(result.status, AgentStatus::Error | AgentStatus::Timeout) {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", result.status.as_str());
    }
    status.finished(&agent.id);
    if let Some(brief) = &job.worker {
        ctx.out
            .emit(Event::NodeEnd {
                node: agent.id.to_string(),
                wave: brief.wave,
                status: NodeStatus::of(result.status),
                duration_ms: result.duration_ms,
                tool_calls: result.tool_calls,
                reason: None,
            })
            .await;
    }
    if let TextMode::Slot(slot) = mode {
        slot.done(&ctx.out, &agent.id).await;
    }
    let outcome = result.status.as_str();
    // A specialist that waits for the user has neither failed nor timed out.
    if !result.status.answered() && result.status != AgentStatus::Awaiting {
        ctx.inner.metrics.count(
            FAILURES_TOTAL,
            1,
            &[("axis", "specialist"), ("name", &agent.metrics_name)],
        );
    }
    ctx.inner.metrics.count(
        SUBAGENT_INVOCATIONS_TOTAL,
        1,
        &[("agent", &agent.metrics_name), ("outcome", outcome)],
    );
    ctx.inner.metrics.measure(
        SUBAGENT_LATENCY_MS,
        started.elapsed().as_secs_f64() * 1000.0,
        &[("agent", &agent.metrics_name), ("outcome", outcome)],
    );
    result
}
