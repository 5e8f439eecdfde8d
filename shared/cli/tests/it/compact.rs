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

fn compact(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut all = vec!["compact", "--registry", registry()];
    all.extend_from_slice(args);
    sandbox.run(&all)
}

#[test]
fn a_due_conversation_is_folded_once_and_then_has_nothing_to_fold() {
    let sandbox = Sandbox::new();
    let episode = turn(&sandbox, None, "my receipt R-1234 didn't scan");
    for i in 2..=8 {
        turn(&sandbox, Some(&episode), &format!("find coffee deals {i}"));
    }

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
