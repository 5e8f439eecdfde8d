//! Protocol faces: the same turn, spoken in another protocol (see `docs/design.md`, §14).
//! Each face is a folder with a `routes()` that `app()` merges; it reaches the engine only
//! through `AppState`, as `/v1/turns` does.

pub(crate) mod agui;
mod answer;
pub(crate) mod mcp;
mod message;
pub(crate) mod openai;
