//! Routes a server's progress notifications to the sink of the call they belong to (by
//! progress token).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use baton_core::ports::connector::ProgressSink;
use rmcp::model::ProgressToken;

/// Notifications for tokens nobody listens to (yet) that are remembered: rmcp picks the
/// token while sending, so a fast server may report before the call has registered it.
const EARLY_TOKENS: usize = 64;

/// Where one call's progress goes.
#[derive(Clone)]
struct Route {
    sink: Arc<dyn ProgressSink>,
    status: Arc<str>,
}

#[derive(Default)]
struct Routes {
    live: HashMap<ProgressToken, Route>,
    /// Tokens reported before their call registered, oldest first (one entry a report).
    early: VecDeque<ProgressToken>,
}

/// The progress routes of a session's calls in flight.
#[derive(Default)]
pub(crate) struct ProgressRouter {
    routes: Mutex<Routes>,
}

impl std::fmt::Debug for ProgressRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let routes = self.lock();
        f.debug_struct("ProgressRouter")
            .field("live", &routes.live.len())
            .field("early", &routes.early.len())
            .finish()
    }
}

impl ProgressRouter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        // A panicking sink cannot leave the map half-written: every change is one call.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends the progress reported under `token` to `sink` as `status` until the returned
    /// guard is dropped. Reports that arrived before this call are delivered now.
    pub(crate) fn route(
        self: &Arc<Self>,
        token: ProgressToken,
        sink: Arc<dyn ProgressSink>,
        status: Arc<str>,
    ) -> RouteGuard {
        let early = {
            let mut routes = self.lock();
            let before = routes.early.len();
            routes.early.retain(|t| *t != token);
            let early = before - routes.early.len();
            routes.live.insert(
                token.clone(),
                Route {
                    sink: sink.clone(),
                    status: status.clone(),
                },
            );
            early
        };
        for _ in 0..early {
            sink.progress(&status);
        }
        RouteGuard {
            router: self.clone(),
            token,
        }
    }

    pub(crate) fn deliver(&self, token: ProgressToken) {
        let route = {
            let mut routes = self.lock();
            match routes.live.get(&token) {
                Some(route) => Some(route.clone()),
                None => {
                    if routes.early.len() >= EARLY_TOKENS {
                        routes.early.pop_front();
                    }
                    routes.early.push_back(token);
                    None
                }
            }
        };
        // Outside the lock: the sink is caller code.
        if let Some(route) = route {
            route.sink.progress(&route.status);
        }
    }
}

/// Unregisters a call's progress route when the call ends or is dropped.
pub(crate) struct RouteGuard {
    router: Arc<ProgressRouter>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let removed = self.router.lock().live.remove(&self.token);
        drop(removed);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<String>>);

    impl ProgressSink for Seen {
        fn progress(&self, status_code: &str) {
            self.0.lock().unwrap().push(status_code.to_owned());
        }
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    #[test]
    fn reports_reach_the_route_of_their_token_only_while_it_is_registered() {
        let router = Arc::new(ProgressRouter::default());
        let seen = Arc::new(Seen::default());
        let guard = router.route(token(1), seen.clone(), Arc::from("searching"));
        router.deliver(token(1));
        router.deliver(token(2));
        router.deliver(token(1));
        drop(guard);
        router.deliver(token(1));
        assert_eq!(*seen.0.lock().unwrap(), vec!["searching", "searching"]);
    }

    #[test]
    fn reports_that_come_before_the_route_are_delivered_when_it_registers() {
        let router = Arc::new(ProgressRouter::default());
        router.deliver(token(7));
        router.deliver(token(7));
        router.deliver(token(8));
        let seen = Arc::new(Seen::default());
        let _guard = router.route(token(7), seen.clone(), Arc::from("s"));
        assert_eq!(seen.0.lock().unwrap().len(), 2);
        assert_eq!(router.lock().early.len(), 1);
    }

    #[test]
    fn unclaimed_reports_are_bounded() {
        let router = ProgressRouter::default();
        for n in 0..1000 {
            router.deliver(token(n));
        }
        assert_eq!(router.lock().early.len(), EARLY_TOKENS);
    }
}
