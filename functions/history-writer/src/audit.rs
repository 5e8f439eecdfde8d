//! The audit trail: one `AUDIT` item per sub-agent execution, with its mission when the
//! planner made it, one child record per data tool (skill) call it made (003 §12), and,
//! on the specialist that asked, what became of a wait for the user: who approved or
//! answered what, when, over which arguments' hash, through which face (D-36).
//!
//! Items are written with plain puts of content derived from the turn alone (no clock),
//! so a redelivered turn rewrites identical items.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::try_join_all;

use baton_core::Principal;
use baton_core::interruption::AnswerRecord;

use crate::change::TurnChange;
use crate::error::{Error, Result};
use crate::read;
use baton_aws::journal::keys;

/// One sub-agent execution, as recorded in the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditEntry {
    /// Episode id.
    pub episode_id: String,
    /// Sequence number of the turn.
    pub seq: u64,
    /// Turn id.
    pub turn_id: String,
    /// Card id of the sub-agent.
    pub agent_id: String,
    /// Its display label.
    pub label: String,
    /// `ok`, `partial`, `error` or `timeout`.
    pub status: String,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// Tool calls it made.
    pub tool_calls: u64,
    /// What the planner asked of it (planned sub-agents only).
    pub mission: Option<String>,
    /// Each data tool call it made, in the order they ended.
    pub calls: Vec<AuditCall>,
    /// The user's answer to what it asked, on the turn that resumed it (D-36).
    pub answer: Option<AnswerRecord>,
    /// The principal the turn ran for (`None` if the item holds no valid principal id).
    pub principal: Option<Principal>,
    /// Commit time of the turn, epoch ms.
    pub created_ms: u64,
}

/// One data tool (skill) call of a sub-agent: the audit item's child record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditCall {
    /// The tool.
    pub tool: String,
    /// `ok`, `partial` or `unavailable`.
    pub outcome: String,
    /// Wall time, ms.
    pub duration_ms: u64,
    /// The arguments it ran with, as JSON text (003 §12.2); empty when the record kept none.
    pub parameters: String,
}

/// The record of an answered wait (D-36) as the audit item's `answer` map: every field as
/// an attribute of its own.
fn answer_item(a: &AnswerRecord) -> AttributeValue {
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let n = |v: u64| AttributeValue::N(v.to_string());
    AttributeValue::M(HashMap::from([
        ("interruption_id".to_owned(), s(&a.interruption_id)),
        ("waited_turn_id".to_owned(), s(&a.waited_turn_id)),
        ("origin_turn_id".to_owned(), s(&a.origin_turn_id)),
        ("kind".to_owned(), s(a.kind.as_str())),
        ("agent_id".to_owned(), s(&a.agent_id)),
        ("tool".to_owned(), s(&a.tool)),
        ("answer".to_owned(), s(&a.answer)),
        ("args_sha256".to_owned(), s(&a.args_sha256)),
        ("by".to_owned(), s(&a.by)),
        ("face".to_owned(), s(&a.face)),
        ("asked_ms".to_owned(), n(a.asked_ms)),
        ("answered_ms".to_owned(), n(a.answered_ms)),
    ]))
}

/// The `answer` map read back; `None` when it is not one this writer writes.
fn answer_of(item: &HashMap<String, AttributeValue>) -> Option<AnswerRecord> {
    let string = |name: &str| read::string(item, name);
    let kind = serde_json::from_value(serde_json::Value::String(string("kind"))).ok()?;
    Some(AnswerRecord {
        interruption_id: string("interruption_id"),
        waited_turn_id: string("waited_turn_id"),
        origin_turn_id: string("origin_turn_id"),
        kind,
        agent_id: string("agent_id"),
        tool: string("tool"),
        answer: string("answer"),
        args_sha256: string("args_sha256"),
        by: string("by"),
        face: string("face"),
        asked_ms: read::number::<u64>(item.get("asked_ms")),
        answered_ms: read::number::<u64>(item.get("answered_ms")),
    })
}

