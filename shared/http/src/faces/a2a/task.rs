//! One turn as one A2A task: its id, the stream of task events a turn's events become,
//! and the task read back from a committed turn.
//!
//! - The task id names the context and the turn: `<context, base64url>.<turn id>`, so a
//!   later `GetTask` or `CancelTask` finds the episode (`Principal::episode_for(context)`)
//!   from the id alone, under the caller's own principal. Another principal's task id
//!   leads to an episode of theirs that does not exist: "not found".
//! - The turn id is derived from the episode and the message id, so a message sent twice
//!   is replayed, not run twice (D-25).

use std::collections::HashMap;

use a2a::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use baton_core::Principal;
use baton_core::events::Event;
use baton_core::interruption::InterruptionKind;
use baton_core::turn::TurnOutcome;
use baton_runtime::history::{HistoryTurn, PendingInterruption};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::faces::answer::AnswerText;
use crate::faces::summary::TurnSummary;

/// The metadata key under which a task carries the consulted record and the privacy
/// receipt.
pub(crate) const METADATA_KEY: &str = "baton";

/// Where a task lives: the client's context, its episode, and the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskRef {
    pub(crate) context_id: String,
    pub(crate) episode_id: String,
    pub(crate) turn_id: String,
}

impl TaskRef {
    /// The task a message `message_id` in `context_id` starts for `principal`.
    pub(crate) fn new(principal: &Principal, context_id: &str, message_id: &str) -> Self {
        let episode_id = principal.episode_for(context_id);
        let mut hasher = Sha256::new();
        hasher.update(episode_id.as_bytes());
        hasher.update([0u8]);
        hasher.update(message_id.as_bytes());
        let digest = hasher.finalize();
        let turn_id = format!("a2a-{}", URL_SAFE_NO_PAD.encode(&digest[..16]));
        TaskRef {
            context_id: context_id.to_owned(),
            episode_id,
            turn_id,
        }
    }

    /// The task id `id` names, for `principal`; `None` when it is not one of ours.
    pub(crate) fn parse(principal: &Principal, id: &str) -> Option<Self> {
        let (context, turn_id) = id.split_once('.')?;
        let context = URL_SAFE_NO_PAD.decode(context).ok()?;
        let context_id = String::from_utf8(context).ok()?;
        if !turn_id.starts_with("a2a-") {
            return None;
        }
        Some(TaskRef {
            episode_id: principal.episode_for(&context_id),
            context_id,
            turn_id: turn_id.to_owned(),
        })
    }

    /// The task id.
    pub(crate) fn task_id(&self) -> String {
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(self.context_id.as_bytes()),
            self.turn_id
        )
    }
}

/// A task's state for a turn's outcome. A limited turn answered what it could and offered
/// to go on: complete.
pub(crate) fn state_of(outcome: TurnOutcome) -> TaskState {
    match outcome {
        TurnOutcome::Answered | TurnOutcome::Limited => TaskState::Completed,
        TurnOutcome::Failed => TaskState::Failed,
        TurnOutcome::Canceled => TaskState::Canceled,
        // The answer asks the user; the next message in the context goes on.
        TurnOutcome::AwaitingUser => TaskState::InputRequired,
    }
}

fn text_message(role: Role, id: String, task: &TaskRef, task_id: &str, text: &str) -> Message {
    Message {
        message_id: id,
        context_id: Some(task.context_id.clone()),
        task_id: Some(task_id.to_owned()),
        ..Message::new(role, vec![Part::text(text)])
    }
}

fn metadata(value: Value) -> Option<HashMap<String, Value>> {
    Some(HashMap::from([(METADATA_KEY.to_owned(), value)]))
}

/// A turn's events becoming task events.
#[derive(Debug)]
pub(crate) struct TaskRun {
    task: TaskRef,
    task_id: String,
    answer: AnswerText,
    /// Whether a chunk of the answer artifact went out.
    chunked: bool,
    /// The latest piece of a streamed answer, held until the next one or the end, so that
    /// the last chunk, marked so, carries text (an artifact has at least one part).
    held: Option<String>,
    /// The whole answer, for a call that is not streamed.
    kept: Option<String>,
    statuses: u32,
    summary: TurnSummary,
    terminal: Option<(TaskState, Value)>,
    /// What the turn waits for, once it asked.
    waits_for: Option<InterruptionKind>,
}

