//! Failures: HTTP errors, exceptions mid-stream, cut streams.

use super::*;

#[tokio::test]
async fn throttling_surfaces_as_throttled_after_a_single_request() {
    let fake = FakeBedrock::with_replies([Reply::throttled()])
        .await
        .unwrap();
    let (seen, error) = split_error(events(&model(&fake).await, &request(CAPABLE)).await);
    assert!(seen.is_empty());
    assert_eq!(error, ModelError::Throttled);
    assert_eq!(fake.request_count(), 1);
}

#[tokio::test]
async fn http_errors_map_to_what_the_engine_can_do() {
    let fake = FakeBedrock::with_replies([
        Reply::validation_error("messages.0.content.0: blank text"),
        Reply::internal_error(),
        Reply::http_error(503, "ServiceUnavailableException", "try later"),
        Reply::http_error(408, "ModelTimeoutException", "too slow"),
        Reply::http_error(403, "AccessDeniedException", "no access to this model"),
    ])
    .await
    .unwrap();
    let model = model(&fake).await;
    let mut errors = Vec::new();
    for _ in 0..5 {
        errors.push(split_error(events(&model, &request(CAPABLE)).await).1);
    }
    assert!(matches!(&errors[0], ModelError::Invalid(d) if d.contains("blank text")));
    assert!(matches!(errors[1], ModelError::Unavailable(_)));
    assert!(matches!(errors[2], ModelError::Unavailable(_)));
    assert_eq!(errors[3], ModelError::Timeout);
    assert!(matches!(errors[4], ModelError::Invalid(_)));
}

#[tokio::test]
async fn an_exception_mid_stream_is_unavailable_after_the_deltas() {
    let fake = FakeBedrock::with_replies([Reply::text("Partial answer")
        .exception_mid_stream("modelStreamErrorException", "model stream failed")])
    .await
    .unwrap();
    let (seen, error) = split_error(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(
        seen,
        vec![
            ModelEvent::TextDelta("Partial ".into()),
            ModelEvent::TextDelta("answer".into()),
        ]
    );
    assert!(
        matches!(&error, ModelError::Unavailable(d) if d.contains("model stream failed")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_throttling_exception_mid_stream_is_throttled() {
    let fake = FakeBedrock::with_replies([
        Reply::text("Hm").exception_mid_stream("throttlingException", "slow down")
    ])
    .await
    .unwrap();
    let (_, error) = split_error(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(error, ModelError::Throttled);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_an_error_not_a_short_answer() {
    let fake = FakeBedrock::with_replies([
        Reply::text("The answer is").cut(),
        Reply::text("The answer is").cut_mid_frame(),
        Reply::tool_use("t1", "ask_shop", json!({"query": "x"})).reset(),
    ])
    .await
    .unwrap();
    let model = model(&fake).await;
    for case in ["clean end", "mid-frame", "reset"] {
        let (seen, error) = split_error(events(&model, &request(CAPABLE)).await);
        assert!(!seen.is_empty(), "{case}: content before the cut");
        assert!(
            !seen.iter().any(|e| matches!(e, ModelEvent::Stop(_))),
            "{case}: no stop was sent"
        );
        assert!(
            matches!(error, ModelError::Unavailable(_)),
            "{case}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_stream_lost_after_message_stop_keeps_the_answer() {
    let fake = FakeBedrock::with_replies([Reply::events([
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Done."}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        ("messageStop", json!({"stopReason": "end_turn"})),
    ])
    .reset()])
    .await
    .unwrap();
    let got = ok(events(&model(&fake).await, &request(CAPABLE)).await);
    assert_eq!(
        got,
        vec![
            ModelEvent::TextDelta("Done.".into()),
            ModelEvent::Stop(StopReason::EndTurn),
        ]
    );
}
