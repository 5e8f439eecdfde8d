//! `baton chat` with the example registry's remote specialist, the store finder: a real
//! A2A 1.0 agent (`shared/registry/a2a/store_agent.py`, the official Python SDK's server)
//! on a free port, reached through a copy of the registry pointing at it.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// The store agent on a free port, killed when dropped.
pub(crate) struct Agent {
    child: Child,
    pub(crate) port: u16,
}

impl Agent {
    /// Started; with `otlp`, its spans go to that receiver.
    pub(crate) fn start(otlp: Option<&str>) -> Agent {
        Self::start_with(otlp, None)
    }

    /// Started, pausing `delay_ms` before each answer.
    pub(crate) fn slow(delay_ms: u64) -> Agent {
        Self::start_with(None, Some(delay_ms))
    }

    fn start_with(otlp: Option<&str>, delay_ms: Option<u64>) -> Agent {
        let port = free_port();
        let mut command = Command::new(baton_testkit::a2a_python());
        command
            .arg(Path::new(registry()).join("a2a/store_agent.py"))
            .arg(port.to_string());
        match delay_ms {
            Some(ms) => command.env("BATON_STORE_AGENT_DELAY_MS", ms.to_string()),
            None => command.env_remove("BATON_STORE_AGENT_DELAY_MS"),
        };
        match otlp {
            Some(endpoint) => command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            None => command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT"),
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut agent = Agent { child, port };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                agent.child.try_wait().unwrap().is_none(),
                "the store agent exited"
            );
            assert!(Instant::now() < deadline, "the store agent did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        agent
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A copy of the example registry whose store finder is at `port`.
pub(crate) fn registry_at(sandbox: &Sandbox, port: u16) -> PathBuf {
    let copy = sandbox.path().join("registry");
    copy_dir(Path::new(registry()), &copy);
    let tools = copy.join("tools.yaml");
    let text = std::fs::read_to_string(&tools).unwrap();
    assert!(text.contains("url: http://127.0.0.1:8941"));
    std::fs::write(
        &tools,
        text.replace(
            "url: http://127.0.0.1:8941",
            &format!("url: http://127.0.0.1:{port}"),
        ),
    )
    .unwrap();
    copy
}

#[test]
fn the_store_finder_answers_in_chat_with_the_consulted_record() {
    let agent = Agent::start(None);
    let sandbox = Sandbox::new();
    let registry = registry_at(&sandbox, agent.port);
    let registry = registry.to_str().unwrap();
    let run = sandbox.run(&["--registry", registry, "validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "--json",
        "which stores are open late in Springfield?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let said = events(&run.stdout);
    let text: String = said
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        text.contains("FreshMart Downtown, 12 Main Street"),
        "{text}"
    );
    let consulted = said
        .iter()
        .find(|e| e["type"] == "agents_consulted")
        .unwrap();
    assert_eq!(consulted["agents"][0]["agent_id"], "stores", "{consulted}");
    assert_eq!(consulted["footer"], "Consulted: Store finder");
    // The tool's status code, worded by the orchestrator's card.
    let statuses: Vec<&serde_json::Value> = said.iter().filter(|e| e["type"] == "status").collect();
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(statuses[0]["message"], "Checking the store finder…");

    // On the Direct Line the agent's question is its answer, delivered once, word for word:
    // the turn asks it (the `interruption`) without saying it again.
    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "--json",
        "#stores where are the bakeries?",
    ]);
    let direct = events(&run.stdout);
    assert!(
        direct.iter().any(|e| e["type"] == "interruption"),
        "{direct:#?}"
    );
    let said: String = direct
        .iter()
        .filter(|e| {
            matches!(
                e["type"].as_str(),
                Some("text" | "delegated_text" | "delegated_answer")
            )
        })
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(said.matches("Which city are you in?").count(), 1, "{said}");

    // A question from the agent, answered on the same task through the Direct Line.
    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "--json",
        "which stores have a bakery?",
    ]);
    let first = events(&run.stdout);
    let asked: String = first
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(asked.contains("Which city are you in?"), "{asked}");
    let episode = episode_of(&first);
    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "--json",
        "--episode",
        &episode,
        "#stores Lakeside",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer: String = events(&run.stdout)
        .iter()
        .filter(|e| e["type"] == "delegated_text" || e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(answer.contains("FreshMart Lakeside"), "{answer}");
    assert!(!answer.contains("Green Basket"), "{answer}");
}

/// A turn whose deadline cuts a remote agent's stream cancels the agent's task
/// (`CancelTask`), and `baton chat` does not exit before that request has gone out.
#[test]
fn a_cut_stream_is_cancelled_at_the_agent_before_chat_exits() {
    let agent = Agent::slow(60_000);
    let sandbox = Sandbox::new();
    let registry = registry_at(&sandbox, agent.port);
    let list = || -> Vec<Value> {
        use std::io::{Read as _, Write as _};
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;
        let mut stream = TcpStream::connect(("127.0.0.1", agent.port)).unwrap();
        write!(
            stream,
            "POST / HTTP/1.0\r\nHost: agent\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let json = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let listed: Value = serde_json::from_str(json).unwrap_or_else(|_| panic!("{response}"));
        listed["result"]["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    for round in 1..=4 {
        let run: Run = sandbox
            .baton()
            .env("BATON_TURN_TIMEOUT_MS", "1500")
            .args(["--registry", registry.to_str().unwrap()])
            .args([
                "chat",
                "--json",
                "#stores which stores are open late in Springfield?",
            ])
            .output()
            .unwrap()
            .into();
        // The turn ends at its deadline, and says so.
        let said = events(&run.stdout);
        assert_eq!(said.last().unwrap()["outcome"], "failed", "{run:?}");
        // The call the stream showed started is counted, though the deadline cut it.
        let consulted = said
            .iter()
            .find(|e| e["type"] == "agents_consulted")
            .unwrap();
        assert_eq!(consulted["agents"][0]["tool_calls"], 1, "{consulted}");
        // Read the moment chat has exited: every task it started is cancelled already.
        let tasks = list();
        assert_eq!(tasks.len(), round, "{tasks:#?}");
        for task in &tasks {
            assert_eq!(
                task["status"]["state"], "TASK_STATE_CANCELED",
                "round {round}: {task}"
            );
        }
    }
}

#[test]
fn without_its_agent_the_registry_loads_and_validate_names_it() {
    let sandbox = Sandbox::new();
    let registry = registry_at(&sandbox, free_port());
    let registry = registry.to_str().unwrap();
    // A warning (the registry loads and serves), an error with --strict.
    let run = sandbox.run(&["--registry", registry, "validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: tools.yaml: tools.store_finder.connector: A2A agent http://127.0.0.1:"
        ),
        "{}",
        run.stderr
    );
    let run = sandbox.run(&["--registry", registry, "validate", "--strict"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("cannot be fetched"), "{}", run.stderr);
    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "#stores stores in Riverton?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The failure is told once, in one wording: the human view and the events agree.
    assert_eq!(
        run.stdout
            .matches("Store finder couldn't be reached just now")
            .count(),
        1,
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("ran into a problem"), "{}", run.stdout);
    let run = sandbox.run(&[
        "--registry",
        registry,
        "chat",
        "--json",
        "#stores stores in Riverton?",
    ]);
    let said = events(&run.stdout);
    let streamed: String = said
        .iter()
        .filter(|e| e["type"] == "delegated_text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    let delivered = said
        .iter()
        .find(|e| e["type"] == "delegated_answer")
        .unwrap_or_else(|| panic!("{said:#?}"));
    // The delivered answer replaces the streamed pieces: it says the same.
    assert_eq!(delivered["status"], "error");
    assert_eq!(
        delivered["text"].as_str().unwrap(),
        streamed.trim(),
        "{said:#?}"
    );
}

#[test]
fn the_store_finders_question_waits_for_the_user_and_the_answer_continues_its_task() {
    let agent = Agent::start(None);
    let sandbox = Sandbox::new();
    let registry = registry_at(&sandbox, agent.port);
    let mut command = sandbox.baton();
    command
        .args(["--registry", registry.to_str().unwrap()])
        .args(["chat", "--json", "which stores have a bakery?"]);
    let (said, stderr) = chat_typing(command, "Lakeside\n");
    // The events say why no question came (an agent not reached, another route).
    assert!(
        stderr.contains("Your answer"),
        "stderr: {stderr}\nevents: {said:#?}"
    );
    let asked = said
        .iter()
        .find(|e| e["type"] == "interruption")
        .unwrap_or_else(|| panic!("{said:#?}"));
    assert_eq!(asked["kind"], "question");
    assert_eq!(asked["agent"], "stores");
    assert!(
        asked["action"]
            .as_str()
            .unwrap()
            .contains("Which city are you in?"),
        "{asked}"
    );
    let completed: Vec<&Value> = said.iter().filter(|e| e["type"] == "completed").collect();
    assert_eq!(completed.len(), 2, "{said:#?}");
    assert_eq!(completed[0]["outcome"], "awaiting_user");
    assert_eq!(completed[1]["outcome"], "answered");
    // The answer went to the agent on its open task, and its answer reached the user.
    let answer: String = said
        .iter()
        .skip_while(|e| e["type"] != "interruption")
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(answer.contains("FreshMart Lakeside"), "{answer}");
    let consulted = said
        .iter()
        .rfind(|e| e["type"] == "agents_consulted")
        .unwrap();
    assert_eq!(consulted["agents"][0]["agent_id"], "stores", "{consulted}");
    assert_eq!(consulted["agents"][0]["status"], "ok", "{consulted}");
}
