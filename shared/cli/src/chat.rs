//! `baton chat`: one question, or an interactive conversation, run in-process.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use baton_core::directive::DirectMode;
use baton_core::interruption::{Answer, InterruptionKind, Reply};
use baton_core::turn::TurnOutcome;
use baton_runtime::{RejectionKind, Resume, Runtime, TurnRejection, TurnRequest};
use futures::StreamExt;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::config::Settings;
use crate::render::{Ending, Renderer, Style};
use crate::{logging, setup};
use clap::Args;

/// `baton chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The message (words are joined); without one, an interactive chat starts.
    #[arg(value_name = "MESSAGE")]
    pub(crate) message: Vec<String>,
    /// Print each event as one JSON line, and nothing else, on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Continue this conversation.
    #[arg(long, value_name = "ID")]
    pub(crate) episode: Option<String>,
    /// Each turn must consult this specialist (repeat for several).
    #[arg(long, value_name = "ID")]
    pub(crate) must_consult: Vec<String>,
    /// How a Direct Line answer (`#specialist …`) is delivered: `strict` or `additive`
    /// [default: the orchestrator card's]
    #[arg(long, value_name = "MODE", value_parser = parse_direct_mode)]
    pub(crate) direct_line_mode: Option<DirectMode>,
    /// Send this picture (JPEG, PNG, WebP or GIF) with the first message; repeat for
    /// several. With pictures and no message, the pictures alone are the message.
    #[arg(long, value_name = "FILE")]
    pub(crate) image: Vec<std::path::PathBuf>,
}

fn parse_direct_mode(s: &str) -> Result<DirectMode, String> {
    match s {
        "strict" => Ok(DirectMode::Strict),
        "additive" => Ok(DirectMode::Additive),
        _ => Err("expected `strict` or `additive`".to_owned()),
    }
}

/// The line editor's history, inside the data folder.
const HISTORY_FILE: &str = "chat_history.txt";

const HELP: &str = "Type a message and press Enter. /new starts a new conversation, \
                    /exit (or Ctrl-D) quits.";

/// Runs `baton chat`.
///
/// # Errors
/// A runtime that cannot be assembled, a refused one-shot turn (its plain message), an
/// unknown `--episode`, or output that cannot be written.
pub(crate) async fn run(settings: &Settings, args: ChatArgs) -> anyhow::Result<ExitCode> {
    // Chat's own output is the conversation; only real failures are logged.
    logging::init(settings.log.as_deref(), "error", false)?;
    let runtime = setup::assemble(settings).await?.runtime;
    let mut renderer = Renderer::new(io::stdout(), Style::detect(args.json));
    let mut pictures = Vec::with_capacity(args.image.len());
    for path in &args.image {
        let bytes = std::fs::read(path)
            .with_context(|| format!("reading the picture {}", path.display()))?;
        pictures.push(baton_core::picture::Bytes::from(bytes));
    }
    let mut chat = Chat {
        runtime,
        settings,
        episode: args.episode,
        must_consult: args.must_consult,
        direct_line_mode: args.direct_line_mode,
        pictures,
    };
    let outcome = if args.message.is_empty() && chat.pictures.is_empty() {
        chat.interactive(&mut renderer).await
    } else {
        chat.turn(args.message.join(" "), &mut renderer)
            .await
            .map(|ending| exit_code(&ending))
    };
    // What a turn does after its answer (extracting memories, compacting) finishes before
    // the exit, within a bound; a remote agent's task that a cut turn left running is
    // cancelled.
    chat.runtime.idle(AFTER_TURN_LIMIT).await;
    chat.runtime.settle().await;
    outcome
}

/// How long a one-shot chat waits, after its answer, for the turn's own work after it.
const AFTER_TURN_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Shows a turn's events to its end.
async fn show<W: Write>(
    stream: &mut baton_runtime::TurnStream,
    renderer: &mut Renderer<W>,
) -> anyhow::Result<Ending> {
    while let Some(event) = stream.next().await {
        renderer.event(&event)?;
    }
    let ending = renderer.finish(&stream.episode_id)?;
    if ending.outcome.is_none() {
        anyhow::bail!("the turn stopped before it completed");
    }
    Ok(ending)
}

/// Asks on the terminal what the turn waits on: a yes or no to an approval (anything but
/// a yes declines), the answer to a question (nothing declines to answer), or the code the
/// sign-in page showed for an account link (a no skips it; anything else is asked again).
/// `None` when input has ended: the turn is left waiting.
async fn ask_user(kind: InterruptionKind) -> anyhow::Result<Option<Answer>> {
    loop {
        match kind {
            InterruptionKind::Approval => eprint!("Approve? [y/N] "),
            InterruptionKind::Question => eprint!("Your answer (empty to decline): "),
            InterruptionKind::AccountLink => {
                eprint!("The code the sign-in page shows (or no to skip): ")
            }
        }
        let _ = io::stderr().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            io::stdin().read_line(&mut line).map(|n| (n, line))
        })
        .await
        .context("reading the answer")?
        .context("reading the answer")?;
        let (read, text) = line;
        if read == 0 {
            return Ok(None);
        }
        let text = text.trim();
        let answer = match kind {
            InterruptionKind::Approval => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "approve" => Answer::Approve,
                _ => Answer::Decline,
            },
            InterruptionKind::Question if text.is_empty() => Answer::Decline,
            InterruptionKind::Question => Answer::Text(text.to_owned()),
            InterruptionKind::AccountLink => match text.to_ascii_lowercase().as_str() {
                "n" | "no" | "skip" => Answer::Decline,
                _ => match baton_core::interruption::link_code(text) {
                    Some(code) => Answer::Text(code),
                    None => {
                        eprintln!(
                            "That is not the code: it has 6 digits, and the page shows it once you have signed in."
                        );
                        continue;
                    }
                },
            },
        };
        return Ok(Some(answer));
    }
}

