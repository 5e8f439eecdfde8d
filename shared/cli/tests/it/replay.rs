//! `baton replay`: a conversation of offline-model turns shown back turn by turn, as text
//! and as JSON, with its payloads and its summary.

use serde_json::Value;

use crate::support::*;

/// A one-shot offline chat turn (compaction after turns off, so nothing changes the
/// episode behind the test's back); returns the episode id and the turn's events.
fn turn(sandbox: &Sandbox, episode: Option<&str>, text: &str) -> (String, Vec<Value>) {
    let mut cmd = sandbox.baton();
    cmd.env("BATON_COMPACT_AFTER_TURN", "false")
        .args(["chat", "--registry", registry(), "--json"]);
    if let Some(e) = episode {
        cmd.args(["--episode", e]);
    }
    let run: Run = cmd.arg(text).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    (episode_of(&events), events)
}

/// A conversation of `texts`, one turn each; returns its id and each turn's events.
fn conversation(sandbox: &Sandbox, texts: &[&str]) -> (String, Vec<Vec<Value>>) {
    let (episode, first) = turn(sandbox, None, texts[0]);
    let mut all = vec![first];
    for text in &texts[1..] {
        all.push(turn(sandbox, Some(&episode), text).1);
    }
    (episode, all)
}

fn replay(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["replay", "--registry", registry()];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

fn replay_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = replay(sandbox, &all);
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {run:?}"))
}

/// The answer as the user saw it stream.
fn answer(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect()
}

/// The labels `agents_consulted` named.
fn consulted(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "agents_consulted")
        .flat_map(|e| e["agents"].as_array().unwrap().clone())
        .map(|a| a["label"].as_str().unwrap().to_owned())
        .collect()
}

const TEXTS: [&str; 3] = [
    "my receipt didn't scan",
    "find me coffee deals",
    "what is my points balance?",
];

#[test]
fn each_turn_is_shown_with_its_text_answer_and_who_was_consulted() {
    let sandbox = Sandbox::new();
    let (episode, turns) = conversation(&sandbox, &TEXTS);

    let run = replay(&sandbox, &[&episode]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    let out = &run.stdout;
    assert!(
        out.starts_with(&format!("Conversation {episode} · 3 turns")),
        "{out}"
    );
    assert!(out.contains("No summary yet"), "{out}");
    let mut from = 0;
    for (i, (text, events)) in TEXTS.iter().zip(&turns).enumerate() {
        // Each turn in order: its heading, the user's words, the answer line by line, then
        // who was consulted with status, duration and tool calls.
        let heading = format!("── Turn {} · ", i + 1);
        let at = from
            + out[from..]
                .find(&heading)
                .unwrap_or_else(|| panic!("{heading}: {out}"));
        let end = out[at + heading.len()..]
            .find("── Turn ")
            .map_or(out.len(), |n| at + heading.len() + n);
        let shown = &out[at..end];
        assert!(shown.contains(&format!("You:\n  {text}\n")), "{shown}");
        for line in answer(events).lines().filter(|l| !l.is_empty()) {
            assert!(
                shown.contains(&format!("  {line}\n")),
                "{line:?} in {shown}"
            );
        }
        let labels = consulted(events);
        assert!(!labels.is_empty(), "{events:?}");
        let record = shown
            .lines()
            .find(|l| l.starts_with("Consulted: "))
            .unwrap_or_else(|| panic!("{shown}"));
        for label in labels {
            assert!(record.contains(&format!("{label} [")), "{record}");
        }
        assert!(record.contains("(ok, "), "{record}");
        assert!(record.contains(" tool call"), "{record}");
        assert!(shown.contains("\nRouting: invoked "), "{shown}");
        assert!(shown.contains("\nUsage: "), "{shown}");
        from = end;
    }
    // Without --bodies no payload is printed.
    assert!(!out.contains("Payloads:"), "{out}");
}

#[test]
fn json_is_one_document_with_the_turns_as_stored() {
    let sandbox = Sandbox::new();
    let (episode, turns) = conversation(&sandbox, &TEXTS[..2]);

    let replay = replay_json(&sandbox, &[&episode]);
    assert_eq!(replay["meta"]["episode_id"], episode.as_str());
    assert_eq!(replay["meta"]["summary"], Value::Null);
    let stored = replay["turns"].as_array().unwrap();
    assert_eq!(stored.len(), 2, "{replay}");
    for (i, (turn, events)) in stored.iter().zip(&turns).enumerate() {
        assert_eq!(turn["seq"], i as u64 + 1);
        assert_eq!(turn["user_text"], TEXTS[i]);
        assert_eq!(
            turn["narration"].as_str().unwrap().trim(),
            answer(events).trim()
        );
        assert!(turn["routing"]["invoked"].is_array(), "{turn}");
        assert!(turn["consulted"][0]["duration_ms"].is_u64(), "{turn}");
    }
    assert!(
        replay.get("bodies").is_none(),
        "only with --bodies: {replay}"
    );
}

#[test]
fn bodies_prints_the_stored_payloads() {
    let sandbox = Sandbox::new();
    let (episode, _) = conversation(&sandbox, &["find me coffee deals"]);

    let json = replay_json(&sandbox, &["--bodies", &episode]);
    let key = json["turns"][0]["body_keys"][0]
        .as_str()
        .unwrap_or_else(|| panic!("the shop's tool call stored a body: {json}"))
        .to_owned();
    let body = &json["bodies"][&key];
    assert!(body.is_object(), "{json}");

    let run = replay(&sandbox, &["--bodies", &episode]);
    assert_eq!(run.code, 0, "{run:?}");
    let payloads = run
        .stdout
        .split_once("Payloads:\n")
        .unwrap_or_else(|| panic!("{run:?}"))
        .1;
    assert!(
        payloads.starts_with(&format!("  {key}\n    {{\n")),
        "{payloads}"
    );
    // The payload is the stored document, pretty-printed.
    let pretty = serde_json::to_string_pretty(body).unwrap();
    let indented: Vec<String> = pretty.lines().map(|l| format!("    {l}")).collect();
    assert!(payloads.contains(&indented.join("\n")), "{payloads}");
}

#[test]
fn an_unknown_or_foreign_episode_is_refused_in_plain_words() {
    let sandbox = Sandbox::new();
    let (episode, _) = conversation(&sandbox, &["hello"]);
    for args in [
        vec!["ep_missing"],
        vec!["--json", "ep_missing"],
        vec!["--principal", "someone-else", &episode],
    ] {
        let run = replay(&sandbox, &args);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stderr.trim(), "error: That conversation was not found.");
        assert!(run.stdout.is_empty(), "{run:?}");
    }
}

