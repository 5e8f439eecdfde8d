//! What every task of one turn shares, in parts that say what a stage touches: who asks
//! and under which ids (`TurnIds`), what was asked and what the models are told (`Asked`),
//! what the turn may still spend (`Budget`), what it started (`JobLog`), and the turn's
//! output and routing record.

use std::sync::{Arc, Mutex};

use baton_core::Principal;
use baton_core::directive::DirectMode;
use baton_core::memory::EpisodeSummary;
use baton_core::prompt::DynamicContext;
use baton_core::registry::Agent;
use baton_core::trace::RoutingRecord;
use baton_core::turn::TurnRecord;

use super::budget::Budget;
use super::job_log::JobLog;
use super::output::Output;
use crate::request::TurnRequest;
use crate::services::Inner;

/// The turn-wide context handed to every sub-agent (D-17, D-29).
pub(crate) struct TurnCtx {
    pub(crate) inner: Arc<Inner>,
    pub(crate) orchestrator: Arc<Agent>,
    pub(crate) ids: TurnIds,
    pub(crate) asked: Asked,
    pub(crate) out: Output,
    pub(crate) trace: Mutex<RoutingRecord>,
    pub(crate) budget: Budget,
    pub(crate) jobs: JobLog,
    /// When the turn started running (for its latency metric).
    pub(crate) started: tokio::time::Instant,
    /// Whether a sub-agent may stop for the user: a routed turn (not a Direct Line one, not
    /// a planned one) can wait; elsewhere a call that needs approval is held back.
    pub(crate) pausable: bool,
    /// Fires when the turn's caller stops it (`Runtime::cancel_turn`).
    pub(crate) cancel: tokio_util::sync::CancellationToken,
}

/// Who asks, and the ids the turn's records and acts go under.
pub(crate) struct TurnIds {
    pub(crate) principal: Principal,
    pub(crate) episode_id: Arc<str>,
    pub(crate) turn_id: Arc<str>,
    /// The turn id that tool calls' idempotency keys derive from (D-36): the turn's own,
    /// or, when it resumes a wait, the id that the wait's reply resumes under, whatever
    /// id the face gave it, so an act run again carries the same key.
    pub(crate) acts_under: Option<Arc<str>>,
    /// The face the turn came through (for the record of an answer).
    pub(crate) face: &'static str,
    /// The client's own id for the message, kept in the record.
    pub(crate) message_id: Option<String>,
    /// What the request asked, hashed (kept with the record for idempotency checks).
    pub(crate) fingerprint: String,
}

impl TurnIds {
    /// The turn id tool calls' idempotency keys derive from.
    pub(crate) fn acts_under(&self) -> &str {
        self.acts_under.as_deref().unwrap_or(&self.turn_id)
    }
}

/// What the user asked, with what the models are told beside it.
pub(crate) struct Asked {
    pub(crate) user_text: String,
    pub(crate) locale: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) date: String,
    /// What compaction wrote for the episode; `history` holds only the turns after it.
    pub(crate) summary: Option<EpisodeSummary>,
    pub(crate) history: Vec<TurnRecord>,
    /// The request's Direct Line mode, overriding the card's.
    pub(crate) direct_mode: Option<DirectMode>,
    /// Specialists the request says this turn must consult.
    pub(crate) must_consult: Vec<String>,
    /// The user's reply this turn resumes with (D-36).
    pub(crate) resume: Option<baton_core::interruption::Reply>,
    /// Whether the user's message may itself answer what the episode waits on.
    pub(crate) reply_in_words: bool,
    /// The pictures sent with the message, taken (D-42).
    pub(crate) pictures: Vec<baton_core::picture::Picture>,
    /// The block of memories from earlier conversations relevant to the message, for the
    /// orchestrator only (D-43).
    pub(crate) memory: Option<String>,
}

