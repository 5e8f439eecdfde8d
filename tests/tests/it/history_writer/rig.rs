//! The test rig: DynamoDB Local with a fresh journal table, an in-process S3, turns
//! committed through `DynamoStore`, and independent expectations of what the history
//! writer must make of them.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_sdk_dynamodb::types::AttributeValue;
use baton_aws::journal::{DynamoStore, JournalConfig};
use baton_core::Principal;
use baton_core::ports::model::TokenUsage;
use baton_core::ports::store::TurnStore as _;
use baton_core::ports::store::{Body, Claim, ClaimRequest, Commit};
use baton_core::trace::RoutingRecord;
use baton_core::turn::{
    AgentStatus, ConsultedAgent, EpisodeState, ModelUsage, TurnOutcome, TurnRecord,
};
use baton_history_writer::{AuditEntry, Config, EpisodeAggregates, HistoryWriter};
use baton_tests::dynamodb_local::DynamoDbLocal;
use baton_tests::s3::InProcessS3;
use baton_tests::streams;

pub(crate) const BUCKET: &str = "baton-bodies";
/// Bodies above this many bytes go to S3 (so a test commit exercises both placements).
pub(crate) const INLINE_LIMIT: usize = 256;

pub(crate) struct Rig {
    pub(crate) ddb: aws_sdk_dynamodb::Client,
    streams: aws_sdk_dynamodbstreams::Client,
    pub(crate) s3: InProcessS3,
    pub(crate) table: String,
    store: DynamoStore,
}

impl Rig {
    pub(crate) async fn new() -> Rig {
        let local = DynamoDbLocal::connect().await;
        let table = local.fresh_table().await;
        let s3 = InProcessS3::start();
        s3.create_bucket(BUCKET).await;
        let store = DynamoStore::new(
            local.client(),
            s3.client(),
            JournalConfig::new(&table, BUCKET).with_inline_body_limit(INLINE_LIMIT),
        );
        Rig {
            ddb: local.client(),
            streams: aws_sdk_dynamodbstreams::Client::new(local.sdk_config()),
            s3,
            table,
            store,
        }
    }

    pub(crate) fn writer(&self) -> HistoryWriter {
        self.writer_on(&self.table)
    }

    pub(crate) fn writer_on(&self, table: &str) -> HistoryWriter {
        HistoryWriter::new(
            self.ddb.clone(),
            self.s3.client(),
            Config {
                table: table.to_owned(),
                bucket: BUCKET.to_owned(),
            },
        )
    }

    /// Everything in the table's stream, as one Lambda batch.
    pub(crate) async fn stream(&self) -> Event {
        streams::table_event(&self.ddb, &self.streams, &self.table)
            .await
            .unwrap()
    }

    pub(crate) async fn aggregates(&self, episode: &str) -> EpisodeAggregates {
        EpisodeAggregates::read(&self.ddb, &self.table, episode)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no aggregates for {episode}"))
    }

    pub(crate) async fn audit(&self, episode: &str) -> Vec<AuditEntry> {
        AuditEntry::read_all(&self.ddb, &self.table, episode)
            .await
            .unwrap()
    }

    pub(crate) async fn meta(&self, episode: &str) -> HashMap<String, AttributeValue> {
        self.ddb
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("EP#{episode}")))
            .key("sk", AttributeValue::S("META".into()))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .unwrap_or_else(|| panic!("no META for {episode}"))
    }

    pub(crate) async fn object(&self, key: &str) -> Option<String> {
        let out = self
            .s3
            .client()
            .get_object()
            .bucket(BUCKET)
            .key(key)
            .send()
            .await
            .ok()?;
        let bytes = out.body.collect().await.unwrap().into_bytes();
        Some(String::from_utf8(bytes.to_vec()).unwrap())
    }

    pub(crate) async fn put_raw(&self, item: &[(&str, AttributeValue)]) {
        let mut put = self.ddb.put_item().table_name(&self.table);
        for (name, value) in item {
            put = put.item(*name, value.clone());
        }
        put.send().await.unwrap();
    }

    pub(crate) async fn delete_raw(&self, pk: &str, sk: &str) {
        self.ddb
            .delete_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.into()))
            .key("sk", AttributeValue::S(sk.into()))
            .send()
            .await
            .unwrap();
    }

    /// Claims and commits turn `seq` of `episode` (a new episode at seq 1).
    pub(crate) async fn commit(&self, principal: &str, episode: &str, seq: u64) -> Committed {
        self.commit_marking(principal, episode, seq, false).await
    }

    /// [`Rig::commit`], the turn leaving its episode due for compaction if `due`.
    pub(crate) async fn commit_marking(
        &self,
        principal: &str,
        episode: &str,
        seq: u64,
        due: bool,
    ) -> Committed {
        self.commit_with(principal, episode, seq, due, |_| {}).await
    }

    /// [`Rig::commit_marking`], with `edit` applied to the sample turn first.
    pub(crate) async fn commit_with(
        &self,
        principal: &str,
        episode: &str,
        seq: u64,
        due: bool,
        edit: impl FnOnce(&mut TurnRecord),
    ) -> Committed {
        let principal = Principal::new(principal).unwrap();
        let turn_id = format!("{episode}-turn-{seq}");
        let claim = self
            .store
            .claim(ClaimRequest {
                principal: principal.clone(),
                episode_id: (seq > 1).then(|| episode.to_owned()),
                new_episode_id: episode.to_owned(),
                turn_id: turn_id.clone(),
                now_ms: now_ms(),
                lease_ms: 60_000,
                fingerprint: String::new(),
            })
            .await
            .unwrap();
        let Claim::Claimed(meta) = claim else {
            panic!("turn {seq} of {episode} was not claimed: {claim:?}")
        };
        assert_eq!(meta.version, seq - 1);
        let (mut record, bodies) = sample_turn(episode, seq, &turn_id);
        edit(&mut record);
        self.store
            .commit(&Commit {
                principal,
                expected_version: seq - 1,
                record: record.clone(),
                bodies: bodies.clone(),
                pictures: Vec::new(),
                state: EpisodeState::default(),
                compaction_due: due,
            })
            .await
            .unwrap();
        Committed { record, bodies }
    }
}