#[test]
fn after_compaction_the_replay_says_how_far_the_summary_reaches() {
    let sandbox = Sandbox::new();
    let texts: Vec<String> = (1..=8).map(|i| format!("find coffee deals {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (episode, _) = conversation(&sandbox, &texts);

    let compact = sandbox.run(&[
        "compact",
        "--registry",
        registry(),
        "--episode",
        &episode,
        "--json",
    ]);
    assert_eq!(compact.code, 0, "{compact:?}");
    let report: Value = serde_json::from_str(&compact.stdout).unwrap();
    let upto = report["episodes"][0]["upto_seq"].as_u64().unwrap();
    assert!((1..8).contains(&upto), "{report}");

    let run = replay(&sandbox, &[&episode]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    let reach = format!("Turns 1–{upto} are summarised. The orchestrator's summary:\n");
    let at = out.find(&reach).unwrap_or_else(|| panic!("{reach}: {out}"));
    assert!(at < out.find("── Turn 1 ").unwrap(), "said first: {out}");
    let json = replay_json(&sandbox, &[&episode]);
    assert_eq!(json["meta"]["summary"]["upto_seq"], upto);
    assert_eq!(json["turns"].as_array().unwrap().len(), 8);
    // The summary's text follows, indented; every turn is still shown.
    let text = json["meta"]["summary"]["text"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "{json}");
    let indented: Vec<String> = text.lines().map(|l| format!("  {l}\n")).collect();
    assert!(
        out[at + reach.len()..].starts_with(&indented.concat()),
        "{out}"
    );
    assert!(out.contains(&format!("── Turn {upto} · ")), "{out}");
    assert!(out.contains("── Turn 8 · "), "{out}");
}

/// A turn sent with a photo (`baton chat --image`) is replayed with its picture's
/// reference; `--bodies` reads the picture back and checks it, and `--save-pictures`
/// writes it as stored: the same bytes the turn committed, with none of what the photo hid.
#[test]
fn a_turn_with_a_picture_is_replayed_with_it_and_its_picture_saved_as_stored() {
    let sandbox = Sandbox::new();
    let photo = sandbox.path().join("receipt.jpg");
    std::fs::write(&photo, baton_testkit::pictures::receipt_photo()).unwrap();
    let run: Run = sandbox
        .baton()
        .env("BATON_COMPACT_AFTER_TURN", "false")
        .args(["chat", "--registry", registry(), "--json", "--image"])
        .arg(&photo)
        .arg("this one didn't scan")
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let episode = episode_of(&events(&run.stdout));

    let json = replay_json(&sandbox, &[&episode]);
    let picture = &json["turns"][0]["pictures"][0];
    assert_eq!(picture["media_type"], "image/jpeg", "{json:#}");
    assert_eq!(
        (picture["width"].as_u64(), picture["height"].as_u64()),
        (Some(360), Some(900))
    );
    let sha = picture["sha256"].as_str().unwrap().to_owned();

    let saved = sandbox.path().join("saved");
    let text = replay(
        &sandbox,
        &[
            "--bodies",
            "--save-pictures",
            saved.to_str().unwrap(),
            &episode,
        ],
    );
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout.contains("[picture 1: image/jpeg, 360×900, "),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains(&sha), "{}", text.stdout);
    assert!(
        text.stdout.contains("1 picture read back whole"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("removed from the pictures: location (GPS)"),
        "{}",
        text.stdout
    );
    let bytes = std::fs::read(saved.join("1-1.jpg")).unwrap();
    assert_eq!(baton_core::picture::sha256_hex(&bytes), sha);
    for secret in baton_testkit::pictures::SECRETS {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} survived"
        );
    }
}
