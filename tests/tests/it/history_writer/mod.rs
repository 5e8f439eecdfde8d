//! The history writer (D-27) against a real DynamoDB Local stream and an in-process S3:
//! turns are committed through `DynamoStore`, the table's stream is read as Lambda would
//! deliver it, and the batch goes through the writer.

mod rig;

use aws_lambda_events::event::dynamodb::Event;
use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::ports::model::TokenUsage;
use baton_core::turn::TurnRecord;
use baton_history_writer::archive_key;
use lambda_runtime::{Context, LambdaEvent};
use rig::{Rig, assert_aggregates_match, batch, failures, sk_of};

#[tokio::test]
async fn committed_turns_become_aggregates_audit_items_and_archived_bodies() {
    let rig = Rig::new().await;
    let mut committed = Vec::new();
    for seq in 1..=3 {
        committed.push(rig.commit("alice", "ep-1", seq).await);
    }
    let event = rig.stream().await;
    // What Lambda delivers: the journal's own writes, every one with a sequence number.
    assert!(event.records.iter().all(|r| {
        r.event_source.as_deref() == Some("aws:dynamodb") && r.change.sequence_number.is_some()
    }));
    assert!(event.records.iter().any(|r| sk_of(r).starts_with("TURN#")));

    let (response, summary) = rig.writer().process(event).await.unwrap();

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(summary.turns, 3);
    assert_eq!(summary.bodies, 4);
    assert_eq!(summary.failed, 0);
    assert!(summary.ignored > 0, "META and TURN-ID writes are ignored");
    let records: Vec<&TurnRecord> = committed.iter().map(|c| &c.record).collect();
    assert_aggregates_match(&rig.aggregates("ep-1").await, "alice", &records);

    let audit = rig.audit("ep-1").await;
    let expected: Vec<(u64, String, String, u64, u64)> = records
        .iter()
        .flat_map(|r| {
            r.consulted.iter().map(|a| {
                let status = serde_json::to_value(a.status).unwrap();
                (
                    r.seq,
                    a.agent_id.clone(),
                    status.as_str().unwrap().to_owned(),
                    a.duration_ms,
                    u64::from(a.tool_calls),
                )
            })
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let found: Vec<(u64, String, String, u64, u64)> = audit
        .iter()
        .map(|a| {
            (
                a.seq,
                a.agent_id.clone(),
                a.status.clone(),
                a.duration_ms,
                a.tool_calls,
            )
        })
        .collect();
    assert_eq!(found, expected);
    assert_eq!(audit.iter().filter(|e| e.answer.is_some()).count(), 1);
    for entry in &audit {
        let record = records.iter().find(|r| r.seq == entry.seq).unwrap();
        // Who approved what, when, over which arguments and through which face: on the
        // specialist that asked, on the turn that resumed it.
        match record.routing.answered.as_ref() {
            Some(a) if a.agent_id == entry.agent_id => {
                let kept = entry.answer.as_ref().expect("the answer's audit");
                assert_eq!(kept, a, "the answer's record, whole");
                assert_eq!(
                    (kept.answer.as_str(), kept.by.as_str(), kept.face.as_str()),
                    ("approve", "alice", "a2a")
                );
            }
            _ => assert_eq!(entry.answer, None, "{entry:?}"),
        }
        assert_eq!(
            entry.principal.as_ref().map(baton_core::Principal::as_str),
            Some("alice")
        );
        // One child record per tool call, and a planned sub-agent's mission.
        assert_eq!(entry.calls.len() as u64, entry.tool_calls, "{entry:?}");
        assert!(
            entry
                .calls
                .iter()
                .all(|c| c.tool == format!("lookup_{}", entry.agent_id) && c.outcome == "ok"),
            "{entry:?}"
        );
        // Each with the arguments it ran with (003 §12.2).
        for (i, call) in entry.calls.iter().enumerate() {
            let params: serde_json::Value = serde_json::from_str(&call.parameters).unwrap();
            assert_eq!(
                params,
                serde_json::json!({"account": entry.agent_id, "page": i})
            );
        }
        let mission = (entry.seq == 2).then(|| format!("find out about {}", entry.agent_id));
        assert_eq!(entry.mission, mission);
        assert_eq!(entry.turn_id, record.turn_id);
        assert_eq!(entry.created_ms, record.created_ms);
        assert_eq!(entry.episode_id, "ep-1");
        assert!(!entry.label.is_empty());
    }

    // Both placements are archived: inline bodies and those the journal put in S3.
    for body in committed.iter().flat_map(|c| &c.bodies) {
        let archived = rig.object(&archive_key("ep-1", &body.key)).await;
        assert_eq!(
            archived.as_deref(),
            Some(body.json.as_str()),
            "{}",
            body.key
        );
    }
    // Turns that leave their episode not due for compaction leave no mark.
    assert!(!rig.meta("ep-1").await.contains_key("due_pk"));
}

/// A specialist asked twice in one turn is two executions; one that a resumed turn only
/// carries from the turn that waited for the user (D-36) was audited and counted there.
#[tokio::test]
async fn each_execution_is_audited_and_counted_once() {
    let rig = Rig::new().await;
    let committed = rig
        .commit_with("alice", "ep-7", 1, false, |record| {
            let first = record.consulted[0].clone();
            record.consulted.push(baton_core::turn::ConsultedAgent {
                duration_ms: first.duration_ms + 1,
                tool_calls: 1,
                ..first.clone()
            });
            // The second execution's own call: its child record goes on its own item.
            record
                .routing
                .tool_calls
                .push(baton_core::trace::ToolCallRecord {
                    agent_id: first.agent_id.clone(),
                    tool: "second_look".into(),
                    outcome: baton_core::events::ToolOutcome::Partial,
                    duration_ms: 9,
                    params: serde_json::json!({"again": true}),
                    execution: 2,
                    run: 0,
                });
            record.consulted.push(baton_core::turn::ConsultedAgent {
                agent_id: "rewards".into(),
                label: "Rewards".into(),
                carried: true,
                ..first
            });
        })
        .await;
    let event = rig.stream().await;
    let (response, _) = rig.writer().process(event).await.unwrap();
    assert_eq!(failures(&response), Vec::<String>::new());
    let record = &committed.record;
    let first = &record.consulted[0];
    let audit = rig.audit("ep-7").await;
    let mut found: Vec<(&str, u64)> = audit
        .iter()
        .map(|a| (a.agent_id.as_str(), a.duration_ms))
        .collect();
    found.sort_unstable();
    let mut expected: Vec<(&str, u64)> = record.consulted[..record.consulted.len() - 1]
        .iter()
        .map(|a| (a.agent_id.as_str(), a.duration_ms))
        .collect();
    expected.sort_unstable();
    assert_eq!(found, expected, "{audit:#?}");
    assert_eq!(
        audit
            .iter()
            .filter(|a| a.agent_id == first.agent_id)
            .count(),
        2
    );
    assert!(audit.iter().all(|a| a.agent_id != "rewards"));
    // Each execution holds the calls it made, not the first one all of them.
    let mut executions: Vec<&_> = audit
        .iter()
        .filter(|a| a.agent_id == first.agent_id)
        .collect();
    executions.sort_by_key(|a| a.duration_ms);
    assert_eq!(executions[0].calls.len() as u32, first.tool_calls);
    assert!(executions[0].calls.iter().all(|c| c.tool != "second_look"));
    let second: Vec<(&str, &str, &str)> = executions[1]
        .calls
        .iter()
        .map(|c| (c.tool.as_str(), c.outcome.as_str(), c.parameters.as_str()))
        .collect();
    assert_eq!(second, [("second_look", "partial", r#"{"again":true}"#)]);
    assert_aggregates_match(&rig.aggregates("ep-7").await, "alice", &[record]);
}

#[tokio::test]
async fn meta_and_its_compaction_mark_are_left_to_the_journal() {
    let rig = Rig::new().await;
    let writer = rig.writer();
    // However many turns an episode has, the writer marks nothing: the turn decides.
    for seq in 1..=3 {
        rig.commit("alice", "ep-1", seq).await;
    }
    let before = rig.meta("ep-1").await;
    let (response, summary) = writer.process(rig.stream().await).await.unwrap();
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.turns, 3);
    assert_eq!(rig.meta("ep-1").await, before, "META is untouched");
    assert!(!before.contains_key("due_pk"));
    assert!(!before.contains_key("compaction_due"));

    // A turn that leaves the episode due is marked by its commit; projecting it, and the
    // whole stream again, changes nothing on META.
    let fourth = rig.commit_marking("alice", "ep-1", 4, true).await;
    let marked = rig.meta("ep-1").await;
    assert_eq!(marked["due_pk"], AttributeValue::S("DUE".into()));
    assert_eq!(
        marked["compaction_due"],
        AttributeValue::N(fourth.record.created_ms.to_string())
    );
    let (response, summary) = writer.process(rig.stream().await).await.unwrap();
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.turns, summary.turns_already_applied), (1, 3));
    assert_eq!(rig.meta("ep-1").await, marked);
    assert_eq!(rig.aggregates("ep-1").await.turns, 4);
}

#[tokio::test]
async fn redelivered_batches_count_nothing_twice() {
    let rig = Rig::new().await;
    let mut committed = Vec::new();
    for seq in 1..=4 {
        committed.push(rig.commit("alice", "ep-1", seq).await);
    }
    let event = rig.stream().await;
    let writer = rig.writer();

    writer.process(event.clone()).await.unwrap();
    let first = rig.aggregates("ep-1").await;
    let first_audit = rig.audit("ep-1").await;

    // The same batch again, then only its tail (Lambda retries from a failed record on).
    let (response, summary) = writer.process(event.clone()).await.unwrap();
    assert!(response.batch_item_failures.is_empty());
    assert_eq!((summary.turns, summary.turns_already_applied), (0, 4));
    let tail = event.records[event.records.len() / 2..].to_vec();
    writer.process(batch(tail)).await.unwrap();

    let records: Vec<&TurnRecord> = committed.iter().map(|c| &c.record).collect();
    assert_eq!(rig.aggregates("ep-1").await, first);
    assert_aggregates_match(&first, "alice", &records);
    assert_eq!(rig.audit("ep-1").await, first_audit);
}

#[tokio::test]
async fn delivery_order_across_items_does_not_change_the_aggregates() {
    let rig = Rig::new().await;
    let mut committed = Vec::new();
    // Two episodes, interleaved, so a batch mixes them.
    for seq in 1..=4 {
        committed.push(rig.commit("alice", "ep-a", seq).await);
        committed.push(rig.commit("bob", "ep-b", seq).await);
    }
    let event = rig.stream().await;
    let writer = rig.writer();

    // Backwards, in batches of three: later turns arrive before earlier ones.
    let mut reversed = event.records.clone();
    reversed.reverse();
    for chunk in reversed.chunks(3) {
        let (response, _) = writer.process(batch(chunk.to_vec())).await.unwrap();
        assert!(response.batch_item_failures.is_empty());
    }
    let backwards = (rig.aggregates("ep-a").await, rig.aggregates("ep-b").await);

    // Start over, then odd positions before even ones, as one batch.
    rig.delete_raw("EP#ep-a", "AGG").await;
    rig.delete_raw("EP#ep-b", "AGG").await;
    let (odd, even): (Vec<_>, Vec<_>) = event
        .records
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 2 == 1);
    let shuffled = odd.into_iter().chain(even).map(|(_, r)| r).collect();
    writer.process(batch(shuffled)).await.unwrap();
    let shuffled = (rig.aggregates("ep-a").await, rig.aggregates("ep-b").await);

    // Start over, then in stream order.
    rig.delete_raw("EP#ep-a", "AGG").await;
    rig.delete_raw("EP#ep-b", "AGG").await;
    writer.process(event).await.unwrap();
    let in_order = (rig.aggregates("ep-a").await, rig.aggregates("ep-b").await);

    // Exactly equal, dollars included: DynamoDB adds decimals exactly.
    assert_eq!(backwards, in_order);
    assert_eq!(shuffled, in_order);
    let of = |episode: &str| -> Vec<&TurnRecord> {
        committed
            .iter()
            .map(|c| &c.record)
            .filter(|r| r.episode_id == episode)
            .collect()
    };
    assert_aggregates_match(&in_order.0, "alice", &of("ep-a"));
    assert_aggregates_match(&in_order.1, "bob", &of("ep-b"));
}

#[tokio::test]
async fn poison_records_are_reported_by_sequence_number_and_the_rest_is_projected() {
    let rig = Rig::new().await;
    let first = rig.commit("alice", "ep-1", 1).await;
    // Another writer's broken items, in the real stream between good ones: a TURN whose
    // record is not JSON, and a BODY whose S3 object does not exist.
    rig.put_raw(&[
        ("pk", AttributeValue::S("EP#ep-1".into())),
        ("sk", AttributeValue::S("TURN#0000000099".into())),
        (
            "record",
            AttributeValue::S("{\"episode_id\":\"ep-1\",\"seq\":99,".into()),
        ),
        ("owner", AttributeValue::S("alice".into())),
    ])
    .await;
    rig.put_raw(&[
        ("pk", AttributeValue::S("EP#ep-1".into())),
        ("sk", AttributeValue::S("BODY#lost/0".into())),
        ("owner", AttributeValue::S("alice".into())),
        (
            "s3_key",
            AttributeValue::S("bodies/ep-1/lost/0.json".into()),
        ),
    ])
    .await;
    let second = rig.commit("alice", "ep-1", 2).await;

    let event = rig.stream().await;
    let poison: Vec<String> = event
        .records
        .iter()
        .filter(|r| matches!(sk_of(r).as_str(), "TURN#0000000099" | "BODY#lost/0"))
        .map(|r| r.change.sequence_number.clone().unwrap())
        .collect();
    assert_eq!(poison.len(), 2);
    let last_good = event.records.last().unwrap().change.sequence_number.clone();
    assert!(
        !poison.contains(last_good.as_ref().unwrap()),
        "good records follow the poison"
    );

    let (response, summary) = rig.writer().process(event).await.unwrap();

    assert_eq!(failures(&response), poison);
    assert_eq!(summary.failed, 2);
    assert_eq!(summary.turns, 2);
    assert_aggregates_match(
        &rig.aggregates("ep-1").await,
        "alice",
        &[&first.record, &second.record],
    );
    for body in &first.bodies {
        assert!(rig.object(&archive_key("ep-1", &body.key)).await.is_some());
    }
    // Lambda's wire shape for partial batch failures.
    let wire = serde_json::to_value(&response).unwrap();
    assert_eq!(
        wire["batchItemFailures"][0]["itemIdentifier"],
        serde_json::json!(poison[0])
    );
}

#[tokio::test]
async fn a_dynamodb_failure_fails_only_the_records_that_needed_it() {
    let rig = Rig::new().await;
    let committed = rig.commit("alice", "ep-1", 1).await;
    let event = rig.stream().await;
    let turn_seqs: Vec<String> = event
        .records
        .iter()
        .filter(|r| sk_of(r).starts_with("TURN#"))
        .map(|r| r.change.sequence_number.clone().unwrap())
        .collect();

    // The projections' table does not exist: every DynamoDB write fails; S3 still works.
    let (response, summary) = rig.writer_on("no-such-table").process(event).await.unwrap();

    assert_eq!(failures(&response), turn_seqs);
    assert_eq!(summary.bodies, committed.bodies.len());
    for body in &committed.bodies {
        assert!(rig.object(&archive_key("ep-1", &body.key)).await.is_some());
    }
}

#[tokio::test]
async fn the_sample_events_go_through_the_lambda_handler() {
    let rig = Rig::new().await;
    let writer = rig.writer();
    let sample: Event = serde_json::from_str(include_str!(
        "../../../../events/dynamodb-stream-batch.json"
    ))
    .unwrap();
    let poisoned: Event = serde_json::from_str(include_str!(
        "../../../../events/dynamodb-stream-batch-poison.json"
    ))
    .unwrap();
    let episode = "0b9e1c52-8f7a-4d3e-9a61-2f4c8e5d7a10";

    let response = writer
        .handle(LambdaEvent::new(sample.clone(), Context::default()))
        .await
        .unwrap();
    assert!(response.batch_item_failures.is_empty());
    let aggregates = rig.aggregates(episode).await;
    assert_eq!(aggregates.turns, 1);
    assert_eq!(aggregates.owner, "user-4821");
    assert_eq!(
        aggregates.tokens,
        TokenUsage {
            input: 3_050,
            output: 550,
            cache_read: 6_020,
            cache_write: 1_800
        }
    );
    assert_eq!(aggregates.cost_usd, 0.016542);
    assert_eq!(aggregates.agents["support"].statuses["partial"], 1);
    let audit = rig.audit(episode).await;
    assert_eq!(
        audit
            .iter()
            .map(|a| a.agent_id.as_str())
            .collect::<Vec<_>>(),
        ["rewards", "support"]
    );
    let body_key = "3f6a2b9e-1c4d-4e8f-a07b-5d2c9e8f1a36/tooluse_rewards_1";
    let archived = rig.object(&archive_key(episode, body_key)).await.unwrap();
    let body: serde_json::Value = serde_json::from_str(&archived).unwrap();
    assert_eq!(body["payload"]["points"], 12_400);

    let response = writer
        .handle(LambdaEvent::new(poisoned, Context::default()))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        serde_json::json!({"batchItemFailures": [{"itemIdentifier": "4421584500000000017450439107"}]})
    );
    let aggregates = rig.aggregates(episode).await;
    assert_eq!(aggregates.turns, 2);
    assert_eq!(aggregates.last_seq, 2);
    assert_eq!(aggregates.agents["strategist"].invocations, 1);

    // And the first sample again: nothing counted twice.
    writer
        .handle(LambdaEvent::new(sample, Context::default()))
        .await
        .unwrap();
    assert_eq!(rig.aggregates(episode).await.turns, 2);
}

