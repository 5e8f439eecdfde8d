//! The turn engine: checks and claims a turn (`start`), then runs it on its own task.
//!
//! `turn` drives it: `route` (routing call and guards) → `dispatch` (concurrent sub-agents,
//! each in `subagent` with its `tools`, or `upstream` for a remote one) → `compose`, or a
//! `planner`'s waves instead; `finish` records, commits and closes it. The jobs and results
//! they pass around are in `work` (a planned job carries its `brief`). Events leave through
//! `output`, progress lines through `status`, and `direct` composition shares a `live_slot`.

mod brief;
mod budget;
mod compose;
mod context;
mod direct_line;
mod dispatch;
mod finish;
mod held;
pub(crate) mod interruption;
mod job_log;
mod live_slot;
mod memory;
mod model_call;
mod obligations;
mod output;
mod planner;
mod prior_context;
mod recall;
mod route;
mod service_question;
mod span_content;
mod start;
mod status;
mod subagent;
mod tools;
mod turn;
mod upstream;
mod work;

pub(crate) use start::start;
