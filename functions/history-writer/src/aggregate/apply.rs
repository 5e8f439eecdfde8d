//! Folding one committed turn into the episode aggregates.
//!
//! Idempotent under redelivery and independent of delivery order: the update ADDs the
//! turn's numbers only if its seq is not yet in the `applied_seqs` number set, and adds the
//! seq in the same write. A conditional-check failure therefore means "already applied".
//! `last_seq` is a maximum, which ADD cannot express, so it is a second conditional write
//! that only ever raises it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use baton_core::ports::model::TokenUsage;

use super::attributes::{self as attr, agent_attribute, outcome_attribute, usd_decimal};
use crate::change::TurnChange;
use crate::error::{Error, Result};
use baton_aws::journal::keys;

/// One UpdateItem's expression, built attribute by attribute.
#[derive(Default)]
struct Expression {
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    adds: Vec<String>,
}

impl Expression {
    fn name(&mut self, attribute: &str) -> String {
        let placeholder = format!("#n{}", self.names.len());
        self.names.insert(placeholder.clone(), attribute.to_owned());
        placeholder
    }

    fn value(&mut self, value: AttributeValue) -> String {
        let placeholder = format!(":v{}", self.values.len());
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn add(&mut self, attribute: &str, amount: impl Display) {
        let name = self.name(attribute);
        let value = self.value(AttributeValue::N(amount.to_string()));
        self.adds.push(format!("{name} {value}"));
    }
}

/// What one agent contributed to one turn (merged if a turn consulted it twice, since an
/// update may name each attribute only once).
#[derive(Default)]
struct AgentDelta {
    invocations: u64,
    statuses: BTreeMap<&'static str, u64>,
    duration_ms: u64,
    tool_calls: u64,
}

/// Adds `turn` to its episode's aggregates unless it is already there; false when an
/// earlier delivery had already applied it.
///
/// # Errors
///
/// [`Error::Dynamo`] when the update fails for any reason but "already applied".
pub(crate) async fn apply_turn(ddb: &Client, table: &str, turn: &TurnChange) -> Result<bool> {
    let record = &turn.record;
    let mut expr = Expression::default();

    let applied = expr.name(attr::APPLIED_SEQS);
    let seq_set = expr.value(AttributeValue::Ns(vec![record.seq.to_string()]));
    let seq = expr.value(AttributeValue::N(record.seq.to_string()));
    expr.adds.push(format!("{applied} {seq_set}"));

    let mut tokens = TokenUsage::default();
    for usage in &record.usage {
        tokens.add(&usage.tokens);
    }
    expr.add(attr::TURNS, 1);
    expr.add(attr::TOKENS_INPUT, tokens.input);
    expr.add(attr::TOKENS_OUTPUT, tokens.output);
    expr.add(attr::TOKENS_CACHE_READ, tokens.cache_read);
    expr.add(attr::TOKENS_CACHE_WRITE, tokens.cache_write);
    expr.add(attr::COST_USD, usd_decimal(record.cost_usd));
    expr.add(&outcome_attribute(record.outcome), 1);

    let mut agents: BTreeMap<&str, AgentDelta> = BTreeMap::new();
    // A specialist the turn only carries from the turn that waited (D-36) was counted
    // with that turn.
    for consulted in record.consulted.iter().filter(|c| !c.carried) {
        let delta = agents.entry(consulted.agent_id.as_str()).or_default();
        delta.invocations += 1;
        *delta.statuses.entry(consulted.status.as_str()).or_default() += 1;
        delta.duration_ms += consulted.duration_ms;
        delta.tool_calls += u64::from(consulted.tool_calls);
    }
    for (agent_id, delta) in &agents {
        expr.add(
            &agent_attribute(agent_id, attr::INVOCATIONS),
            delta.invocations,
        );
        for (status, count) in &delta.statuses {
            expr.add(&agent_attribute(agent_id, status), count);
        }
        expr.add(
            &agent_attribute(agent_id, attr::DURATION_MS),
            delta.duration_ms,
        );
        expr.add(
            &agent_attribute(agent_id, attr::TOOL_CALLS),
            delta.tool_calls,
        );
    }

    let episode_name = expr.name(attr::EPISODE_ID);
    let episode_value = expr.value(AttributeValue::S(record.episode_id.clone()));
    let owner_name = expr.name(attr::OWNER);
    let owner_value = expr.value(AttributeValue::S(turn.owner.as_str().to_owned()));
    let update = format!(
        "ADD {} SET {episode_name} = if_not_exists({episode_name}, {episode_value}), \
         {owner_name} = if_not_exists({owner_name}, {owner_value})",
        expr.adds.join(", ")
    );

    let result = update_episode_item(ddb, table, &record.episode_id, keys::AGG)
        .update_expression(update)
        .condition_expression(format!("NOT contains({applied}, {seq})"))
        .set_expression_attribute_names(Some(expr.names))
        .set_expression_attribute_values(Some(expr.values))
        .send()
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(err) => match err.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(Error::dynamo(
                format!("updating the aggregates of episode {}", record.episode_id),
                other,
            )),
        },
    }
}

/// An update of one of an episode's items (`sk`: its aggregates).
fn update_episode_item(
    ddb: &Client,
    table: &str,
    episode_id: &str,
    sk: &str,
) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
    ddb.update_item()
        .table_name(table)
        .key(keys::PK, AttributeValue::S(keys::episode_pk(episode_id)))
        .key(keys::SK, AttributeValue::S(sk.to_owned()))
}

/// Raises the aggregates' `last_seq` (with its turn id and time) to this turn's, if lower.
///
/// # Errors
///
/// [`Error::Dynamo`] when the write fails for any reason but "a later turn is recorded".
pub(crate) async fn record_last_seq(ddb: &Client, table: &str, turn: &TurnChange) -> Result<()> {
    let record = &turn.record;
    let result = update_episode_item(ddb, table, &record.episode_id, keys::AGG)
        .update_expression("SET #last = :seq, #turn_id = :turn_id, #turn_ms = :turn_ms")
        .condition_expression("attribute_not_exists(#last) OR #last < :seq")
        .expression_attribute_names("#last", attr::LAST_SEQ)
        .expression_attribute_names("#turn_id", attr::LAST_TURN_ID)
        .expression_attribute_names("#turn_ms", attr::LAST_TURN_MS)
        .expression_attribute_values(":seq", AttributeValue::N(record.seq.to_string()))
        .expression_attribute_values(":turn_id", AttributeValue::S(record.turn_id.clone()))
        .expression_attribute_values(":turn_ms", AttributeValue::N(record.created_ms.to_string()))
        .send()
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(err) => match err.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(()),
            other => Err(Error::dynamo(
                format!("recording the last turn of episode {}", record.episode_id),
                other,
            )),
        },
    }
}
