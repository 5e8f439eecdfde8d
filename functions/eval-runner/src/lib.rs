//! The eval-runner function (design.md §13): runs the registry's eval suites with the same
//! runner as `baton eval` against the deployed models (Bedrock), writes the JSON and HTML
//! reports to S3, reports EMF metrics, and answers pass or fail — the baseline gate's
//! verdict — with a summary, so a CI step can fail on a routing regression.
//!
//! The cases run on a store in memory: an eval never touches the journal.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

use std::path::PathBuf;
use std::sync::Arc;

use baton_aws::bedrock::BedrockModel;
use baton_aws::emf::EmfMetrics;
use baton_aws::sdk::Clients;
use baton_aws::settings::Env;
use baton_core::ports::metrics::Metrics as _;
use baton_core::ports::model::Model;
use baton_core::ports::store::Store;
use baton_evals::{Baseline, gate};
use baton_evals::{EvalMode, SuiteRun, read_suites, run_suite, specialists};
use baton_inproc::HeapStore;
use baton_runtime::registry_folder::load_deployed;
use baton_runtime::{Runtime, RuntimeConfig};
use lambda_runtime::LambdaEvent;
use serde::{Deserialize, Serialize};

/// Counter: cases run, by suite and outcome.
pub const EVAL_CASES_TOTAL: &str = "eval_cases_total";
/// Measurement: a suite's routing accuracy.
pub const EVAL_ROUTING_ACCURACY: &str = "eval_routing_accuracy";

pub use baton_aws::settings::ConfigError;

/// What the function reads from its environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `BATON_BUCKET`: where the reports go, under `evals/` (required).
    pub bucket: String,
    /// `BATON_REGISTRY`: the registry folder (default `registry`).
    pub registry: PathBuf,
    /// `BATON_MODEL_IDS`: the deployment's Bedrock ids, as the turn function reads them.
    pub model_ids: Vec<(String, String)>,
    /// `BATON_METRICS_NAMESPACE` (default `Baton`).
    pub metrics_namespace: String,
    /// `BATON_ORCHESTRATOR`: the orchestrator evaluated (default: the only top-level one).
    pub orchestrator: Option<String>,
}

impl Config {
    /// Reads the process environment.
    ///
    /// # Errors
    /// A required variable is missing, or a value is not understood.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `lookup`.
    ///
    /// # Errors
    /// A required variable is missing, or a value is not understood.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(lookup);
        Ok(Config {
            bucket: env.required("BATON_BUCKET")?,
            registry: env.registry(),
            model_ids: env.model_ids()?,
            metrics_namespace: env.metrics_namespace(),
            orchestrator: env.get("BATON_ORCHESTRATOR"),
        })
    }
}

/// Why Init failed: the registry or the runtime, as for every function.
pub use baton_runtime::registry_folder::DeployError as InitError;

/// What CI asks for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Request {
    /// One suite by name; all when absent.
    pub suite: Option<String>,
    /// `routing` (default) or `end-to-end`.
    pub mode: Option<String>,
    /// Gate on the registry's `evals/baseline.json` (default true).
    pub baseline: Option<bool>,
    /// Cases at once (default 8).
    pub concurrency: Option<usize>,
}

/// One suite in the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteSummary {
    /// The suite.
    pub suite: String,
    /// Cases run.
    pub cases: usize,
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Errored.
    pub errored: usize,
    /// Routing accuracy.
    pub routing_accuracy: f64,
}

/// The answer: the verdict, why, and where the reports are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The gate passed (or, without a baseline, every case passed).
    pub passed: bool,
    /// Why not, each in plain words.
    pub reasons: Vec<String>,
    /// Each suite's figures.
    pub suites: Vec<SuiteSummary>,
    /// The JSON report's S3 key.
    pub report_json: String,
    /// The HTML report's S3 key.
    pub report_html: String,
}

/// The function after Init.
pub struct EvalRunner {
    routing: (Runtime, Arc<dyn Store>),
    end_to_end: (Runtime, Arc<dyn Store>),
    s3: aws_sdk_s3::Client,
    bucket: String,
    registry: PathBuf,
    metrics: Arc<EmfMetrics>,
}

impl EvalRunner {
    /// Init on AWS: the registry checked, Bedrock and S3 clients built.
    ///
    /// # Errors
    /// See [`InitError`].
    pub async fn init(config: &Config, clients: &Clients) -> Result<EvalRunner, InitError> {
        let connectors = baton_connectors::default_connectors(&config.registry);
        let registry =
            Arc::new(load_deployed(&config.registry, &connectors, &config.model_ids).await?);
        let model: Arc<dyn Model> = Arc::new(BedrockModel::new(
            clients.bedrock.clone(),
            registry.models(),
        ));
        let metrics = Arc::new(EmfMetrics::new(&config.metrics_namespace));
        let build = |routing_only: bool| -> Result<(Runtime, Arc<dyn Store>), InitError> {
            let store: Arc<dyn Store> = Arc::new(HeapStore::new());
            // Cases that say what a user said in earlier conversations need memory (D-43):
            // kept in process, each case a user of its own.
            let runtime = Runtime::builder(registry.clone())
                .memory(
                    Arc::new(baton_inproc::HeapMemory::new()),
                    Arc::new(baton_core::ports::memory::HashedWordsEmbedder::default()),
                )
                .provider(baton_aws::bedrock::PROVIDER, model.clone())
                // A partial-failure case makes a specialist's services unavailable.
                .connectors(baton_evals::with_outages(connectors.clone()))
                .store(store.clone())
                .metrics(metrics.clone())
                .config(RuntimeConfig {
                    orchestrator: config.orchestrator.clone(),
                    routing_only,
                    memory: baton_runtime::MemorySettings {
                        on_by_default: true,
                        ..Default::default()
                    },
                    ..RuntimeConfig::default()
                })
                .build()?;
            Ok((runtime, store))
        };
        Ok(EvalRunner {
            routing: build(true)?,
            end_to_end: build(false)?,
            s3: clients.s3.clone(),
            bucket: config.bucket.clone(),
            registry: config.registry.clone(),
            metrics,
        })
    }

