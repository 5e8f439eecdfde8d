//! `baton memory`: what Baton remembers of the configured principal across conversations
//! (D-43) — listing, searching, saving, forgetting one memory or all of them, exporting
//! them as JSON, and turning memory on or off for them.

use std::io::{self, Write};
use std::process::ExitCode;

use baton_core::recall::{Memory, MemoryKind, MemorySource, Saved};
use baton_runtime::MemoryFailure;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::config::Settings;
use crate::{logging, setup};

/// `baton memory`.
#[derive(Debug, Args)]
pub(crate) struct MemoryArgs {
    /// What to do (default: list what is remembered).
    #[command(subcommand)]
    pub(crate) action: Option<MemoryAction>,
    /// Print as JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

/// What `baton memory` does.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryAction {
    /// List what is remembered, newest first.
    List {
        /// Also what was replaced by a newer statement, or has expired.
        #[arg(long)]
        history: bool,
        /// Only this kind: fact, preference, goal or finding.
        #[arg(long)]
        kind: Option<String>,
    },
    /// Search what is remembered (full text and similarity, fused).
    Search {
        /// What to look for.
        #[arg(value_name = "WORDS")]
        words: Vec<String>,
    },
    /// Remember a statement, as "remember that …" does.
    Save {
        /// The statement.
        #[arg(value_name = "TEXT")]
        text: Vec<String>,
        /// What it is about (default: the words before its verb).
        #[arg(long)]
        subject: Option<String>,
        /// fact, preference or goal (default: fact).
        #[arg(long)]
        kind: Option<String>,
    },
    /// Forget one memory (its id, as `baton memory` lists it) with the statements it
    /// replaced, or everything with --all.
    Forget {
        /// The memory's id.
        #[arg(value_name = "ID", required_unless_present = "all")]
        id: Option<String>,
        /// Forget every memory.
        #[arg(long, conflicts_with = "id")]
        all: bool,
    },
    /// Every memory, history included, as JSON.
    Export,
    /// Turn memory on for you.
    On,
    /// Turn memory off for you: nothing is remembered or read back.
    Off,
    /// Whether memory is on for you.
    Status,
}

fn kind(name: Option<&str>) -> anyhow::Result<Vec<MemoryKind>> {
    match name {
        None => Ok(Vec::new()),
        Some(name) => MemoryKind::parse(name).map(|k| vec![k]).ok_or_else(|| {
            anyhow::anyhow!("unknown kind {name:?}: use fact, preference, goal or finding")
        }),
    }
}

fn line(memory: &Memory) -> String {
    let day = baton_core::prompt::civil_date(memory.created_ms);
    let replaced = if memory.replaced_by.is_some() {
        "  (replaced)"
    } else {
        ""
    };
    format!(
        "{}  {day}  {:<10}  {}: {}{replaced}",
        memory.id, memory.kind, memory.subject, memory.text
    )
}

