//! An episode replayed for its owner (`baton replay`): every turn as stored, with what the
//! runtime recorded about it, and the summary compaction wrote. For people and tools
//! looking back at a conversation; no model ever sees this.

use std::collections::BTreeMap;

use baton_core::Principal;
use baton_core::ports::store::{EpisodeMeta, StoreError, StoredPicture};
use baton_core::turn::TurnRecord;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::request::{RejectionKind, TurnRejection, store_rejection};
use crate::runtime::Runtime;

/// Bodies read at once: enough to hide a remote store's latency, few enough not to flood
/// it.
const BODY_READS: usize = 8;

/// One episode as stored: its metadata (with the summary), its turns, and optionally the
/// payloads its turns kept as bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeReplay {
    /// The episode's metadata as stored; `summary` says how far compaction has folded it.
    pub meta: EpisodeMeta,
    /// Every committed turn as stored, oldest first.
    pub turns: Vec<TurnRecord>,
    /// The payloads of every turn's `body_keys`, by key, when asked for; `None` otherwise
    /// (so "not asked" and "none stored" stay apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bodies: Option<BTreeMap<String, serde_json::Value>>,
    /// Keys of bodies that could not be read (missing or damaged): the replay shows the
    /// rest rather than fail over one payload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable_bodies: Vec<String>,
    /// SHA-256 of the pictures the turns name that could not be read back, or whose bytes
    /// no longer hash to their name, when bodies were asked for (D-42).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable_pictures: Vec<String>,
}

impl Runtime {
    /// One of `principal`'s episodes, turn by turn as stored, with its summary; with
    /// `bodies`, the stored payloads of its turns too.
    ///
    /// # Errors
    /// `NotFound` for an unknown episode or another principal's (D-30); the store
    /// unavailable.
    pub async fn replay(
        &self,
        principal: &Principal,
        episode_id: &str,
        bodies: bool,
    ) -> Result<EpisodeReplay, TurnRejection> {
        let store = &self.inner.store;
        let (meta, turns) = self.stored_episode(principal, episode_id).await?;
        let mut replay = EpisodeReplay {
            meta,
            turns,
            bodies: None,
            unreadable_bodies: Vec::new(),
            unreadable_pictures: Vec::new(),
        };
        if bodies {
            let keys: Vec<&str> = replay
                .turns
                .iter()
                .flat_map(|t| t.body_keys.iter().map(String::as_str))
                .collect();
            let read: Vec<(&str, Result<serde_json::Value, StoreError>)> =
                futures::stream::iter(keys)
                    .map(|key| async move { (key, store.body(principal, episode_id, key).await) })
                    .buffered(BODY_READS)
                    .collect()
                    .await;
            let mut found = BTreeMap::new();
            let mut unreadable = Vec::new();
            for (key, body) in read {
                match body {
                    Ok(value) => {
                        found.insert(key.to_owned(), value);
                    }
                    // The episode was found, so this body alone is missing or damaged.
                    Err(e @ (StoreError::NotFound | StoreError::Corrupt(_))) => {
                        tracing::warn!(episode_id, key, error = %e, "a body could not be read");
                        unreadable.push(key.to_owned());
                    }
                    Err(e) => return Err(store_rejection(e)),
                }
            }
            replay.bodies = Some(found);
            replay.unreadable_bodies = unreadable;
            replay.unreadable_pictures = self.check_pictures(principal, &replay.turns).await?;
        }
        Ok(replay)
    }

    /// A picture `principal` sent in `episode_id` (D-42), by its SHA-256, as stored: with
    /// its hidden data already removed.
    ///
    /// # Errors
    /// `NotFound` for a picture no turn of the episode sent, another principal's, or an
    /// unknown episode (D-30); the store unavailable.
    pub async fn picture(
        &self,
        principal: &Principal,
        episode_id: &str,
        sha256: &str,
    ) -> Result<StoredPicture, TurnRejection> {
        match self
            .inner
            .store
            .picture(principal, episode_id, sha256)
            .await
        {
            Ok(picture) => Ok(picture),
            Err(StoreError::NotFound) => Err(TurnRejection::new(
                RejectionKind::NotFound,
                "That picture was not found.",
            )),
            Err(e) => Err(store_rejection(e)),
        }
    }