pub(crate) struct Committed {
    pub(crate) record: TurnRecord,
    pub(crate) bodies: Vec<Body>,
}

pub(crate) fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A turn whose consulted agents, usage, outcome and bodies vary with `seq`.
pub(crate) fn sample_turn(episode: &str, seq: u64, turn_id: &str) -> (TurnRecord, Vec<Body>) {
    let agents = [
        ("rewards", "Rewards"),
        ("support", "Support"),
        ("strategist", "Savings strategist"),
    ];
    let statuses = [
        AgentStatus::Ok,
        AgentStatus::Partial,
        AgentStatus::Error,
        AgentStatus::Timeout,
    ];
    // Turn n consults 1 + n % 3 agents, starting at agent n % 3.
    let consulted: Vec<ConsultedAgent> = (0..=(seq % 3))
        .map(|i| {
            let (agent_id, label) = agents[usize::try_from((seq + i) % 3).unwrap()];
            ConsultedAgent {
                agent_id: agent_id.into(),
                label: label.into(),
                status: statuses[usize::try_from((seq + i) % 4).unwrap()],
                duration_ms: 300 + 100 * seq + 7 * i,
                tool_calls: u32::try_from((seq + i) % 3).unwrap(),
                carried: false,
            }
        })
        .collect();
    let usage = vec![
        ModelUsage {
            model: "claude-haiku".into(),
            calls: 2,
            tokens: TokenUsage {
                input: 1_000 + seq,
                output: 200 + 3 * seq,
                cache_read: 5_000,
                cache_write: if seq == 1 { 1_800 } else { 0 },
            },
            cost_usd: 0.001_1 * seq as f64 + 0.000_000_3,
        },
        ModelUsage {
            model: "claude-sonnet".into(),
            calls: 1,
            tokens: TokenUsage {
                input: 700,
                output: 90 + seq,
                cache_read: 0,
                cache_write: 0,
            },
            cost_usd: 0.003_7,
        },
    ];
    let cost_usd = usage.iter().map(|u| u.cost_usd).sum();
    let bodies = if seq % 2 == 1 {
        vec![
            Body {
                key: format!("{turn_id}/tooluse_small"),
                json: format!(r#"{{"status":"ok","payload":{{"seq":{seq}}}}}"#),
            },
            Body {
                key: format!("{turn_id}/tooluse_large"),
                json: format!(
                    r#"{{"status":"ok","payload":"{}"}}"#,
                    "x".repeat(2 * INLINE_LIMIT)
                ),
            },
        ]
    } else {
        Vec::new()
    };
    let record = TurnRecord {
        episode_id: episode.into(),
        seq,
        turn_id: turn_id.into(),
        created_ms: 1_763_716_000_000 + seq * 1_000,
        user_text: format!("question {seq}"),
        narration: format!("answer {seq}"),
        segments: Vec::new(),
        routing: sample_routing(seq, &consulted),
        consulted,
        usage,
        cost_usd,
        body_keys: bodies.iter().map(|b| b.key.clone()).collect(),
        outcome: if seq.is_multiple_of(5) {
            TurnOutcome::Limited
        } else {
            TurnOutcome::Answered
        },
        direct: None,
        privacy: Default::default(),
        fingerprint: String::new(),
        message_id: None,
        pictures: Vec::new(),
    };
    (record, bodies)
}

/// Each consulted agent's tool calls (`lookup_<agent>`, as many as it made); turn 2 was
/// planned, each agent a sub-agent with a mission.
fn sample_routing(seq: u64, consulted: &[ConsultedAgent]) -> RoutingRecord {
    let tool_calls = consulted
        .iter()
        .flat_map(|a| {
            (0..a.tool_calls).map(move |i| baton_core::trace::ToolCallRecord {
                agent_id: a.agent_id.clone(),
                tool: format!("lookup_{}", a.agent_id),
                outcome: baton_core::events::ToolOutcome::Ok,
                duration_ms: 40 + u64::from(i),
                params: serde_json::json!({"account": a.agent_id, "page": i}),
                execution: 1,
                run: 0,
            })
        })
        .collect();
    let plan = (seq == 2).then(|| {
        let nodes: Vec<serde_json::Value> = consulted
            .iter()
            .map(|a| {
                serde_json::json!({
                    "id": a.agent_id, "mission": format!("find out about {}", a.agent_id),
                    "skills": [], "max_tool_calls": 5, "wave": 1, "call_id": "c"
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({ "nodes": nodes, "outcomes": [] })).unwrap()
    });
    // Turn 3 resumed a wait: its first specialist had asked for approval.
    let answered = (seq == 3).then(|| baton_core::interruption::AnswerRecord {
        interruption_id: "int_3".into(),
        waited_turn_id: "turn-2".into(),
        origin_turn_id: "turn-2".into(),
        kind: baton_core::interruption::InterruptionKind::Approval,
        agent_id: consulted[0].agent_id.clone(),
        tool: "redeem_points".into(),
        answer: "approve".into(),
        args_sha256: "ab".repeat(32),
        by: "alice".into(),
        face: "a2a".into(),
        asked_ms: 1_763_716_001_000,
        answered_ms: 1_763_716_002_500,
    });
    RoutingRecord {
        tool_calls,
        plan,
        answered,
        ..RoutingRecord::default()
    }
}

/// What the aggregates of `records` must say, folded here independently of the writer.
pub(crate) fn assert_aggregates_match(
    aggregates: &EpisodeAggregates,
    owner: &str,
    records: &[&TurnRecord],
) {
    let mut tokens = TokenUsage::default();
    let mut cost = 0.0;
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut invocations: BTreeMap<String, u64> = BTreeMap::new();
    let mut statuses: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut duration: BTreeMap<String, u64> = BTreeMap::new();
    let mut tool_calls: BTreeMap<String, u64> = BTreeMap::new();
    for record in records {
        for usage in &record.usage {
            tokens.add(&usage.tokens);
        }
        cost += record.cost_usd;
        let outcome = serde_json::to_value(record.outcome).unwrap();
        *outcomes
            .entry(outcome.as_str().unwrap().to_owned())
            .or_default() += 1;
        // What a turn only carries from the turn that waited was counted there.
        for agent in record.consulted.iter().filter(|a| !a.carried) {
            let id = agent.agent_id.clone();
            *invocations.entry(id.clone()).or_default() += 1;
            let status = serde_json::to_value(agent.status).unwrap();
            *statuses
                .entry((id.clone(), status.as_str().unwrap().to_owned()))
                .or_default() += 1;
            *duration.entry(id.clone()).or_default() += agent.duration_ms;
            *tool_calls.entry(id).or_default() += u64::from(agent.tool_calls);
        }
    }
    let mut seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    seqs.sort_unstable();
    let last = records.iter().max_by_key(|r| r.seq).unwrap();

    assert_eq!(aggregates.owner, owner);
    assert_eq!(aggregates.turns, records.len() as u64);
    assert_eq!(aggregates.applied_seqs, seqs);
    assert_eq!(aggregates.tokens, tokens);
    assert!(
        (aggregates.cost_usd - cost).abs() < 1e-9,
        "{} vs {cost}",
        aggregates.cost_usd
    );
    assert_eq!(aggregates.last_seq, last.seq);
    assert_eq!(aggregates.last_turn_id, last.turn_id);
    assert_eq!(aggregates.last_turn_ms, last.created_ms);
    assert_eq!(aggregates.outcomes, outcomes);
    assert_eq!(
        aggregates.agents.keys().cloned().collect::<Vec<_>>(),
        invocations.keys().cloned().collect::<Vec<_>>()
    );
    for (agent, tally) in &aggregates.agents {
        assert_eq!(tally.invocations, invocations[agent], "{agent}");
        assert_eq!(tally.duration_ms, duration[agent], "{agent}");
        assert_eq!(tally.tool_calls, tool_calls[agent], "{agent}");
        for (status, count) in &tally.statuses {
            assert_eq!(
                *count,
                statuses[&(agent.clone(), status.clone())],
                "{agent} {status}"
            );
        }
        assert_eq!(tally.statuses.values().sum::<u64>(), tally.invocations);
    }
}

pub(crate) fn failures(
    response: &aws_lambda_events::event::streams::DynamoDbEventResponse,
) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone().unwrap_or_default())
        .collect()
}

pub(crate) fn batch(records: Vec<EventRecord>) -> Event {
    let mut event = Event::default();
    event.records = records;
    event
}

pub(crate) fn sk_of(record: &EventRecord) -> String {
    let json = serde_json::to_value(&record.change.keys).unwrap();
    json["sk"]["S"].as_str().unwrap_or_default().to_owned()
}
