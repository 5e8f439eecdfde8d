//! Any HTTP request through every face of the app: `baton_fuzz_targets::http_faces`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::http_faces::run(data));
