//! A whole turn over a model answering with any events: `baton_fuzz_targets::model_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::model_events::run(data));
