//! Checking a turn request, claiming the turn, and starting it on its own task; a turn id
//! already completed is replayed from its record.

use std::sync::Arc;

use baton_core::events::{
    Event, InterruptionView, PROTOCOL_VERSION, SOURCE_NOTE, SOURCE_ORCHESTRATOR, WireEvent,
};
use baton_core::picture::{Picture, PictureError};
use baton_core::ports::store::{Claim, ClaimMismatch, ClaimRequest};
use baton_core::turn::{TurnOutcome, TurnRecord};
use tokio::runtime::Handle;
use tracing::Instrument as _;

use super::context::TurnCtx;
use super::output::Output;
use super::turn;
use crate::request::{RejectionKind, TurnRejection, TurnRequest, store_rejection};
use crate::services::Inner;
use crate::stream::{FinishOnDrop, Outbox, Pushed, TurnStream};

const MAX_ID_CHARS: usize = 128;

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Checks a turn request, claims the turn, and starts it. A new episode takes the id
/// `new_episode_id` when one is given, else a fresh one.
pub(crate) async fn start(
    inner: Arc<Inner>,
    mut request: TurnRequest,
    new_episode_id: Option<String>,
) -> Result<TurnStream, TurnRejection> {
    let text = request.text.trim().to_owned();
    // A picture may come alone: it is the message.
    if text.is_empty() && request.pictures.is_empty() {
        return Err(TurnRejection::new(
            RejectionKind::Invalid,
            "The message is empty; please type something.",
        ));
    }
    if !request.pictures.is_empty()
        && inner.config.blind_pictures == crate::config::BlindPictures::Refuse
        && !inner.entry.model.capabilities.pictures
    {
        return Err(TurnRejection::new(
            RejectionKind::Invalid,
            "This assistant cannot see pictures; please say in words what the picture shows.",
        ));
    }
    let chars = text.chars().count();
    let max = inner.config.max_message_chars;
    if chars > max {
        return Err(TurnRejection::new(
            RejectionKind::TooLarge,
            format!("The message is too long ({chars} characters; the limit is {max})."),
        ));
    }
    for (what, id) in [
        ("episode id", &request.episode_id),
        ("episode id", &new_episode_id),
        ("turn id", &request.turn_id),
    ] {
        if let Some(id) = id
            && !valid_id(id)
        {
            return Err(TurnRejection::new(
                RejectionKind::Invalid,
                format!(
                    "The {what} is not valid: use up to {MAX_ID_CHARS} letters, digits, '-', '_', '.' or ':'."
                ),
            ));
        }
    }
    // D-22: a required specialist must be one this orchestrator can consult.
    let subs = inner
        .entry
        .orchestration
        .as_ref()
        .map(|o| o.sub_agents.as_slice())
        .unwrap_or_default();
    let unknown: Vec<&str> = request
        .must_consult
        .iter()
        .filter(|id| !subs.iter().any(|s| &**s == id.as_str()))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() && subs.is_empty() {
        return Err(TurnRejection::new(
            RejectionKind::Invalid,
            "This assistant plans its work from skills and has no fixed specialists to consult; send the message without must-consult.",
        ));
    }
    if !unknown.is_empty() {
        let known: Vec<&str> = subs.iter().map(|s| &**s).collect();
        return Err(TurnRejection::new(
            RejectionKind::Invalid,
            format!(
                "This assistant has no specialist called {}; it has {}.",
                unknown.join(", "),
                known.join(", ")
            ),
        ));
    }
    let pictures = take_pictures(&inner, std::mem::take(&mut request.pictures)).await?;
    let turn_id = request
        .turn_id
        .clone()
        .unwrap_or_else(|| format!("t_{}", uuid::Uuid::new_v4().simple()));
    let fingerprint = TurnRequest {
        text: text.clone(),
        ..request.clone()
    }
    .fingerprint(&pictures);
    let claim = ClaimRequest {
        fingerprint: fingerprint.clone(),
        principal: request.principal.clone(),
        episode_id: request.episode_id.clone(),
        new_episode_id: new_episode_id
            .unwrap_or_else(|| format!("ep_{}", uuid::Uuid::new_v4().simple())),
        turn_id: turn_id.clone(),
        now_ms: inner.clock.now_ms(),
        lease_ms: inner.config.lease_ms,
    };
    let outbox = Arc::new(Outbox::new(inner.config.output));
    let tasks = Handle::try_current().map_err(|_| {
        tracing::error!("run_turn was called outside a tokio runtime");
        TurnRejection::new(
            RejectionKind::Unavailable,
            "The assistant is not running properly; please try again later.",
        )
    })?;
    // Claimed and launched on a task of its own: a caller that leaves while the claim is
    // being made must not leave behind a claim that no turn will ever finish.
    // The caller's span, if any (a request continuing a remote trace, D-33), becomes the
    // parent of the turn's.
    let launched = tasks.spawn(
        launch(
            inner,
            claim,
            TurnRequest { text, ..request },
            pictures,
            outbox,
            tasks.clone(),
        )
        .instrument(tracing::Span::current()),
    );
    launched.await.map_err(|e| {
        tracing::error!(error = %e, "launching a turn failed");
        TurnRejection::new(
            RejectionKind::Unavailable,
            "The assistant is not running properly; please try again later.",
        )
    })?
}

