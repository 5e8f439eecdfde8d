//! The audit trail: one `AUDIT` item per sub-agent execution.
//!
//! Items are written with plain puts of content derived from the turn alone (no clock),
//! so a redelivered turn rewrites identical items.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::try_join_all;

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
    /// The principal the turn ran for.
    pub principal: String,
    /// Commit time of the turn, epoch ms.
    pub created_ms: u64,
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
            principal: string("principal"),
            created_ms: whole(keys::CREATED_MS),
        }
    }
}

/// Writes one audit item per sub-agent the turn consulted.
///
/// The key holds the agent id, so a turn is assumed to consult an agent at most once (the
/// dispatch drops duplicate calls); a second execution would overwrite the first.
///
/// # Errors
///
/// [`Error::Dynamo`] when a put fails (the others may have landed; redelivery rewrites them).
pub(crate) async fn write_audit(ddb: &Client, table: &str, turn: &TurnChange) -> Result<usize> {
    let record = &turn.record;
    let puts = record.consulted.iter().map(|agent| {
        ddb.put_item()
            .table_name(table)
            .item(
                keys::PK,
                AttributeValue::S(keys::episode_pk(&record.episode_id)),
            )
            .item(
                keys::SK,
                AttributeValue::S(keys::audit_sk(record.seq, &agent.agent_id)),
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
            .item("principal", AttributeValue::S(turn.owner.clone()))
            .item(
                keys::CREATED_MS,
                AttributeValue::N(record.created_ms.to_string()),
            )
            .send()
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
