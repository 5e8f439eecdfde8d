//! Bedrock's ConverseStream answer, cut anywhere: `baton_fuzz_targets::bedrock_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::bedrock_stream::run(data));