/// Takes the request's pictures (D-42): each checked and stripped on a blocking thread,
/// at most `picture_checks` at once in the process, so that decoding neither stalls the
/// async threads nor takes memory beyond that bound.
async fn take_pictures(
    inner: &Inner,
    sent: Vec<baton_core::picture::Bytes>,
) -> Result<Vec<Picture>, TurnRejection> {
    if sent.is_empty() {
        return Ok(Vec::new());
    }
    let limits = inner.config.pictures;
    let sizes: Vec<usize> = sent.iter().map(|b| b.len()).collect();
    if let Err(e) = baton_core::picture::within_turn(&sizes, &limits) {
        return Err(TurnRejection::new(
            RejectionKind::TooLarge,
            format!("The pictures were not taken: {e}."),
        ));
    }
    let busy = || {
        TurnRejection::new(
            RejectionKind::Unavailable,
            "The pictures could not be checked just now; please try again.",
        )
    };
    let mut taken = Vec::with_capacity(sent.len());
    for (n, bytes) in sent.into_iter().enumerate() {
        let permit = inner
            .picture_checks
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| busy())?;
        let picture = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            baton_core::picture::take(&bytes, &limits)
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "checking a picture failed");
            busy()
        })?;
        match picture {
            Ok(picture) => taken.push(picture),
            Err(e) => {
                let kind = match e {
                    PictureError::TooLarge { .. } | PictureError::TooManyPixels { .. } => {
                        RejectionKind::TooLarge
                    }
                    _ => RejectionKind::Invalid,
                };
                let mut why = e.to_string();
                if let Some(first) = why.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
                return Err(TurnRejection::new(
                    kind,
                    format!("Picture {} was not taken. {why}.", n + 1),
                ));
            }
        }
    }
    Ok(taken)
}

/// Claims the turn and, when it may run, starts it on its own task.
async fn launch(
    inner: Arc<Inner>,
    claim: ClaimRequest,
    request: TurnRequest,
    pictures: Vec<Picture>,
    outbox: Arc<Outbox>,
    tasks: Handle,
) -> Result<TurnStream, TurnRejection> {
    let turn_id = claim.turn_id.clone();
    let fingerprint = claim.fingerprint.clone();
    match inner.store.claim(claim).await.map_err(store_rejection)? {
        Claim::Claimed(meta) => {
            let episode_id = meta.episode_id.clone();
            let turn: Arc<str> = Arc::from(turn_id.as_str());
            let (watch, _) = tokio::sync::broadcast::channel(super::output::WATCH_BACKLOG);
            let mut ctx = TurnCtx::new(
                inner.clone(),
                request,
                Arc::from(episode_id.as_str()),
                turn.clone(),
                Output::new(turn, outbox.clone(), inner.privacy.clone(), watch.clone()),
            );
            ctx.ids.fingerprint = fingerprint;
            ctx.out.pictures_stripped(&pictures);
            ctx.asked.pictures = pictures;
            let running = inner
                .running
                .register(&ctx.ids.principal, &episode_id, &turn_id, watch);
            ctx.cancel = running.token();
            // The orchestrator's own `invoke_agent` span covers the whole turn.
            // The conversation is the episode; the principal appears only as a pseudonym.
            // What the turn came to is recorded at its end (`finish`).
            let span = tracing::info_span!(
                "invoke_agent",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = %inner.entry.id,
                gen_ai.conversation.id = %episode_id,
                turn_id = %turn_id,
                episode_id = %episode_id,
                baton.principal = %ctx.ids.principal.pseudonym(),
                baton.outcome = tracing::field::Empty,
                baton.consulted = tracing::field::Empty,
                baton.composition = tracing::field::Empty,
                baton.guards = tracing::field::Empty,
                baton.intent_count = tracing::field::Empty,
                gen_ai.input.messages = tracing::field::Empty,
                gen_ai.output.messages = tracing::field::Empty,
            );
            // The turn runs on its own task, so it goes on (and commits) however its
            // reader behaves: reading slowly, not at all, or leaving.
            let finished = FinishOnDrop(outbox.clone());
            // Boxed: the task then holds a pointer, not a copy of the turn's large future.
            let driver = Box::pin(turn::run(Box::new(ctx), Box::new(meta)).instrument(span));
            drop(tasks.spawn(async move {
                let _finished = finished;
                let _running = running;
                driver.await;
            }));
            Ok(TurnStream {
                turn_id,
                episode_id,
                replay: false,
                events: outbox,
                taken: Default::default(),
            })
        }
        Claim::Completed(record) => {
            let episode_id = record.episode_id.clone();
            // A turn that paused and still waits asks again: a client that lost the
            // stream finds the question by replaying it (D-36).
            let waiting = if record.outcome == TurnOutcome::AwaitingUser {
                still_waiting(&inner, &request.principal, &record).await
            } else {
                None
            };
            replay(*record, waiting, &outbox);
            outbox.finish();
            Ok(TurnStream {
                turn_id,
                episode_id,
                replay: true,
                events: outbox,
                taken: Default::default(),
            })
        }
        Claim::InFlight => Err(TurnRejection::new(
            RejectionKind::InFlight,
            "That turn has started and has not finished yet; wait for it to finish. If it was interrupted, send it again in a few minutes and it will run again.",
        )),
        Claim::Mismatch(mismatch) => Err(TurnRejection::new(
            RejectionKind::Mismatch,
            match mismatch {
                ClaimMismatch::Episode { episode_id } => format!(
                    "Turn id {turn_id} was already used in another conversation ({episode_id}); use a new turn id for a new message."
                ),
                ClaimMismatch::Request { differs } => format!(
                    "Turn id {turn_id} was already used for a request with a different {}; use a new turn id for a new message, or send the same request to retry.",
                    differences(&differs)
                ),
            },
        )),
        Claim::Busy => Err(TurnRejection::new(
            RejectionKind::Busy,
            "Another turn is in progress on this conversation; try again when it finishes.",
        )),
    }
}

