//! What the runtime says to a model and which model it says it to: a call's request, what
//! comes back, and each model's entry of `models.yaml`. The `Model` port
//! (`ports::model`) speaks these types; the prompt, memory and plan modules build
//! them without depending on the port.

mod answer;
mod request;
mod spec;

pub use answer::{ModelError, ModelEvent, StopReason, TokenUsage};
pub use request::{
    CallPurpose, Inference, LEVELS, Level, ModelRequest, ReasoningEffort, SystemBlock,
    TextVerbosity, ToolChoice, ToolDef,
};
pub use spec::{ModelCapabilities, ModelEndpoint, ModelSpec, Prices, ReasoningSupport};
