//! The turns running in this process, so that their caller can stop one (an A2A
//! `CancelTask`) or ask whether it is still going. Each entry lives as long as its turn's
//! task; another principal's turn is never found.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use baton_core::Principal;
use tokio_util::sync::CancellationToken;

/// An episode's turn: `(episode id, turn id)`.
type Key = (String, String);

/// The running turns, with the signal that stops each.
#[derive(Debug, Default)]
pub(crate) struct RunningTurns {
    turns: Mutex<HashMap<Key, (Principal, CancellationToken)>>,
}

impl RunningTurns {
    /// Records a turn that starts now; it is forgotten when the returned guard drops.
    pub(crate) fn register(
        self: &Arc<Self>,
        principal: &Principal,
        episode_id: &str,
        turn_id: &str,
    ) -> Running {
        let token = CancellationToken::new();
        let key = (episode_id.to_owned(), turn_id.to_owned());
        self.lock()
            .insert(key.clone(), (principal.clone(), token.clone()));
        Running {
            turns: self.clone(),
            key,
            token,
        }
    }

    /// Signals `principal`'s turn to stop. Whether such a turn was running.
    pub(crate) fn cancel(&self, principal: &Principal, episode_id: &str, turn_id: &str) -> bool {
        let key = (episode_id.to_owned(), turn_id.to_owned());
        match self.lock().get(&key) {
            Some((owner, token)) if owner == principal => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    /// Whether `principal`'s turn is running in this process.
    pub(crate) fn is_running(
        &self,
        principal: &Principal,
        episode_id: &str,
        turn_id: &str,
    ) -> bool {
        let key = (episode_id.to_owned(), turn_id.to_owned());
        self.lock()
            .get(&key)
            .is_some_and(|(owner, _)| owner == principal)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, (Principal, CancellationToken)>> {
        // The map holds no invariant a panicking holder could break half-way.
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One running turn's entry: its stop signal, and its removal when the turn's task ends.
#[derive(Debug)]
pub(crate) struct Running {
    turns: Arc<RunningTurns>,
    key: Key,
    token: CancellationToken,
}

impl Running {
    /// Resolves when the turn's caller asks it to stop.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.turns.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_owner_cancels_and_the_entry_leaves_with_its_turn() {
        let turns = Arc::new(RunningTurns::default());
        let alice = Principal::new("alice").unwrap();
        let mallory = Principal::new("mallory").unwrap();
        let running = turns.register(&alice, "ep_1", "t_1");
        assert!(!turns.cancel(&mallory, "ep_1", "t_1"));
        assert!(!running.token().is_cancelled());
        assert!(!turns.is_running(&mallory, "ep_1", "t_1"));
        assert!(turns.is_running(&alice, "ep_1", "t_1"));
        assert!(turns.cancel(&alice, "ep_1", "t_1"));
        assert!(running.token().is_cancelled());
        drop(running);
        assert!(!turns.is_running(&alice, "ep_1", "t_1"));
        assert!(!turns.cancel(&alice, "ep_1", "t_1"));
    }
}