/// Runs `baton memory`; exit 1 when the memory asked for is not found.
///
/// # Errors
/// A runtime that cannot be assembled, a store that keeps no memory or is unavailable, or
/// output that cannot be written.
pub(crate) async fn run(settings: &Settings, args: &MemoryArgs) -> anyhow::Result<ExitCode> {
    logging::init(settings.log.as_deref(), "error", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    let me = &settings.principal;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let failed = |e: MemoryFailure| anyhow::anyhow!("{e}");
    match &args.action {
        None => list(&runtime, me, false, &[], args.json, &mut out).await?,
        Some(MemoryAction::List { history, kind: k }) => {
            list(
                &runtime,
                me,
                *history,
                &kind(k.as_deref())?,
                args.json,
                &mut out,
            )
            .await?;
        }
        Some(MemoryAction::Search { words }) => {
            let found = runtime
                .memory()
                .search(me, &words.join(" "), &[], 10)
                .await
                .map_err(failed)?;
            if args.json {
                writeln!(out, "{}", json!({ "memories": found }))?;
            } else if found.is_empty() {
                writeln!(out, "Nothing remembered about that.")?;
            } else {
                for f in &found {
                    writeln!(out, "{}", line(&f.memory))?;
                }
            }
        }
        Some(MemoryAction::Save {
            text,
            subject,
            kind: k,
        }) => {
            let kind = kind(k.as_deref())?.pop().unwrap_or(MemoryKind::Fact);
            let text = baton_core::recall::said(&text.join(" ")).to_owned();
            let (memory, saved) = runtime
                .memory()
                .remember(
                    me,
                    kind,
                    subject.as_deref().unwrap_or_default(),
                    &text,
                    MemorySource::default(),
                )
                .await
                .map_err(failed)?;
            let (status, replaced) = match &saved {
                Saved::New { replaced, .. } => ("saved", replaced.clone()),
                Saved::Unchanged(_) => ("already known", None),
            };
            if args.json {
                writeln!(
                    out,
                    "{}",
                    json!({ "saved": status, "memory": memory, "replaced": replaced })
                )?;
            } else {
                writeln!(out, "{}: {}", capitalised(status), line(&memory))?;
            }
        }
        Some(MemoryAction::Forget { id, all }) => {
            let removed = if *all {
                runtime.memory().forget_all(me).await.map_err(failed)?
            } else {
                let id = id.as_deref().unwrap_or_default();
                match runtime.memory().forget(me, id).await {
                    Ok(n) => n,
                    Err(MemoryFailure::NotFound) => {
                        drop(out);
                        eprintln!("error: no memory {id:?} of {}", me.as_str());
                        return Ok(ExitCode::FAILURE);
                    }
                    Err(e) => return Err(failed(e)),
                }
            };
            if args.json {
                writeln!(out, "{}", json!({ "forgotten": removed }))?;
            } else {
                writeln!(out, "Forgotten: {removed} item(s), history included.")?;
            }
        }
        Some(MemoryAction::Export) => {
            let all = runtime
                .memory()
                .list(me, &[], true, usize::MAX)
                .await
                .map_err(failed)?;
            let (on, own) = runtime.memory().setting(me).await.map_err(failed)?;
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json!({
                    "principal": me.as_str(),
                    "memory": if on { "on" } else { "off" },
                    "own_setting": own,
                    "memories": all,
                }))?
            )?;
        }
        Some(action @ (MemoryAction::On | MemoryAction::Off)) => {
            let on = matches!(action, MemoryAction::On);
            runtime
                .memory()
                .set_setting(me, Some(on))
                .await
                .map_err(failed)?;
            if args.json {
                writeln!(
                    out,
                    "{}",
                    json!({ "memory": if on { "on" } else { "off" } })
                )?;
            } else if on {
                writeln!(
                    out,
                    "Memory is on: what you tell me can be remembered across conversations."
                )?;
            } else {
                writeln!(
                    out,
                    "Memory is off: nothing is remembered or read back. What was kept stays until you forget it (baton memory forget --all)."
                )?;
            }
        }
        Some(MemoryAction::Status) => {
            let (on, own) = runtime.memory().setting(me).await.map_err(failed)?;
            let count = runtime
                .memory()
                .list(me, &[], false, usize::MAX)
                .await
                .map_err(failed)?
                .len();
            if args.json {
                writeln!(
                    out,
                    "{}",
                    json!({ "memory": if on { "on" } else { "off" }, "own_setting": own, "current": count })
                )?;
            } else {
                let why = if own {
                    "your setting"
                } else {
                    "this deployment's default"
                };
                let state = if on { "on" } else { "off" };
                writeln!(
                    out,
                    "Memory is {state} ({why}); {count} thing(s) remembered."
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

async fn list(
    runtime: &baton_runtime::Runtime,
    me: &baton_core::Principal,
    history: bool,
    kinds: &[MemoryKind],
    as_json: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let all = runtime
        .memory()
        .list(me, kinds, history, usize::MAX)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if as_json {
        writeln!(out, "{}", json!({ "memories": all }))?;
    } else if all.is_empty() {
        writeln!(out, "Nothing remembered for {}.", me.as_str())?;
    } else {
        for memory in &all {
            writeln!(out, "{}", line(memory))?;
        }
    }
    Ok(())
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
