//! `baton compact`: folding a long conversation on the embedded store with the offline
//! model's extractive summaries, on demand.

use crate::support::*;

/// A one-shot offline chat turn with compaction after turns off; returns the episode id.
fn turn(sandbox: &Sandbox, episode: Option<&str>, text: &str) -> String {
    let mut cmd = sandbox.baton();
    cmd.env("BATON_COMPACT_AFTER_TURN", "false")
        .args(["chat", "--registry", registry(), "--json"]);
    if let Some(e) = episode {
        cmd.args(["--episode", e]);
    }
    let run: Run = cmd.arg(text).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    episode_of(&events(&run.stdout))
}

/// A conversation of eight turns, due for compaction (the shipped cards' threshold).
fn eight_turns(sandbox: &Sandbox) -> String {
    let episode = turn(sandbox, None, "my receipt R-1234 didn't scan");
    for i in 2..=8 {
        turn(sandbox, Some(&episode), &format!("find coffee deals {i}"));
    }
    episode
}

/// `baton replay --json` of the episode.
fn replay(sandbox: &Sandbox, episode: &str) -> serde_json::Value {
    let run = sandbox.run(&["replay", "--registry", registry(), "--json", episode]);
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

/// Starts `baton` with `args` in the background, its output discarded: to kill it.
fn spawn(sandbox: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> std::process::Child {
    sandbox
        .baton()
        .envs(env.iter().copied())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn compact(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["compact", "--registry", registry()];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

#[test]
fn a_due_conversation_is_folded_once_and_then_has_nothing_to_fold() {
    let sandbox = Sandbox::new();
    let episode = eight_turns(&sandbox);

    let run = compact(&sandbox, &["--due", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let episodes = report["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 1, "{report}");
    assert_eq!(episodes[0]["episode_id"], episode.as_str());
    assert_eq!(episodes[0]["outcome"], "compacted");
    assert_eq!(episodes[0]["turns_folded"], 4);
    assert_eq!(episodes[0]["upto_seq"], 4);

    // Nothing is due any more; this episode has nothing left to fold until more turns come.
    let again = compact(&sandbox, &["--due"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.starts_with("0 episode(s)"), "{again:?}");
    let one = compact(&sandbox, &["--episode", &episode]);
    assert_eq!(one.code, 0, "{one:?}");
    assert!(one.stdout.contains("nothing to fold"), "{one:?}");

    // The conversation goes on over its summary.
    assert_eq!(turn(&sandbox, Some(&episode), "and my points?"), episode);
}

#[test]
fn an_unknown_episode_is_a_plain_error() {
    let sandbox = Sandbox::new();
    let run = compact(&sandbox, &["--episode", "ep_missing"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with("error: compacting episode ep_missing"),
        "{run:?}"
    );
}

/// A compaction killed (SIGKILL) while its summarizer answers loses nothing: the
/// conversation keeps every turn and stays due, the next run folds it once, and the
/// conversation goes on over the summary.
#[test]
fn a_compaction_killed_mid_summary_is_done_by_the_next_run() {
    let sandbox = Sandbox::new();
    let episode = eight_turns(&sandbox);
    let hanging = sandbox.script(
        r#"
agents:
  orchestrator:
    - when: { purpose: summarize }
      delay_ms: 600000
      text: ["Never sent."]
"#,
    );
    let mut compaction = spawn(
        &sandbox,
        &[],
        &[
            "--model",
            &hanging,
            "compact",
            "--due",
            "--registry",
            registry(),
        ],
    );
    // Its only wait is the summarizer's: still running after a few seconds, it is there.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        compaction.try_wait().unwrap().is_none(),
        "the compaction ended before the kill"
    );
    compaction.kill().unwrap();
    compaction.wait().unwrap();

    let run = compact(&sandbox, &["--due", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let episodes = report["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 1, "still due after the kill: {report}");
    assert_eq!(episodes[0]["outcome"], "compacted");
    assert_eq!(episodes[0]["turns_folded"], 4);
    let replay = replay(&sandbox, &episode);
    assert_eq!(replay["turns"].as_array().unwrap().len(), 8, "{replay}");
    assert_eq!(replay["meta"]["summary"]["upto_seq"], 4, "{replay}");
    assert_eq!(turn(&sandbox, Some(&episode), "and my points?"), episode);
}

/// A compaction killed (SIGKILL) just after its summary was saved: the summary stands and
/// the conversation is no longer due, so nothing is folded twice. The fault injection
/// point holds the process there (D-39), so this runs only in a build with them.
#[cfg(feature = "failpoints")]
#[test]
fn a_compaction_killed_after_its_write_is_not_done_twice() {
    let sandbox = Sandbox::new();
    let episode = eight_turns(&sandbox);
    let mut compaction = spawn(
        &sandbox,
        &[("FAILPOINTS", "store.summary.after=sleep(600000)")],
        &["compact", "--due", "--registry", registry()],
    );
    let started = std::time::Instant::now();
    while replay(&sandbox, &episode)["meta"]["summary"].is_null() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no summary saved"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        compaction.try_wait().unwrap().is_none(),
        "held after the write"
    );
    compaction.kill().unwrap();
    compaction.wait().unwrap();

    let after = replay(&sandbox, &episode);
    assert_eq!(after["meta"]["summary"]["upto_seq"], 4, "{after}");
    assert_eq!(after["turns"].as_array().unwrap().len(), 8);
    let again = compact(&sandbox, &["--due"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.starts_with("0 episode(s)"), "{again:?}");
    assert_eq!(turn(&sandbox, Some(&episode), "and my points?"), episode);
}
