//! `baton serve`: the HTTP API on a socket, stopped by Ctrl-C (SIGINT).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::*;

/// Kills the server if a test fails before stopping it.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn request(addr: &str, head: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "{head}\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[cfg(unix)]
#[test]
fn serve_answers_and_stops_on_ctrl_c() {
    let sandbox = Sandbox::new();
    let model = sandbox.script(SHOP_SCRIPT);
    let child = sandbox
        .baton()
        .args(["serve", "--log-json", "--addr", "127.0.0.1:0"])
        .args([
            "--registry",
            REGISTRY,
            "--model",
            &model,
            "--principal",
            "carol",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut server = Server(child);

    // The bound address is in the JSON log line announcing the listener.
    let stderr = server.0.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && let Some(addr) = v["fields"]["addr"].as_str()
            {
                let _ = tx.send(addr.to_owned());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("listening");

    let health = request(&addr, "GET /healthz HTTP/1.1", "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.ends_with(r#"{"status":"ok"}"#), "{health}");

    let turn = request(
        &addr,
        "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
        r#"{"message":"find me coffee deals"}"#,
    );
    assert!(turn.starts_with("HTTP/1.1 200"), "{turn}");
    assert!(turn.contains("content-type: text/event-stream"), "{turn}");
    assert!(turn.contains("event: completed"), "{turn}");

    // A principal in the body is ignored: the turn runs as the configured principal.
    let ignored = request(
        &addr,
        "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json",
        r#"{"message":"hi","principal":"mallory"}"#,
    );
    assert!(ignored.starts_with("HTTP/1.1 200"), "{ignored}");

    let status = std::process::Command::new("kill")
        .args(["-INT", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut exit = None;
    for _ in 0..200 {
        if let Some(s) = server.0.try_wait().unwrap() {
            exit = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(exit.and_then(|s| s.code()), Some(0), "stopped cleanly");
}
