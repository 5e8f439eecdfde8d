//! A turn's events as one tool call's outcome: progress lines while it runs, then a
//! `CallToolResult` whose text is the answer a text-only client reads (`AnswerText`) and
//! whose `structuredContent` carries the runtime's consulted record, the privacy receipt
//! and the ids. Every text here has passed the turn stream's privacy guard (D-23).

use baton_core::events::Event;
use baton_core::turn::TurnOutcome;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use crate::faces::answer::AnswerText;
use crate::faces::summary::TurnSummary;
pub(crate) use crate::faces::summary::Waiting;

/// One turn becoming one tool result.
#[derive(Debug)]
pub(crate) struct Reply {
    turn_id: String,
    episode_id: String,
    /// The specialist asked over its Direct Line, if the call was one.
    direct: Option<String>,
    answer: AnswerText,
    text: String,
    summary: TurnSummary,
    /// Whether the specialist asked directly failed to answer.
    direct_failed: bool,
}

impl Reply {
    /// A reply for the turn `turn_id` of `episode_id`; `direct` names the specialist when
    /// the call asked one over its Direct Line.
    pub(crate) fn new(turn_id: &str, episode_id: &str, direct: Option<&str>) -> Self {
        Reply {
            turn_id: turn_id.to_owned(),
            episode_id: episode_id.to_owned(),
            direct: direct.map(str::to_owned),
            answer: AnswerText::default(),
            text: String::new(),
            summary: TurnSummary::default(),
            direct_failed: false,
        }
    }

    /// Takes in one event; the progress line it brings, if any (a progress notification
    /// when the caller asked for them).
    pub(crate) fn take(&mut self, event: &Event) -> Option<String> {
        self.summary.take(event);
        if let Event::DelegatedAnswer { agent, status, .. } = event
            && self.direct.as_deref() == Some(agent.as_str())
            && !status.answered()
        {
            self.direct_failed = true;
        }
        if let Some(piece) = self.answer.piece(event) {
            self.text.push_str(&piece);
        }
        match event {
            Event::Status { message, .. } if !message.is_empty() => Some(message.clone()),
            _ => None,
        }
    }

    /// What the turn waits on, when it ended waiting for the user.
    pub(crate) fn waiting(&self) -> Option<&Waiting> {
        self.summary.waiting()
    }

    /// The turn's id.
    pub(crate) fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The episode's id.
    pub(crate) fn episode_id(&self) -> &str {
        &self.episode_id
    }

    /// Whether the turn went unanswered: it failed, or never finished, or the specialist
    /// asked directly could not answer. The client is told with `isError` (a tool
    /// execution error, which a model reads and may act on).
    fn unanswered(&self) -> bool {
        self.direct_failed || matches!(self.summary.outcome, None | Some(TurnOutcome::Failed))
    }

    /// The result, once the turn's stream is over.
    pub(crate) fn result(self) -> CallToolResult {
        let error = self.unanswered();
        let mut text = if self.text.is_empty() && self.summary.outcome.is_none() {
            "The turn stopped before it finished; please try again.".to_owned()
        } else {
            self.text
        };
        if self.summary.outcome == Some(TurnOutcome::AwaitingUser) {
            // This face cannot ask in place: say how the answer comes back (D-36).
            text.push_str(
                "\n\n(Waiting for the user. To answer, call this tool again with the same \
                 `conversation` and the answer as the message: yes or no to an approval, \
                 the code the sign-in page shows to an account link.)",
            );
        }
        let mut structured = self.summary.record(&self.turn_id, &self.episode_id);
        structured["answer"] = json!(text);
        structured["interruption"] = json!(self.summary.interruption);
        let mut result = if error {
            CallToolResult::error(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(structured);
        result
    }
}

/// A call the runtime refused before any turn ran (busy, too long, the store down): a tool
/// execution error with the runtime's plain message, so the model calling can read it.
pub(crate) fn refused(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.to_owned())])
}

#[cfg(test)]
mod tests {
    use baton_core::consulted::{AgentStatus, ConsultedAgent};
    use baton_core::privacy::PrivacyReceipt;

    use super::*;

    fn completed(outcome: TurnOutcome) -> Event {
        Event::Completed {
            outcome,
            privacy: PrivacyReceipt::default(),
        }
    }

    fn text_of(result: &CallToolResult) -> String {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    #[test]
    fn an_answered_turn_is_its_text_and_its_record() {
        let mut reply = Reply::new("t1", "ep1", None);
        let events = [
            Event::Status {
                codes: vec!["searching_offers".into()],
                message: "Looking for offers…".into(),
            },
            Event::Text {
                source: "orchestrator".into(),
                text: "Coffee is 20% off.".into(),
            },
            Event::AgentsConsulted {
                agents: vec![ConsultedAgent {
                    agent_id: "shop".into(),
                    label: "Shop".into(),
                    status: AgentStatus::Ok,
                    duration_ms: 5,
                    tool_calls: 1,
                    carried: false,
                }],
                footer: "Consulted: Shop".into(),
                memories: Vec::new(),
            },
            completed(TurnOutcome::Answered),
        ];
        let progress: Vec<String> = events.iter().filter_map(|e| reply.take(e)).collect();
        assert_eq!(progress, ["Looking for offers…"]);
        let result = reply.result();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(text_of(&result), "Coffee is 20% off.");
        let s = result.structured_content.unwrap();
        assert_eq!(s["consulted"][0]["agent_id"], "shop");
        assert_eq!(s["footer"], "Consulted: Shop");
        assert_eq!(s["outcome"], "answered");
        assert_eq!(
            (s["turn_id"].as_str(), s["episode_id"].as_str()),
            (Some("t1"), Some("ep1"))
        );
    }

    #[test]
    fn a_failed_turn_or_a_failed_direct_answer_is_an_error_result() {
        let mut failed = Reply::new("t", "e", None);
        failed.take(&Event::Error {
            message: "Something went wrong.".into(),
        });
        failed.take(&completed(TurnOutcome::Failed));
        let result = failed.result();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(text_of(&result), "Something went wrong.");

        let mut direct = Reply::new("t", "e", Some("shop"));
        direct.take(&Event::DelegatedAnswer {
            agent: "shop".into(),
            label: "Shop".into(),
            status: AgentStatus::Error,
            text: "Shop couldn't answer.".into(),
        });
        direct.take(&completed(TurnOutcome::Answered));
        assert_eq!(direct.result().is_error, Some(true));
    }

    #[test]
    fn a_stream_that_ends_early_is_an_error_in_plain_words() {
        let result = Reply::new("t", "e", None).result();
        assert_eq!(result.is_error, Some(true));
        assert!(text_of(&result).contains("try again"), "{result:?}");
    }
}
