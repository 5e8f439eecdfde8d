//! `baton-bench --memory`: memory over a long conversation.
//!
//! One episode of `--memory-turns` turns (300 by default) through the real engine
//! (`Runtime::run_turn`), with the shipped registry, the deterministic offline model and
//! the heap journal, run twice: without compaction (history covers every turn, the
//! orchestrator card's memory never due) and with the shipped defaults (compaction right
//! after the turn that makes the episode due, as `baton chat` and `baton serve` do). A
//! recording model notes each request's prompt size and the usage the model reports.
//! Compaction's time per episode on the DynamoDB + S3 journal is `baton-tests`' example
//! `compaction_cost` (it needs DynamoDB Local's launcher, a test harness).
//!
//! Targets are reported, never asserted: the orchestrator's prompt after turn 20 at most
//! 1.2× its size at turn 20, and compaction under 10% of the conversation's model tokens.

mod conversation;
mod long_run;
mod recorder;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::Args;
use crate::stats::percentile;
use conversation::{MESSAGES, PROBE_EMAIL};
use long_run::{Compaction, RunFigures, total};

/// Turns at which prompts are reported.
const CHECKPOINTS: &[usize] = &[1, 20, 50, 100, 200, 300];
/// The turn the later prompts are compared with.
const BASE_TURN: usize = 20;
/// Target: the orchestrator's largest prompt after the base turn over its prompt at it.
const TARGET_GROWTH: f64 = 1.2;
/// Target: compaction's share of the conversation's model tokens.
const TARGET_SHARE: f64 = 0.10;
/// Turns of a smoke run.
const SMOKE_TURNS: usize = 30;

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The registry: `--registry`, else `shared/registry` under the working directory, else
/// the one in this checkout.
pub(crate) fn registry_root(args: &Args) -> PathBuf {
    if let Some(r) = &args.registry {
        return r.clone();
    }
    let here = PathBuf::from("shared/registry");
    if here.is_dir() {
        return here;
    }
    // Under cargo the variable is set at run time too, and names this checkout even when
    // the binary was built in another one.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../registry")
}

