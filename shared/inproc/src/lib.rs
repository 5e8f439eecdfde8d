//! Adapters that need nothing outside the process, built on the core's ports only:
//!
//! - [`scripted`]: [`ScriptedModel`], a model that plays a YAML script matched on each
//!   request (`baton --model scripted:FILE`, the benchmark, and every engine test);
//! - [`heap_store`]: [`HeapStore`], a journal kept on the process's heap, gone when the
//!   process ends (each eval case's episode, and tests);
//! - [`heap_memory`]: [`HeapMemory`], long-term memories kept on the heap likewise.
//!
//! Both are product features; the test kit (`baton-testkit`) holds only what tests need.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod heap_memory;
pub mod heap_store;
pub mod scripted;

pub use heap_memory::HeapMemory;
pub use heap_store::HeapStore;
pub use scripted::ScriptedModel;
