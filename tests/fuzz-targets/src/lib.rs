//! The bodies of the fuzz targets, shared by the libFuzzer binaries in `fuzz/` and the
//! corpus replay test (`tests/corpus.rs`, which runs every committed input on each test
//! run). Each module is one target; its `run` takes the bytes libFuzzer hands the binary and
//! decodes them as libfuzzer-sys's `fuzz_target!` would for the target's input type.

mod common;

pub mod a2a_stream;
pub mod bedrock_stream;
pub mod directive;
pub mod eval_suite;
pub mod http_faces;
pub mod mcp_stream;
pub mod memory_text;
pub mod model_events;
pub mod openai_stream;
pub mod picture;
pub mod privacy_stream;
pub mod registry;
pub mod scripted_model;