/// Runs the memory benchmark and returns its JSON results.
pub(crate) async fn run(args: &Args) -> anyhow::Result<Value> {
    let turns = if args.smoke {
        SMOKE_TURNS
    } else {
        args.memory_turns
    };
    anyhow::ensure!(turns > 0, "--memory-turns must be positive");
    let root = registry_root(args);
    let (registry, _) = long_run::registry(&root, Compaction::AfterTurn)?;
    let specialists: Vec<String> = registry
        .entry(None)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .orchestration
        .as_ref()
        .map(|o| o.sub_agents.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let mut checkpoints: Vec<usize> = CHECKPOINTS
        .iter()
        .copied()
        .filter(|c| *c <= turns)
        .collect();
    if checkpoints.last() != Some(&turns) {
        checkpoints.push(turns);
    }

    let off = long_run::run(&root, Compaction::Off, turns).await?;
    let on = long_run::run(&root, Compaction::AfterTurn, turns).await?;
    let mut out = json!({
        "mode": "memory",
        "version": env!("CARGO_PKG_VERSION"),
        "config": {
            "turns": turns,
            "episodes": 1,
            "registry": root.display().to_string(),
            "model": "offline (baton_local::offline::OfflineModel), every card",
            "store": "heap (baton_inproc::HeapStore)",
            "messages_in_cycle": MESSAGES.len(),
            "prompt_tokens": "estimated by baton_core::prompt::estimate_tokens over the system blocks and the messages of each request, recorded by a wrapping Model",
            "usage_tokens": "what the model reported for each call (the offline model: about four characters a token of its input and output)",
            "checkpoints": checkpoints,
            "base_turn": BASE_TURN,
            "specialists": specialists,
            "turn_pace_s": long_run::TURN_PACE_MS / 1000,
        },
        "without_compaction": run_json(&off, &checkpoints, &specialists),
        "with_compaction": run_json(&on, &checkpoints, &specialists),
    });
    out["targets"] = targets(&out, &on);
    Ok(out)
}

/// A specialist's first-call prompt at its last consultation at or before `turn`.
fn specialist_at(r: &RunFigures, agent: &str, turn: usize) -> Option<(u64, usize)> {
    r.turns[..turn.min(r.turns.len())]
        .iter()
        .rev()
        .find_map(|t| t.specialists.get(agent).map(|p| (*p, t.turn)))
}

/// The largest of `after` (turn, tokens; the turns after the base turn) over the value at
/// the base turn, and the largest in each stretch between checkpoints: flat memory has no
/// trend from one stretch to the next.
fn growth(
    at_base: Option<u64>,
    after: impl Iterator<Item = (usize, u64)>,
    checkpoints: &[usize],
) -> Value {
    let after: Vec<(usize, u64)> = after.collect();
    let Some((turn, max)) = after
        .iter()
        .copied()
        .max_by_key(|(t, v)| (*v, std::cmp::Reverse(*t)))
    else {
        return Value::Null;
    };
    let ratio = at_base
        .filter(|b| *b > 0)
        .map(|b| round(max as f64 / b as f64, 3));
    let mut windows = serde_json::Map::new();
    let mut from = BASE_TURN;
    for to in checkpoints.iter().copied().filter(|c| *c > BASE_TURN) {
        let m = after
            .iter()
            .filter(|(t, _)| *t > from && *t <= to)
            .map(|(_, v)| *v)
            .max();
        windows.insert(format!("{}-{to}", from + 1), json!(m));
        from = to;
    }
    json!({ "at_base": at_base, "max_after_base": max, "max_at_turn": turn, "ratio": ratio, "max_by_stretch": windows })
}

fn run_json(r: &RunFigures, checkpoints: &[usize], specialists: &[String]) -> Value {
    let turns = r.turns.len();
    let per_100 = |x: f64| round(x * 100.0 / turns as f64, 6);
    // The orchestrator's routing prompt by turn.
    let route = |t: usize| {
        r.turns
            .get(t.wrapping_sub(1))
            .and_then(|f| f.orchestrator_route)
    };
    let orchestrator_at: BTreeMap<String, Option<u64>> = checkpoints
        .iter()
        .map(|c| (c.to_string(), route(*c)))
        .collect();
    let orchestrator_growth = if turns > BASE_TURN {
        growth(
            route(BASE_TURN),
            r.turns[BASE_TURN..]
                .iter()
                .filter_map(|t| t.orchestrator_route.map(|p| (t.turn, p))),
            checkpoints,
        )
    } else {
        Value::Null
    };
    let peak = r
        .turns
        .iter()
        .filter_map(|t| t.orchestrator_route.map(|p| (t.turn, p)))
        .max_by_key(|(_, p)| *p);
    let mut specialist_figures = serde_json::Map::new();
    for agent in specialists {
        let at: BTreeMap<String, Value> = checkpoints
            .iter()
            .map(|c| {
                let v = specialist_at(r, agent, *c)
                    .map(|(tokens, turn)| json!({ "tokens": tokens, "turn": turn }))
                    .unwrap_or(Value::Null);
                (c.to_string(), v)
            })
            .collect();
        let g = if turns > BASE_TURN {
            growth(
                specialist_at(r, agent, BASE_TURN).map(|(p, _)| p),
                r.turns[BASE_TURN..]
                    .iter()
                    .filter_map(|t| t.specialists.get(agent).map(|p| (t.turn, *p))),
                checkpoints,
            )
        } else {
            Value::Null
        };
        let consulted = r
            .turns
            .iter()
            .filter(|t| t.specialists.contains_key(agent))
            .count();
        specialist_figures.insert(
            agent.clone(),
            json!({ "first_call_prompt_tokens_at": at, "growth": g, "consulted_turns": consulted }),
        );
    }
    let summarize = r.summarize_usage();
    let compaction_tokens = total(&summarize);
    let turn_tokens = r.turn_tokens();
    let conversation = turn_tokens + compaction_tokens;
    let share = if conversation > 0 {
        compaction_tokens as f64 / conversation as f64
    } else {
        0.0
    };
    let compaction_cost = r.summarize_cost();
    let conversation_cost = r.engine.turns_cost_usd + compaction_cost;
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &r.turns {
        *outcomes.entry(t.outcome.as_str()).or_default() += 1;
    }
    let walls: Vec<f64> = r.turns.iter().map(|t| t.wall_ms).collect();
    // How long the raw e-mail address stays in some prompt after the user last said it.
    let mut last_said = None;
    let mut longest = None::<usize>;
    let mut seen_by: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, t) in r.turns.iter().enumerate() {
        if conversation::message(i + 1, 0).contains(PROBE_EMAIL) {
            last_said = Some(t.turn);
        }
        if let (false, Some(said)) = (t.probe_seen_by.is_empty(), last_said) {
            longest = Some(longest.map_or(t.turn - said, |l| l.max(t.turn - said)));
        }
        for agent in &t.probe_seen_by {
            *seen_by.entry(agent.as_str()).or_default() += 1;
        }
    }
    let p = &r.policy;
    json!({
        "compaction": match r.compaction {
            Compaction::Off => "off: history_turns covers every turn, memory never due",
            Compaction::AfterTurn => "shipped defaults, compact_after_turn",
        },
        "history_turns": r.history_turns,
        "memory": {
            "compact_after_turns": p.compact_after_turns,
            "keep_last": p.keep_last,
            "compact_at_fraction": p.compact_at_fraction,
            "max_batch": p.max_batch,
            "max_summary_chars": p.max_summary_chars,
            "summarizer": &*r.summarizer.key,
        },
        "wall_s": round(r.wall.as_secs_f64(), 3),
        "turn_wall_ms": { "median": percentile(&walls, 50.0), "p95": percentile(&walls, 95.0), "max": percentile(&walls, 100.0) },
        "outcomes": outcomes,
        "turns_without_specialist": r.turns.iter().filter(|t| t.consulted.is_empty()).count(),
        "orchestrator": {
            "route_prompt_tokens_at": orchestrator_at,
            "growth": orchestrator_growth,
            "peak": peak.map(|(turn, tokens)| json!({ "tokens": tokens, "turn": turn })),
        },
        "specialists": specialist_figures,
        "tokens": {
            "turns": turn_tokens,
            "compaction": { "input": summarize.input, "output": summarize.output, "total": compaction_tokens },
            "conversation": conversation,
            "compaction_share": round(share, 5),
            "compaction_per_100_turns": per_100(compaction_tokens as f64),
            "conversation_per_100_turns": per_100(conversation as f64),
        },
        "cost_usd": {
            "turns": round(r.engine.turns_cost_usd, 6),
            "compaction": round(compaction_cost, 8),
            "compaction_engine_reported": round(r.engine.compaction_cost_usd, 8),
            "compaction_per_100_turns": per_100(compaction_cost),
            "conversation": round(conversation_cost, 6),
            "compaction_share": if conversation_cost > 0.0 { round(compaction_cost / conversation_cost, 5) } else { 0.0 },
            "summarizer_prices_per_million": {
                "input": r.summarizer.prices.input,
                "output": r.summarizer.prices.output,
            },
        },
        "compactions": {
            "engine": r.engine,
            "summarizer_calls": r.summarize.len(),
            "summarizer_prompt_tokens_max": r.summarize.iter().map(|c| c.prompt_tokens()).max(),
            "due_after_the_turns_stream": r.due_after_stream,
        },
        "final_summary_tokens": r.final_summary.as_ref().map(|(o, a)| json!({ "orchestrator": o, "specialists": a })),
        "privacy_probe": {
            "longest_turns_in_a_prompt_after_said": longest,
            "turns_whose_prompts_had_it_by_agent": seen_by,
            "cycle_length": MESSAGES.len(),
            "summarizer_inputs_with_it": r.summarize_saw_probe,
            "in_a_stored_summary": r.summary_has_probe,
        },
        "history_trimmed_turns": r.history_trimmed_turns,
        "per_turn": r.turns.iter().map(|t| json!({
            "turn": t.turn,
            "consulted": t.consulted,
            "orchestrator_route": t.orchestrator_route,
            "orchestrator_route_messages": t.orchestrator_route_messages,
            "orchestrator_route_dynamic": t.orchestrator_route_dynamic,
            "orchestrator_max": t.orchestrator_max,
            "specialists": t.specialists,
            "calls": t.calls,
            "tokens": t.tokens,
            "summarize_calls": t.summarize_calls,
            "summarize_tokens": total(&t.summarize_tokens),
            "probe_seen_by": t.probe_seen_by,
        })).collect::<Vec<_>>(),
    })
}

