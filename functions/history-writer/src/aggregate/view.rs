//! The `AGG` item read back as a typed value.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::ports::model::TokenUsage;

use super::attributes as attr;
use crate::error::{Error, Result};
use crate::read;
use baton_aws::journal::keys;

/// What the history writer has gathered about one episode.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EpisodeAggregates {
    /// Episode id.
    pub episode_id: String,
    /// Owner principal.
    pub owner: String,
    /// Turns folded in.
    pub turns: u64,
    /// Sequence numbers folded in, ascending.
    pub applied_seqs: Vec<u64>,
    /// Tokens by kind, over every model.
    pub tokens: TokenUsage,
    /// Cost in USD.
    pub cost_usd: f64,
    /// Highest sequence number folded in.
    pub last_seq: u64,
    /// Turn id of that turn.
    pub last_turn_id: String,
    /// Commit time of that turn, epoch ms.
    pub last_turn_ms: u64,
    /// Turns by outcome (`answered`, `limited`, `failed`).
    pub outcomes: BTreeMap<String, u64>,
    /// Sub-agent executions by agent id.
    pub agents: BTreeMap<String, AgentTally>,
}

/// One sub-agent's executions within an episode.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentTally {
    /// Times consulted.
    pub invocations: u64,
    /// Executions by status (`ok`, `partial`, `error`, `timeout`).
    pub statuses: BTreeMap<String, u64>,
    /// Total wall time, ms.
    pub duration_ms: u64,
    /// Total tool calls.
    pub tool_calls: u64,
}

impl EpisodeAggregates {
    /// Reads an episode's aggregates (strongly consistent); `None` before its first turn
    /// was projected.
    ///
    /// # Errors
    ///
    /// [`Error::Dynamo`] when the read fails.
    pub async fn read(ddb: &Client, table: &str, episode_id: &str) -> Result<Option<Self>> {
        let output = ddb
            .get_item()
            .table_name(table)
            .key(keys::PK, AttributeValue::S(keys::episode_pk(episode_id)))
            .key(keys::SK, AttributeValue::S(keys::AGG.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| {
                Error::dynamo(format!("reading the aggregates of episode {episode_id}"), e)
            })?;
        Ok(output.item().map(Self::from_item))
    }

    /// Interprets an `AGG` item; absent or malformed counters read as zero.
    pub fn from_item(item: &HashMap<String, AttributeValue>) -> Self {
        let string = |name: &str| read::string(item, name);
        let mut aggregates = EpisodeAggregates {
            episode_id: string(attr::EPISODE_ID),
            owner: string(attr::OWNER),
            turns: whole(item.get(attr::TURNS)),
            applied_seqs: Vec::new(),
            tokens: TokenUsage {
                input: whole(item.get(attr::TOKENS_INPUT)),
                output: whole(item.get(attr::TOKENS_OUTPUT)),
                cache_read: whole(item.get(attr::TOKENS_CACHE_READ)),
                cache_write: whole(item.get(attr::TOKENS_CACHE_WRITE)),
            },
            cost_usd: read::number(item.get(attr::COST_USD)),
            last_seq: whole(item.get(attr::LAST_SEQ)),
            last_turn_id: string(attr::LAST_TURN_ID),
            last_turn_ms: whole(item.get(attr::LAST_TURN_MS)),
            outcomes: BTreeMap::new(),
            agents: BTreeMap::new(),
        };
        if let Some(Ok(seqs)) = item.get(attr::APPLIED_SEQS).map(|v| v.as_ns()) {
            aggregates.applied_seqs = seqs.iter().filter_map(|n| n.parse().ok()).collect();
            aggregates.applied_seqs.sort_unstable();
        }
        for (name, value) in item {
            if let Some(outcome) = name.strip_prefix(attr::OUTCOME_PREFIX) {
                aggregates
                    .outcomes
                    .insert(outcome.to_owned(), whole(Some(value)));
            } else if let Some((agent_id, field)) = name
                .strip_prefix(attr::AGENT_PREFIX)
                .and_then(|rest| rest.rsplit_once('#'))
            {
                let tally = aggregates.agents.entry(agent_id.to_owned()).or_default();
                let n = whole(Some(value));
                match field {
                    attr::INVOCATIONS => tally.invocations = n,
                    attr::DURATION_MS => tally.duration_ms = n,
                    attr::TOOL_CALLS => tally.tool_calls = n,
                    status => {
                        tally.statuses.insert(status.to_owned(), n);
                    }
                }
            }
        }
        aggregates
    }
}

fn whole(value: Option<&AttributeValue>) -> u64 {
    read::number(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: &str) -> AttributeValue {
        AttributeValue::N(v.to_owned())
    }

    #[test]
    fn flat_counters_read_back_as_tallies() {
        let item: HashMap<String, AttributeValue> = [
            ("episode_id", AttributeValue::S("e1".into())),
            ("owner", AttributeValue::S("alice".into())),
            ("turns", n("2")),
            (
                "applied_seqs",
                AttributeValue::Ns(vec!["2".into(), "1".into()]),
            ),
            ("cost_usd", n("0.0125")),
            ("tokens_input", n("300")),
            ("outcome#answered", n("2")),
            ("agent#billing#invocations", n("2")),
            ("agent#billing#ok", n("1")),
            ("agent#billing#timeout", n("1")),
            ("agent#billing#duration_ms", n("900")),
            ("agent#billing#tool_calls", n("3")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let view = EpisodeAggregates::from_item(&item);
        assert_eq!(view.turns, 2);
        assert_eq!(view.applied_seqs, vec![1, 2]);
        assert_eq!(view.cost_usd, 0.0125);
        assert_eq!(view.tokens.input, 300);
        assert_eq!(view.outcomes["answered"], 2);
        let billing = &view.agents["billing"];
        assert_eq!(billing.invocations, 2);
        assert_eq!(billing.statuses["ok"], 1);
        assert_eq!(billing.statuses["timeout"], 1);
        assert_eq!(billing.duration_ms, 900);
        assert_eq!(billing.tool_calls, 3);
    }
}