/// What the writer hands to long-term memory (D-43), kept in order.
#[derive(Default)]
struct Remembered(std::sync::Mutex<Vec<(String, String)>>);

#[async_trait::async_trait]
impl baton_history_writer::Remember for Remembered {
    async fn after_turn(&self, owner: &baton_core::Principal, record: &TurnRecord) {
        self.0
            .lock()
            .unwrap()
            .push((owner.as_str().to_owned(), record.turn_id.clone()));
    }
}

#[tokio::test]
async fn each_new_turn_is_handed_to_memory_once_and_a_redelivery_asks_nothing_again() {
    let rig = Rig::new().await;
    let mut committed = Vec::new();
    for seq in 1..=3 {
        committed.push(rig.commit("alice", "ep-1", seq).await);
    }
    let event = rig.stream().await;
    let memory = std::sync::Arc::new(Remembered::default());
    let writer = rig.writer().with_memory(memory.clone());

    let (_, summary) = writer.process(event.clone()).await.unwrap();
    assert_eq!(summary.remembered, 3);
    let mut handed = memory.0.lock().unwrap().clone();
    handed.sort();
    let mut expected: Vec<(String, String)> = committed
        .iter()
        .map(|c| ("alice".to_owned(), c.record.turn_id.clone()))
        .collect();
    expected.sort();
    assert_eq!(handed, expected);

    let (_, again) = writer.process(event).await.unwrap();
    assert_eq!((again.remembered, again.turns_already_applied), (0, 3));
    assert_eq!(memory.0.lock().unwrap().len(), 3);
}

