//! A server's questions mid-call (`elicitation/create`, form mode), routed to the call in
//! flight they belong to (D-36).
//!
//! The turn does not keep a call open while the user thinks. The first time a server asks,
//! the call's route records the question and the server is told `cancel` (the user cannot
//! answer now); the call then fails with [`ConnectorError::NeedsInput`], the turn asks the
//! user, and the call is made again carrying the answer. When the server asks the same
//! question of that call, it gets the answer (`accept`, every omitted field at its
//! default).
//!
//! A request names no call, so a question goes to the one call on the session that has the
//! answer to it, else to the only call in flight; with several calls and no answer it is
//! declined rather than guessed. URL-mode questions are declined (the client offers form
//! mode only).
//!
//! [`ConnectorError::NeedsInput`]: baton_core::ports::connector::ConnectorError::NeedsInput

use std::sync::{Arc, Mutex, PoisonError};

use baton_core::input::{InputAsked, InputGiven};
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::Value;

/// One call in flight that may be asked something.
#[derive(Debug)]
struct Route {
    /// The user's answer it carries, from the question asked when it was made before.
    given: Option<Arc<InputGiven>>,
    /// What the server asked it that it had no answer for.
    asked: Mutex<Option<InputAsked>>,
}

/// The routes of one session's calls in flight.
#[derive(Debug, Default)]
pub(crate) struct QuestionRouter {
    routes: Mutex<Vec<Arc<Route>>>,
}

impl QuestionRouter {
    fn routes(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Route>>> {
        // Every change is one push or one removal: a panic cannot leave it half-written.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call in flight, with the answer it carries, until the guard is dropped.
    pub(crate) fn open(self: &Arc<Self>, given: Option<Arc<InputGiven>>) -> QuestionGuard {
        let route = Arc::new(Route {
            given,
            asked: Mutex::new(None),
        });
        self.routes().push(route.clone());
        QuestionGuard {
            router: self.clone(),
            route,
        }
    }

    /// The answer to a form question `message` with `schema`.
    pub(crate) fn answer(&self, message: &str, schema: Value) -> ElicitResult {
        let routes = self.routes().clone();
        if let Some(given) = routes
            .iter()
            .filter_map(|r| r.given.as_ref())
            .find(|g| g.message == message)
        {
            return ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(given.content.clone()));
        }
        match routes.as_slice() {
            [only] => {
                let mut asked = only.asked.lock().unwrap_or_else(PoisonError::into_inner);
                *asked = Some(InputAsked {
                    message: message.to_owned(),
                    schema,
                    asked_before: 0,
                    problem: None,
                });
                // The user is asked after the call, and the call made again with the answer.
                ElicitResult::new(ElicitationAction::Cancel)
            }
            _ => {
                tracing::info!(
                    calls = routes.len(),
                    "an MCP server asked a question no call in flight can be told apart for; declined"
                );
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    }
}

/// A call's route, removed when the call ends.
pub(crate) struct QuestionGuard {
    router: Arc<QuestionRouter>,
    route: Arc<Route>,
}

impl QuestionGuard {
    /// What the server asked this call that it had no answer for.
    pub(crate) fn asked(&self) -> Option<InputAsked> {
        self.route
            .asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

impl Drop for QuestionGuard {
    fn drop(&mut self) {
        let mut routes = self.router.routes();
        routes.retain(|r| !Arc::ptr_eq(r, &self.route));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn given(message: &str) -> Option<Arc<InputGiven>> {
        let content = json!({"seat": "12A"}).as_object().cloned().unwrap();
        Some(Arc::new(InputGiven {
            message: message.into(),
            content,
        }))
    }

    #[test]
    fn the_only_call_records_the_question_and_the_server_is_told_cancel() {
        let router = Arc::new(QuestionRouter::default());
        let call = router.open(None);
        let said = router.answer("Which seat?", json!({"type": "object"}));
        assert_eq!(said.action, ElicitationAction::Cancel);
        assert_eq!(call.asked().unwrap().message, "Which seat?");
        drop(call);
        // Nobody in flight: declined.
        let said = router.answer("Which seat?", json!({}));
        assert_eq!(said.action, ElicitationAction::Decline);
    }

    #[test]
    fn the_call_with_the_answer_gets_it_and_two_strangers_get_nothing() {
        let router = Arc::new(QuestionRouter::default());
        let a = router.open(None);
        let b = router.open(given("Which seat?"));
        let said = router.answer("Which seat?", json!({}));
        assert_eq!(said.action, ElicitationAction::Accept);
        assert_eq!(said.content, Some(json!({"seat": "12A"})));
        // Another question, two calls in flight: not guessed.
        let said = router.answer("Which meal?", json!({}));
        assert_eq!(said.action, ElicitationAction::Decline);
        assert!(a.asked().is_none() && b.asked().is_none());
    }
}