/// The face `baton chat`'s turns come through, as the record names it.
const FACE: &str = "chat";

struct Chat<'a> {
    runtime: Runtime,
    settings: &'a Settings,
    /// The conversation the next turn continues.
    episode: Option<String>,
    /// Specialists every turn must consult.
    must_consult: Vec<String>,
    /// The Direct Line mode, when the flag overrides the card's.
    direct_line_mode: Option<DirectMode>,
    /// Pictures for the next turn (`--image`).
    pictures: Vec<baton_core::picture::Bytes>,
}

impl Chat<'_> {
    /// Runs one turn, showing its events; the conversation continues from it.
    async fn turn<W: Write>(
        &mut self,
        text: String,
        renderer: &mut Renderer<W>,
    ) -> anyhow::Result<Ending> {
        let request = TurnRequest {
            principal: self.settings.principal.clone(),
            episode_id: self.episode.clone(),
            conversation: None,
            turn_id: None,
            text,
            locale: None,
            location: None,
            direct_line_mode: self.direct_line_mode,
            must_consult: self.must_consult.clone(),
            resume: None,
            // As on the conversational faces: in a conversation that waits for the user
            // (left waiting, or cut off by a crash), the next message is the reply.
            reply_in_words: true,
            face: FACE,
            message_id: None,
            pictures: std::mem::take(&mut self.pictures),
        };
        let mut stream = self.runtime.run_turn(request).await.map_err(|r| {
            if r.kind == RejectionKind::Unavailable {
                // Before a turn runs, the only dependency that can be down is the store: say
                // which one.
                let store = self.settings.store_in_words();
                anyhow::Error::new(r).context(format!("using {store}"))
            } else {
                anyhow::Error::new(r)
            }
        })?;
        self.episode = Some(stream.episode_id.clone());
        let episode = stream.episode_id.clone();
        let mut turn_id = stream.turn_id.clone();
        let mut ending = show(&mut stream, renderer).await?;
        // D-36: a turn that waits for the user asks on the terminal, and goes on with the
        // answer, as often as it asks.
        while ending.outcome == Some(TurnOutcome::AwaitingUser) {
            let Some((interruption_id, kind)) = ending.interruption.clone() else {
                break;
            };
            let Some(answer) = ask_user(kind).await? else {
                eprintln!(
                    "(left waiting: answer it with `baton chat --episode {episode} \"yes\"` (or \"no\"), from the console, or POST /v1/turns/{turn_id}/resume)"
                );
                break;
            };
            let reply = Reply {
                interruption_id,
                answer,
            };
            let answering = TurnRequest {
                episode_id: Some(episode.clone()),
                resume: Some(Resume {
                    turn_id: turn_id.clone(),
                    reply,
                }),
                face: FACE,
                ..TurnRequest::new(self.settings.principal.clone(), String::new())
            };
            let mut resumed = self.runtime.run_turn(answering).await?;
            turn_id = resumed.turn_id.clone();
            ending = show(&mut resumed, renderer).await?;
        }
        Ok(ending)
    }

    async fn interactive<W: Write>(
        &mut self,
        renderer: &mut Renderer<W>,
    ) -> anyhow::Result<ExitCode> {
        if let Some(episode) = &self.episode {
            // Refuse an unknown conversation before the first prompt, not after it.
            self.runtime
                .history(&self.settings.principal, episode)
                .await?;
        }
        let mut editor = DefaultEditor::new().context("starting the line editor")?;
        let history = self.settings.data_dir.join(HISTORY_FILE);
        // A missing history file is the normal first run.
        let _ = editor.load_history(&history);
        if io::stdin().is_terminal() {
            eprintln!("{HELP}");
        }
        loop {
            let (back, line) = tokio::task::spawn_blocking(move || {
                let line = editor.readline("you> ");
                (editor, line)
            })
            .await
            .context("reading input")?;
            editor = back;
            let line = match line {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e).context("reading input"),
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let _ = editor.add_history_entry(line);
            match line {
                "/exit" | "/quit" => break,
                "/new" => {
                    self.episode = None;
                    eprintln!("(a new conversation starts with your next message)");
                    continue;
                }
                "/help" => {
                    eprintln!("{HELP}");
                    continue;
                }
                _ => {}
            }
            if let Err(e) = self.turn(line.to_owned(), renderer).await {
                renderer.stop_spinner();
                let Some(rejection) = e.downcast_ref::<TurnRejection>() else {
                    return Err(e);
                };
                if rejection.kind == RejectionKind::NotFound {
                    self.episode = None;
                }
                eprintln!("error: {e:#}");
            }
        }
        if let Err(e) = editor.save_history(&history) {
            tracing::warn!(error = %e, path = %history.display(), "chat history not saved");
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A turn that could not be answered fails the command; a limited one does not.
fn exit_code(ending: &Ending) -> ExitCode {
    match ending.outcome {
        Some(TurnOutcome::Answered | TurnOutcome::Limited | TurnOutcome::AwaitingUser) => {
            ExitCode::SUCCESS
        }
        Some(TurnOutcome::Failed | TurnOutcome::Canceled) | None => ExitCode::FAILURE,
    }
}
