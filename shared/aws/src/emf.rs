//! The `Metrics` port as CloudWatch Embedded Metric Format (EMF) log lines.
//!
//! [`EmfMetrics`] keeps what the runtime reports in memory (a lock held only to add a
//! number) and [`EmfMetrics::flush`] writes it out as EMF JSON lines, one per set of
//! dimension values; CloudWatch Logs turns them into metrics. Properties (such as a
//! prompt's cache cohort) ride on the line without being dimensions, for Logs Insights.
//! The turn function flushes once per invocation, after the response stream has ended.
//!
//! Units follow the metric's kind and name: counters are `Count`, measurements whose name
//! ends in `_ms` are `Milliseconds`, every other measurement (USD, widths) has no unit.
//!
//! Line shape (the EMF specification):
//!
//! ```text
//! {"_aws":{"Timestamp":1795272256567,"CloudWatchMetrics":[{"Namespace":"Baton",
//!   "Dimensions":[["agent","outcome"]],"Metrics":[{"Name":"subagent_latency_ms",
//!   "Unit":"Milliseconds"}]}]},"RequestId":"req-1","agent":"shop","outcome":"ok",
//!   "subagent_latency_ms":[41.0]}
//! ```

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use baton_core::ports::metrics::Metrics;
use serde_json::{Map, Value, json};

/// Most values one metric may carry in one EMF line.
const MAX_VALUES: usize = 100;
/// Most metrics one EMF directive may name.
const MAX_METRICS: usize = 100;

/// Metrics kept in memory until [`flush`](Self::flush)ed as EMF lines.
#[derive(Debug)]
pub struct EmfMetrics {
    namespace: String,
    base: Vec<(String, String)>,
    pending: Mutex<Vec<Group>>,
}

