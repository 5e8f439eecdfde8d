//! An MCP server's answer to a tool call, cut anywhere: `baton_fuzz_targets::mcp_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| baton_fuzz_targets::mcp_stream::run(data));
