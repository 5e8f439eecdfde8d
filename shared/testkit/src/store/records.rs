//! Builders for the requests and records the scenarios send, and short drivers for the
//! steps many scenarios share.

use baton_core::Principal;
use baton_core::interruption::{
    Awaiting, HeldCall, Interruption, InterruptionKind, SavedJob, WaitingAgent, args_sha256,
};
use baton_core::message::Message;
use baton_core::picture::{MediaType, Picture, PictureLimits, take};
use baton_core::plan::{NodeResult, NodeStatus, PendingPlan, PlanNode};
use baton_core::ports::model::TokenUsage;
use baton_core::ports::store::{Body, Claim, ClaimRequest, Commit, EpisodeMeta, Store};
use baton_core::registry::Composition;
use baton_core::trace::{AgentOutcome, GuardName, RoutingRecord};
use baton_core::turn::{
    AgentStatus, ConsultedAgent, EpisodeState, ModelUsage, PendingCall, RateBucket, Segment,
    TurnOutcome, TurnRecord,
};

/// The lease every scenario claims with.
pub const LEASE_MS: u64 = 30_000;

/// A principal from a known-good id.
pub fn principal(id: &str) -> Principal {
    Principal::new(id).expect("test principal ids are valid")
}

/// A claim of `turn_id` at `now_ms`: on `episode_id`, or on a new episode `new_episode_id`.
pub fn claim_request(
    principal: &Principal,
    episode_id: Option<&str>,
    new_episode_id: &str,
    turn_id: &str,
    now_ms: u64,
) -> ClaimRequest {
    ClaimRequest {
        principal: principal.clone(),
        episode_id: episode_id.map(str::to_owned),
        new_episode_id: new_episode_id.to_owned(),
        turn_id: turn_id.to_owned(),
        now_ms,
        lease_ms: LEASE_MS,
        fingerprint: FINGERPRINT.to_owned(),
    }
}

/// The fingerprint [`claim_request`] and [`turn_record`] carry: the same request each time.
pub const FINGERPRINT: &str = "00112233445566778899aabbccddeeff";

/// A turn record with every field filled, so a round trip that drops a field shows.
pub fn turn_record(episode_id: &str, seq: u64, turn_id: &str, created_ms: u64) -> TurnRecord {
    let mut routing = RoutingRecord {
        invoked: vec!["offers".into(), "support".into()],
        intent_count: 2,
        cap: 3,
        retries: 1,
        composition: Some(Composition::Mediated),
        outcomes: vec![AgentOutcome {
            agent_id: "offers".into(),
            status: AgentStatus::Ok,
            latency_ms: 420,
            tool_calls: 2,
            started_ms: 10,
            ended_ms: 430,
        }],
        ..RoutingRecord::default()
    };
    routing.guard(GuardName::Verbatim, "single intent");
    TurnRecord {
        episode_id: episode_id.to_owned(),
        seq,
        turn_id: turn_id.to_owned(),
        created_ms,
        user_text: format!("question {seq}"),
        narration: format!("answer {seq}"),
        segments: vec![Segment {
            agent_id: "offers".into(),
            query: format!("question {seq}"),
            text: format!("offers answer {seq}"),
            status: AgentStatus::Ok,
        }],
        consulted: vec![ConsultedAgent {
            agent_id: "offers".into(),
            label: "Offers".into(),
            status: AgentStatus::Partial,
            duration_ms: 420,
            tool_calls: 2,
            carried: false,
        }],
        routing,
        usage: vec![ModelUsage {
            model: "orchestrator".into(),
            calls: 2,
            tokens: TokenUsage {
                input: 1_200,
                output: 80,
                cache_read: 900,
                cache_write: 0,
            },
            cost_usd: 0.001_25,
        }],
        cost_usd: 0.001_25,
        body_keys: vec![format!("{turn_id}/call-1")],
        outcome: TurnOutcome::Answered,
        direct: None,
        privacy: Default::default(),
        fingerprint: FINGERPRINT.to_owned(),
        message_id: None,
        pictures: Vec::new(),
    }
}

/// A state with every part filled.
pub fn busy_state(minute_ms: u64) -> EpisodeState {
    EpisodeState {
        rate_window: vec![RateBucket {
            minute_ms,
            calls: 7,
        }],
        pending: vec![PendingCall {
            agent_id: "support".into(),
            query: "reset my password".into(),
        }],
        direct_line: Some("support".into()),
        pending_plan: Some(Box::new(PendingPlan {
            nodes: vec![PlanNode {
                id: "ticket".into(),
                mission: "open a ticket for the missing points".into(),
                skills: vec!["support.open_ticket".into()],
                depends_on: vec!["receipts".into()],
                context: None,
                max_tool_calls: 5,
                wave: 2,
                call_id: "c2".into(),
            }],
            inputs: vec![NodeResult {
                id: "receipts".into(),
                status: NodeStatus::Completed,
                result: "two receipts".into(),
                tool_calls: 1,
                duration_ms: 12,
            }],
        })),
        awaiting: Some(Box::new(awaiting())),
    }
}

