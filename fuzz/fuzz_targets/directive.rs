//! The Direct Line directive parser over any text: `baton_fuzz_targets::directive`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::directive::run(data));
