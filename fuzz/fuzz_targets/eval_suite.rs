//! An eval suite over any text: `baton_fuzz_targets::eval_suite`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::eval_suite::run(data));
