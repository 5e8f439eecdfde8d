//! A2A stream events turned into the upstream port's events: the pure part of the
//! connector, checked event by event. The task's context is the conversation; status
//! updates are progress; text artifacts and messages are the answer; the final state is
//! the outcome (`INPUT_REQUIRED`: a question for the user, with the task kept open).

use ::a2a::{Message, Part, StreamResponse, TaskState};
use baton_core::ports::upstream::{UpstreamEnd, UpstreamError, UpstreamEvent};

/// Reads one exchange's events.
#[derive(Debug)]
pub(crate) struct Reader {
    /// The conversation being continued, if any: the answer must be for it.
    expected_context: Option<String>,
    /// The task being continued (it asked the user something), if any.
    expected_task: Option<String>,
    context: Option<String>,
    pub(crate) task: Option<String>,
    answer_bytes: usize,
    max_answer_bytes: usize,
    /// A final state was read: nothing after it is read.
    pub(crate) finished: bool,
}

impl Reader {
    pub(crate) fn new(
        expected_context: Option<String>,
        expected_task: Option<String>,
        max_answer_bytes: usize,
    ) -> Self {
        Reader {
            expected_context,
            expected_task,
            context: None,
            task: None,
            answer_bytes: 0,
            max_answer_bytes,
            finished: false,
        }
    }

    /// The port's events for one A2A event.
    ///
    /// # Errors
    /// An answer for another context or task, one too large, or the agent's own failure
    /// (failed, rejected, canceled, authorization required).
    pub(crate) fn read(
        &mut self,
        event: StreamResponse,
    ) -> Result<Vec<UpstreamEvent>, UpstreamError> {
        let mut out = Vec::new();
        match event {
            StreamResponse::Task(task) => {
                self.ids(&task.context_id, Some(&task.id), &mut out)?;
                for artifact in task.artifacts.iter().flatten() {
                    self.texts(&artifact.parts, &mut out)?;
                }
                self.state(
                    task.status.state,
                    task.status.message.as_ref(),
                    &task.id,
                    &mut out,
                )?;
            }
            StreamResponse::StatusUpdate(update) => {
                self.ids(&update.context_id, Some(&update.task_id), &mut out)?;
                self.state(
                    update.status.state,
                    update.status.message.as_ref(),
                    &update.task_id,
                    &mut out,
                )?;
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.ids(&update.context_id, Some(&update.task_id), &mut out)?;
                self.texts(&update.artifact.parts, &mut out)?;
            }
            StreamResponse::Message(message) => {
                let Some(context) = &message.context_id else {
                    return Err(UpstreamError::Invalid(
                        "its answer names no context".to_owned(),
                    ));
                };
                self.ids(context, message.task_id.as_ref(), &mut out)?;
                self.texts(&message.parts, &mut out)?;
                // A message instead of a task is the whole answer.
                self.finished = true;
            }
        }
        Ok(out)
    }

