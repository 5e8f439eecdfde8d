//! Any bytes as a picture sent with a turn: `baton_fuzz_targets::picture`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::picture::run(data));
