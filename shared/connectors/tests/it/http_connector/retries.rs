//! The `http` connector's retries: idempotent calls through 503s, `Retry-After`, and the
//! deadline that bounds them.

use super::*;

// ---- retries ------------------------------------------------------------------------

/// 503 twice, then an envelope.
async fn flaky() -> Server {
    server(|n, _| {
        if n <= 2 {
            (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
        } else {
            json_response(StatusCode::OK, envelope_for(PRINCIPAL))
        }
    })
    .await
}

#[tokio::test]
async fn an_idempotent_call_is_retried_through_503s() {
    let s = flaky().await;
    let config = json!({"url": s.url("/x"), "retry": {"attempts": 3, "backoff_ms": 5}});
    let e = call(config, json!({})).await.unwrap();
    assert_eq!(e.status, EnvelopeStatus::Ok);
    assert_eq!(s.seen().len(), 3);
}

#[tokio::test]
async fn a_post_is_retried_only_when_declared_idempotent() {
    let s = flaky().await;
    let config =
        json!({"url": s.url("/x"), "method": "POST", "retry": {"attempts": 3, "backoff_ms": 5}});
    let detail = unavailable(call(config.clone(), json!({})).await);
    assert!(detail.contains("503"), "{detail}");
    assert_eq!(s.seen().len(), 1);

    let s = flaky().await;
    let mut config = config;
    config["url"] = json!(s.url("/x"));
    config["idempotent"] = json!(true);
    call(config, json!({})).await.unwrap();
    assert_eq!(s.seen().len(), 3);
}

#[tokio::test]
async fn too_few_attempts_end_with_the_last_failure() {
    let s = flaky().await;
    let config = json!({"url": s.url("/x"), "retry": {"attempts": 2, "backoff_ms": 1}});
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("503"), "{detail}");
    assert_eq!(s.seen().len(), 2);
}

#[tokio::test]
async fn retry_after_is_honoured_and_a_retry_that_cannot_fit_the_deadline_is_not_made() {
    // The service asks for a second; the call has 400 ms: no retry, and no waiting.
    let s = server(|n, _| {
        if n == 1 {
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "1")],
                "slow down",
            )
                .into_response()
        } else {
            json_response(StatusCode::OK, envelope_for(PRINCIPAL))
        }
    })
    .await;
    let config =
        json!({"url": s.url("/x"), "deadline_ms": 400, "retry": {"attempts": 3, "backoff_ms": 1}});
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("no time left to retry"), "{detail}");
    // One attempt: a wait the deadline cannot hold is not waited.
    assert_eq!(s.seen().len(), 1);

    // "Retry-After: 0" is a go-ahead.
    let s = server(|n, _| {
        if n == 1 {
            (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "0")]).into_response()
        } else {
            json_response(StatusCode::OK, envelope_for(PRINCIPAL))
        }
    })
    .await;
    let config = json!({"url": s.url("/x"), "retry": {"attempts": 2, "backoff_ms": 1}});
    call(config, json!({})).await.unwrap();
    assert_eq!(s.seen().len(), 2);
}

#[tokio::test]
async fn retries_stop_before_the_deadline() {
    // Each answer takes 100 ms; 250 ms leave room for two attempts, not five. Counted,
    // not timed: a busy machine must not decide the outcome.
    let attempts = Arc::new(AtomicUsize::new(0));
    let seen = attempts.clone();
    let addr = raw(move |mut stream| {
        let seen = seen.clone();
        async move {
            read_head(&mut stream).await;
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _ = stream
                .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    })
    .await;
    let config = json!({"url": format!("http://{addr}/x"), "deadline_ms": 250, "retry": {"attempts": 5, "backoff_ms": 10}});
    let detail = unavailable(call(config, json!({})).await);
    assert!(detail.contains("no time left to retry"), "{detail}");
    let made = attempts.load(Ordering::SeqCst);
    assert!((1..=2).contains(&made), "{made} attempts");
}
