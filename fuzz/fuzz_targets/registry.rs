//! The registry's files over any text: `baton_fuzz_targets::registry`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::registry::run(data));