fn targets(out: &Value, on: &RunFigures) -> Value {
    let ratio = out["with_compaction"]["orchestrator"]["growth"]["ratio"].as_f64();
    let share = out["with_compaction"]["tokens"]["compaction_share"].as_f64();
    json!({
        "orchestrator_growth_after_turn_20": {
            "target": format!("<= {TARGET_GROWTH}x"),
            "value": ratio,
            "met": ratio.map(|r| r <= TARGET_GROWTH),
        },
        "compaction_share_of_tokens": {
            "target": format!("< {:.0}%", TARGET_SHARE * 100.0),
            "value": share,
            "met": share.map(|s| s < TARGET_SHARE),
        },
        "runs_compacted": on.engine.compacted,
    })
}

fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cell(v: &Value) -> String {
    v.as_u64().map(fmt_int).unwrap_or_else(|| "—".to_owned())
}

/// The growth cells: the largest after the base turn (and its turn), that over the base
/// turn's, and the largest of the first and of the last stretch between checkpoints.
fn growth_cells(g: &Value) -> String {
    if g.is_null() {
        return "— | — | — |".into();
    }
    let max = format!("{} (t{})", cell(&g["max_after_base"]), g["max_at_turn"]);
    let ratio = g["ratio"]
        .as_f64()
        .map(|r| format!("{r:.2}×"))
        .unwrap_or_else(|| "—".into());
    let stretches: Vec<&Value> = g["max_by_stretch"]
        .as_object()
        .map(|m| {
            // Keys are "from-to"; in order of `from`.
            let mut v: Vec<(u64, &Value)> = m
                .iter()
                .map(|(k, v)| {
                    let from = k.split('-').next().and_then(|f| f.parse().ok());
                    (from.unwrap_or(0), v)
                })
                .collect();
            v.sort_by_key(|(from, _)| *from);
            v.into_iter().map(|(_, v)| v).collect()
        })
        .unwrap_or_default();
    let trend = match (stretches.first(), stretches.last()) {
        (Some(a), Some(b)) => format!("{} → {}", cell(a), cell(b)),
        _ => "—".into(),
    };
    format!("{max} | {ratio} | {trend} |")
}

