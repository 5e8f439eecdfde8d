//! The scripted-model format over any text: `baton_fuzz_targets::scripted_model`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::scripted_model::run(data));
