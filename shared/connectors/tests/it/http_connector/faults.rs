//! The `http` connector against servers that fail: down, slow, cut off, garbage, huge,
//! another principal's envelope, failure statuses.

use super::*;

// ---- faults -------------------------------------------------------------------------

/// An address where nothing listens, held for as long as the returned socket lives: bound
/// but never listening, so connecting is refused, and no other test's listener can be
/// given the same port meanwhile (a listener bound and dropped would free it).
pub(super) fn closed_port() -> (SocketAddr, tokio::net::TcpSocket) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    (socket.local_addr().unwrap(), socket)
}

#[tokio::test]
async fn a_server_that_is_down_is_unavailable_even_with_retries() {
    let (addr, _held) = closed_port();
    let config =
        json!({"url": format!("http://{addr}/x"), "retry": {"attempts": 3, "backoff_ms": 1}});
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("could not be reached"), "{detail}");
}

#[tokio::test]
async fn connecting_is_bounded_by_connect_timeout_ms() {
    // A listener whose accept queue is full: the kernel drops further SYNs, so connecting
    // hangs until the client gives up.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_millis(50), TcpStream::connect(addr)).await
        {
            fillers.push(s);
        }
    }
    let config =
        json!({"url": format!("http://{addr}/x"), "connect_timeout_ms": 100, "deadline_ms": 5000});
    // The connect timeout, not the 5 s deadline, ended it: the failure says so (a clock
    // read here would only measure how busy the machine is).
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("connecting took too long"), "{detail}");
    drop(listener);
}

#[tokio::test]
async fn a_slow_body_ends_at_the_deadline() {
    let addr = raw(|mut stream| async move {
        read_head(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"status\":")
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let config = json!({"url": format!("http://{addr}/x"), "deadline_ms": 200});
    // The deadline ended the read: had it not, the server's close after 5 s would have cut
    // the body off instead ("the connection failed while the answer was read").
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("took too long"), "{detail}");
}

#[tokio::test]
async fn a_connection_closed_mid_body_is_unavailable() {
    let addr = raw(|mut stream| async move {
        read_head(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"status\":\"ok\",")
            .await;
        // Dropping the stream closes the connection 985 bytes short.
    })
    .await;
    let detail = unavailable(call(json!({"url": format!("http://{addr}/x")}), json!({})).await);
    assert!(detail.contains("reading the answer"), "{detail}");
}

#[tokio::test]
async fn html_or_garbage_is_an_invalid_envelope() {
    let s = server(|_, seen| match seen.uri.as_str() {
        "/html" => Html("<html><body>Welcome to nginx</body></html>").into_response(),
        "/garbage" => (StatusCode::OK, "{\"status\": \"ok\", ").into_response(),
        "/missing" => json_response(StatusCode::OK, json!({"status": "ok", "payload": {}})),
        _ => json_response(StatusCode::OK, json!([1, 2, 3])),
    })
    .await;
    for path in ["/html", "/garbage", "/missing", "/array"] {
        let detail = invalid(call(json!({"url": s.url(path)}), json!({})).await);
        assert!(!detail.contains("nginx"), "{path}: {detail}");
    }
    let detail = invalid(call(json!({"url": s.url("/missing")}), json!({})).await);
    assert!(detail.contains("missing field `principal`"), "{detail}");
}

#[tokio::test]
async fn an_envelope_for_another_principal_is_returned_as_is_for_the_runtime_to_refuse() {
    let s = server(|_, _| json_response(StatusCode::OK, envelope_for("someone-else"))).await;
    let e = call(json!({"url": s.url("/x")}), json!({})).await.unwrap();
    assert_eq!(e.principal, "someone-else");
    assert_eq!(e.payload, envelope_for("someone-else")["payload"]);
    let verdict = judge_envelope("search_offers", e, PRINCIPAL, Some(1), None);
    assert!(
        matches!(verdict, EnvelopeVerdict::PrincipalMismatch { ref enricher } if enricher == "acme-offers"),
        "{verdict:?}"
    );
}

#[tokio::test]
async fn a_huge_body_is_cut_at_the_limit_not_buffered() {
    const TEN_MB: usize = 10 * 1024 * 1024;
    const CHUNK: usize = 64 * 1024;
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    // Streamed without a length, so only the connector's count can stop it.
    let s = server(move |_, _| {
        let counter = counter.clone();
        let chunks = futures::stream::iter(0..TEN_MB / CHUNK).map(move |_| {
            counter.fetch_add(CHUNK, Ordering::SeqCst);
            Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; CHUNK]))
        });
        (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from_stream(chunks),
        )
            .into_response()
    })
    .await;
    let detail = unavailable(
        call(
            json!({"url": s.url("/x"), "max_body_bytes": 256 * 1024}),
            json!({}),
        )
        .await,
    );
    assert!(detail.contains("over 262144 bytes"), "{detail}");
    // The server could not push the whole body: the connection was dropped at the limit.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let pushed = sent.load(Ordering::SeqCst);
    assert!(pushed < TEN_MB, "{pushed}");

    // An announced length over the limit is refused before reading.
    let addr = raw(|mut stream| async move {
        read_head(&mut stream).await;
        let _ = stream
            .write_all(format!("HTTP/1.1 200 OK\r\ncontent-length: {TEN_MB}\r\n\r\n").as_bytes())
            .await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    // Refused on the announced length: the server never sends the body, so reading it
    // would have ended with the connection instead.
    let detail = unavailable(call(json!({"url": format!("http://{addr}/x")}), json!({})).await);
    assert!(detail.contains("over 1048576 bytes"), "{detail}");
}

#[tokio::test]
async fn failure_statuses_are_unavailable_unless_they_carry_an_envelope() {
    let s = server(|_, seen| match seen.uri.as_str() {
        "/429" => (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response(),
        "/500" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Traceback: secret stack trace",
        )
            .into_response(),
        "/503" => (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response(),
        "/302" => (
            StatusCode::FOUND,
            [(header::LOCATION, "http://example.com/")],
        )
            .into_response(),
        _ => {
            let mut e = envelope_for(PRINCIPAL);
            e["status"] = json!("error");
            e["payload"] = json!({"problem": "no such offer"});
            json_response(StatusCode::NOT_FOUND, e)
        }
    })
    .await;
    for code in ["429", "500", "503", "302"] {
        let detail = unavailable(call(json!({"url": s.url(&format!("/{code}"))}), json!({})).await);
        assert!(detail.contains(code), "{detail}");
        assert!(!detail.contains("secret"), "{detail}");
    }
    let e = call(json!({"url": s.url("/404")}), json!({}))
        .await
        .unwrap();
    assert_eq!(e.status, EnvelopeStatus::Error);
    assert_eq!(e.payload, json!({"problem": "no such offer"}));
}
