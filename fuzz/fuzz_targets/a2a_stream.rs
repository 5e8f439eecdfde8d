//! An A2A agent's event stream, cut anywhere: `baton_fuzz_targets::a2a_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::a2a_stream::run(data));