    /// The pictures `turns` name that cannot be read back whole: missing, damaged, or with
    /// bytes that no longer hash to their name.
    async fn check_pictures(
        &self,
        principal: &Principal,
        turns: &[TurnRecord],
    ) -> Result<Vec<String>, TurnRejection> {
        let named: Vec<(&str, &str)> = turns
            .iter()
            .flat_map(|t| {
                t.pictures
                    .iter()
                    .map(|p| (t.episode_id.as_str(), p.sha256.as_str()))
            })
            .collect();
        let read: Vec<_> = futures::stream::iter(named)
            .map(|(episode, sha)| async move {
                (sha, self.inner.store.picture(principal, episode, sha).await)
            })
            .buffered(BODY_READS)
            .collect()
            .await;
        let mut unreadable = Vec::new();
        for (sha, read) in read {
            match read {
                Ok(p) if baton_core::picture::sha256_hex(&p.bytes) == sha => {}
                Ok(_) | Err(StoreError::NotFound | StoreError::Corrupt(_)) => {
                    tracing::warn!(sha, "a picture could not be read back whole");
                    unreadable.push(sha.to_owned());
                }
                Err(e) => return Err(store_rejection(e)),
            }
        }
        Ok(unreadable)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_connectors::ConfiguredConnector;
    use baton_core::memory::EpisodeSummary;
    use baton_core::ports::store::SummaryStore as _;
    use baton_inproc::HeapStore;
    use baton_inproc::scripted::ScriptedModel;
    use baton_testkit::registry::TestRegistry;

    use super::*;
    use crate::TurnRequest;

    const SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Roast coffee earns 500 points."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee deals" } }]
    - when: { after_tool_results: true }
      text: ["Roast coffee earns 500 points."]
"#;

    fn rig() -> (Runtime, Arc<HeapStore>) {
        let store = Arc::new(HeapStore::new());
        let runtime = Runtime::builder(Arc::new(TestRegistry::default().load().unwrap()))
            .model_override(Arc::new(ScriptedModel::from_yaml(SCRIPT).unwrap()))
            .store(store.clone())
            .connector("test", Arc::new(ConfiguredConnector))
            .build()
            .unwrap();
        (runtime, store)
    }

    fn alice() -> Principal {
        Principal::new("alice").unwrap()
    }

    async fn turn(runtime: &Runtime, episode: Option<&str>) -> String {
        let request = TurnRequest {
            episode_id: episode.map(str::to_owned),
            ..TurnRequest::new(alice(), "find coffee deals")
        };
        let stream = runtime.run_turn(request).await.unwrap();
        let episode = stream.episode_id.clone();
        let _: Vec<_> = stream.collect().await;
        episode
    }

    #[tokio::test]
    async fn a_replay_has_every_turn_and_with_bodies_their_payloads() {
        let (runtime, _) = rig();
        let episode = turn(&runtime, None).await;
        turn(&runtime, Some(&episode)).await;

        let plain = runtime.replay(&alice(), &episode, false).await.unwrap();
        assert_eq!(plain.meta.episode_id, episode);
        assert_eq!(plain.turns.len(), 2);
        assert_eq!(plain.turns[1].seq, 2);
        assert_eq!(plain.turns[0].consulted[0].agent_id, "shop");
        assert_eq!(plain.bodies, None);
        let json = serde_json::to_value(&plain).unwrap();
        assert!(json.get("bodies").is_none(), "{json}");

        let full = runtime.replay(&alice(), &episode, true).await.unwrap();
        let keys: Vec<&String> = full.turns.iter().flat_map(|t| &t.body_keys).collect();
        assert!(!keys.is_empty(), "the tool call stored a body");
        let bodies = full.bodies.unwrap();
        for key in keys {
            assert!(bodies.contains_key(key), "{key} missing from {bodies:?}");
        }
        assert!(full.unreadable_bodies.is_empty());
    }

    #[tokio::test]
    async fn another_principals_episode_is_not_found() {
        let (runtime, _) = rig();
        let episode = turn(&runtime, None).await;
        for (who, id) in [("bob", episode.as_str()), ("alice", "ep_missing")] {
            let err = runtime
                .replay(&Principal::new(who).unwrap(), id, true)
                .await
                .unwrap_err();
            assert_eq!(err.kind, RejectionKind::NotFound);
            assert_eq!(err.message, "That conversation was not found.");
        }
    }

    #[tokio::test]
    async fn the_summary_comes_with_the_replay_and_its_reach_with_the_history() {
        let (runtime, store) = rig();
        let episode = turn(&runtime, None).await;
        turn(&runtime, Some(&episode)).await;
        let none = runtime.history(&alice(), &episode).await.unwrap();
        assert_eq!(none.summary, None);
        assert_eq!(
            serde_json::to_value(&none).unwrap()["summary"],
            serde_json::Value::Null
        );

        let summary = EpisodeSummary {
            upto_seq: 1,
            text: "The user asked for coffee deals.".into(),
            agents: BTreeMap::new(),
        };
        store
            .save_summary(&alice(), &episode, 2, &summary)
            .await
            .unwrap();
        let replay = runtime.replay(&alice(), &episode, false).await.unwrap();
        assert_eq!(replay.meta.summary, Some(summary));
        let history = runtime.history(&alice(), &episode).await.unwrap();
        let json = serde_json::to_value(&history).unwrap();
        assert_eq!(json["summary"], serde_json::json!({ "upto_seq": 1 }));
        assert_eq!(json["episode_id"], episode.as_str());
        assert_eq!(json["turns"].as_array().unwrap().len(), 2);
        assert!(
            json["summary"].get("text").is_none(),
            "the summary's text stays out"
        );
    }
}
