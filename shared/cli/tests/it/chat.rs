//! `baton chat`: one-shot, `--json`, continuing an episode, the interactive loop, refusals.

use std::io::Write;
use std::process::Stdio;

use crate::support::*;

fn scripted(sandbox: &Sandbox) -> Vec<String> {
    vec![
        "--registry".into(),
        registry().into(),
        "--model".into(),
        sandbox.script(SHOP_SCRIPT),
    ]
}

fn chat(sandbox: &Sandbox, extra: &[&str]) -> Run {
    let mut args: Vec<String> = vec!["chat".into()];
    args.extend(scripted(sandbox));
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sandbox.run(&args)
}

#[test]
fn json_prints_only_event_lines_ending_in_completed() {
    let sandbox = Sandbox::new();
    let run = chat(&sandbox, &["--json", "find me coffee deals"]);
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    assert_eq!(events.first().unwrap()["type"], "thinking");
    assert_eq!(events.last().unwrap()["type"], "completed");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
        assert_eq!(e["v"], 1);
    }
}

#[test]
fn plain_output_is_the_answer_and_a_footer_without_escape_codes() {
    let sandbox = Sandbox::new();
    let run = chat(&sandbox, &["find", "me", "coffee", "deals"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("Bean Street coffee earns 1,000 points."),
        "{run:?}"
    );
    let footer = run.stdout.lines().last().unwrap();
    assert!(footer.starts_with("Consulted: Shopping · $"), "{footer:?}");
    assert!(footer.contains(" · episode ep_"), "{footer:?}");
    assert!(!run.stdout.contains('\x1b'), "{run:?}");
    assert!(!run.stderr.contains('\x1b'), "{run:?}");
}

#[test]
fn episode_continues_a_conversation() {
    let sandbox = Sandbox::new();
    let first = chat(&sandbox, &["--json", "find me coffee deals"]);
    let episode = episode_of(&events(&first.stdout));
    let second = chat(&sandbox, &["--json", "--episode", &episode, "any more?"]);
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(episode_of(&events(&second.stdout)), episode);
}

#[test]
fn an_unknown_episode_is_refused_in_plain_words() {
    let sandbox = Sandbox::new();
    let run = chat(&sandbox, &["--episode", "ep_missing", "hello"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr.trim(), "error: That conversation was not found.");
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn an_empty_message_is_refused() {
    let sandbox = Sandbox::new();
    let run = chat(&sandbox, &["   "]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{run:?}");
    assert!(run.stderr.contains("empty"), "{run:?}");
}

#[test]
fn a_corrupt_store_names_its_file() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.data_dir()).unwrap();
    let file = sandbox.data_dir().join("baton.sqlite");
    std::fs::write(&file, b"this is not a database, just some text").unwrap();
    let run = chat(&sandbox, &["find me coffee deals"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&file.display().to_string()), "{run:?}");
    assert!(run.stderr.contains("damaged"), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    // The file is left as it was.
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"this is not a database, just some text"
    );
}

/// Runs the interactive loop with `input` on stdin.
fn interactive(sandbox: &Sandbox, input: &str) -> Run {
    let mut cmd = sandbox.baton();
    cmd.arg("chat").args(scripted(sandbox)).arg("--json");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap().into()
}

#[test]
fn the_interactive_loop_keeps_one_episode_until_new() {
    let sandbox = Sandbox::new();
    let run = interactive(
        &sandbox,
        "find me coffee deals\nand more?\n/new\ncoffee again\n/exit\nnot sent\n",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    let episodes: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "response_id")
        .map(|e| e["episode_id"].as_str().unwrap())
        .collect();
    assert_eq!(episodes.len(), 3, "{run:?}");
    assert_eq!(episodes[0], episodes[1]);
    assert_ne!(episodes[1], episodes[2]);
    let completed = events.iter().filter(|e| e["type"] == "completed").count();
    assert_eq!(completed, 3);
    assert!(
        sandbox.data_dir().join("chat_history.txt").exists(),
        "history saved"
    );
}

#[test]
fn the_interactive_loop_ends_at_end_of_input() {
    let sandbox = Sandbox::new();
    let run = interactive(&sandbox, "find me coffee deals\n");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(events(&run.stdout).last().unwrap()["type"], "completed");
}

#[test]
fn a_refusal_in_the_interactive_loop_does_not_end_it() {
    let sandbox = Sandbox::new();
    let long = "x".repeat(5000);
    let run = interactive(&sandbox, &format!("{long}\nfind me coffee deals\n"));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("too long"), "{run:?}");
    assert_eq!(events(&run.stdout).last().unwrap()["type"], "completed");
}
