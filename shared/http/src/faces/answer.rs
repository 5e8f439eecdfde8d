//! The answer as a text-only channel shows it: the pieces of the turn's stream that are
//! the answer, in order, for faces that carry one text (chat completions).
//!
//! Orchestrator and note text stream as they come. A Direct Line answer streams for the
//! first specialist that streams; the delivered answer that follows is authoritative, so it
//! is shown whole when it was not streamed, or when the specialist failed (then it says so
//! in plain words). An error's plain message is part of what the user reads.

use baton_core::events::Event;

/// Turns events into answer text, one piece per event at most.
#[derive(Debug, Default)]
pub(crate) struct AnswerText {
    /// The specialist whose Direct Line answer is streaming.
    streaming: Option<String>,
    /// Whether any text went out.
    said: bool,
}

impl AnswerText {
    /// The text `event` adds to the answer, if any.
    pub(crate) fn piece(&mut self, event: &Event) -> Option<String> {
        match event {
            // Streamed text is joined as the native stream's clients join it.
            Event::Text { text, .. } => self.flowing(text),
            Event::DelegatedText { agent, text, .. } => {
                if self.streaming.is_none() {
                    self.streaming = Some(agent.clone());
                }
                if self.streaming.as_deref() == Some(agent.as_str()) {
                    self.flowing(text)
                } else {
                    None
                }
            }
            Event::DelegatedAnswer {
                agent,
                status,
                text,
                ..
            } => {
                let streamed = self.streaming.as_deref() == Some(agent.as_str());
                if streamed && status.answered() {
                    return None;
                }
                // A failure's own words replace nothing already sent: they follow it.
                self.paragraph(text)
            }
            Event::Error { message } => self.paragraph(message),
            _ => None,
        }
    }

    fn flowing(&mut self, text: &str) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        self.said = true;
        Some(text.to_owned())
    }

    /// A whole text that does not continue what streamed: a paragraph of its own.
    fn paragraph(&mut self, text: &str) -> Option<String> {
        if text.is_empty() {
            return None;
        }
        let piece = if self.said {
            format!("\n\n{}", text.trim_start_matches('\n'))
        } else {
            text.to_owned()
        };
        self.said = true;
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::consulted::AgentStatus;

    use super::*;

    fn text(source: &str, text: &str) -> Event {
        Event::Text {
            source: source.into(),
            text: text.into(),
        }
    }

    fn all(events: &[Event]) -> String {
        let mut answer = AnswerText::default();
        events.iter().filter_map(|e| answer.piece(e)).collect()
    }

    #[test]
    fn orchestrator_text_streams_as_it_comes() {
        assert_eq!(
            all(&[
                Event::Thinking {},
                text("orchestrator", "Here are "),
                text("orchestrator", "the deals."),
            ]),
            "Here are the deals."
        );
    }

    #[test]
    fn a_direct_answer_that_streamed_is_not_repeated_and_one_that_did_not_is_shown() {
        let delegated = |agent: &str, t: &str| Event::DelegatedText {
            agent: agent.into(),
            label: agent.into(),
            text: t.into(),
        };
        let delivered = |agent: &str, status, t: &str| Event::DelegatedAnswer {
            agent: agent.into(),
            label: agent.into(),
            status,
            text: t.into(),
        };
        assert_eq!(
            all(&[
                delegated("shop", "Coffee "),
                delegated("support", "ignored while shop streams"),
                delegated("shop", "is 20% off."),
                delivered("shop", AgentStatus::Ok, "Coffee is 20% off."),
                delivered("support", AgentStatus::Ok, "Your receipt is fixed."),
            ]),
            "Coffee is 20% off.\n\nYour receipt is fixed."
        );
        assert_eq!(
            all(&[
                delegated("shop", "Coff"),
                delivered("shop", AgentStatus::Error, "Shop couldn't answer."),
            ]),
            "Coff\n\nShop couldn't answer."
        );
    }

    #[test]
    fn an_error_is_said_in_its_own_paragraph() {
        assert_eq!(
            all(&[
                text("orchestrator", "Partly:"),
                Event::Error {
                    message: "Something went wrong.".into()
                },
            ]),
            "Partly:\n\nSomething went wrong."
        );
    }
}
