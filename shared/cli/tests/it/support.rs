//! Running the binary in a clean temporary folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

/// The registry shipped in the checkout the test runs in (see `baton_testkit::crate_dir`).
pub(crate) fn registry() -> &'static str {
    static REGISTRY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        baton_testkit::crate_dir()
            .join("../registry")
            .display()
            .to_string()
    })
}

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
    "BATON_COMPACT_AFTER_TURN",
    "BATON_LOG",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_SERVICE_NAME",
];

/// A local port that was free a moment ago, for a server process a test starts.
pub(crate) fn free_port() -> u16 {
    baton_testkit::port_for_a_child()
}

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

/// A `baton serve` process on a free port, killed when dropped.
pub(crate) struct Serving {
    pub(crate) child: std::process::Child,
    pub(crate) addr: String,
}

impl Serving {
    /// Starts `baton serve` in `sandbox` with `args` and `env`, and waits until it listens
    /// (the bound address is in the JSON log line announcing the listener).
    pub(crate) fn start(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Serving {
        Self::spawn(sandbox.baton(), args, env)
    }

    /// Like [`Serving::start`], for a prepared command (e.g. under a shell).
    pub(crate) fn spawn(mut command: Command, args: &[&str], env: &[(&str, &str)]) -> Serving {
        use std::io::BufRead;
        // A free port unless the test names its own address.
        let addr: &[&str] = if args.contains(&"--addr") {
            &[]
        } else {
            &["--addr", "127.0.0.1:0"]
        };
        let mut child = command
            .args(["serve", "--log-json"])
            .args(addr)
            .args(args)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                    && let Some(addr) = v["fields"]["addr"].as_str()
                {
                    let _ = tx.send(addr.to_owned());
                }
            }
        });
        let addr = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("listening");
        Serving { child, addr }
    }

    /// Sends one request (`Connection: close`) and reads the whole response.
    pub(crate) fn request(&self, head: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "{head}\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    /// Posts a turn as `principal` and reads the whole stream.
    pub(crate) fn turn(&self, principal: &str, body: &str) -> String {
        self.request(
            &format!(
                "POST /v1/turns HTTP/1.1\r\nContent-Type: application/json\r\nx-baton-principal: {principal}"
            ),
            body,
        )
    }

    /// Kills the process at once (SIGKILL) and reaps it.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of response header `name` (lower case) in a raw response.
pub(crate) fn header<'r>(response: &'r str, name: &str) -> Option<&'r str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A copy of the JavaScript client `tests/clients/<name>` in a temporary folder beside the
/// clients `./infra/js-clients.sh` installed (`BATON_JS_CLIENTS`, else its default), which
/// must include `package`: an ES module resolves its imports from beside it.
pub(crate) fn js_client(name: &str, package: &str) -> (TempDir, PathBuf) {
    let dir = std::env::var_os("BATON_JS_CLIENTS")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap();
            cache.join("baton/js-clients")
        });
    assert!(
        dir.join("node_modules").join(package).is_dir(),
        "{package} is not installed in {}: run ./infra/js-clients.sh",
        dir.display()
    );
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.join("node_modules"), work.path().join("node_modules")).unwrap();
    let script = work.path().join(name);
    std::fs::copy(
        baton_testkit::crate_dir().join("tests/clients").join(name),
        &script,
    )
    .unwrap();
    (work, script)
}

/// The data events of a raw SSE response.
pub(crate) fn sse_events(response: &str) -> Vec<serde_json::Value> {
    response
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// A client process that speaks in JSON lines on stdout and waits for lines on stdin (a
/// user who does something in between): the official SDKs' scripts, `baton chat --json`.
pub(crate) struct LineClient {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl LineClient {
    pub(crate) fn spawn(mut command: Command) -> LineClient {
        use std::io::BufRead as _;
        // Its stderr is small (prompts, errors) and read once stdout has ended.
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        LineClient { child, lines }
    }

    /// Its next line, as JSON.
    pub(crate) fn next(&mut self) -> serde_json::Value {
        let line = self
            .lines
            .next()
            .unwrap_or_else(|| panic!("the client ended early"))
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    /// Types `line` at it.
    pub(crate) fn say(&mut self, line: &str) {
        use std::io::Write as _;
        writeln!(self.child.stdin.as_mut().unwrap(), "{line}").unwrap();
    }

    /// Kills it with SIGKILL, as a crash would.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its remaining lines as JSON, and its stderr, once it has exited successfully.
    pub(crate) fn finish(mut self) -> (Vec<serde_json::Value>, String) {
        let rest = self
            .lines
            .by_ref()
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
        let out = self.child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "the client failed: {stderr}");
        (rest, stderr)
    }
}

/// Runs a prepared `baton … chat --json …` with `input` typed at its prompts; its events
/// and its stderr. Fails the test when it exits unsuccessfully.
pub(crate) fn chat_typing(mut command: Command, input: &str) -> (Vec<serde_json::Value>, String) {
    use std::io::Write as _;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (events(&String::from_utf8_lossy(&out.stdout)), stderr)
}
