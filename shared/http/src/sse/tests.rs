use std::convert::Infallible;
use std::sync::Arc;

use axum::response::IntoResponse;
use axum::response::sse::Sse;
use baton_core::directive::DirectMode;
use baton_core::events::{DirectLineState, Event, PROTOCOL_VERSION};
use baton_core::ports::model::TokenUsage;
use baton_core::privacy::{PiiKind, PrivacyReceipt};
use baton_core::turn::{AgentStatus, ConsultedAgent, ModelUsage, TurnOutcome};
use futures::StreamExt;
use proptest::prelude::*;

use super::*;

fn wire(seq: u64, event: Event) -> WireEvent {
    WireEvent {
        v: PROTOCOL_VERSION,
        turn_id: Arc::from("t1"),
        seq,
        event,
    }
}

/// The bytes axum's `Sse` writes for these events (no keep-alive).
async fn encoded(events: &[WireEvent]) -> String {
    let frames: Vec<Result<SseEvent, Infallible>> = events.iter().map(|e| Ok(event(e))).collect();
    let response = Sse::new(futures::stream::iter(frames)).into_response();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn a_text_event_is_one_exact_frame() {
    let text = encoded(&[wire(
        3,
        Event::Text {
            source: "orchestrator".into(),
            text: "line one\nline: two\r\n".into(),
        },
    )])
    .await;
    assert_eq!(
        text,
        "id: 3\nevent: text\ndata: {\"v\":1,\"turn_id\":\"t1\",\"seq\":3,\"type\":\"text\",\
         \"source\":\"orchestrator\",\"text\":\"line one\\nline: two\\r\\n\"}\n\n"
    );
}

#[tokio::test]
async fn thinking_frame_carries_only_its_type() {
    let text = encoded(&[wire(1, Event::Thinking {})]).await;
    assert_eq!(
        text,
        "id: 1\nevent: thinking\ndata: {\"v\":1,\"turn_id\":\"t1\",\"seq\":1,\"type\":\"thinking\"}\n\n"
    );
}

#[tokio::test(start_paused = true)]
async fn an_idle_stream_sends_a_comment_every_fifteen_seconds() {
    let idle = futures::stream::pending::<Result<SseEvent, Infallible>>();
    let response = Sse::new(idle).keep_alive(keep_alive()).into_response();
    let mut body = response.into_body().into_data_stream();
    let started = tokio::time::Instant::now();
    let first = body.next().await.unwrap().unwrap();
    assert_eq!(&first[..], b":\n\n");
    assert_eq!(started.elapsed(), KEEP_ALIVE_INTERVAL);
    assert!(decode(std::str::from_utf8(&first).unwrap()).is_empty());
}

#[test]
fn decoder_joins_data_lines_and_skips_comments() {
    let frames = decode(": hello\nid: 7\nevent: x\ndata: a\ndata:b\nretry: 10\n\n:\n\n");
    assert_eq!(
        frames,
        vec![SseFrame {
            id: Some("7".into()),
            event: Some("x".into()),
            data: "a\nb".into(),
        }]
    );
}

#[test]
fn decoder_accepts_crlf_and_cr_line_endings() {
    let frames = decode("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r");
    let names: Vec<_> = frames.iter().map(|f| f.event.as_deref()).collect();
    assert_eq!(names, vec![Some("a"), Some("b")]);
    assert_eq!(frames[1].data, "2");
}

#[test]
fn a_frame_without_data_or_without_its_blank_line_is_not_delivered() {
    assert!(decode("event: a\n\n").is_empty());
    assert!(decode("data: unfinished\n").is_empty());
}

#[test]
fn a_split_crlf_is_one_line_end() {
    let mut d = SseDecoder::new();
    assert!(d.push(b"data: x\r").is_empty());
    assert!(d.push(b"\n\r").is_empty());
    let frames = d.push(b"\n");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].data, "x");
}

/// Strings rich in what could break framing: newlines, carriage returns, colons, field
/// names, blank lines, and any unicode.
fn tricky() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "(\n|\r|\r\n|:|data: |id: |event: | |\u{0}|é|日本|🦀|[a-z]){0,24}",
    ]
}