/// Every metric reported with one set of dimension and property values.
#[derive(Debug)]
struct Group {
    dimensions: Vec<(&'static str, String)>,
    /// Written on the line, left out of the directive's dimensions.
    properties: Vec<(&'static str, String)>,
    values: Vec<(&'static str, Recorded)>,
}

#[derive(Debug)]
enum Recorded {
    Count(u64),
    Samples(Vec<f64>),
}

impl Group {
    fn matches(
        &self,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
    ) -> bool {
        same(&self.dimensions, dimensions) && same(&self.properties, properties)
    }
}

fn same(kept: &[(&'static str, String)], given: &[(&'static str, &str)]) -> bool {
    kept.len() == given.len()
        && kept
            .iter()
            .zip(given)
            .all(|((n1, v1), (n2, v2))| n1 == n2 && v1 == v2)
}

fn owned(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs.iter().map(|(n, v)| (*n, (*v).to_owned())).collect()
}

impl EmfMetrics {
    /// Metrics under the CloudWatch `namespace`.
    pub fn new(namespace: impl Into<String>) -> Self {
        EmfMetrics {
            namespace: namespace.into(),
            base: Vec::new(),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Adds a dimension to every metric (e.g. the function's name or the stage).
    pub fn with_dimension(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.base.push((name.into(), value.into()));
        self
    }

    /// The CloudWatch namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Whether nothing is waiting to be flushed.
    pub fn is_empty(&self) -> bool {
        self.pending.lock().map(|p| p.is_empty()).unwrap_or(true)
    }

    /// Takes everything recorded so far and renders it as EMF lines (no trailing newline)
    /// stamped `timestamp_ms`, with `properties` (e.g. the request id) on every line.
    /// Afterwards nothing is pending.
    pub fn take_lines(&self, timestamp_ms: u64, properties: &[(&str, &str)]) -> Vec<String> {
        let groups = match self.pending.lock() {
            Ok(mut pending) => std::mem::take(&mut *pending),
            Err(_) => return Vec::new(),
        };
        let mut lines = Vec::new();
        for group in groups {
            self.render(&group, timestamp_ms, properties, &mut lines);
        }
        lines
    }

    /// Writes everything recorded so far to `out` as EMF lines, one `write_all` in all, with
    /// `properties` on every line; returns the number of lines. Afterwards nothing is
    /// pending (also when writing failed: metrics are never written twice).
    ///
    /// # Errors
    /// Writing to `out` failed.
    pub fn flush(&self, mut out: impl Write, properties: &[(&str, &str)]) -> io::Result<usize> {
        let lines = self.take_lines(now_ms(), properties);
        if lines.is_empty() {
            return Ok(0);
        }
        let mut buffer = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in &lines {
            buffer.push_str(line);
            buffer.push('\n');
        }
        out.write_all(buffer.as_bytes())?;
        out.flush()?;
        Ok(lines.len())
    }

    fn render(
        &self,
        group: &Group,
        timestamp_ms: u64,
        properties: &[(&str, &str)],
        lines: &mut Vec<String>,
    ) {
        let names: Vec<String> = self
            .base
            .iter()
            .map(|(n, _)| n.clone())
            .chain(group.dimensions.iter().map(|(n, _)| (*n).to_owned()))
            .collect();
        // A metric with many samples spreads over several lines of at most MAX_VALUES.
        let rounds = group
            .values
            .iter()
            .map(|(_, r)| match r {
                Recorded::Count(_) => 1,
                Recorded::Samples(s) => s.len().div_ceil(MAX_VALUES),
            })
            .max()
            .unwrap_or(0);
        for round in 0..rounds {
            let present: Vec<(&'static str, Value, &'static str)> = group
                .values
                .iter()
                .filter_map(|(name, recorded)| match recorded {
                    Recorded::Count(n) if round == 0 => Some((*name, json!(n), "Count")),
                    Recorded::Count(_) => None,
                    Recorded::Samples(samples) => {
                        let chunk = samples.chunks(MAX_VALUES).nth(round)?.to_vec();
                        Some((*name, json!(chunk), unit_of(name)))
                    }
                })
                .collect();
            for metrics in present.chunks(MAX_METRICS) {
                let mut line = Map::new();
                for (k, v) in properties {
                    line.insert((*k).to_owned(), Value::String((*v).to_owned()));
                }
                for (k, v) in &self.base {
                    line.insert(k.clone(), Value::String(v.clone()));
                }
                for (k, v) in group.properties.iter().chain(&group.dimensions) {
                    line.insert((*k).to_owned(), Value::String(v.clone()));
                }
                let mut directive = Vec::with_capacity(metrics.len());
                for (name, value, unit) in metrics {
                    line.insert((*name).to_owned(), value.clone());
                    directive.push(json!({ "Name": name, "Unit": unit }));
                }
                line.insert(
                    "_aws".to_owned(),
                    json!({
                        "Timestamp": timestamp_ms,
                        "CloudWatchMetrics": [{
                            "Namespace": self.namespace,
                            "Dimensions": [names],
                            "Metrics": directive,
                        }],
                    }),
                );
                lines.push(Value::Object(line).to_string());
            }
        }
    }

    fn record(
        &self,
        name: &'static str,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
        add: Add,
    ) {
        let Ok(mut pending) = self.pending.lock() else {
            return;
        };
        let index = match pending
            .iter()
            .position(|g| g.matches(dimensions, properties))
        {
            Some(i) => i,
            None => {
                pending.push(Group {
                    dimensions: owned(dimensions),
                    properties: owned(properties),
                    values: Vec::new(),
                });
                pending.len() - 1
            }
        };
        let group = &mut pending[index];
        match (group.values.iter_mut().find(|(n, _)| *n == name), add) {
            (Some((_, Recorded::Count(total))), Add::Count(n)) => *total += n,
            (Some((_, Recorded::Samples(samples))), Add::Sample(v)) => samples.push(v),
            (Some(_), _) => {
                // One name is either a counter or a measurement; a mix would make one EMF
                // key mean two things, so the odd one out is dropped.
                tracing::debug!(metric = name, "metric reported as both count and measure");
            }
            (None, Add::Count(n)) => group.values.push((name, Recorded::Count(n))),
            (None, Add::Sample(v)) => group.values.push((name, Recorded::Samples(vec![v]))),
        }
    }
}

#[derive(Clone, Copy)]
enum Add {
    Count(u64),
    Sample(f64),
}

impl Metrics for EmfMetrics {
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]) {
        self.record(name, dimensions, &[], Add::Count(value));
    }

    fn count_with(
        &self,
        name: &'static str,
        value: u64,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
    ) {
        // Each set of property values is a line of its own, so each can be counted.
        self.record(name, dimensions, properties, Add::Count(value));
    }

    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]) {
        if value.is_finite() {
            self.record(name, dimensions, &[], Add::Sample(value));
        }
    }
}

/// The EMF unit of a measurement: latencies in milliseconds, everything else unitless.
fn unit_of(name: &str) -> &'static str {
    if name.ends_with("_ms") {
        "Milliseconds"
    } else {
        "None"
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[String]) -> Vec<Value> {
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn counters_add_up_and_measurements_keep_every_value() {
        let m = EmfMetrics::new("Baton");
        m.count("turns_total", 1, &[("outcome", "answered")]);
        m.count("turns_total", 2, &[("outcome", "answered")]);
        m.measure("turn_latency_ms", 12.5, &[("outcome", "answered")]);
        m.measure("turn_latency_ms", 7.0, &[("outcome", "answered")]);
        let lines = parse(&m.take_lines(1_000, &[]));
        assert_eq!(lines.len(), 1, "one line per set of dimension values");
        assert_eq!(lines[0]["turns_total"], json!(3));
        assert_eq!(lines[0]["turn_latency_ms"], json!([12.5, 7.0]));
        assert_eq!(lines[0]["outcome"], json!("answered"));
    }

    #[test]
    fn a_line_is_valid_emf_with_units_by_kind() {
        let m = EmfMetrics::new("Baton/test");
        m.count("turns_total", 1, &[]);
        m.measure("turn_latency_ms", 3.0, &[]);
        m.measure("turn_cost_usd", 0.0021, &[]);
        let lines = parse(&m.take_lines(1_795_272_256_567, &[("RequestId", "req-1")]));
        let line = &lines[0];
        let aws = &line["_aws"];
        assert_eq!(aws["Timestamp"], json!(1_795_272_256_567u64));
        let directive = &aws["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], json!("Baton/test"));
        assert_eq!(directive["Dimensions"], json!([[]]));
        let units: Vec<(String, String)> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["Name"].as_str().unwrap().to_owned(),
                    m["Unit"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert!(units.contains(&("turns_total".into(), "Count".into())));
        assert!(units.contains(&("turn_latency_ms".into(), "Milliseconds".into())));
        assert!(units.contains(&("turn_cost_usd".into(), "None".into())));
        assert_eq!(line["RequestId"], json!("req-1"));
        // Every metric the directive names has a value at the top level.
        for (name, _) in units {
            assert!(line.get(&name).is_some(), "{name}");
        }
    }

    #[test]
    fn each_set_of_dimension_values_gets_its_own_line() {
        let m = EmfMetrics::new("Baton");
        m.measure(
            "subagent_latency_ms",
            40.0,
            &[("agent", "shop"), ("outcome", "ok")],
        );
        m.measure(
            "subagent_latency_ms",
            90.0,
            &[("agent", "support"), ("outcome", "error")],
        );
        m.count("fanout_total", 1, &[]);
        let lines = parse(&m.take_lines(1, &[]));
        assert_eq!(lines.len(), 3);
        let shop = lines.iter().find(|l| l["agent"] == json!("shop")).unwrap();
        assert_eq!(
            shop["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["agent", "outcome"]])
        );
        assert_eq!(shop["subagent_latency_ms"], json!([40.0]));
        let support = lines
            .iter()
            .find(|l| l["agent"] == json!("support"))
            .unwrap();
        assert_eq!(support["outcome"], json!("error"));
    }

    #[test]
    fn base_dimensions_join_every_metric() {
        let m = EmfMetrics::new("Baton").with_dimension("function", "turn");
        m.count("turns_total", 1, &[("outcome", "failed")]);
        let lines = parse(&m.take_lines(1, &[]));
        assert_eq!(
            lines[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["function", "outcome"]])
        );
        assert_eq!(lines[0]["function"], json!("turn"));
    }

    #[test]
    fn more_than_a_hundred_values_spread_over_lines() {
        let m = EmfMetrics::new("Baton");
        for i in 0..250 {
            m.measure("turn_latency_ms", f64::from(i), &[]);
        }
        m.count("turns_total", 250, &[]);
        let lines = parse(&m.take_lines(1, &[]));
        assert_eq!(lines.len(), 3);
        let sizes: Vec<usize> = lines
            .iter()
            .map(|l| l["turn_latency_ms"].as_array().unwrap().len())
            .collect();
        assert_eq!(sizes, vec![100, 100, 50]);
        // The counter is written once, not once per line.
        let counted: u64 = lines
            .iter()
            .filter_map(|l| l.get("turns_total").and_then(Value::as_u64))
            .sum();
        assert_eq!(counted, 250);
        for l in &lines {
            let named: Vec<&str> = l["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["Name"].as_str().unwrap())
                .collect();
            for n in named {
                assert!(
                    l.get(n).is_some(),
                    "directive names {n} but the line lacks it"
                );
            }
        }
    }

    #[test]
    fn flush_writes_lines_once_and_empties_the_buffer() {
        let m = EmfMetrics::new("Baton");
        m.count("turns_total", 1, &[]);
        m.measure("turn_cost_usd", f64::NAN, &[]);
        let mut out = Vec::new();
        assert_eq!(m.flush(&mut out, &[("RequestId", "r")]).unwrap(), 1);
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with('\n'));
        assert_eq!(text.lines().count(), 1);
        let line: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert!(
            line.get("turn_cost_usd").is_none(),
            "non-finite values are dropped"
        );
        assert!(m.is_empty());
        let mut again = Vec::new();
        assert_eq!(m.flush(&mut again, &[]).unwrap(), 0);
        assert!(again.is_empty());
    }

    #[test]
    fn properties_go_on_the_line_but_never_into_the_dimensions() {
        let m = EmfMetrics::new("Baton").with_dimension("function", "turn");
        let calls = |cohort| {
            m.count_with(
                "model_calls_total",
                1,
                &[("agent", "shop")],
                &[("cohort", cohort)],
            );
        };
        calls("362a717701f40145");
        calls("362a717701f40145");
        calls("9e1c0ffee0ddba11");
        let lines = parse(&m.take_lines(1, &[]));
        // One line per cohort, so that each can be counted.
        assert_eq!(lines.len(), 2, "{lines:#?}");
        for line in &lines {
            assert_eq!(
                line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
                json!([["function", "agent"]])
            );
            assert_eq!(line["agent"], json!("shop"));
        }
        let first = lines
            .iter()
            .find(|l| l["cohort"] == json!("362a717701f40145"))
            .unwrap();
        assert_eq!(first["model_calls_total"], json!(2));
        let second = lines
            .iter()
            .find(|l| l["cohort"] == json!("9e1c0ffee0ddba11"))
            .unwrap();
        assert_eq!(second["model_calls_total"], json!(1));
    }

    #[test]
    fn a_name_used_as_both_kinds_keeps_its_first_kind() {
        let m = EmfMetrics::new("Baton");
        m.count("x", 2, &[]);
        m.measure("x", 5.0, &[]);
        let lines = parse(&m.take_lines(1, &[]));
        assert_eq!(lines[0]["x"], json!(2));
    }

    #[test]
    fn the_port_is_usable_from_many_threads() {
        let m = std::sync::Arc::new(EmfMetrics::new("Baton"));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        m.count("turns_total", 1, &[("outcome", "answered")]);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let lines = parse(&m.take_lines(1, &[]));
        assert_eq!(lines[0]["turns_total"], json!(4000));
    }
}