/// Extraction on AWS (D-43): the writer's runtime asks the summarizer (on the Bedrock
/// fake) about a new turn in which the user said something about themselves, and saves
/// what it proposes into DynamoDB and the S3 Vectors index, with Titan's vector.
#[tokio::test]
async fn a_new_turn_is_extracted_into_memory_on_dynamodb_and_s3_vectors() {
    use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
    use baton_aws::recall::{DynamoMemory, MemoryConfig};
    use baton_core::ports::memory::MemoryStore as _;
    use baton_core::recall::{MemoryFilter, Origin};
    use baton_history_writer::{MemorySetup, RuntimeMemory};
    use baton_tests::fake_bedrock::{FakeBedrock, Reply};
    use baton_tests::s3_vectors::FakeS3Vectors;

    const ARN: &str = "arn:aws:s3vectors:us-east-1:123456789012:bucket/baton-memory/index/memories";
    let rig = Rig::new().await;
    let committed = rig
        .commit_with("alice", "ep-1", 1, false, |r| {
            r.user_text = "My dog is called Biscuit".to_owned();
        })
        .await;
    let event = rig.stream().await;

    let bedrock = FakeBedrock::with_handler(|_| {
        Reply::text(
            r#"{"memories": [{"kind": "fact", "subject": "dog", "text": "My dog is called Biscuit", "expires_in_days": null}]}"#,
        )
    })
    .await
    .unwrap();
    let vectors = FakeS3Vectors::start().await.unwrap();
    vectors.create_index("baton-memory", "memories", 256, &[]);
    let vector_client =
        aws_sdk_s3vectors::Client::from_conf(vectors.config_builder().await.build());
    let fake_sdk = bedrock.sdk_config().await;
    let clients = baton_aws::sdk::Clients {
        config: fake_sdk.clone(),
        bedrock: aws_sdk_bedrockruntime::Client::from_conf(
            aws_sdk_bedrockruntime::config::Builder::from(&fake_sdk)
                .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
                .build(),
        ),
        dynamodb: rig.ddb.clone(),
        s3: rig.s3.client(),
        s3vectors: vector_client.clone(),
    };
    let registry = baton_tests::fixtures::registry_dir().display().to_string();
    let vars: std::collections::HashMap<&str, &str> = std::collections::HashMap::from([
        ("BATON_MEMORY_VECTOR_INDEX_ARN", ARN),
        ("BATON_MEMORY", "true"),
        ("BATON_REGISTRY", registry.as_str()),
    ]);
    let setup =
        MemorySetup::from_lookup(|name| vars.get(name).map(|v| (*v).to_owned()), &rig.table)
            .unwrap()
            .expect("memory is kept");
    let extractor = RuntimeMemory::init(&setup, &clients, rig::BUCKET)
        .await
        .unwrap();
    let writer = rig.writer().with_memory(std::sync::Arc::new(extractor));

    let (_, summary) = writer.process(event.clone()).await.unwrap();
    assert_eq!(summary.remembered, 1);
    assert_eq!(bedrock.request_count(), 1, "one summarizer call");

    let store = DynamoMemory::new(
        rig.ddb.clone(),
        vector_client,
        MemoryConfig::from_index_arn(&rig.table, ARN, 256).unwrap(),
    );
    let alice = baton_core::Principal::new("alice").unwrap();
    let kept = store
        .list(&alice, &MemoryFilter::current(rig::now_ms() + 1_000), 10)
        .await
        .unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].text, "My dog is called Biscuit");
    assert_eq!(kept[0].origin, Origin::Extracted);
    assert_eq!(
        kept[0].source.turn_id.as_deref(),
        Some(committed.record.turn_id.as_str())
    );
    assert_eq!(vectors.vectors("baton-memory", "memories").len(), 1);

    // Redelivered: nothing is asked again.
    let (_, again) = writer.process(event).await.unwrap();
    assert_eq!(again.remembered, 0);
    assert_eq!(bedrock.request_count(), 1);
}
