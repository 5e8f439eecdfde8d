//! A stand-in OTLP receiver as a process of its own, for measuring what export costs
//! Baton with a receiver that keeps up: `cargo run --release -p baton-tests --example
//! otlp_sink [PORT]`. It prints its URL, then once a second what it took: spans, metric
//! exports, and the spans Baton's full queue dropped (its own counter).

use std::time::Duration;

use baton_tests::otlp_receiver::{OtlpReceiver, Traces};

fn main() {
    let port = std::env::args().nth(1);
    let receiver = match port.as_deref().map(str::parse::<u16>) {
        Some(Ok(port)) => OtlpReceiver::start_on(port, Traces::Take),
        Some(Err(_)) => {
            eprintln!("usage: otlp_sink [PORT]");
            std::process::exit(2);
        }
        None => OtlpReceiver::start(Traces::Take),
    };
    println!("{}", receiver.url);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        println!(
            "spans {} metric_exports {} dropped {}",
            receiver.span_count(),
            receiver.metric_exports(),
            receiver
                .counter(
                    "otel.sdk.processor.span.processed",
                    &[("error.type", "queue_full")]
                )
                .unwrap_or(0)
        );
    }
}
