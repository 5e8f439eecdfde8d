//! An OpenAI-compatible model's stream (server-sent events, each chunk's JSON, the tool-call
//! deltas assembled into calls) over any bytes, in pieces cut anywhere: events or a plain
//! error, never a panic, and the same answer however the bytes arrive.

use std::sync::OnceLock;

use crate::common;

/// The decoder bounds its waits with tokio's timer, as a live stream's are.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(common::runtime)
}

/// One input: where to cut, then the stream's bytes.
pub fn run(data: &[u8]) {
    let Some((cuts, stream)) = common::input::<(Vec<u16>, &[u8])>(data) else {
        return;
    };
    common::same_however_cut(&cuts, stream, |pieces| {
        format!("{:?}", runtime().block_on(baton_openai::decode(pieces)))
    });
}
