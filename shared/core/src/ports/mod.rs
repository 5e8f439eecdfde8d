//! The ports: traits the runtime talks to; adapters implement them at the edge.

pub mod clock;
pub mod connector;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod store;
pub mod upstream;
