//! Figures for the `turn` binary under a local Lambda Runtime API: cold start and peak
//! memory, optionally at a Lambda memory setting's share of the CPU, beside the smallest
//! Rust function. Not a test: it prints measurements.
//!
//! ```text
//! cargo build --profile dist -p baton-turn --bin turn
//! cargo build --profile dist -p baton-hello-lambda
//! cargo run -p baton-tests --example turn_figures -- \
//!     <turn> [starts] [turns] [--memory-mb MB] [--hello <hello_lambda>]
//! ```
//!
//! - cold start: `init_us` as the binary logs it (from `main` to registry validated and
//!   clients built, before the connection warm-up), and from process spawn to the binary's
//!   first request for an event, which is where Lambda's Init ends (warm-up against the
//!   local emulators included);
//! - memory: `VmHWM` (peak RSS) and `VmRSS` from `/proc/<pid>/status` after each batch of
//!   turns, each turn a new episode through DynamoDB Local and the Bedrock-wire fake;
//! - `--memory-mb`: the binary runs in a cgroup with Lambda's CPU share for that setting
//!   (one vCPU at 1,769 MB, in proportion below) and that memory limit, and sees
//!   `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` (needs a writable cgroup v1 `cpu` and `memory`);
//! - `--hello`: the same cold start for the smallest function, built the same way.
//!
//! Needs DynamoDB Local (`BATON_TEST_DYNAMODB`, or `./infra/emulators.sh install`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton_tests::fixtures::event;
use baton_tests::function_process::{Running, Services, shop_answers};
use baton_tests::runtime_api::{FakeRuntimeApi, PostKind};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
/// The memory setting at which Lambda gives a function one full vCPU.
const ONE_VCPU_MB: u64 = 1_769;
const PERIOD_US: u64 = 100_000;

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A cgroup (v1) with a memory setting's CPU share and memory limit, and a launcher that
/// starts a binary inside it.
struct Sandbox {
    dirs: Vec<PathBuf>,
    launcher: tempfile::TempDir,
}

impl Sandbox {
    fn new(mb: u64) -> Sandbox {
        let name = format!("baton-figures-{mb}-{}", std::process::id());
        let cpu = Path::new("/sys/fs/cgroup/cpu").join(&name);
        std::fs::create_dir_all(&cpu).expect("a cpu cgroup (run as root, cgroup v1)");
        std::fs::write(cpu.join("cpu.cfs_period_us"), PERIOD_US.to_string()).unwrap();
        let quota = PERIOD_US * mb / ONE_VCPU_MB;
        std::fs::write(cpu.join("cpu.cfs_quota_us"), quota.to_string()).unwrap();
        // Under the memory cgroup this process is in (a container's own, often).
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let parent = own
            .lines()
            .find_map(|l| {
                l.split_once(":memory:")
                    .map(|(_, p)| p.trim_start_matches('/'))
            })
            .unwrap_or("");
        let memory = Path::new("/sys/fs/cgroup/memory").join(parent).join(&name);
        std::fs::create_dir_all(&memory).expect("a memory cgroup");
        std::fs::write(memory.join("memory.limit_in_bytes"), (mb << 20).to_string()).unwrap();
        let launcher = tempfile::tempdir().unwrap();
        Sandbox {
            dirs: vec![cpu, memory],
            launcher,
        }
    }

