//! `baton replay`: one of the principal's conversations as the user saw it, turn by turn,
//! with what the runtime recorded about each turn (who was consulted, how it was routed,
//! what it cost), on whichever store is configured.
//!
//! Text mode is for reading; `--json` prints the replay as stored, for tools.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::ExitCode;

use baton_core::obligation::ObligationSource;
use baton_core::picture::MediaType;
use baton_core::plan::PlanRecord;
use baton_core::plan::record::describe_waves;
use baton_core::trace::{CapBehavior, ObligationMet, RoutingRecord};
use baton_core::turn::{ConsultedAgent, ModelUsage, TurnRecord};
use baton_runtime::replay::EpisodeReplay;
use baton_runtime::{RejectionKind, TurnRejection};

use crate::config::Settings;
use crate::render::{masked, money, removed_from_pictures};
use crate::{logging, setup};
use clap::Args;

/// `baton replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The conversation's id (`ep_…`, as `baton chat` prints it).
    #[arg(value_name = "EPISODE")]
    pub(crate) episode: String,
    /// Also print the tool payloads each turn stored, as JSON.
    #[arg(long)]
    pub(crate) bodies: bool,
    /// Print the conversation as stored, as one JSON document.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the pictures the conversation's turns carried (as stored: their hidden data
    /// removed) into this folder, as `<turn>-<n>.<ext>`.
    #[arg(long, value_name = "DIR")]
    pub(crate) save_pictures: Option<std::path::PathBuf>,
}

