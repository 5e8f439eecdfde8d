//! Running the binary in a clean temporary folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

/// The registry shipped in the repository.
pub(crate) const REGISTRY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../registry");

/// Every variable the binary reads, cleared so the caller's environment cannot leak in.
const VARIABLES: &[&str] = &[
    "BATON_CONFIG",
    "BATON_REGISTRY",
    "BATON_DATA_DIR",
    "BATON_MODEL",
    "BATON_ADDR",
    "BATON_PRINCIPAL",
    "BATON_ORCHESTRATOR",
    "BATON_MAX_MESSAGE_CHARS",
    "BATON_MAX_BODY_BYTES",
    "BATON_HISTORY_TURNS",
    "BATON_LOG",
];

/// A working folder (no `baton.toml` unless a test writes one) with a data folder inside.
pub(crate) struct Sandbox {
    pub(crate) dir: TempDir,
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.path().join("data")
    }

    /// `baton` in this folder, with a clean environment and this sandbox's data folder.
    pub(crate) fn baton(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_baton"));
        cmd.current_dir(self.path());
        for v in VARIABLES {
            cmd.env_remove(v);
        }
        cmd.arg("--data-dir").arg(self.data_dir());
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `baton` with `args` and waits.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.baton().args(args).output().unwrap().into()
    }

    /// Writes a scripted model and returns its `--model` value.
    pub(crate) fn script(&self, text: &str) -> String {
        let path = self.path().join("script.yaml");
        std::fs::write(&path, text).unwrap();
        format!("scripted:{}", path.display())
    }
}

/// A scripted turn over the shipped registry: route to `shop`, one tool call, compose.
pub(crate) const SHOP_SCRIPT: &str = r#"
agents:
  orchestrator:
    - when: { purpose: route }
      text: ["Checking offers. "]
      tool_calls: [{ name: ask_shop, args: { query: "coffee deals", intent_count: 1 } }]
    - when: { purpose: compose }
      text: ["Bean Street coffee ", "earns 1,000 points."]
  shop:
    - when: { after_tool_results: false }
      tool_calls: [{ name: search_offers, args: { query: "coffee" } }]
    - when: { after_tool_results: true }
      text: ["Bean Street coffee earns 1,000 points."]
"#;

/// The events of `--json` output.
pub(crate) fn events(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
        .collect()
}

/// The episode id announced in `--json` output.
pub(crate) fn episode_of(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "response_id")
        .and_then(|e| e["episode_id"].as_str())
        .unwrap()
        .to_owned()
}

pub(crate) use baton_tests::fixtures::copy_dir;
