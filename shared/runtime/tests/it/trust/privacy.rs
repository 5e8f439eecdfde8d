//! D-23: the privacy guard on every outbound text, split chunks and delegated answers
//! included.

use super::*;

const LEAKY: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      tool_calls: [{ name: ask_support, args: { query: "receipt", intent_count: 1 } }]
  support:
    - text: ["Your card 4111 11", "11 1111 1111 was charged; write to ja", "ne.doe@example.com or call +44 20 7946 0958."]
"#;

#[tokio::test(start_paused = true)]
async fn personal_data_split_across_chunks_is_masked_everywhere() {
    let rig = make_rig(
        &TestRegistry {
            composition: "passthrough",
            ..TestRegistry::default()
        },
        LEAKY,
    );
    let (episode, events) = run(&rig, request("my receipt", None, "t1")).await;
    let shown = answer(&events);
    for raw in ["4111", "jane.doe", "example.com", "7946"] {
        assert!(!shown.contains(raw), "{raw} leaked: {shown}");
        for e in &events {
            // The episode id is a random hex uuid: about one in a thousand holds "4111" or
            // "7946" by chance, so it is taken out before looking for the raw values.
            let json = serde_json::to_string(e)
                .unwrap()
                .replace(&episode, "<episode>");
            assert!(!json.contains(raw), "{raw} in {json}");
        }
    }
    assert!(shown.contains("[card number]"), "{shown}");
    assert!(shown.contains("[email]"), "{shown}");
    assert!(shown.contains("[phone]"), "{shown}");
    let privacy = events
        .iter()
        .find_map(|e| match &e.event {
            Event::Completed { privacy, .. } => Some(privacy.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(privacy.total, 3);
    assert_eq!(privacy.by_kind.get(&PiiKind::CardNumber), Some(&1));
    // The journal stores what the user saw.
    let record = last_record(&rig, &episode).await;
    assert_eq!(record.narration, shown);
    assert!(!record.segments[0].text.contains("4111"));
    assert_eq!(record.privacy, privacy);
    let counters = rig.metrics.snapshot();
    assert_eq!(
        counters.get("privacy_masked_total,kind=card_number"),
        Some(&1)
    );
    assert_eq!(rig.metrics.counter("privacy_masked_total"), 3);
}

#[tokio::test(start_paused = true)]
async fn delegated_answers_are_masked_and_the_rules_are_configurable() {
    let script = r#"
agents:
  support:
    - text: ["Mail jane.d", "oe@example.com or call +44 20 79", "46 0958."]
"#;
    let rig = rig_with("privacy: { kinds: [email], mask: stars }", script);
    let (_, events) = run(&rig, request("#support contact?", None, "t1")).await;
    let (_, _, text) = &delegated(&events)[0];
    assert_eq!(text, "Mail ******************** or call +44 20 7946 0958.");
    assert_eq!(&pieces(&events, "support"), text);
    for e in &events {
        let json = serde_json::to_string(e).unwrap();
        assert!(
            !json.contains("jane") && !json.contains("example.com"),
            "{json}"
        );
    }
    let privacy = events.iter().find_map(|e| match &e.event {
        Event::Completed { privacy, .. } => Some(privacy.total),
        _ => None,
    });
    assert_eq!(
        privacy,
        Some(1),
        "counted once, not per piece and again whole"
    );
}
