//! `baton memory` and memory across one-shot chats (D-43): what a user says in one
//! conversation is in the local store's file afterwards, recalled in a new conversation,
//! listed, searched, exported and erased by its owner only; off means nothing is kept.

use serde_json::Value;

use crate::support::*;

/// A one-shot offline chat turn in a new conversation, as `principal`; its events.
fn chat(sandbox: &Sandbox, principal: &str, text: &str) -> Vec<Value> {
    let run: Run = sandbox
        .baton()
        .args([
            "chat",
            "--registry",
            registry(),
            "--json",
            "--principal",
            principal,
            text,
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    events(&run.stdout)
}

fn memory(sandbox: &Sandbox, principal: &str, args: &[&str]) -> Run {
    let mut all = vec!["memory", "--registry", registry(), "--principal", principal];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

fn memory_json(sandbox: &Sandbox, principal: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let run = memory(sandbox, principal, &all);
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

fn consulted(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap()
}

#[test]
fn what_a_one_shot_chat_said_is_remembered_and_recalled_in_a_new_conversation() {
    let sandbox = Sandbox::new();
    chat(
        &sandbox,
        "ann",
        "My dog is called Biscuit and I'm saving for a Trek FX 2",
    );
    let listed = memory_json(&sandbox, "ann", &["list"]);
    let texts: Vec<&str> = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert!(texts.contains(&"My dog is called Biscuit"), "{listed}");

    let events = chat(&sandbox, "ann", "do you remember what my dog is called?");
    let record = consulted(&events);
    assert_eq!(record["agents"][0]["agent_id"], "memory", "{record}");
    assert_eq!(record["memories"][0]["subject"], "dog", "{record}");
    assert!(
        record["footer"]
            .as_str()
            .unwrap()
            .contains("Remembered: dog")
    );
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(answer.contains("Biscuit"), "{answer}");

    let text = memory(&sandbox, "ann", &["search", "dog"]);
    assert_eq!(text.code, 0);
    assert!(
        text.stdout.contains("dog: My dog is called Biscuit"),
        "{text:?}"
    );
}

#[test]
fn memories_are_their_owners_to_see_and_erase() {
    let sandbox = Sandbox::new();
    let saved = memory_json(
        &sandbox,
        "ann",
        &["save", "remember that my locker code is Quokka-4417"],
    );
    assert_eq!(saved["memory"]["subject"], "locker code");
    let id = saved["memory"]["id"].as_str().unwrap().to_owned();

    // Another principal sees nothing and erases nothing.
    assert_eq!(
        memory_json(&sandbox, "bob", &["list", "--history"])["memories"],
        Value::Array(vec![])
    );
    let theirs = memory(&sandbox, "bob", &["forget", &id]);
    assert_eq!(theirs.code, 1, "{theirs:?}");
    assert!(theirs.stderr.contains("no memory"), "{theirs:?}");
    let forged = memory(&sandbox, "ann", &["forget", "mem_nope"]);
    assert_eq!(forged.code, 1);

    let export = memory_json(&sandbox, "ann", &["export"]);
    assert_eq!(export["principal"], "ann");
    assert_eq!(
        export["memories"][0]["text"],
        "my locker code is Quokka-4417"
    );

    let gone = memory_json(&sandbox, "ann", &["forget", &id]);
    assert_eq!(gone["forgotten"], 1);
    let found = memory_json(&sandbox, "ann", &["search", "locker", "Quokka"]);
    assert_eq!(found["memories"], Value::Array(vec![]));
    // The erased words are gone from the file itself, not only from its indexes.
    let file = std::fs::read(sandbox.data_dir().join("baton.sqlite")).unwrap();
    let wal = std::fs::read(sandbox.data_dir().join("baton.sqlite-wal")).unwrap_or_default();
    for bytes in [&file, &wal] {
        assert!(
            !bytes.windows(6).any(|w| w == b"Quokka"),
            "the erased code is still in the store's bytes"
        );
    }

    memory_json(&sandbox, "ann", &["save", "I prefer oat milk"]);
    memory_json(&sandbox, "ann", &["save", "my dog is Biscuit"]);
    let all = memory_json(&sandbox, "ann", &["forget", "--all"]);
    assert_eq!(all["forgotten"], 2);
    assert_eq!(
        memory_json(&sandbox, "ann", &["list", "--history"])["memories"],
        Value::Array(vec![])
    );
}

#[test]
fn memory_off_keeps_and_reads_nothing() {
    let sandbox = Sandbox::new();
    let off = memory_json(&sandbox, "ann", &["off"]);
    assert_eq!(off["memory"], "off");
    chat(&sandbox, "ann", "My dog is called Biscuit");
    assert_eq!(
        memory_json(&sandbox, "ann", &["list"])["memories"],
        Value::Array(vec![])
    );
    let status = memory_json(&sandbox, "ann", &["status"]);
    assert_eq!(status["memory"], "off");
    assert_eq!(status["own_setting"], true);
    // The deployment's default, in the configuration, is the others' setting.
    let run: Run = sandbox
        .baton()
        .env("BATON_MEMORY", "false")
        .args([
            "memory",
            "--registry",
            registry(),
            "--principal",
            "bob",
            "status",
            "--json",
        ])
        .output()
        .unwrap()
        .into();
    let bob: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bob["memory"], "off");
    assert_eq!(bob["own_setting"], false);
}
