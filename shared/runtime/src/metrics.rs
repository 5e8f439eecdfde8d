//! In-process metrics: counters and sums kept in memory, readable by tests and by a
//! local `/metrics` view; every update is also logged.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use baton_core::ports::metrics::Metrics;

/// Counters and measurement sums by name and dimensions.
#[derive(Debug, Default)]
pub struct LocalMetrics {
    counters: Mutex<BTreeMap<String, u64>>,
    sums: Mutex<BTreeMap<String, (u64, f64)>>,
    properties: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

fn key(name: &str, dimensions: &[(&'static str, &str)]) -> String {
    let mut k = name.to_owned();
    for (d, v) in dimensions {
        k.push_str(&format!(",{d}={v}"));
    }
    k
}

impl LocalMetrics {
    /// Sum of a counter over every dimension set.
    pub fn counter(&self, name: &str) -> u64 {
        let Ok(c) = self.counters.lock() else {
            return 0;
        };
        c.iter()
            .filter(|(k, _)| k.split(',').next() == Some(name))
            .map(|(_, v)| *v)
            .sum()
    }

    /// How many measurements of `name` were made and their sum, over every dimension set.
    pub fn measured(&self, name: &str) -> (u64, f64) {
        let Ok(s) = self.sums.lock() else {
            return (0, 0.0);
        };
        s.iter()
            .filter(|(k, _)| k.split(',').next() == Some(name))
            .fold((0, 0.0), |(n, sum), (_, (c, v))| (n + c, sum + v))
    }

    /// Every counter, `name,dim=value` → count.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.counters.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The distinct properties (`name=value`) counted with counter `key`
    /// (`name,dim=value`), sorted.
    pub fn properties(&self, key: &str) -> Vec<String> {
        self.properties
            .lock()
            .ok()
            .and_then(|p| p.get(key).map(|s| s.iter().cloned().collect()))
            .unwrap_or_default()
    }
}

impl Metrics for LocalMetrics {
    fn count(&self, name: &'static str, value: u64, dimensions: &[(&'static str, &str)]) {
        if let Ok(mut c) = self.counters.lock() {
            *c.entry(key(name, dimensions)).or_default() += value;
        }
        tracing::debug!(target: "baton::metrics", metric = name, value, ?dimensions, "count");
    }

    fn count_with(
        &self,
        name: &'static str,
        value: u64,
        dimensions: &[(&'static str, &str)],
        properties: &[(&'static str, &str)],
    ) {
        self.count(name, value, dimensions);
        if let Ok(mut p) = self.properties.lock() {
            let seen = p.entry(key(name, dimensions)).or_default();
            for (k, v) in properties {
                seen.insert(format!("{k}={v}"));
            }
        }
    }

    fn measure(&self, name: &'static str, value: f64, dimensions: &[(&'static str, &str)]) {
        if let Ok(mut s) = self.sums.lock() {
            let e = s.entry(key(name, dimensions)).or_default();
            e.0 += 1;
            e.1 += value;
        }
        tracing::debug!(target: "baton::metrics", metric = name, value, ?dimensions, "measure");
    }
}
