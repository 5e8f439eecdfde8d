//! The rate-table connector: an amount times a rate chosen from a table (a calculator).
//!
//! ```yaml
//! connector:
//!   kind: rate_table
//!   amount_arg: points          # argument holding the amount
//!   choice_arg: reward_type     # argument choosing the rate
//!   rates: {gift_card: 0.001, cash_out: 0.0008}
//!   unit: usd                   # unit of the computed value
//!   decimals: 2                 # rounding of the value (default 2)
//!   domain_type: redemption_quote
//!   enricher_id: demo-redemption-rates
//!   version: 1.0.0
//! ```

use std::collections::BTreeMap;

use async_trait::async_trait;
use baton_core::ports::connector::{
    Connector, ConnectorError, ConnectorRequest, Envelope, EnvelopeStatus,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::envelope::EnvelopeMeta;
use crate::error::Error;

const MAX_DECIMALS: u32 = 6;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateTable {
    amount_arg: String,
    choice_arg: String,
    rates: BTreeMap<String, f64>,
    unit: String,
    #[serde(default = "default_decimals")]
    decimals: u32,
    domain_type: String,
    enricher_id: String,
    version: String,
}

fn default_decimals() -> u32 {
    2
}

impl RateTable {
    fn parse(config: &Value) -> Result<Self, Error> {
        let table: RateTable = serde_json::from_value(config.clone())
            .map_err(|e| Error::Config(format!("rate table settings: {e}")))?;
        let bad = |p: String| Err(Error::Config(p));
        if table.amount_arg.trim().is_empty() || table.choice_arg.trim().is_empty() {
            return bad("amount_arg and choice_arg must name arguments".to_owned());
        }
        if table.rates.is_empty() {
            return bad("rates is empty; give at least one choice and its rate".to_owned());
        }
        if let Some((choice, rate)) = table
            .rates
            .iter()
            .find(|(_, r)| !(r.is_finite() && **r >= 0.0))
        {
            return bad(format!(
                "rates.{choice} = {rate} is not a non-negative number"
            ));
        }
        if table.unit.trim().is_empty() {
            return bad("unit is empty".to_owned());
        }
        if table.decimals > MAX_DECIMALS {
            return bad(format!("decimals must be at most {MAX_DECIMALS}"));
        }
        table.meta().check().map_err(Error::Config)?;
        Ok(table)
    }

    fn meta(&self) -> EnvelopeMeta {
        EnvelopeMeta {
            domain_type: self.domain_type.clone(),
            enricher_id: self.enricher_id.clone(),
            version: self.version.clone(),
        }
    }

    /// The payload, or why the arguments cannot be priced.
    fn quote(&self, args: &Value) -> Result<Value, Value> {
        let amount = args.get(&self.amount_arg);
        let Some(value) = amount
            .and_then(Value::as_f64)
            .filter(|a| a.is_finite() && *a >= 0.0)
        else {
            return Err(json!({
                "problem": format!("{} must be a non-negative number", self.amount_arg),
                (self.amount_arg.clone()): amount.cloned().unwrap_or(Value::Null),
            }));
        };
        let choice = args.get(&self.choice_arg).and_then(Value::as_str);
        let Some((choice, rate)) = choice.and_then(|c| self.rates.get_key_value(c)) else {
            return Err(json!({
                "problem": format!("unknown {}", self.choice_arg),
                (self.choice_arg.clone()): args.get(&self.choice_arg).cloned().unwrap_or(Value::Null),
                "known": self.rates.keys().collect::<Vec<_>>(),
            }));
        };
        let scale = 10f64.powi(self.decimals as i32);
        let computed = (value * rate * scale).round() / scale;
        Ok(json!({
            (self.amount_arg.clone()): amount.cloned().unwrap_or(Value::Null),
            (self.choice_arg.clone()): choice,
            "rate": rate,
            "value": computed,
            "unit": self.unit,
        }))
    }
}

/// Prices an amount with a rate chosen by an argument (`connector: {kind: rate_table,
/// ...}`); an unknown choice or a missing amount is an envelope with status `error`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RateTableConnector;

impl RateTableConnector {
    /// The connector kind named in `tools.yaml`.
    pub const KIND: &'static str = "rate_table";

    /// A rate-table connector (all its settings live in each tool's config).
    pub fn new() -> Self {
        RateTableConnector
    }
}

#[async_trait]
impl Connector for RateTableConnector {
    async fn call(&self, request: ConnectorRequest) -> Result<Envelope, ConnectorError> {
        let table = RateTable::parse(&request.config)?;
        let principal = request.principal.as_str();
        let envelope = match table.quote(&request.args) {
            Ok(payload) => {
                table
                    .meta()
                    .envelope(EnvelopeStatus::Ok, payload, Vec::new(), principal)
            }
            Err(problem) => {
                tracing::info!(tool = %request.tool_id, %problem, "rate table cannot price the arguments");
                table
                    .meta()
                    .envelope(EnvelopeStatus::Error, problem, Vec::new(), principal)
            }
        };
        Ok(envelope)
    }

    fn check_config(&self, _tool_id: &str, config: &Value) -> Result<(), String> {
        RateTable::parse(config)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_core::Principal;

    use super::*;

    fn config() -> Value {
        json!({
            "amount_arg": "points",
            "choice_arg": "reward_type",
            "rates": {"gift_card": 0.001, "cash_out": 0.0008},
            "unit": "usd",
            "domain_type": "redemption_quote",
            "enricher_id": "demo-rates",
            "version": "1.0.0",
        })
    }

    fn request(config: Value, args: Value) -> ConnectorRequest {
        ConnectorRequest {
            tool_id: Arc::from("calculate_redemption"),
            config: Arc::new(config),
            args,
            principal: Principal::new("user-7").unwrap(),
            episode_id: Arc::from("ep-1"),
            agent_id: Arc::from("rewards"),
            now_ms: 0,
            progress: None,
            traceparent: None,
            idempotency_key: None,
            links: None,
            input: None,
        }
    }

    #[tokio::test]
    async fn the_value_is_the_amount_times_the_chosen_rate() {
        let e = RateTableConnector
            .call(request(
                config(),
                json!({"points": 25_000, "reward_type": "cash_out"}),
            ))
            .await
            .unwrap();
        assert_eq!(e.status, EnvelopeStatus::Ok);
        assert_eq!(
            e.payload,
            json!({"points": 25_000, "reward_type": "cash_out", "rate": 0.0008, "value": 20.0, "unit": "usd"})
        );
        assert_eq!(e.principal, "user-7");
        assert_eq!(e.domain_type, "redemption_quote");
        assert_eq!(e.enricher_id, "demo-rates");
    }

    #[tokio::test]
    async fn the_value_is_rounded_to_the_configured_decimals() {
        let e = RateTableConnector
            .call(request(
                config(),
                json!({"points": 1_234, "reward_type": "cash_out"}),
            ))
            .await
            .unwrap();
        assert_eq!(e.payload["value"], json!(0.99));
    }

    #[tokio::test]
    async fn an_unknown_choice_is_an_error_envelope() {
        let e = RateTableConnector
            .call(request(
                config(),
                json!({"points": 100, "reward_type": "yacht"}),
            ))
            .await
            .unwrap();
        assert_eq!(e.status, EnvelopeStatus::Error);
        assert_eq!(e.payload["known"], json!(["cash_out", "gift_card"]));
        assert_eq!(e.principal, "user-7");
    }

    #[tokio::test]
    async fn a_missing_or_negative_amount_is_an_error_envelope() {
        for args in [
            json!({"reward_type": "gift_card"}),
            json!({"points": -5, "reward_type": "gift_card"}),
            json!({"points": "lots", "reward_type": "gift_card"}),
        ] {
            let e = RateTableConnector
                .call(request(config(), args.clone()))
                .await
                .unwrap();
            assert_eq!(e.status, EnvelopeStatus::Error, "{args}");
        }
    }

    #[test]
    fn check_config_accepts_a_complete_table() {
        assert_eq!(RateTableConnector.check_config("t", &config()), Ok(()));
    }

    #[test]
    fn check_config_names_what_is_wrong() {
        let cases = [
            ("rates", json!({}), "rates is empty"),
            ("rates", json!({"gift_card": -1.0}), "rates.gift_card"),
            ("version", json!("soon"), "soon"),
            ("decimals", json!(9), "decimals"),
            ("colour", json!("blue"), "colour"),
        ];
        for (key, value, expected) in cases {
            let mut c = config();
            c[key] = value;
            let err = RateTableConnector.check_config("t", &c).unwrap_err();
            assert!(err.contains(expected), "{key}: {err}");
        }
        let mut c = config();
        c.as_object_mut().unwrap().remove("unit");
        let err = RateTableConnector.check_config("t", &c).unwrap_err();
        assert!(err.contains("unit"), "{err}");
    }

    #[tokio::test]
    async fn a_bad_config_at_call_time_is_a_config_error() {
        let err = RateTableConnector
            .call(request(json!({"unit": "usd"}), json!({})))
            .await
            .unwrap_err();
        assert!(matches!(err, ConnectorError::Config(_)), "{err:?}");
    }
}