impl TaskRun {
    /// The run of `task`; `keep` holds the answer whole for a response that is not
    /// streamed.
    pub(crate) fn new(task: TaskRef, keep: bool) -> Self {
        TaskRun {
            task_id: task.task_id(),
            task,
            answer: AnswerText::default(),
            chunked: false,
            held: None,
            kept: keep.then(String::new),
            statuses: 0,
            summary: TurnSummary::default(),
            terminal: None,
            waits_for: None,
        }
    }

    fn artifact_id(&self) -> String {
        format!("{}-answer", self.task.turn_id)
    }

    fn status(
        &mut self,
        state: TaskState,
        text: Option<&str>,
        meta: Option<Value>,
    ) -> StreamResponse {
        self.statuses += 1;
        let message = text.map(|t| {
            let id = format!("{}-status-{}", self.task.turn_id, self.statuses);
            text_message(Role::Agent, id, &self.task, &self.task_id, t)
        });
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.task.context_id.clone(),
            status: TaskStatus {
                state,
                message,
                timestamp: None,
            },
            metadata: meta.and_then(metadata),
        })
    }

    fn chunk(&mut self, text: String, last: bool) -> StreamResponse {
        let append = self.chunked;
        self.chunked = true;
        let parts = vec![Part::text(text)];
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.task.context_id.clone(),
            artifact: Artifact {
                artifact_id: self.artifact_id(),
                name: Some("answer".to_owned()),
                description: None,
                parts,
                metadata: None,
                extensions: None,
            },
            append: Some(append),
            last_chunk: Some(last),
            metadata: None,
        })
    }

    /// The task as first announced: submitted, with the user's message.
    pub(crate) fn submitted(&self, user: &Message) -> StreamResponse {
        StreamResponse::Task(self.task_with(TaskState::Submitted, None, vec![user.clone()]))
    }

    fn task_with(&self, state: TaskState, meta: Option<Value>, history: Vec<Message>) -> Task {
        Task {
            id: self.task_id.clone(),
            context_id: self.task.context_id.clone(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: Some(history),
            metadata: meta.and_then(metadata),
        }
    }

    /// The task events `event` becomes (none, one or two).
    pub(crate) fn events(&mut self, event: &Event) -> Vec<StreamResponse> {
        let mut out = Vec::new();
        self.summary.take(event);
        if let Some(piece) = self.answer.piece(event) {
            if let Some(kept) = &mut self.kept {
                kept.push_str(&piece);
            } else if let Some(before) = self.held.replace(piece) {
                out.push(self.chunk(before, false));
            }
        }
        match event {
            Event::Thinking {} => out.push(self.status(TaskState::Working, None, None)),
            Event::Status { message, .. } => {
                out.push(self.status(TaskState::Working, Some(message), None));
            }
            Event::Error { .. } => {
                // An error may be the last event a client gets (a stream cut off for
                // falling behind): what is held goes out now.
                if let Some(held) = self.held.take() {
                    out.push(self.chunk(held, false));
                }
            }
            Event::Interruption(asked) => self.waits_for = Some(asked.kind),
            Event::Completed { outcome, .. } => {
                match self.held.take() {
                    Some(last) => out.push(self.chunk(last, true)),
                    // All went out before an error: the end is marked on its own.
                    None if self.chunked => out.push(self.chunk(String::new(), true)),
                    None => {}
                }
                let state = match (state_of(*outcome), self.waits_for) {
                    // The user must connect an account (the answer says where): A2A's own
                    // state for it; the next message on the task goes on.
                    (TaskState::InputRequired, Some(InterruptionKind::AccountLink)) => {
                        TaskState::AuthRequired
                    }
                    (state, _) => state,
                };
                let meta = self
                    .summary
                    .record(&self.task.turn_id, &self.task.episode_id);
                let words = matches!(state, TaskState::Failed | TaskState::Canceled)
                    .then(|| self.summary.failure_words());
                if self.kept.is_none() {
                    out.push(self.status(state.clone(), words.as_deref(), Some(meta.clone())));
                }
                self.terminal = Some((state, meta));
            }
            _ => {}
        }
        out
    }

    /// The whole task once the turn ended (for a call that is not streamed); a stream that
    /// ended without its last event is a failed task.
    pub(crate) fn into_task(mut self, user: &Message) -> Task {
        let (state, meta) = self.terminal.take().unwrap_or_else(|| {
            (
                TaskState::Failed,
                json!({ "turn_id": self.task.turn_id, "episode_id": self.task.episode_id }),
            )
        });
        let answer = self.kept.take().unwrap_or_default();
        let mut task = self.task_with(state.clone(), Some(meta), vec![user.clone()]);
        if matches!(state, TaskState::Failed | TaskState::Canceled) {
            let words = self.summary.failure_words();
            let id = format!("{}-status", self.task.turn_id);
            task.status.message = Some(text_message(
                Role::Agent,
                id,
                &self.task,
                &self.task_id,
                &words,
            ));
        }
        task.artifacts = Some(vec![answer_artifact(self.artifact_id(), answer)]);
        task
    }

    /// The task while its turn runs.
    pub(crate) fn working(task: &TaskRef) -> Task {
        TaskRun::new(task.clone(), false).task_with(TaskState::Working, None, Vec::new())
    }
}

