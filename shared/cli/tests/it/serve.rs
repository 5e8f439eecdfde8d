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

/// A web page whose name was rebound to the loopback address cannot drive `baton serve`:
/// only its own names, and the configured ones, are answered, and only its own pages.
#[test]
fn serve_answers_only_its_hosts_and_its_own_pages() {
    use std::io::{Read as _, Write as _};
    let sandbox = Sandbox::new();
    let model = sandbox.script(SHOP_SCRIPT);
    let server = Serving::start(
        &sandbox,
        &["--registry", registry(), "--model", &model],
        &[("BATON_ALLOWED_HOSTS", "baton.lan, proxy.example:443")],
    );
    let port = server.addr.rsplit(':').next().unwrap().to_owned();
    let ask = |host: &str, origin: Option<&str>, path: &str| {
        let mut stream = std::net::TcpStream::connect(&server.addr).unwrap();
        let origin = origin
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response.lines().next().unwrap_or_default().to_owned()
    };
    let ok = "HTTP/1.1 200 OK";
    let refused = "HTTP/1.1 403 Forbidden";
    assert_eq!(ask(&format!("127.0.0.1:{port}"), None, "/v1/agents"), ok);
    assert_eq!(ask(&format!("localhost:{port}"), None, "/v1/agents"), ok);
    assert_eq!(ask("baton.lan:8080", None, "/v1/agents"), ok);
    assert_eq!(ask("proxy.example:443", None, "/v1/agents"), ok);
    assert_eq!(ask("proxy.example:80", None, "/v1/agents"), refused);
    assert_eq!(
        ask(&format!("evil.example:{port}"), None, "/v1/agents"),
        refused
    );
    assert_eq!(ask(&format!("evil.example:{port}"), None, "/"), refused);
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(
        ask(&format!("127.0.0.1:{port}"), Some(&own), "/v1/agents"),
        ok
    );
    assert_eq!(
        ask(
            &format!("127.0.0.1:{port}"),
            Some("https://evil.example"),
            "/v1/agents"
        ),
        refused
    );
    // Health is for anyone who can reach the port (a load balancer's own address).
    assert_eq!(ask("10.1.2.3", None, "/healthz"), ok);
}