/// A turn waiting for the user's approval, with a finished and a waiting specialist.
fn awaiting() -> Awaiting {
    let args = serde_json::json!({ "points": 800 });
    Awaiting {
        origin_turn_id: String::new(),
        turn_id: "t-wait".into(),
        user_text: "coffee deals and redeem my points".into(),
        preamble: "Let me check.".into(),
        direct: None,
        plan: None,
        spent: baton_core::interruption::TurnSpent {
            tool_calls: 1,
            iterations: 1,
        },
        locale: Some("en-GB".into()),
        location: None,
        traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        jobs: vec![
            SavedJob {
                agent_id: "shop".into(),
                call_id: "c1".into(),
                query: "coffee deals".into(),
                prior_context: None,
                extra: Default::default(),
                status: Some(AgentStatus::Ok),
                text: "Roast coffee earns 500 points.".into(),
                tool_calls: 1,
                duration_ms: 30,
                waiting: None,
            },
            SavedJob {
                agent_id: "rewards".into(),
                call_id: "c2".into(),
                query: "redeem my points".into(),
                prior_context: Some("coffee".into()),
                extra: Default::default(),
                status: None,
                text: String::new(),
                tool_calls: 0,
                duration_ms: 20,
                waiting: Some(Box::new(WaitingAgent {
                    messages: vec![Message::user("redeem my points")],
                    reply_text: "Redeeming.".into(),
                    calls: vec![HeldCall {
                        id: "call-1".into(),
                        name: "redeem".into(),
                        input: args.clone(),
                        link: None,
                        asked: None,
                        answer: None,
                    }],
                    text: "Redeeming.".into(),
                    tool_calls: 0,
                    data: vec!["ok".into()],
                    duration_ms: 20,
                    remote: false,
                })),
            },
        ],
        interruption: Interruption {
            id: "int_1".into(),
            kind: InterruptionKind::Approval,
            agent_id: "rewards".into(),
            label: "Rewards".into(),
            tool: "redeem".into(),
            action: "Redeem 800 points".into(),
            args_sha256: args_sha256(&args),
            args,
            created_ms: 1,
            expires_ms: 86_400_001,
            link: None,
        },
    }
}

/// A commit of `record` by `principal` against `expected_version`, with these bodies and
/// an empty state.
pub fn commit_of(
    principal: &Principal,
    expected_version: u64,
    record: TurnRecord,
    bodies: Vec<Body>,
) -> Commit {
    Commit {
        principal: principal.clone(),
        expected_version,
        record,
        bodies,
        pictures: Vec::new(),
        state: EpisodeState::default(),
        compaction_due: false,
    }
}

/// A small picture of one `shade` (distinct shades give distinct pictures), encoded as
/// `media_type` and taken as a turn takes it (D-42): checked, stripped and named by its
/// SHA-256.
pub fn picture(media_type: MediaType, shade: u8) -> Picture {
    let format = match media_type {
        MediaType::Jpeg => image::ImageFormat::Jpeg,
        MediaType::Png => image::ImageFormat::Png,
        MediaType::Webp => image::ImageFormat::WebP,
        MediaType::Gif => image::ImageFormat::Gif,
    };
    let pixels = image::RgbImage::from_fn(8, 6, |x, y| {
        image::Rgb([shade, (x * 30) as u8, (y * 40) as u8])
    });
    let mut encoded = std::io::Cursor::new(Vec::new());
    pixels
        .write_to(&mut encoded, format)
        .expect("a small picture encodes");
    take(encoded.get_ref(), &PictureLimits::default()).expect("a small picture is taken")
}

/// A body.
pub fn body(key: &str, json: serde_json::Value) -> Body {
    Body {
        key: key.to_owned(),
        json: json.to_string(),
    }
}

/// Claims `turn_id` and expects the claim to be granted.
pub async fn claim_ok(store: &dyn Store, request: ClaimRequest) -> EpisodeMeta {
    match store.claim(request.clone()).await {
        Ok(Claim::Claimed(meta)) => meta,
        other => panic!("claim of {request:?} should be granted, got {other:?}"),
    }
}

/// Claims `turn_id` on `episode_id` (or a new episode of that id when `new` is true) at
/// `now_ms`, then commits it as the next turn; returns the committed record.
pub async fn run_turn(
    store: &dyn Store,
    principal: &Principal,
    episode_id: &str,
    new: bool,
    turn_id: &str,
    now_ms: u64,
) -> TurnRecord {
    let existing = (!new).then_some(episode_id);
    let meta = claim_ok(
        store,
        claim_request(principal, existing, episode_id, turn_id, now_ms),
    )
    .await;
    let record = turn_record(episode_id, meta.version + 1, turn_id, now_ms + 1);
    let version = store
        .commit(&commit_of(principal, meta.version, record.clone(), vec![]))
        .await
        .expect("commit of a claimed turn at the current version succeeds");
    assert_eq!(version, meta.version + 1, "commit returns the new version");
    record
}