    /// A script that joins the cgroups, then becomes `binary` (same pid).
    fn wrap(&self, binary: &Path) -> PathBuf {
        let mut script = String::from("#!/bin/sh\n");
        for dir in &self.dirs {
            script.push_str(&format!("echo $$ > {}/cgroup.procs\n", dir.display()));
        }
        script.push_str(&format!("exec {}\n", binary.display()));
        let path = self
            .launcher
            .path()
            .join(binary.file_name().unwrap_or_default());
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Empty by now: the processes in them have exited.
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Spawn to first `/next` (Lambda's Init) over `starts` fresh processes, in ms; with the
/// binary's own `init_us` lines when it writes them.
async fn cold_starts(
    binary: &Path,
    vars: &[(String, String)],
    starts: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut ready_ms = Vec::new();
    let mut init_ms = Vec::new();
    for _ in 0..starts {
        let api = FakeRuntimeApi::start().await.unwrap();
        let started = Instant::now();
        let running = Running::spawn(binary, vars, &api.address());
        assert!(api.wait_for_next_calls(1, WAIT).await, "never ready");
        let ready = api.first_next_at().expect("asked for an event");
        ready_ms.push(ready.duration_since(started).as_secs_f64() * 1000.0);
        if let Some(init) = running
            .lines()
            .iter()
            .find_map(|l| serde_json::from_str::<Value>(l).ok()?["init_us"].as_u64())
        {
            init_ms.push(init as f64 / 1000.0);
        }
    }
    (ready_ms, init_ms)
}

struct Args {
    binary: PathBuf,
    starts: usize,
    turns: usize,
    memory_mb: Option<u64>,
    hello: Option<PathBuf>,
}

fn args() -> Args {
    let mut positional = Vec::new();
    let mut memory_mb = None;
    let mut hello = None;
    let mut all = std::env::args().skip(1);
    while let Some(arg) = all.next() {
        match arg.as_str() {
            "--memory-mb" => memory_mb = all.next().and_then(|v| v.parse().ok()),
            "--hello" => hello = all.next().map(PathBuf::from),
            _ => positional.push(arg),
        }
    }
    let binary = positional.first().map(PathBuf::from).unwrap_or_else(|| {
        let exe = std::env::current_exe().unwrap();
        // <target>/<profile>/examples/turn_figures
        exe.parent().and_then(Path::parent).unwrap().join("turn")
    });
    Args {
        binary,
        starts: positional.get(1).and_then(|s| s.parse().ok()).unwrap_or(10),
        turns: positional.get(2).and_then(|s| s.parse().ok()).unwrap_or(50),
        memory_mb,
        hello,
    }
}

#[tokio::main]
async fn main() {
    let args = args();
    println!("binary: {}", args.binary.display());
    let sandbox = args.memory_mb.map(Sandbox::new);
    let launch = |binary: &Path| match &sandbox {
        Some(s) => s.wrap(binary),
        None => binary.to_path_buf(),
    };
    if let Some(mb) = args.memory_mb {
        println!(
            "memory setting {mb} MB: CPU quota {:.3} vCPU, memory limit {mb} MiB",
            mb as f64 / ONE_VCPU_MB as f64
        );
    }

    let services = Services::start(shop_answers).await;
    let mut vars = services.env();
    // As the template sets it.
    vars.push((
        "BATON_MODEL_IDS".into(),
        "claude-haiku=us.anthropic.claude-haiku-4-5-20251001-v1:0,\
         claude-sonnet=us.anthropic.claude-sonnet-4-5-20250929-v1:0,\
         nova-micro=us.amazon.nova-micro-v1:0"
            .into(),
    ));
    if let Some(mb) = args.memory_mb {
        vars.push(("AWS_LAMBDA_FUNCTION_MEMORY_SIZE".into(), mb.to_string()));
    }

    // Cold starts: a fresh process each time.
    let turn = launch(&args.binary);
    let (ready_ms, init_ms) = cold_starts(&turn, &vars, args.starts).await;
    println!(
        "turn cold start over {} starts: init (main -> registry validated, clients built) median {:.2} ms, min {:.2} ms; spawn -> first /next (Lambda's Init, warm-up included) median {:.2} ms, min {:.2} ms",
        args.starts,
        median(init_ms.clone()),
        init_ms.iter().copied().fold(f64::MAX, f64::min),
        median(ready_ms.clone()),
        ready_ms.iter().copied().fold(f64::MAX, f64::min),
    );
    if let Some(hello) = &args.hello {
        let (ready_ms, _) = cold_starts(&launch(hello), &vars, args.starts).await;
        println!(
            "hello cold start over {} starts: spawn -> first /next median {:.2} ms, min {:.2} ms",
            args.starts,
            median(ready_ms.clone()),
            ready_ms.iter().copied().fold(f64::MAX, f64::min),
        );
    }

    // Memory over turns in one process.
    let api = FakeRuntimeApi::start().await.unwrap();
    let running = Running::spawn(&turn, &vars, &api.address());
    assert!(api.wait_for_next_calls(1, WAIT).await);
    let pid = running.pid();
    println!(
        "after init: VmRSS {} kB, VmHWM {} kB",
        status_kb(pid, "VmRSS:"),
        status_kb(pid, "VmHWM:")
    );
    let mut sample: Value = serde_json::from_slice(&event("function-url-turn.json")).unwrap();
    for i in 1..=args.turns {
        sample["body"] = json!({"message": "find me coffee deals", "turn_id": format!("t-{i}")})
            .to_string()
            .into();
        api.push(&format!("req-{i}"), serde_json::to_vec(&sample).unwrap());
        let posted = api.next_post(WAIT).await.expect("an answer");
        assert_eq!(posted.kind, PostKind::Response);
        assert!(String::from_utf8_lossy(&posted.body()).contains("event: completed"));
        if i == 1 || i % 10 == 0 || i == args.turns {
            // The invocation is over once the binary asks for the next event.
            assert!(api.wait_for_next_calls(i + 1, WAIT).await);
            println!(
                "after {i} turns: VmRSS {} kB, VmHWM {} kB",
                status_kb(pid, "VmRSS:"),
                status_kb(pid, "VmHWM:")
            );
        }
    }
    drop(running);
}