fn any_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        Just(Event::Thinking {}),
        (tricky(), tricky()).prop_map(|(response_id, episode_id)| Event::ResponseId {
            response_id,
            episode_id
        }),
        (tricky(), tricky()).prop_map(|(source, text)| Event::Text { source, text }),
        (tricky(), tricky()).prop_map(|(source, text)| Event::Reasoning { source, text }),
        (prop::collection::vec(tricky(), 0..3), tricky())
            .prop_map(|(codes, message)| Event::Status { codes, message }),
        (tricky(), tricky(), tricky()).prop_map(|(agent, label, text)| Event::DelegatedAnswer {
            agent,
            label,
            status: AgentStatus::Timeout,
            text
        }),
        (tricky(), tricky(), tricky()).prop_map(|(agent, label, text)| Event::DelegatedText {
            agent,
            label,
            text
        }),
        (tricky(), tricky()).prop_map(|(agent, label)| Event::DirectLine {
            agent,
            label,
            mode: DirectMode::Additive,
            state: DirectLineState::Sticky,
        }),
        (tricky(), tricky(), any::<u32>()).prop_map(|(agent_id, label, tool_calls)| {
            Event::AgentsConsulted {
                footer: format!("Consulted: {label}"),
                agents: vec![ConsultedAgent {
                    agent_id,
                    label,
                    status: AgentStatus::Partial,
                    duration_ms: 12,
                    tool_calls,
                    carried: false,
                }],
                memories: Vec::new(),
            }
        }),
        (tricky(), any::<u32>(), 0u32..1_000_000).prop_map(|(model, calls, milli)| {
            // Dyadic fractions print and parse back exactly.
            let cost = f64::from(milli) / 1024.0;
            Event::Usage {
                models: vec![ModelUsage {
                    model,
                    calls,
                    tokens: TokenUsage {
                        input: 10,
                        output: 20,
                        cache_read: 3,
                        cache_write: 4,
                    },
                    cost_usd: cost,
                }],
                cost_usd: cost,
            }
        }),
        tricky().prop_map(|message| Event::Error { message }),
        (0u32..5).prop_map(|n| {
            let mut privacy = PrivacyReceipt::default();
            for _ in 0..n {
                privacy.add(PiiKind::CardNumber);
            }
            Event::Completed {
                outcome: TurnOutcome::Limited,
                privacy,
            }
        }),
    ]
}

fn any_wire() -> impl Strategy<Value = WireEvent> {
    (any::<u32>(), tricky(), any::<u64>(), any_event()).prop_map(|(v, turn_id, seq, event)| {
        WireEvent {
            v,
            turn_id: Arc::from(turn_id.as_str()),
            seq,
            event,
        }
    })
}

proptest! {
    #[test]
    fn encoding_then_decoding_gives_back_the_event(events in prop::collection::vec(any_wire(), 1..4)) {
        let text = futures::executor::block_on(encoded(&events));
        let frames = decode(&text);
        prop_assert_eq!(frames.len(), events.len());
        for (frame, original) in frames.iter().zip(&events) {
            let seq = original.seq.to_string();
            prop_assert_eq!(frame.id.as_deref(), Some(seq.as_str()));
            prop_assert_eq!(frame.event.as_deref(), Some(original.event.name()));
            prop_assert!(!frame.data.contains('\n'), "data spans lines: {:?}", frame.data);
            prop_assert_eq!(&frame.wire_event().unwrap(), original);
        }
    }

    #[test]
    fn any_chunking_of_the_bytes_decodes_the_same(
        events in prop::collection::vec(any_wire(), 1..4),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let text = futures::executor::block_on(encoded(&events));
        let bytes = text.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        let mut from = 0;
        for p in points {
            frames.extend(decoder.push(&bytes[from..p]));
            from = p;
        }
        frames.extend(decoder.push(&bytes[from..]));
        frames.extend(decoder.finish());
        prop_assert_eq!(frames, decode(&text));
    }
}