    /// Checks the event's context and task against what this exchange is about; the first
    /// context seen is the conversation.
    fn ids(
        &mut self,
        context: &str,
        task: Option<&String>,
        out: &mut Vec<UpstreamEvent>,
    ) -> Result<(), UpstreamError> {
        match &self.context {
            None => {
                if let Some(expected) = &self.expected_context
                    && expected != context
                {
                    return Err(UpstreamError::Invalid(
                        "it answered for another context".to_owned(),
                    ));
                }
                self.context = Some(context.to_owned());
                out.push(UpstreamEvent::Conversation(context.to_owned()));
            }
            Some(seen) if seen != context => {
                return Err(UpstreamError::Invalid(
                    "it answered for another context".to_owned(),
                ));
            }
            Some(_) => {}
        }
        if let Some(task) = task {
            match &self.task {
                None => {
                    if let Some(expected) = &self.expected_task
                        && expected != task
                    {
                        return Err(UpstreamError::Invalid(
                            "it answered for another task".to_owned(),
                        ));
                    }
                    self.task = Some(task.clone());
                }
                Some(seen) if seen != task => {
                    return Err(UpstreamError::Invalid(
                        "it answered for another task".to_owned(),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The text parts as answer text, counted against the limit; other parts are left out.
    fn texts(&mut self, parts: &[Part], out: &mut Vec<UpstreamEvent>) -> Result<(), UpstreamError> {
        for part in parts {
            let Some(text) = part.as_text() else {
                tracing::debug!("a non-text part of an A2A answer is not passed on");
                continue;
            };
            if text.is_empty() {
                continue;
            }
            self.answer_bytes += text.len();
            if self.answer_bytes > self.max_answer_bytes {
                return Err(UpstreamError::Invalid(format!(
                    "its answer is larger than {} bytes",
                    self.max_answer_bytes
                )));
            }
            out.push(UpstreamEvent::Text(text.to_owned()));
        }
        Ok(())
    }

    /// What a state means for the exchange.
    fn state(
        &mut self,
        state: TaskState,
        message: Option<&Message>,
        task: &str,
        out: &mut Vec<UpstreamEvent>,
    ) -> Result<(), UpstreamError> {
        let ended = |end: UpstreamEnd| {
            // The agent's own words stay in the logs.
            let said = message.and_then(Message::text).unwrap_or("");
            tracing::warn!(task, %end, said = %crate::error::clip(said.to_owned()), "the remote agent ended the task without an answer");
            Err(UpstreamError::Ended(end))
        };
        match state {
            TaskState::Unspecified | TaskState::Submitted | TaskState::Working => {
                // A progress message is the agent's prose: the tool's status code is said
                // instead (D-12).
                out.push(UpstreamEvent::Working);
                Ok(())
            }
            TaskState::Completed => {
                // An agent may answer in its final status message rather than an artifact.
                if self.answer_bytes == 0
                    && let Some(message) = message
                {
                    self.texts(&message.parts, out)?;
                }
                self.finished = true;
                Ok(())
            }
            TaskState::InputRequired => {
                if let Some(message) = message {
                    self.texts(&message.parts, out)?;
                }
                self.finished = true;
                out.push(UpstreamEvent::AwaitingInput(task.to_owned()));
                Ok(())
            }
            // The agent's own sign-in: its message says where (a link), the user goes
            // there, and their next message goes on with the same task, as for a question.
            TaskState::AuthRequired => {
                let before = self.answer_bytes;
                if let Some(message) = message {
                    self.texts(&message.parts, out)?;
                }
                if self.answer_bytes == before {
                    out.push(UpstreamEvent::Text(AUTH_WORDS.to_owned()));
                }
                self.finished = true;
                out.push(UpstreamEvent::AwaitingInput(task.to_owned()));
                Ok(())
            }
            TaskState::Failed => ended(UpstreamEnd::Failed),
            TaskState::Rejected => ended(UpstreamEnd::Rejected),
            TaskState::Canceled => ended(UpstreamEnd::Canceled),
        }
    }
}

/// What the user is told when an agent needs their sign-in and says nothing of how.
const AUTH_WORDS: &str =
    "This service needs you to sign in to it first. Say when you have, and it goes on.";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(value: serde_json::Value) -> StreamResponse {
        serde_json::from_value(value).unwrap()
    }

    fn task(state: &str) -> serde_json::Value {
        json!({"task": {"id": "t-1", "contextId": "c-1", "status": {"state": state}}})
    }

    fn status(state: &str, text: Option<&str>) -> serde_json::Value {
        let mut s = json!({"statusUpdate": {"taskId": "t-1", "contextId": "c-1", "status": {"state": state}}});
        if let Some(text) = text {
            s["statusUpdate"]["status"]["message"] =
                json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": text}]});
        }
        s
    }

    fn artifact(text: &str) -> serde_json::Value {
        json!({"artifactUpdate": {"taskId": "t-1", "contextId": "c-1",
            "artifact": {"artifactId": "a", "parts": [{"text": text}, {"data": {"x": 1}}]}}})
    }

    fn run(
        reader: &mut Reader,
        events: Vec<serde_json::Value>,
    ) -> Result<Vec<UpstreamEvent>, UpstreamError> {
        let mut out = Vec::new();
        for e in events {
            out.extend(reader.read(event(e))?);
        }
        Ok(out)
    }

    #[test]
    fn a_streamed_task_becomes_progress_and_text() {
        let mut r = Reader::new(None, None, 1024);
        let out = run(
            &mut r,
            vec![
                task("TASK_STATE_SUBMITTED"),
                status("TASK_STATE_WORKING", Some("Looking…")),
                artifact("Two stores "),
                artifact("in Lakeside."),
                status("TASK_STATE_COMPLETED", Some("done")),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                UpstreamEvent::Conversation("c-1".into()),
                UpstreamEvent::Working,
                UpstreamEvent::Working,
                UpstreamEvent::Text("Two stores ".into()),
                UpstreamEvent::Text("in Lakeside.".into()),
            ]
        );
        assert!(r.finished);
        assert_eq!(r.task.as_deref(), Some("t-1"));
    }

    #[test]
    fn input_required_is_a_question_with_the_task_kept_open() {
        let mut r = Reader::new(None, None, 1024);
        let out = run(
            &mut r,
            vec![
                task("TASK_STATE_SUBMITTED"),
                status("TASK_STATE_INPUT_REQUIRED", Some("Which city?")),
            ],
        )
        .unwrap();
        assert_eq!(
            &out[2..],
            &[
                UpstreamEvent::Text("Which city?".into()),
                UpstreamEvent::AwaitingInput("t-1".into())
            ]
        );
        assert!(r.finished);
    }

    #[test]
    fn a_final_message_is_the_answer_when_nothing_else_was_said() {
        let mut r = Reader::new(None, None, 1024);
        let out = run(
            &mut r,
            vec![status("TASK_STATE_COMPLETED", Some("All done."))],
        )
        .unwrap();
        assert_eq!(out.last(), Some(&UpstreamEvent::Text("All done.".into())));
        let message = json!({"message": {"messageId": "m", "contextId": "c-9", "role": "ROLE_AGENT", "parts": [{"text": "Hi"}]}});
        let mut r = Reader::new(None, None, 1024);
        let out = run(&mut r, vec![message]).unwrap();
        assert_eq!(
            out,
            vec![
                UpstreamEvent::Conversation("c-9".into()),
                UpstreamEvent::Text("Hi".into())
            ]
        );
        assert!(r.finished);
    }

    #[test]
    fn failures_are_ended_exchanges() {
        for (state, end) in [
            ("TASK_STATE_FAILED", UpstreamEnd::Failed),
            ("TASK_STATE_REJECTED", UpstreamEnd::Rejected),
            ("TASK_STATE_CANCELED", UpstreamEnd::Canceled),
        ] {
            let mut r = Reader::new(None, None, 1024);
            let e = run(
                &mut r,
                vec![
                    task("TASK_STATE_SUBMITTED"),
                    status(state, Some("secret detail")),
                ],
            )
            .unwrap_err();
            assert_eq!(e, UpstreamError::Ended(end));
            assert!(!e.to_string().contains("secret detail"));
        }
    }

    #[test]
    fn an_agent_that_needs_the_users_sign_in_asks_for_it_and_waits_on_its_task() {
        let mut r = Reader::new(None, None, 1024);
        let out = run(
            &mut r,
            vec![
                task("TASK_STATE_SUBMITTED"),
                status(
                    "TASK_STATE_AUTH_REQUIRED",
                    Some("Sign in at https://stores.example/login first."),
                ),
            ],
        )
        .unwrap();
        let said: Vec<&UpstreamEvent> = out
            .iter()
            .filter(|e| matches!(e, UpstreamEvent::Text(_) | UpstreamEvent::AwaitingInput(_)))
            .collect();
        assert!(
            matches!(said[0], UpstreamEvent::Text(t) if t.contains("https://stores.example/login")),
            "{out:?}"
        );
        assert!(
            matches!(said.last(), Some(UpstreamEvent::AwaitingInput(_))),
            "{out:?}"
        );
        // Saying nothing of how, it is asked in plain words.
        let mut r = Reader::new(None, None, 1024);
        let out = run(
            &mut r,
            vec![
                task("TASK_STATE_SUBMITTED"),
                status("TASK_STATE_AUTH_REQUIRED", None),
            ],
        )
        .unwrap();
        assert!(
            out.contains(&UpstreamEvent::Text(AUTH_WORDS.to_owned())),
            "{out:?}"
        );
    }

    #[test]
    fn another_context_or_task_or_a_huge_answer_is_refused() {
        let mut r = Reader::new(Some("c-other".into()), None, 1024);
        let e = run(&mut r, vec![task("TASK_STATE_SUBMITTED")]).unwrap_err();
        assert!(e.to_string().contains("another context"), "{e}");
        let mut r = Reader::new(Some("c-1".into()), Some("t-0".into()), 1024);
        let e = run(&mut r, vec![task("TASK_STATE_SUBMITTED")]).unwrap_err();
        assert!(e.to_string().contains("another task"), "{e}");
        let mut r = Reader::new(None, None, 1024);
        let switched = json!({"statusUpdate": {"taskId": "t-2", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}});
        let e = run(&mut r, vec![task("TASK_STATE_SUBMITTED"), switched]).unwrap_err();
        assert!(e.to_string().contains("another task"), "{e}");
        let mut r = Reader::new(None, None, 10);
        let e = run(&mut r, vec![artifact("0123456789AB")]).unwrap_err();
        assert!(e.to_string().contains("larger than 10 bytes"), "{e}");
    }
}