impl TurnCtx {
    /// The context of the turn `request` asks for (its text already checked and trimmed).
    pub(crate) fn new(
        inner: Arc<Inner>,
        request: TurnRequest,
        episode_id: Arc<str>,
        turn_id: Arc<str>,
        out: Output,
    ) -> Self {
        let orchestrator = inner.entry.clone();
        let orch = orchestrator.orchestration.as_ref();
        let mut trace = RoutingRecord::default();
        if let Some(o) = orch {
            trace.cap = o.fanout_cap;
            trace.composition = Some(o.composition);
        }
        let budget = Budget::new(orch.map(|o| o.limits).unwrap_or_default());
        let date = baton_core::prompt::civil_date(inner.clock.now_ms());
        TurnCtx {
            inner,
            orchestrator,
            ids: TurnIds {
                principal: request.principal,
                episode_id,
                turn_id,
                acts_under: None,
                face: request.face,
                message_id: request.message_id,
                fingerprint: String::new(),
            },
            asked: Asked {
                user_text: request.text,
                locale: request.locale,
                location: request.location,
                date,
                summary: None,
                history: Vec::new(),
                direct_mode: request.direct_line_mode,
                must_consult: request.must_consult,
                resume: request.resume.map(|r| r.reply),
                reply_in_words: request.reply_in_words,
                pictures: Vec::new(),
                memory: None,
            },
            out,
            trace: Mutex::new(trace),
            budget,
            jobs: JobLog::default(),
            pausable: false,
            started: tokio::time::Instant::now(),
            cancel: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// The per-request dynamic context (after the cache point) of the orchestrator's
    /// requests: with the conversation's summary and the user's relevant memories.
    pub(crate) fn dynamic(&self) -> DynamicContext<'_> {
        DynamicContext {
            summary: self.asked.summary.as_ref().map(|s| s.text.as_str()),
            memory: self.asked.memory.as_deref(),
            ..self.dynamic_for(None)
        }
    }

    /// The dynamic context of a specialist's requests: with its own summary only (D-17).
    pub(crate) fn dynamic_for(&self, agent_id: Option<&str>) -> DynamicContext<'_> {
        let asked = &self.asked;
        DynamicContext {
            date: &asked.date,
            locale: asked.locale.as_deref(),
            location: asked.location.as_deref(),
            user_id: self.ids.principal.as_str(),
            summary: agent_id
                .and_then(|id| asked.summary.as_ref()?.agents.get(id))
                .map(String::as_str),
            memory: None,
        }
    }

    /// Edits the routing record.
    pub(crate) fn trace<R>(&self, f: impl FnOnce(&mut RoutingRecord) -> R) -> Option<R> {
        edit(&self.trace, f)
    }

    /// Takes one model or tool call from the episode's sliding window (D-15): false when
    /// it already holds `episode_max_calls`, so a turn that starts near the end of it
    /// cannot run past it. Recorded as the turn's limit.
    pub(crate) fn take_window_call(&self) -> bool {
        let ok = self.budget.take_window_call();
        if !ok {
            self.trace(|t| {
                t.limit
                    .get_or_insert(baton_core::trace::LimitHit::EpisodeRate);
            });
        }
        ok
    }

    /// The message's pictures that go with it when the runtime, not the orchestrator, hands
    /// the user's message to `agent` (the Direct Line, a fallback, an obligation): all of
    /// them to a card that takes pictures, none to another (D-42).
    pub(crate) fn all_pictures_for(&self, agent: &baton_core::registry::Agent) -> Vec<usize> {
        if agent.takes_pictures {
            (0..self.asked.pictures.len()).collect()
        } else {
            Vec::new()
        }
    }

    /// The label of a card.
    pub(crate) fn label_of(&self, agent_id: &str) -> String {
        self.inner
            .registry
            .agent(agent_id)
            .map(|a| a.label.to_string())
            .unwrap_or_else(|| agent_id.to_owned())
    }
}

/// Edits a routing record that stages share (nothing, when a panic poisoned it).
pub(crate) fn edit<R>(
    trace: &Mutex<RoutingRecord>,
    f: impl FnOnce(&mut RoutingRecord) -> R,
) -> Option<R> {
    trace.lock().ok().map(|mut t| f(&mut t))
}
