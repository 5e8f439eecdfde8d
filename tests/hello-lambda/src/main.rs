//! The smallest Rust Lambda function (it echoes its event), built as `turn` is, so that the
//! Lambda figures can show what Init costs any Rust function and what Baton's adds.
//!
//! ```text
//! cargo build --release -p baton-hello-lambda
//! ```

#![allow(missing_docs)]

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

fn main() -> Result<(), Error> {
    // One thread, as `turn` runs.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(lambda_runtime::run(service_fn(
            |event: LambdaEvent<Value>| async move { Ok::<Value, Error>(event.payload) },
        )))
}
