//! The turns running in this process, so that their caller can stop one (an A2A
//! `CancelTask`), ask whether it is still going, or watch its events from now on (an A2A
//! `SubscribeToTask` from a client that lost its stream). Each entry lives as long as its
//! turn's task; another principal's turn is never found.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use baton_core::Principal;
use baton_core::events::WireEvent;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// An episode's turn: `(episode id, turn id)`.
type Key = (String, String);

/// The running turns, with the signal that stops each.
#[derive(Debug, Default)]
pub(crate) struct RunningTurns {
    turns: Mutex<HashMap<Key, Entry>>,
}

/// A running turn: whose it is, its stop signal, and where its events can be watched.
type Entry = (Principal, CancellationToken, broadcast::Sender<WireEvent>);

impl RunningTurns {
    /// Records a turn that starts now, whose events also go to `watch`; it is forgotten
    /// when the returned guard drops.
    pub(crate) fn register(
        self: &Arc<Self>,
        principal: &Principal,
        episode_id: &str,
        turn_id: &str,
        watch: broadcast::Sender<WireEvent>,
    ) -> Running {
        let token = CancellationToken::new();
        let key = (episode_id.to_owned(), turn_id.to_owned());
        self.lock()
            .insert(key.clone(), (principal.clone(), token.clone(), watch));
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
            Some((owner, token, _)) if owner == principal => {
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
            .is_some_and(|(owner, _, _)| owner == principal)
    }

    /// The events of `principal`'s turn running in this process from now on, until it
    /// ends; `None` when no such turn runs.
    pub(crate) fn watch(
        &self,
        principal: &Principal,
        episode_id: &str,
        turn_id: &str,
    ) -> Option<broadcast::Receiver<WireEvent>> {
        let key = (episode_id.to_owned(), turn_id.to_owned());
        self.lock()
            .get(&key)
            .filter(|(owner, _, _)| owner == principal)
            .map(|(_, _, watch)| watch.subscribe())
    }

    /// How many turns are running.
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
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

/// A table at least this large gives back its room once three quarters of it are empty.
const SHRINK_FROM: usize = 64;

impl Drop for Running {
    fn drop(&mut self) {
        let mut turns = self.turns.lock();
        turns.remove(&self.key);
        // A hash table keeps the room of its fullest moment: after a burst of a thousand turns,
        // 150 KB that nothing uses (docs/benchmark.md, "Memory under 1,000 streams").
        // Shrinking at a quarter full costs a rehash now and then, never one per turn.
        if turns.capacity() >= SHRINK_FROM && turns.len() < turns.capacity() / 4 {
            turns.shrink_to_fit();
        }
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
        let running = turns.register(&alice, "ep_1", "t_1", broadcast::channel(1).0);
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

    #[test]
    fn the_table_gives_back_a_bursts_room() {
        let turns = Arc::new(RunningTurns::default());
        let alice = Principal::new("alice").unwrap();
        let burst: Vec<Running> = (0..1_000)
            .map(|i| turns.register(&alice, &format!("ep_{i}"), "t", broadcast::channel(1).0))
            .collect();
        assert!(turns.lock().capacity() >= 1_000);
        let kept = turns.register(&alice, "ep_kept", "t", broadcast::channel(1).0);
        drop(burst);
        assert!(turns.is_running(&alice, "ep_kept", "t"));
        assert!(
            turns.lock().capacity() < SHRINK_FROM,
            "{}",
            turns.lock().capacity()
        );
        drop(kept);
        assert!(turns.lock().is_empty());
    }
}
