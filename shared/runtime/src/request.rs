//! What a caller hands the runtime for one turn, and how a turn can be refused before it
//! starts.

use baton_core::Principal;
use baton_core::directive::DirectMode;
use baton_core::interruption::Reply;
use baton_core::ports::store::{StoreError, request_fingerprint};

/// The face of a turn that came through the native HTTP API (and the console).
pub const FACE_API: &str = "api";

/// A client's own id for its conversation, and whether it was just made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// The id, as the client names it.
    pub id: String,
    /// The id was just made (a message that names no context): the episode is created
    /// without being looked for first.
    pub new: bool,
}

/// What a resuming turn answers: the waiting turn's id and the user's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The turn that waits (the id the interruption came with).
    pub turn_id: String,
    /// The reply.
    pub reply: Reply,
}

/// One user turn: a new one, one in a conversation, or the answer to one that waits.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The authenticated caller (from the auth context, never the body: D-30).
    pub principal: Principal,
    /// Episode to continue; `None` starts a new one (unless `conversation` names it).
    pub episode_id: Option<String>,
    /// The client's own id for its conversation (an AG-UI thread, an A2A context), when
    /// its face has one: the turn goes on the episode [`Principal::episode_for`] names,
    /// which the first turn creates; `episode_id` is then ignored.
    pub conversation: Option<Conversation>,
    /// Client-chosen idempotency key; generated when absent (D-25).
    pub turn_id: Option<String>,
    /// The user's message.
    pub text: String,
    /// Locale, e.g. `en-US`.
    pub locale: Option<String>,
    /// Coarse location.
    pub location: Option<String>,
    /// The Direct Line mode for this turn, overriding the orchestrator card's (D-21).
    pub direct_line_mode: Option<DirectMode>,
    /// Specialists this turn must consult (D-22), by id.
    pub must_consult: Vec<String>,
    /// The waiting turn this one answers and the user's reply (D-36): the turn resumes
    /// the wait (its id and its text come from the wait, not from `turn_id` and `text`).
    pub resume: Option<Resume>,
    /// Whether the message itself may answer what the episode waits on (D-36): a face that
    /// only carries the next message (chat completions, an MCP conversation) takes it as
    /// the reply when its words answer the wait; otherwise it is a turn of its own.
    pub reply_in_words: bool,
    /// The face the turn came through (`api`, `chat`, `a2a`, `ag-ui`, `openai`, `mcp`):
    /// the record of an answered interruption names it.
    pub face: &'static str,
    /// The client's own id for the message (A2A's `messageId`), when its face has one:
    /// the turn's record keeps it, and reading the turn back names the message by it.
    pub message_id: Option<String>,
    /// Pictures sent with the message, as the face received them: checked and stripped
    /// before the turn is claimed (D-42).
    pub pictures: Vec<baton_core::picture::Bytes>,
}

impl TurnRequest {
    /// What this request asks, hashed: its message and every option that changes what
    /// runs (see [`request_fingerprint`]).
    /// `pictures` are the request's pictures as taken (D-42): the same photo sent again
    /// is the same request, however its hidden data differed.
    pub fn fingerprint(&self, pictures: &[baton_core::picture::Picture]) -> String {
        let mut must: Vec<&str> = self.must_consult.iter().map(String::as_str).collect();
        must.sort_unstable();
        must.dedup();
        let must = must.join(",");
        let reply = self
            .resume
            .as_ref()
            .map(|r| format!("{}:{}", r.reply.interruption_id, r.reply.answer.as_str()))
            .unwrap_or_default();
        let mode = self
            .direct_line_mode
            .map(|m| format!("{m:?}"))
            .unwrap_or_default();
        let mut parts = vec![
            ("message", self.text.as_str()),
            ("locale", self.locale.as_deref().unwrap_or_default()),
            ("location", self.location.as_deref().unwrap_or_default()),
            ("Direct Line mode", &mode),
            ("required specialists", &must),
        ];
        // Only a resume has a reply: other turns keep the fingerprints they always had.
        if self.resume.is_some() {
            parts.push(("reply", &reply));
        }
        let shas: Vec<&str> = pictures.iter().map(|p| p.sha256.as_str()).collect();
        let shas = shas.join(",");
        if !pictures.is_empty() {
            parts.push(("pictures", &shas));
        }
        request_fingerprint(&parts)
    }

    /// A turn of `text` by `principal` that starts a new episode, with nothing else set.
    pub fn new(principal: Principal, text: impl Into<String>) -> Self {
        TurnRequest {
            principal,
            episode_id: None,
            conversation: None,
            turn_id: None,
            text: text.into(),
            locale: None,
            location: None,
            direct_line_mode: None,
            must_consult: Vec::new(),
            resume: None,
            reply_in_words: false,
            face: FACE_API,
            message_id: None,
            pictures: Vec::new(),
        }
    }
}

/// Why a turn was refused before it started. Safe to show: `message` is plain language.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TurnRejection {
    /// What kind of refusal (maps to an HTTP status or exit code).
    pub kind: RejectionKind,
    /// Plain-language explanation.
    pub message: String,
}

/// Kinds of refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionKind {
    /// The request is malformed (empty message, bad id ...).
    Invalid,
    /// The message is over the configured size limit.
    TooLarge,
    /// No such episode for this caller.
    NotFound,
    /// This turn id is running right now.
    InFlight,
    /// Another turn is running on this episode.
    Busy,
    /// This turn id was already used for a different request.
    Mismatch,
    /// The store or another dependency is unavailable; try again later.
    Unavailable,
}

impl TurnRejection {
    pub(crate) fn new(kind: RejectionKind, message: impl Into<String>) -> Self {
        TurnRejection {
            kind,
            message: message.into(),
        }
    }
}

/// The plain-words rejection for a store failure; the detail goes to the log.
pub(crate) fn store_rejection(e: StoreError) -> TurnRejection {
    match e {
        StoreError::NotFound => {
            TurnRejection::new(RejectionKind::NotFound, "That conversation was not found.")
        }
        StoreError::Conflict => TurnRejection::new(
            RejectionKind::Busy,
            "A turn is in progress on this conversation; try again in a moment.",
        ),
        StoreError::Unavailable(detail) | StoreError::Corrupt(detail) => {
            tracing::error!(%detail, "store failure");
            TurnRejection::new(
                RejectionKind::Unavailable,
                "Conversation storage is unavailable right now; please try again shortly.",
            )
        }
    }
}
