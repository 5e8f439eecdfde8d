//! The `Metrics` port over OTLP: each counter an OpenTelemetry counter, each measurement a
//! histogram, with the same names and dimensions as the EMF lines (seed §10.2's set).

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use baton_core::ports::metrics::Metrics;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

/// The process's meter, set once when metric export starts.
pub(crate) static METER: OnceLock<Meter> = OnceLock::new();

/// Bucket bounds for durations in milliseconds: a model turn can take a minute.
const MS_BOUNDS: [f64; 14] = [
    5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 2_500.0, 5_000.0, 10_000.0, 25_000.0,
    60_000.0, 120_000.0,
];
/// Bucket bounds for costs in USD: a turn costs fractions of a cent.
const USD_BOUNDS: [f64; 9] = [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0];
/// Bucket bounds for small counts (intents, fan-out width, status events).
const COUNT_BOUNDS: [f64; 11] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 50.0];

/// Metrics exported over OTLP. Instruments are made on first use and kept.
#[derive(Debug)]
pub struct OtlpMetrics {
    meter: Meter,
    counters: RwLock<HashMap<&'static str, Counter<u64>>>,
    histograms: RwLock<HashMap<&'static str, Histogram<f64>>>,
}

/// The metrics exporter of this process, when metric export is on.
pub fn metrics() -> Option<OtlpMetrics> {
    METER.get().map(|meter| OtlpMetrics::new(meter.clone()))
}

/// A measurement's unit and bucket bounds, from its name's suffix.
fn shape(name: &str) -> (&'static str, &'static [f64]) {
    if name.ends_with("_ms") {
        ("ms", &MS_BOUNDS)
    } else if name.ends_with("_usd") {
        ("{USD}", &USD_BOUNDS)
    } else {
        ("1", &COUNT_BOUNDS)
    }
}

fn attributes(dimensions: &[(&'static str, &str)]) -> Vec<KeyValue> {
    dimensions
        .iter()
        .map(|(k, v)| KeyValue::new(*k, (*v).to_owned()))
        .collect()
}

impl OtlpMetrics {
    /// Metrics recorded through `meter`.
    pub fn new(meter: Meter) -> Self {
        OtlpMetrics {
            meter,
            counters: RwLock::default(),
            histograms: RwLock::default(),
        }
    }

    fn counter(&self, name: &'static str) -> Counter<u64> {
        if let Ok(known) = self.counters.read()
            && let Some(c) = known.get(name)
        {
            return c.clone();
        }
        let counter = self.meter.u64_counter(name).build();
        if let Ok(mut known) = self.counters.write() {
            known.insert(name, counter.clone());
        }
        counter
    }

    fn histogram(&self, name: &'static str) -> Histogram<f64> {
        if let Ok(known) = self.histograms.read()
            && let Some(h) = known.get(name)
        {
            return h.clone();
        }
        let (unit, bounds) = shape(name);
        let histogram = self
            .meter
            .f64_histogram(name)
            .with_unit(unit)
            .with_boundaries(bounds.to_vec())
            .build();
        if let Ok(mut known) = self.histograms.write() {
            known.insert(name, histogram.clone());
        }
        histogram
    }
}

impl Metrics for OtlpMetrics {
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]) {
        self.counter(name).add(value, &attributes(dimensions));
    }

    // Properties stay out: they are per-turn values (hashes, ids) that would make one
    // series each; the EMF lines keep them for searching.
    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]) {
        self.histogram(name).record(value, &attributes(dimensions));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_buckets_follow_the_name() {
        assert_eq!(shape("turn_latency_ms").0, "ms");
        assert_eq!(shape("turn_cost_usd").0, "{USD}");
        assert_eq!(shape("fanout_width").0, "1");
        for (_, bounds) in [shape("a_ms"), shape("a_usd"), shape("a")] {
            assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
        }
    }
}
