//! An OpenAI-compatible model's stream, cut anywhere: `baton_fuzz_targets::openai_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::openai_stream::run(data));
