//! The turn engine: checks and claims a turn (`start`), then runs it on its own task.
//!
//! `route` (routing call and guards) → `dispatch` (concurrent sub-agents, each in
//! `subagent` with its `tools`) → `compose` → commit, all in `turn`; events leave through
//! `output`, progress lines through `status`, and `direct` composition shares a
//! `live_slot`.

mod compose;
mod context;
mod direct_line;
mod dispatch;
mod live_slot;
mod memory;
mod model_call;
mod obligations;
mod output;
mod planner;
mod route;
pub(crate) mod services;
mod start;
mod status;
mod subagent;
mod tools;
mod turn;
mod upstream;

pub(crate) use start::start;