impl AuditEntry {
    /// Reads an episode's audit trail in turn order (strongly consistent).
    ///
    /// # Errors
    ///
    /// [`Error::Dynamo`] when the query fails.
    pub async fn read_all(ddb: &Client, table: &str, episode_id: &str) -> Result<Vec<Self>> {
        let items = ddb
            .query()
            .table_name(table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :audit)")
            .expression_attribute_names("#pk", keys::PK)
            .expression_attribute_names("#sk", keys::SK)
            .expression_attribute_values(":pk", AttributeValue::S(keys::episode_pk(episode_id)))
            .expression_attribute_values(":audit", AttributeValue::S(keys::AUDIT_PREFIX.to_owned()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<std::result::Result<Vec<_>, _>>()
            .await
            .map_err(|e| {
                Error::dynamo(
                    format!("reading the audit trail of episode {episode_id}"),
                    e,
                )
            })?;
        Ok(items.iter().map(Self::from_item).collect())
    }

    /// Interprets an `AUDIT` item; absent attributes read as empty or zero.
    pub fn from_item(item: &HashMap<String, AttributeValue>) -> Self {
        let string = |name: &str| read::string(item, name);
        let whole = |name: &str| read::number::<u64>(item.get(name));
        AuditEntry {
            episode_id: string(keys::EPISODE_ID),
            seq: whole(keys::SEQ),
            turn_id: string(keys::TURN_ID),
            agent_id: string("agent_id"),
            label: string("label"),
            status: string("status"),
            duration_ms: whole("duration_ms"),
            tool_calls: whole("tool_calls"),
            mission: item.get("mission").and_then(|v| v.as_s().ok()).cloned(),
            calls: item
                .get("calls")
                .and_then(|v| v.as_l().ok())
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_m().ok())
                .map(|c| AuditCall {
                    tool: read::string(c, "tool"),
                    outcome: read::string(c, "outcome"),
                    duration_ms: read::number::<u64>(c.get("duration_ms")),
                    parameters: read::string(c, "parameters"),
                })
                .collect(),
            answer: item
                .get("answer")
                .and_then(|v| v.as_m().ok())
                .and_then(answer_of),
            principal: Principal::new(&string("principal")).ok(),
            created_ms: whole(keys::CREATED_MS),
        }
    }
}

/// Writes one audit item per sub-agent execution of the turn: a specialist asked twice
/// gets two (`#2` after the second's key), and one the turn only carries from the turn
/// that waited for the user (D-36) none, since that turn wrote it.
///
/// # Errors
///
/// [`Error::Dynamo`] when a put fails (the others may have landed; redelivery rewrites them).
pub(crate) async fn write_audit(ddb: &Client, table: &str, turn: &TurnChange) -> Result<usize> {
    let record = &turn.record;
    let mission = |agent: &str| {
        record
            .routing
            .plan
            .as_ref()
            .and_then(|p| p.nodes.iter().find(|n| n.id == agent))
            .map(|n| n.mission.clone())
    };
    // A record written before executions were numbered reads as the first's.
    let calls = |agent: &str, nth: usize| -> Vec<AttributeValue> {
        record
            .routing
            .tool_calls
            .iter()
            .filter(|c| c.agent_id == agent && c.execution.max(1) as usize == nth)
            .map(|c| {
                let mut call = HashMap::from([
                    ("tool".to_owned(), AttributeValue::S(c.tool.clone())),
                    (
                        "outcome".to_owned(),
                        AttributeValue::S(c.outcome.as_str().to_owned()),
                    ),
                    (
                        "duration_ms".to_owned(),
                        AttributeValue::N(c.duration_ms.to_string()),
                    ),
                ]);
                if !c.params.is_null() {
                    call.insert(
                        "parameters".to_owned(),
                        AttributeValue::S(c.params.to_string()),
                    );
                }
                AttributeValue::M(call)
            })
            .collect()
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let ran = record.consulted.iter().filter(|a| !a.carried).map(|agent| {
        let nth = seen.entry(agent.agent_id.as_str()).or_default();
        *nth += 1;
        (agent, *nth)
    });
    let ran: Vec<_> = ran.collect();
    let puts = ran.into_iter().map(|(agent, nth)| {
        let calls = calls(&agent.agent_id, nth);
        let put = ddb
            .put_item()
            .table_name(table)
            .item(
                keys::PK,
                AttributeValue::S(keys::episode_pk(&record.episode_id)),
            )
            .item(
                keys::SK,
                AttributeValue::S(keys::audit_sk(record.seq, &agent.agent_id, nth)),
            )
            .item(
                keys::EPISODE_ID,
                AttributeValue::S(record.episode_id.clone()),
            )
            .item(keys::SEQ, AttributeValue::N(record.seq.to_string()))
            .item(keys::TURN_ID, AttributeValue::S(record.turn_id.clone()))
            .item("agent_id", AttributeValue::S(agent.agent_id.clone()))
            .item("label", AttributeValue::S(agent.label.clone()))
            .item(
                "status",
                AttributeValue::S(agent.status.as_str().to_owned()),
            )
            .item(
                "duration_ms",
                AttributeValue::N(agent.duration_ms.to_string()),
            )
            .item(
                "tool_calls",
                AttributeValue::N(agent.tool_calls.to_string()),
            )
            .item(
                "principal",
                AttributeValue::S(turn.owner.as_str().to_owned()),
            )
            .item(
                keys::CREATED_MS,
                AttributeValue::N(record.created_ms.to_string()),
            );
        let put = match mission(&agent.agent_id) {
            Some(mission) => put.item("mission", AttributeValue::S(mission)),
            None => put,
        };
        let put = if calls.is_empty() {
            put
        } else {
            put.item("calls", AttributeValue::L(calls))
        };
        let put = match record
            .routing
            .answered
            .as_ref()
            .filter(|a| a.agent_id == agent.agent_id)
        {
            Some(answered) => put.item("answer", answer_item(answered)),
            None => put,
        };
        put.send()
    });
    let written = try_join_all(puts).await.map_err(|e| {
        Error::dynamo(
            format!(
                "writing the audit trail of turn {} of episode {}",
                record.seq, record.episode_id
            ),
            e,
        )
    })?;
    Ok(written.len())
}