/// Runs `baton replay`.
///
/// # Errors
/// A runtime that cannot be assembled, an unknown episode (or another principal's), the
/// store unavailable, or output that cannot be written.
pub(crate) async fn run(settings: &Settings, args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "error", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    let replay = runtime
        .replay(&settings.principal, &args.episode, args.bodies)
        .await
        .map_err(|r| refusal(settings, r))?;
    if let Some(dir) = &args.save_pictures {
        save_pictures(&runtime, settings, &replay, dir).await?;
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        // Through io::Error, so that a closed pipe is recognised as one.
        serde_json::to_writer_pretty(&mut out, &replay).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        out.write_all(render(&replay).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Writes every picture `replay`'s turns carried into `dir`, as `<turn>-<n>.<ext>`.
async fn save_pictures(
    runtime: &baton_runtime::Runtime,
    settings: &Settings,
    replay: &EpisodeReplay,
    dir: &std::path::Path,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for turn in &replay.turns {
        for (n, picture) in turn.pictures.iter().enumerate() {
            let stored = runtime
                .picture(&settings.principal, &turn.episode_id, &picture.sha256)
                .await
                .map_err(|r| refusal(settings, r))?;
            let ext = match stored.media_type {
                MediaType::Jpeg => "jpg",
                MediaType::Png => "png",
                MediaType::Webp => "webp",
                MediaType::Gif => "gif",
            };
            let path = dir.join(format!("{}-{}.{ext}", turn.seq, n + 1));
            std::fs::write(&path, &stored.bytes)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

/// The refusal as the user should read it: "not found" as it is (as `baton chat
/// --episode` says it), an unavailable store with which one.
fn refusal(settings: &Settings, r: TurnRejection) -> anyhow::Error {
    if r.kind != RejectionKind::Unavailable {
        return anyhow::Error::new(r);
    }
    anyhow::Error::new(r).context(format!("reading {}", settings.store_in_words()))
}

/// The whole replay as text.
fn render(replay: &EpisodeReplay) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored throughout.
    let meta = &replay.meta;
    let _ = writeln!(
        out,
        "Conversation {} · {} · started {}",
        meta.episode_id,
        count(replay.turns.len() as u64, "turn", "turns"),
        utc(meta.created_ms)
    );
    let upto = meta.summary.as_ref().map_or(0, |s| s.upto_seq);
    match &meta.summary {
        Some(summary) => {
            let _ = writeln!(
                out,
                "Turns {} are summarised. The orchestrator's summary:",
                span(summary.upto_seq)
            );
            indent(&mut out, &summary.text, "  ");
            if !summary.agents.is_empty() {
                let agents: Vec<&str> = summary.agents.keys().map(String::as_str).collect();
                let _ = writeln!(
                    out,
                    "Specialists' own summaries (in --json): {}",
                    agents.join(", ")
                );
            }
        }
        None => {
            let _ = writeln!(out, "No summary yet: every turn is as it was.");
        }
    }
    if replay.turns.is_empty() {
        let _ = writeln!(out, "\nNo turns yet.");
    }
    for turn in &replay.turns {
        out.push('\n');
        render_turn(&mut out, turn, turn.seq <= upto);
        if let Some(bodies) = &replay.bodies
            && !turn.body_keys.is_empty()
        {
            let _ = writeln!(out, "Payloads:");
            for key in &turn.body_keys {
                match bodies.get(key) {
                    Some(body) => {
                        let _ = writeln!(out, "  {key}");
                        let pretty =
                            serde_json::to_string_pretty(body).unwrap_or_else(|_| body.to_string());
                        indent(&mut out, &pretty, "    ");
                    }
                    None => {
                        let _ = writeln!(out, "  {key}: could not be read (missing or damaged)");
                    }
                }
            }
        }
    }
    for sha in &replay.unreadable_pictures {
        let _ = writeln!(
            out,
            "\nThe picture {sha} could not be read back whole (missing or damaged)."
        );
    }
    if replay.bodies.is_some() {
        let named: usize = replay.turns.iter().map(|t| t.pictures.len()).sum();
        if named > replay.unreadable_pictures.len() {
            let _ = writeln!(
                out,
                "\n{} read back whole from the store (see --save-pictures).",
                count(
                    (named - replay.unreadable_pictures.len()) as u64,
                    "picture",
                    "pictures"
                )
            );
        }
    }
    let total: f64 = replay.turns.iter().map(|t| t.cost_usd).sum();
    if replay.turns.len() > 1 {
        let _ = writeln!(out, "\nTotal: {}", money(total));
    }
    out
}

/// One turn: heading, the user's text, the answer, then the record.
fn render_turn(out: &mut String, turn: &TurnRecord, summarised: bool) {
    let outcome = turn.outcome.as_str();
    let _ = write!(
        out,
        "── Turn {} · {} · {outcome}",
        turn.seq,
        utc(turn.created_ms)
    );
    if summarised {
        out.push_str(" · in the summary");
    }
    let _ = writeln!(out, " · {}", turn.turn_id);
    let _ = writeln!(out, "You:");
    indent(out, &turn.user_text, "  ");
    for (n, p) in turn.pictures.iter().enumerate() {
        let _ = writeln!(
            out,
            "  [picture {}: {}, {}×{}, {}, sha256 {}]",
            n + 1,
            p.media_type,
            p.width,
            p.height,
            count(p.bytes, "byte", "bytes"),
            p.sha256
        );
    }
    let _ = writeln!(out, "Assistant:");
    if turn.narration.trim().is_empty() {
        let _ = writeln!(out, "  (no answer)");
    } else {
        indent(out, &turn.narration, "  ");
    }
    let _ = writeln!(out, "Consulted: {}", consulted(&turn.consulted));
    routing(out, &turn.routing);
    if turn.privacy.total > 0 {
        let _ = writeln!(out, "Privacy: {}", masked(&turn.privacy));
    }
    if let Some(removed) = removed_from_pictures(&turn.privacy) {
        let _ = writeln!(out, "Privacy: {removed}");
    }
    let _ = writeln!(out, "Usage: {}", usage(&turn.usage, turn.cost_usd));
}

/// `Shopping (ok, 12 ms, 1 tool call); Support (timeout, …)`, or `nobody`.
fn consulted(agents: &[ConsultedAgent]) -> String {
    if agents.is_empty() {
        return "nobody".to_owned();
    }
    let parts: Vec<String> = agents
        .iter()
        .map(|a| {
            format!(
                "{} [{}] ({}, {} ms, {})",
                a.label,
                a.agent_id,
                a.status.as_str(),
                a.duration_ms,
                count(u64::from(a.tool_calls), "tool call", "tool calls")
            )
        })
        .collect();
    parts.join("; ")
}

/// The routing record, compactly: one line of what is set, then one line per guard,
/// dropped call, obligation and intervention.
fn routing(out: &mut String, r: &RoutingRecord) {
    // Taken apart in full, so that a field added to the record stops this from compiling
    // until it is shown here (or left out on purpose, like `outcomes`, which the consulted
    // line already shows).
    let RoutingRecord {
        invoked,
        intent_count,
        cap,
        cap_behavior,
        dropped,
        guards,
        retries,
        fastpath,
        outcomes: _,
        composition,
        limit,
        principal_mismatches,
        direct_line,
        obligations,
        interventions,
        calls,
        plan,
        tool_calls,
        answered,
        memories,
    } = r;
    let mut facts = Vec::new();
    if !invoked.is_empty() {
        facts.push(format!("invoked {}", invoked.join(", ")));
    }
    if *intent_count > 0 {
        facts.push(count(u64::from(*intent_count), "intent", "intents"));
    }
    match cap_behavior {
        CapBehavior::Within => {}
        CapBehavior::At => facts.push(format!("at the fan-out cap ({cap})")),
        CapBehavior::Over => facts.push(format!("over the fan-out cap ({cap})")),
    }
    if *retries > 0 {
        facts.push(count(u64::from(*retries), "retry", "retries"));
    }
    if let Some(category) = fastpath {
        facts.push(format!("fastpath {category}"));
    }
    if let Some(composition) = composition {
        facts.push(format!("composition {composition}"));
    }
    if let Some(limit) = limit {
        facts.push(format!("limit {}", limit.as_str()));
    }
    if let Some(d) = direct_line {
        let sticky = if d.sticky { ", lasting" } else { "" };
        facts.push(format!(
            "direct line to {} ({}{sticky})",
            d.agent_id,
            d.mode.as_str()
        ));
    }
    if *principal_mismatches > 0 {
        facts.push(count(
            u64::from(*principal_mismatches),
            "principal mismatch suppressed",
            "principal mismatches suppressed",
        ));
    }
    if facts.is_empty() {
        facts.push("nothing routed".to_owned());
    }
    let _ = writeln!(out, "Routing: {}", facts.join(" · "));
    for c in calls {
        let _ = writeln!(out, "  asked {} with {}", c.agent_id, c.args);
    }
    for c in tool_calls {
        let _ = writeln!(
            out,
            "  {} called {}: {}, {} ms",
            c.agent_id,
            c.tool,
            c.outcome.as_str(),
            c.duration_ms
        );
    }
    if let Some(a) = answered {
        let _ = writeln!(
            out,
            "  {} {} ({}) for {} via {}: {} (arguments sha256 {})",
            a.kind.as_str(),
            a.interruption_id,
            a.tool,
            a.agent_id,
            a.face,
            a.answer,
            a.args_sha256
        );
    }
    for m in memories {
        let _ = writeln!(out, "  remembered {} ({})", m.subject, m.id);
    }
    for g in guards {
        let _ = writeln!(out, "  guard {}: {}", g.guard.as_str(), g.detail);
    }
    for d in dropped {
        let _ = writeln!(out, "  dropped {}: {}", d.tool, d.reason.as_str());
    }
    for o in obligations {
        let source = match o.source {
            ObligationSource::Request => "the request",
            ObligationSource::Card => "a card rule",
        };
        let met = match o.met {
            ObligationMet::ByModel => "by the orchestrator",
            ObligationMet::AfterReminder => "after a reminder",
            ObligationMet::ByRuntime => "by the runtime",
            ObligationMet::DirectLine => "on the Direct Line",
            ObligationMet::Deferred => "not yet: over the fan-out cap, offered to continue",
        };
        let _ = write!(
            out,
            "  must consult {} (from {source}): met {met}",
            o.agent_id
        );
        if o.reminders > 0 {
            let _ = write!(
                out,
                ", {}",
                count(u64::from(o.reminders), "reminder", "reminders")
            );
        }
        out.push('\n');
    }
    for i in interventions {
        let _ = writeln!(
            out,
            "  intervention {} ({}): {}",
            i.kind.as_str(),
            i.agent_id,
            i.detail
        );
    }
    if let Some(plan) = plan {
        plan_lines(out, plan);
    }
}

/// A planner's plan: its waves, each node's mission and skills, how each ended, and the
/// steps it refused.
fn plan_lines(out: &mut String, plan: &PlanRecord) {
    let _ = writeln!(out, "  plan: {}", describe_waves(&plan.waves()));
    if let Some(wave) = plan.resumed_after_wave {
        let _ = writeln!(out, "  resumed after wave {wave} from a checkpoint");
    }
    if !plan.continued.is_empty() {
        let _ = writeln!(out, "  continued: {}", plan.continued.join(", "));
    }
    for n in &plan.nodes {
        let deps = if n.depends_on.is_empty() {
            String::new()
        } else {
            format!(", after {}", n.depends_on.join(", "))
        };
        let _ = write!(
            out,
            "  node {} (wave {}, {}{deps}): {}",
            n.id,
            n.wave,
            n.skills.join(", "),
            n.mission
        );
        match plan.outcomes.iter().find(|o| o.id == n.id) {
            Some(o) => {
                let _ = write!(
                    out,
                    " → {}, {} ms, {}",
                    o.status.as_str(),
                    o.duration_ms,
                    count(u64::from(o.tool_calls), "tool call", "tool calls")
                );
                if let Some(reason) = &o.reason {
                    let _ = write!(out, " ({reason})");
                }
            }
            None => out.push_str(" → no outcome"),
        }
        out.push('\n');
    }
    for step in &plan.refused {
        let problems: Vec<String> = step
            .iter()
            .map(|p| match &p.agent_id {
                Some(id) => format!("{id}: {}", p.problem),
                None => p.problem.clone(),
            })
            .collect();
        let _ = writeln!(out, "  refused a step: {}", problems.join("; "));
    }
}

/// `claude-haiku 4 calls, 4289 in, 64 out · $0.004609`.
fn usage(models: &[ModelUsage], cost_usd: f64) -> String {
    let mut parts: Vec<String> = models
        .iter()
        .map(|m| {
            let t = &m.tokens;
            let mut s = format!(
                "{} {}, {} in, {} out",
                m.model,
                count(u64::from(m.calls), "call", "calls"),
                t.input,
                t.output
            );
            if t.cache_read + t.cache_write > 0 {
                let _ = write!(
                    s,
                    " (cache {} read, {} written)",
                    t.cache_read, t.cache_write
                );
            }
            s
        })
        .collect();
    if parts.is_empty() {
        parts.push("no model calls".to_owned());
    }
    format!("{} · {}", parts.join("; "), money(cost_usd))
}

/// `1 turn`, `3 turns`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `1–4`, or `1` alone.
fn span(upto: u64) -> String {
    if upto == 1 {
        "1".to_owned()
    } else {
        format!("1–{upto}")
    }
}

/// Each line of `text` with `prefix` before it (blank lines stay blank: no trailing spaces).
fn indent(out: &mut String, text: &str, prefix: &str) {
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{prefix}{line}");
        }
    }
}

/// Epoch milliseconds as `2026-11-21 14:05:09 UTC`: one zone for every reader, since the
/// journal keeps no zone.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`), in
    // unsigned arithmetic since no date here is before 1970.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use baton_core::trace::{GuardName, InterventionKind, LimitHit};

    use super::*;

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(
            utc(1_795_305_600_000 + 3_723_000),
            "2026-11-22 01:02:03 UTC"
        );
        // Absurd values are printed, not a panic.
        assert!(utc(u64::MAX).ends_with("UTC"));
    }

    #[test]
    fn the_routing_record_shows_what_is_set() {
        let mut r = RoutingRecord {
            invoked: vec!["shop".into(), "support".into()],
            intent_count: 2,
            cap: 2,
            cap_behavior: CapBehavior::Over,
            limit: Some(LimitHit::TurnToolCalls),
            ..RoutingRecord::default()
        };
        r.guard(
            GuardName::HistoryTrim,
            "2 older unsummarised turn(s) left out",
        );
        r.intervene(InterventionKind::Note, "support", "added a note");
        let mut out = String::new();
        routing(&mut out, &r);
        assert_eq!(
            out,
            "Routing: invoked shop, support · 2 intents · over the fan-out cap (2) · limit \
             turn_tool_calls\n  guard history_trim: 2 older unsummarised turn(s) left out\n  \
             intervention note (support): added a note\n"
        );
        let mut empty = String::new();
        routing(&mut empty, &RoutingRecord::default());
        assert_eq!(empty, "Routing: nothing routed\n");
    }

    #[test]
    fn spans_and_counts_read_naturally() {
        assert_eq!(span(1), "1");
        assert_eq!(span(4), "1–4");
        assert_eq!(count(1, "turn", "turns"), "1 turn");
        assert_eq!(count(0, "turn", "turns"), "0 turns");
        assert_eq!(money(0.000221), "$0.000221");
    }
}