    /// One CI invocation.
    ///
    /// # Errors
    /// A bad request, no such suite, a malformed suite, a missing baseline, or the reports
    /// not written: the invocation fails with the reason.
    pub async fn handle(
        &self,
        event: LambdaEvent<serde_json::Value>,
    ) -> Result<Answer, lambda_runtime::Error> {
        let request: Request = serde_json::from_value(event.payload)
            .map_err(|e| format!("the request is not understood: {e}"))?;
        let (runtime, store) = match request.mode.as_deref() {
            None | Some("routing") => &self.routing,
            Some("end-to-end") => &self.end_to_end,
            Some(other) => return Err(format!("mode {other:?}: use routing or end-to-end").into()),
        };
        let mut suites = read_suites(&self.registry, &runtime.entry().id, &specialists(runtime))?;
        if let Some(name) = &request.suite {
            suites.retain(|s| &s.name == name);
            if suites.is_empty() {
                return Err(format!("there is no suite named {name:?}").into());
            }
        }
        let mut runs: Vec<SuiteRun> = Vec::new();
        for suite in &suites {
            // A suite that needs the whole turn runs end to end whatever the request's mode.
            let (runtime, store) = match suite.mode {
                Some(EvalMode::EndToEnd) => (&self.end_to_end.0, &self.end_to_end.1),
                _ => (runtime, store),
            };
            runs.push(run_suite(runtime, store, suite, request.concurrency.unwrap_or(8)).await);
        }
        let mut reasons = Vec::new();
        if request.baseline.unwrap_or(true) {
            let file = self.registry.join("evals").join("baseline.json");
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("no baseline at {}: {e}", file.display()))?;
            let baseline: Baseline = serde_json::from_str(&text)
                .map_err(|e| format!("the baseline {} is not valid: {e}", file.display()))?;
            for (s, r) in suites.iter().zip(&runs) {
                reasons.extend(gate(
                    &r.suite,
                    &s.thresholds,
                    baseline.suites.get(&r.suite),
                    &r.results,
                    &r.metrics,
                ));
            }
        } else {
            for r in &runs {
                if r.metrics.failed + r.metrics.errored > 0 {
                    reasons.push(format!(
                        "{}: {} case(s) failed, {} errored",
                        r.suite, r.metrics.failed, r.metrics.errored
                    ));
                }
            }
        }
        for r in &runs {
            for (outcome, n) in [
                ("passed", r.metrics.passed),
                ("failed", r.metrics.failed),
                ("errored", r.metrics.errored),
            ] {
                self.metrics.count(
                    EVAL_CASES_TOTAL,
                    n as u64,
                    &[("suite", r.suite.as_str()), ("outcome", outcome)],
                );
            }
            self.metrics.measure(
                EVAL_ROUTING_ACCURACY,
                r.metrics.routing.accuracy,
                &[("suite", r.suite.as_str())],
            );
        }
        let request_id = event.context.request_id.as_str();
        if let Err(e) = self
            .metrics
            .flush(std::io::stdout().lock(), &[("RequestId", request_id)])
        {
            tracing::warn!(error = %e, "could not write the metrics");
        }
        let prefix = format!("evals/{request_id}");
        let json = serde_json::to_string_pretty(&runs)?;
        let html = baton_evals::html::render(&suites, &runs);
        let report_json = format!("{prefix}/report.json");
        let report_html = format!("{prefix}/report.html");
        self.put(&report_json, json.into_bytes(), "application/json")
            .await?;
        self.put(&report_html, html.into_bytes(), "text/html; charset=utf-8")
            .await?;
        let answer = Answer {
            passed: reasons.is_empty(),
            reasons,
            suites: runs
                .iter()
                .map(|r| SuiteSummary {
                    suite: r.suite.clone(),
                    cases: r.metrics.cases,
                    passed: r.metrics.passed,
                    failed: r.metrics.failed,
                    errored: r.metrics.errored,
                    routing_accuracy: r.metrics.routing.accuracy,
                })
                .collect(),
            report_json,
            report_html,
        };
        tracing::info!(passed = answer.passed, reasons = ?answer.reasons, "eval run done");
        Ok(answer)
    }

    async fn put(&self, key: &str, body: Vec<u8>, content_type: &str) -> Result<(), String> {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(body.into())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                tracing::error!(key, error = %aws_sdk_s3::error::DisplayErrorContext(&e), "writing a report failed");
                format!("the report {key} could not be written")
            })
    }
}
