//! `baton serve`: the HTTP API on a socket, stopped by Ctrl-C (SIGINT).

use std::time::Duration;

use crate::support::*;

#[cfg(unix)]
#[test]
fn serve_answers_and_stops_on_ctrl_c() {
    let sandbox = Sandbox::new();
    let model = sandbox.script(SHOP_SCRIPT);
    let mut server = Serving::start(
        &sandbox,
        &[
            "--registry",
            registry(),
            "--model",
            &model,
            "--principal",
            "carol",
        ],
        &[],
    );
    let health = server.request("GET /healthz HTTP/1.1", "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.ends_with(r#"{"status":"ok"}"#), "{health}");

    let turn = server.request(
        "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
        r#"{"message":"find me coffee deals"}"#,
    );
    assert!(turn.starts_with("HTTP/1.1 200"), "{turn}");
    assert!(turn.contains("content-type: text/event-stream"), "{turn}");
    assert!(turn.contains("event: completed"), "{turn}");

    // A principal in the body is ignored: the turn runs as the configured principal.
    let ignored = server.request(
        "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
        r#"{"message":"hi","principal":"mallory"}"#,
    );
    assert!(ignored.starts_with("HTTP/1.1 200"), "{ignored}");

    let status = std::process::Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut exit = None;
    for _ in 0..200 {
        if let Some(s) = server.child.try_wait().unwrap() {
            exit = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(exit.and_then(|s| s.code()), Some(0), "stopped cleanly");
}
