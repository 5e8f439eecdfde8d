//! Any text as memory reads it from outside: `baton_fuzz_targets::memory_text`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::memory_text::run(data));
