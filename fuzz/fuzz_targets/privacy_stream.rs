//! The privacy guard over any text split anywhere: `baton_fuzz_targets::privacy_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::privacy_stream::run(data));
