//! Composition (purpose `Compose`): the sub-agents' answers in one voice.
//!
//! Usable answers come first, in call order, each introduced by its label when there are
//! several; every sub-agent without one gets a plain sentence. Error text never reaches
//! the user: only `answer` of an answered result and the `unavailable` wording are used.

use baton_core::message::ToolResultStatus;
use baton_core::ports::model::ModelRequest;
use baton_core::tool_result::AgentAnswer;
use serde_json::Value;

use super::chunks::Reply;
use super::conversation::{ResultRef, decode, results_since_user_turn, tool_name_of};

/// What composition knows about one result.
enum Part {
    Answer {
        label: Option<String>,
        text: String,
    },
    Missing {
        label: Option<String>,
        note: Option<String>,
    },
}

/// Answers a `Compose` call into `reply`. `label_of` maps a tool name to an agent label.
pub(crate) fn respond(
    request: &ModelRequest,
    label_of: &dyn Fn(&str) -> Option<String>,
    reply: &mut Reply,
) {
    let parts: Vec<Part> = results_since_user_turn(request)
        .into_iter()
        .map(|r| part(request, r, label_of))
        .collect();
    reply.text(&compose(&parts));
}

fn part(
    request: &ModelRequest,
    r: ResultRef<'_>,
    label_of: &dyn Fn(&str) -> Option<String>,
) -> Part {
    let fallback_label = || tool_name_of(request, r.id).and_then(label_of);
    match decode::<AgentAnswer>(r.content) {
        Some(a) => {
            let label = Some(a.label)
                .filter(|l| !l.trim().is_empty())
                .or_else(fallback_label);
            if a.status.answered() && !a.answer.trim().is_empty() {
                Part::Answer {
                    label,
                    text: a.answer.trim().to_owned(),
                }
            } else {
                Part::Missing {
                    label,
                    note: a.unavailable.filter(|n| !n.trim().is_empty()),
                }
            }
        }
        // Not an AgentAnswer: plain text from a successful call is still an answer;
        // anything else may be an error string and is not shown.
        None => match (r.status, r.content) {
            (ToolResultStatus::Ok, Value::String(s)) if !s.trim().is_empty() => Part::Answer {
                label: fallback_label(),
                text: s.trim().to_owned(),
            },
            _ => Part::Missing {
                label: fallback_label(),
                note: None,
            },
        },
    }
}