fn answer_artifact(id: String, answer: String) -> Artifact {
    Artifact {
        artifact_id: id,
        name: Some("answer".to_owned()),
        description: None,
        parts: vec![Part::text(answer)],
        metadata: None,
        extensions: None,
    }
}

/// A committed turn read back as its task; `pending` is what its episode waits on now: a
/// turn that waits for an account to be connected reads back as it answered, in
/// `AUTH_REQUIRED`.
pub(crate) fn from_history(
    task: &TaskRef,
    turn: &HistoryTurn,
    pending: Option<&PendingInterruption>,
) -> Task {
    let state = match (state_of(turn.outcome), pending) {
        (TaskState::InputRequired, Some(p))
            if p.turn_id == turn.turn_id
                && p.interruption.kind == InterruptionKind::AccountLink =>
        {
            TaskState::AuthRequired
        }
        (state, _) => state,
    };
    let task_id = task.task_id();
    let user = text_message(
        Role::User,
        // The client's own id for its message, when the turn kept it.
        turn.message_id
            .clone()
            .unwrap_or_else(|| format!("{}-user", task.turn_id)),
        task,
        &task_id,
        &turn.user_text,
    );
    let meta = TurnSummary::committed(turn).record(&turn.turn_id, &task.episode_id);
    let status_message = matches!(state, TaskState::Failed | TaskState::Canceled).then(|| {
        text_message(
            Role::Agent,
            format!("{}-status", task.turn_id),
            task,
            &task_id,
            &turn.narration,
        )
    });
    Task {
        id: task_id.clone(),
        context_id: task.context_id.clone(),
        status: TaskStatus {
            state,
            message: status_message,
            // When its turn committed: what ListTasks orders and filters by.
            timestamp: i64::try_from(turn.created_ms)
                .ok()
                .and_then(chrono::DateTime::from_timestamp_millis),
        },
        artifacts: Some(vec![answer_artifact(
            format!("{}-answer", task.turn_id),
            turn.narration.clone(),
        )]),
        history: Some(vec![user]),
        metadata: metadata(meta),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_id_finds_its_context_and_turn_under_its_principal_only() {
        let alice = Principal::new("alice").unwrap();
        let mallory = Principal::new("mallory").unwrap();
        let task = TaskRef::new(&alice, "ctx one/two", "m-1");
        let id = task.task_id();
        assert_eq!(TaskRef::parse(&alice, &id), Some(task.clone()));
        let theirs = TaskRef::parse(&mallory, &id).unwrap();
        assert_ne!(theirs.episode_id, task.episode_id);
        // The same message in the same context is the same turn; another is another.
        assert_eq!(
            TaskRef::new(&alice, "ctx one/two", "m-1").turn_id,
            task.turn_id
        );
        assert_ne!(
            TaskRef::new(&alice, "ctx one/two", "m-2").turn_id,
            task.turn_id
        );
        assert_eq!(TaskRef::parse(&alice, "nonsense"), None);
        assert_eq!(TaskRef::parse(&alice, "!!.a2a-x"), None);
    }
}