fn met(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "—",
    }
}

/// The figures as Markdown tables.
pub(crate) fn table(b: &Value) -> String {
    let mut t = String::new();
    let cfg = &b["config"];
    let checkpoints: Vec<String> = cfg["checkpoints"]
        .as_array()
        .map(|a| a.iter().map(|c| c.to_string()).collect())
        .unwrap_or_default();
    let _ = writeln!(
        t,
        "Memory over a long conversation: {} turns on one episode (cycle of {} messages), shipped registry, offline model, in-memory journal.\n",
        cfg["turns"], cfg["messages_in_cycle"]
    );
    let _ = writeln!(
        t,
        "Prompt tokens (estimated: system blocks + messages) at turn; a specialist's figure is its first call at its last consultation up to that turn.\n"
    );
    let _ = write!(t, "| prompt | run |");
    for c in &checkpoints {
        let _ = write!(t, " {c} |");
    }
    let _ = writeln!(
        t,
        " largest after {BASE_TURN} | ÷ turn {BASE_TURN} | largest, first → last stretch |"
    );
    let _ = write!(t, "|---|---|");
    for _ in &checkpoints {
        let _ = write!(t, "---:|");
    }
    let _ = writeln!(t, "---:|---:|---:|");
    let runs = [
        ("without_compaction", "without"),
        ("with_compaction", "with"),
    ];
    for (key, label) in runs {
        let o = &b[key]["orchestrator"];
        let _ = write!(t, "| orchestrator (routing call) | {label} compaction |");
        for c in &checkpoints {
            let _ = write!(t, " {} |", cell(&o["route_prompt_tokens_at"][c]));
        }
        let _ = writeln!(t, " {}", growth_cells(&o["growth"]));
    }
    let agents: Vec<String> = cfg["specialists"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for agent in &agents {
        for (key, label) in runs {
            let s = &b[key]["specialists"][agent];
            let _ = write!(t, "| {agent} (first call) | {label} compaction |");
            for c in &checkpoints {
                let _ = write!(
                    t,
                    " {} |",
                    cell(&s["first_call_prompt_tokens_at"][c]["tokens"])
                );
            }
            let _ = writeln!(t, " {}", growth_cells(&s["growth"]));
        }
    }

    let on = &b["with_compaction"];
    let off = &b["without_compaction"];
    let turns = cfg["turns"].as_f64().unwrap_or(1.0);
    let targets = &b["targets"];
    let _ = writeln!(t, "\n| figure | value | target | met |");
    let _ = writeln!(t, "|---|---:|---|---|");
    let g = &targets["orchestrator_growth_after_turn_20"];
    let _ = writeln!(
        t,
        "| orchestrator prompt, with compaction: largest after turn {BASE_TURN} ÷ turn {BASE_TURN} | {} | ≤ {TARGET_GROWTH}× | {} |",
        g["value"]
            .as_f64()
            .map(|r| format!("{r:.2}×"))
            .unwrap_or_else(|| "—".into()),
        met(&g["met"])
    );
    let s = &targets["compaction_share_of_tokens"];
    let _ = writeln!(
        t,
        "| compaction's share of the conversation's model tokens | {} | < {:.0}% | {} |",
        s["value"]
            .as_f64()
            .map(|v| format!("{:.2}%", v * 100.0))
            .unwrap_or_else(|| "—".into()),
        TARGET_SHARE * 100.0,
        met(&s["met"])
    );
    let ct = &on["tokens"]["compaction"];
    let _ = writeln!(
        t,
        "| summarizer tokens per 100 turns (input + output) | {} ({} + {}) | | |",
        fmt_int(
            on["tokens"]["compaction_per_100_turns"]
                .as_f64()
                .unwrap_or(0.0)
                .round() as u64
        ),
        fmt_int((ct["input"].as_f64().unwrap_or(0.0) * 100.0 / turns).round() as u64),
        fmt_int((ct["output"].as_f64().unwrap_or(0.0) * 100.0 / turns).round() as u64),
    );
    let _ = writeln!(
        t,
        "| summarizer cost per 100 turns, at {}'s prices (the engine's `compaction_cost_usd`: ${:.6}) | ${:.6} | | |",
        on["memory"]["summarizer"].as_str().unwrap_or("?"),
        on["cost_usd"]["compaction_engine_reported"]
            .as_f64()
            .unwrap_or(0.0)
            * 100.0
            / turns,
        on["cost_usd"]["compaction_per_100_turns"]
            .as_f64()
            .unwrap_or(0.0),
    );
    let _ = writeln!(
        t,
        "| compaction's share of the conversation's cost | {:.3}% | | |",
        on["cost_usd"]["compaction_share"].as_f64().unwrap_or(0.0) * 100.0
    );
    let e = &on["compactions"]["engine"];
    let _ = writeln!(
        t,
        "| compactions (compacted / failed / conflict), turns folded, summarizer calls | {} / {} / {}, {}, {} | | |",
        e["compacted"],
        e["failed"],
        e["conflict"],
        e["turns_folded"],
        on["compactions"]["summarizer_calls"]
    );
    let _ = writeln!(
        t,
        "| whole conversation's model tokens: without / with compaction | {} / {} | | |",
        cell(&off["tokens"]["conversation"]),
        cell(&on["tokens"]["conversation"])
    );
    let _ = writeln!(
        t,
        "| whole conversation's cost: without / with compaction | ${:.4} / ${:.4} | | |",
        off["cost_usd"]["conversation"].as_f64().unwrap_or(0.0),
        on["cost_usd"]["conversation"].as_f64().unwrap_or(0.0)
    );
    let _ = writeln!(
        t,
        "| summaries at the end: orchestrator / per specialist (tokens) | {} / {} | | |",
        cell(&on["final_summary_tokens"]["orchestrator"]),
        on["final_summary_tokens"]["specialists"]
    );
    let pp = &on["privacy_probe"];
    let _ = writeln!(
        t,
        "| raw e-mail: in a stored summary / in a summarizer input / turns it stays in some prompt after said (without compaction) | {} / {} / {} ({}) | | |",
        if pp["in_a_stored_summary"].as_bool() == Some(true) {
            "**yes**"
        } else {
            "no"
        },
        pp["summarizer_inputs_with_it"],
        pp["longest_turns_in_a_prompt_after_said"],
        off["privacy_probe"]["longest_turns_in_a_prompt_after_said"]
    );
    let _ = writeln!(
        t,
        "| turns whose history was trimmed (`history_trim`): without / with compaction | {} / {} | | |",
        off["history_trimmed_turns"], on["history_trimmed_turns"]
    );
    let _ = writeln!(
        t,
        "| turn wall time median / p95, offline model: without / with compaction (ms) | {:.2} / {:.2}, {:.2} / {:.2} | | |",
        off["turn_wall_ms"]["median"].as_f64().unwrap_or(0.0),
        off["turn_wall_ms"]["p95"].as_f64().unwrap_or(0.0),
        on["turn_wall_ms"]["median"].as_f64().unwrap_or(0.0),
        on["turn_wall_ms"]["p95"].as_f64().unwrap_or(0.0),
    );
    t
}