/// The parts of a request that differ, in words: "message", "locale and location" …
fn differences(differs: &[String]) -> String {
    match differs {
        [] => "message or options".to_owned(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} and {last}", first.join(", ")),
    }
}

/// What the paused turn `record` still waits for, if the episode still waits on it.
async fn still_waiting(
    inner: &Inner,
    principal: &baton_core::Principal,
    record: &TurnRecord,
) -> Option<InterruptionView> {
    let meta = match inner.store.episode(principal, &record.episode_id).await {
        Ok(meta) => meta,
        Err(e) => {
            tracing::warn!(error = %e, "the episode of a replayed paused turn could not be read");
            return None;
        }
    };
    let awaiting = meta.state.awaiting?;
    (awaiting.turn_id == record.turn_id).then(|| InterruptionView::from(&awaiting.interruption))
}

/// Replays a completed turn's stored answer (D-25): nothing runs again. The stored texts
/// already passed the privacy guard; so did what a paused turn still waits for.
fn replay(record: TurnRecord, waiting: Option<InterruptionView>, outbox: &Outbox) {
    let turn_id: Arc<str> = Arc::from(record.turn_id.as_str());
    let mut events = vec![
        Event::Thinking {},
        Event::ResponseId {
            response_id: record.turn_id.clone(),
            episode_id: record.episode_id.clone(),
        },
    ];
    match &record.direct {
        Some(direct) => {
            for answer in &direct.answers {
                events.push(Event::DelegatedAnswer {
                    agent: answer.agent_id.clone(),
                    label: answer.label.clone(),
                    status: answer.status,
                    text: answer.text.clone(),
                });
            }
            if let Some(note) = &direct.note {
                events.push(Event::Text {
                    source: SOURCE_NOTE.to_owned(),
                    text: note.clone(),
                });
            }
        }
        None => events.push(Event::Text {
            source: SOURCE_ORCHESTRATOR.to_owned(),
            text: record.narration.clone(),
        }),
    }
    if let Some(view) = waiting {
        events.push(Event::Interruption(Box::new(view)));
    }
    events.extend([
        Event::AgentsConsulted {
            footer: baton_core::consulted::footer_with(&record.consulted, &record.routing.memories),
            agents: record.consulted.clone(),
            memories: record.routing.memories.clone(),
        },
        Event::Usage {
            models: record.usage.clone(),
            cost_usd: record.cost_usd,
        },
        Event::Completed {
            outcome: record.outcome,
            privacy: record.privacy.clone(),
        },
    ]);
    for (i, event) in events.into_iter().enumerate() {
        let wire = WireEvent {
            v: PROTOCOL_VERSION,
            turn_id: turn_id.clone(),
            seq: i as u64 + 1,
            event,
        };
        if outbox.push(wire) == Pushed::Closed {
            return;
        }
    }
}