fn compose(parts: &[Part]) -> String {
    let answers: Vec<(&Option<String>, &str)> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Answer { label, text } => Some((label, text.as_str())),
            Part::Missing { .. } => None,
        })
        .collect();
    let mut paragraphs: Vec<String> = if answers.len() >= 2 {
        answers
            .iter()
            .map(|(label, text)| match label {
                Some(l) => format!("From {l}: {text}"),
                None => (*text).to_owned(),
            })
            .collect()
    } else {
        answers.iter().map(|(_, t)| (*t).to_owned()).collect()
    };
    let missing: Vec<String> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Missing { note: Some(n), .. } => Some(n.trim().to_owned()),
            Part::Missing { label: Some(l), .. } => {
                Some(format!("I couldn't get an answer from {l} right now."))
            }
            Part::Missing { .. } => {
                Some("I couldn't get an answer from one of the specialists right now.".to_owned())
            }
            Part::Answer { .. } => None,
        })
        .collect();
    if !missing.is_empty() {
        paragraphs.push(missing.join(" "));
    }
    if paragraphs.is_empty() {
        return "Sorry, I don't have an answer for that right now.".to_owned();
    }
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use baton_core::message::{Content, Message, Role};
    use baton_core::ports::model::{CallPurpose, ModelEvent, StopReason};
    use serde_json::json;

    use super::super::OfflineModel;
    use super::super::testing::{calls_of, collect, registry, request, text_of};
    use super::*;

    fn with_results(results: Vec<(ToolResultStatus, Value)>) -> ModelRequest {
        let mut req = request(
            "assistant",
            CallPurpose::Compose,
            "my receipt didn't scan and find me coffee deals and my points",
        );
        let names = ["ask_support", "ask_shop", "ask_rewards"];
        req.messages.push(Message {
            role: Role::Assistant,
            content: (0..results.len())
                .map(|i| Content::ToolUse {
                    id: format!("call_{}", i + 1),
                    name: names[i % 3].into(),
                    input: json!({}).into(),
                })
                .collect(),
        });
        req.messages.push(Message {
            role: Role::User,
            content: results
                .into_iter()
                .enumerate()
                .map(|(i, (status, content))| Content::ToolResult {
                    id: format!("call_{}", i + 1),
                    status,
                    content,
                })
                .collect(),
        });
        req
    }

    fn answer(agent: &str, label: &str, status: &str, text: &str) -> Value {
        json!({"agent": agent, "label": label, "status": status, "answer": text})
    }

    #[tokio::test]
    async fn two_answers_and_one_failure_read_as_one_reply() {
        let model = OfflineModel::new(registry());
        let req = with_results(vec![
            (
                ToolResultStatus::Ok,
                answer("support", "Support", "ok", "Try rescanning the receipt."),
            ),
            (
                ToolResultStatus::Ok,
                answer("shop", "Shop", "partial", "Coffee is 20% off."),
            ),
            (
                ToolResultStatus::Error,
                answer(
                    "rewards",
                    "Rewards",
                    "error",
                    "upstream 503: connection reset",
                ),
            ),
        ]);
        let events = collect(&model, req).await;
        assert!(calls_of(&events).is_empty());
        let text = text_of(&events);
        assert!(
            text.contains("From Support: Try rescanning the receipt."),
            "{text}"
        );
        assert!(text.contains("From Shop: Coffee is 20% off."), "{text}");
        assert!(text.contains("I couldn't get an answer from Rewards right now."));
        assert!(!text.contains("503"), "{text}");
        assert!(
            events
                .iter()
                .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
                .count()
                > 3
        );
        assert_eq!(
            events.iter().rev().nth(1),
            Some(&ModelEvent::Stop(StopReason::EndTurn))
        );
    }

    #[tokio::test]
    async fn a_single_answer_needs_no_introduction_and_notes_are_used() {
        let model = OfflineModel::new(registry());
        let mut timeout = answer("rewards", "Rewards", "timeout", "");
        timeout["unavailable"] = json!("Rewards is taking too long; please try again soon.");
        let req = with_results(vec![
            (
                ToolResultStatus::Ok,
                answer("support", "Support", "ok", "Try rescanning the receipt."),
            ),
            (ToolResultStatus::Ok, answer("shop", "Shop", "ok", "   ")),
            (ToolResultStatus::Error, timeout),
        ]);
        let text = text_of(&collect(&model, req).await);
        assert_eq!(
            text,
            "Try rescanning the receipt.\n\nI couldn't get an answer from Shop right now. \
             Rewards is taking too long; please try again soon."
        );
    }

    #[tokio::test]
    async fn malformed_results_are_told_apart_from_text_answers() {
        let model = OfflineModel::new(registry());
        let req = with_results(vec![
            (ToolResultStatus::Ok, json!("{not json")),
            (
                ToolResultStatus::Error,
                json!("stack trace: panic at db.rs:12"),
            ),
            (ToolResultStatus::Ok, json!({"unexpected": [1, 2]})),
        ]);
        let text = text_of(&collect(&model, req).await);
        assert!(text.starts_with("{not json"), "{text}");
        assert!(text.contains("I couldn't get an answer from Shop right now."));
        assert!(text.contains("from Rewards right now"));
        assert!(!text.contains("stack trace"));
    }

    #[tokio::test]
    async fn no_results_still_gives_a_sentence() {
        let model = OfflineModel::new(registry());
        let req = request("assistant", CallPurpose::Compose, "hello");
        let text = text_of(&collect(&model, req).await);
        assert!(text.contains("don't have an answer"));
    }
}
