//! A real (tiny) model on a real OpenAI-compatible server: llama.cpp's server (from the
//! PyPI package `llama-cpp-python`) serving SmolLM2-135M-Instruct, both installed by
//! `./infra/local-model.sh install` under `~/.cache/baton/model`.
//!
//! Each [`LocalModelServer`] is its own process on a free port, stopped when dropped.

// Test support: a server that cannot start ends the test with the reason.
#![allow(clippy::panic, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name the server gives the model (`--model_alias`).
pub const MODEL_ALIAS: &str = "SmolLM2-135M-Instruct";

/// How long the server may take to load the model and answer.
const START_LIMIT: Duration = Duration::from_secs(90);

/// A running llama.cpp server.
#[derive(Debug)]
pub struct LocalModelServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

/// The interpreter and model file that `./infra/local-model.sh install` left, from the
/// environment (`BATON_MODEL_PYTHON`, `BATON_MODEL_FILE`) or its env file.
///
/// # Panics
/// When neither is there: the message says how to install them.
pub fn installed() -> (PathBuf, PathBuf) {
    let from_env = |name: &str| std::env::var_os(name).map(PathBuf::from);
    if let (Some(python), Some(model)) =
        (from_env("BATON_MODEL_PYTHON"), from_env("BATON_MODEL_FILE"))
    {
        return (python, model);
    }
    let home = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_default();
    let env_file = home.join("baton/model/env");
    let text = std::fs::read_to_string(&env_file).unwrap_or_else(|_| {
        panic!(
            "the local model is not installed ({} is missing): run ./infra/local-model.sh install \
             (infra/test.sh does)",
            env_file.display()
        )
    });
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{} has no {key}", env_file.display()))
    };
    (get("BATON_MODEL_PYTHON"), get("BATON_MODEL_FILE"))
}

impl LocalModelServer {
    /// Starts the server and waits until it answers.
    ///
    /// # Panics
    /// When it is not installed, or does not answer in time (its log is quoted).
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// As [`LocalModelServer::start`], serving embeddings (`/v1/embeddings`) too.
    ///
    /// # Panics
    /// As [`LocalModelServer::start`].
    pub async fn start_embedding() -> Self {
        Self::start_with(&["--embedding", "true"]).await
    }

    async fn start_with(extra: &[&str]) -> Self {
        let (python, model) = installed();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let log = std::env::temp_dir().join(format!("baton-llama-{port}.log"));
        let out = std::fs::File::create(&log).expect("the server's log file");
        let err = out.try_clone().expect("the server's log file");
        let child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(&model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "8192", "--model_alias", MODEL_ALIAS])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", python.display()));
        let mut server = LocalModelServer { child, port, log };
        server.wait_ready().await;
        server
    }

    /// The API root, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    async fn wait_ready(&mut self) {
        let started = Instant::now();
        let url = format!("{}/models", self.base_url());
        // reqwest has no crypto provider of its own in this workspace.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the model server exited ({status}): {}", self.log_tail());
            }
            if let Ok(r) = client.get(&url).send().await
                && r.status().is_success()
            {
                return;
            }
            assert!(
                started.elapsed() < START_LIMIT,
                "the model server did not answer within {START_LIMIT:?}: {}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for LocalModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}
