//! What a turn started: its sub-agent runs and their tool calls, which the consulted record
//! counts (D-20) even for work a cancel or the deadline cut short, and the bodies (tool
//! messages) it keeps apart from the record (D-19).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use baton_core::ports::store::Body;
use baton_core::registry::Agent;
use baton_core::turn::AgentStatus;

/// The turn's runs, calls and bodies so far.
#[derive(Default)]
pub(crate) struct JobLog {
    /// Sub-agent runs started in this turn: each gets the next number, which its tool calls'
    /// records carry (the audit trail files each call under its execution).
    runs: AtomicU32,
    /// Tool calls started (announced with `tool_call_start`), by agent: what the consulted
    /// record counts (D-20), also for a call a timeout cut short.
    started_calls: Mutex<Vec<(Arc<str>, u32)>>,
    /// Every sub-agent this run started, and its result once it ended: what a turn cut
    /// by a cancel or its deadline records as consulted (D-20), since the work that held
    /// the results is dropped with it.
    started_jobs: Mutex<Vec<StartedJob>>,
    bodies: Mutex<Vec<Body>>,
}

impl JobLog {
    /// The number of a sub-agent run starting now, unique in the turn (from 1).
    pub(crate) fn next_run(&self) -> u32 {
        self.runs.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Notes that `agent` started a tool call.
    pub(crate) fn call_started(&self, agent: &Arc<str>) {
        let Ok(mut started) = self.started_calls.lock() else {
            return;
        };
        match started.iter_mut().find(|(a, _)| a == agent) {
            Some((_, n)) => *n += 1,
            None => started.push((agent.clone(), 1)),
        }
    }

    /// The tool calls `agent` has started in this turn.
    pub(crate) fn calls_started(&self, agent: &str) -> u32 {
        self.started_calls
            .lock()
            .ok()
            .and_then(|s| s.iter().find(|(a, _)| &**a == agent).map(|(_, n)| *n))
            .unwrap_or(0)
    }

    /// Notes that a sub-agent's job started now.
    pub(crate) fn job_started(
        &self,
        agent: &Arc<Agent>,
        call_id: &str,
        query: &str,
        started_ms: u64,
    ) {
        if let Ok(mut jobs) = self.started_jobs.lock() {
            jobs.push(StartedJob {
                agent: agent.clone(),
                call_id: call_id.to_owned(),
                query: query.to_owned(),
                started: tokio::time::Instant::now(),
                started_ms,
                ended: None,
            });
        }
    }

    /// Notes how a started job ended.
    pub(crate) fn job_ended(&self, agent: &str, call_id: &str, ended: JobEnd) {
        if let Ok(mut jobs) = self.started_jobs.lock()
            && let Some(job) = jobs
                .iter_mut()
                .rev()
                .find(|j| j.ended.is_none() && j.call_id == call_id && &*j.agent.id == agent)
        {
            job.ended = Some(ended);
        }
    }

    /// Takes the jobs this run started, each with how it ended, or, for one still
    /// running, as `unfinished` with its time and tool calls so far.
    pub(crate) fn take_started_jobs(&self, unfinished: AgentStatus) -> Vec<(StartedJob, JobEnd)> {
        let jobs = match self.started_jobs.lock() {
            Ok(mut jobs) => std::mem::take(&mut *jobs),
            Err(_) => return Vec::new(),
        };
        jobs.into_iter()
            .map(|j| {
                let end = j.ended.unwrap_or(JobEnd {
                    status: unfinished,
                    tool_calls: self.calls_started(&j.agent.id),
                    duration_ms: j.started.elapsed().as_millis() as u64,
                    refused: false,
                });
                (j, end)
            })
            .collect()
    }

    /// Keeps a body (tool message) to store apart from the turn record (D-19). A model
    /// may reuse a tool-use id within a turn; the key then gets a suffix, so that no body
    /// is lost and the commit does not refuse a key used twice.
    pub(crate) fn add_body(&self, mut body: Body) {
        if let Ok(mut b) = self.bodies.lock() {
            let taken = |key: &str| b.iter().any(|other| other.key == key);
            if taken(&body.key) {
                let base = body.key.clone();
                let mut n = 2;
                while taken(&format!("{base}~{n}")) {
                    n += 1;
                }
                body.key = format!("{base}~{n}");
            }
            b.push(body);
        }
    }

    /// The bodies kept so far.
    pub(crate) fn take_bodies(&self) -> Vec<Body> {
        self.bodies
            .lock()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    }
}

/// A sub-agent's job as this run started it (see `JobLog::started_jobs`).
#[derive(Debug)]
pub(crate) struct StartedJob {
    pub(crate) agent: Arc<Agent>,
    pub(crate) call_id: String,
    pub(crate) query: String,
    started: tokio::time::Instant,
    pub(crate) started_ms: u64,
    ended: Option<JobEnd>,
}

/// How a started job ended, as the consulted record tells it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobEnd {
    pub(crate) status: AgentStatus,
    pub(crate) tool_calls: u32,
    pub(crate) duration_ms: u64,
    pub(crate) refused: bool,
}
