//! Headless Chromium driven through chromedriver (WebDriver), for the tests that read a
//! page: the web console's and the eval report's. `infra/browser.sh` is run when
//! chromedriver is not on PATH; if the browser is still missing the tests fail and say so
//! (they never skip).

use std::future::Future;
use std::net::TcpStream;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use futures::FutureExt;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::free_port;

/// How long chromedriver may take to listen.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// A child process killed when the test ends, however it ends.
pub(crate) struct Process(pub(crate) Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn find_tools() -> Option<(PathBuf, PathBuf)> {
    let driver = on_path("chromedriver")?;
    let browser = on_path("chromium").or_else(|| on_path("chromium-browser"))?;
    Some((driver, browser))
}

/// chromedriver and Chromium, installed by `infra/browser.sh` when missing (once per test
/// process).
fn browser_tools() -> (PathBuf, PathBuf) {
    static TOOLS: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    let found = TOOLS.get_or_init(|| {
        if let Some(found) = find_tools() {
            return Ok(found);
        }
        let script = baton_tests::fixtures::repo_root().join("infra/browser.sh");
        let ran = Command::new("bash").arg(&script).output();
        let report = match &ran {
            Ok(out) => format!(
                "exit {:?}\n{}{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => format!("could not run it: {e}"),
        };
        find_tools().ok_or_else(|| {
            format!(
                "the browser tests need chromium and chromedriver on PATH; {} did not \
                 provide them (install the Debian packages chromium and chromium-driver):\n{report}",
                script.display()
            )
        })
    });
    match found {
        Ok(tools) => tools.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// chromedriver on a free port, once it accepts connections.
fn start_chromedriver(driver: &Path) -> (Process, u16) {
    let mut last = String::new();
    // A port picked free can be taken before chromedriver binds it: try a few.
    for _ in 0..3 {
        let port = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", driver.display()));
        let mut process = Process(child);
        let started = Instant::now();
        while started.elapsed() < DEADLINE {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return (process, port);
            }
            if let Ok(Some(status)) = process.0.try_wait() {
                last = format!("chromedriver exited with {status} on port {port}");
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if last.is_empty() {
            last = format!("chromedriver did not listen on port {port} within {DEADLINE:?}");
        }
    }
    panic!("{last}");
}

/// Runs `body` with a headless Chromium, then closes it whether `body` passed or not.
pub(crate) async fn with_browser<F, Fut>(body: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()>,
{
    let (driver, browser) = browser_tools();
    let (_chromedriver, port) = start_chromedriver(&driver);
    let profile = TempDir::new().unwrap();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({
            "binary": browser,
            "args": [
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--window-size=1280,1100",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        }),
    );
    // rustls has two providers in this test build (ring, and aws-lc-rs through the
    // WebDriver client's defaults): the process default decides.
    baton_connectors::install_tls_provider();
    let client = ClientBuilder::rustls()
        .unwrap_or_else(|e| {
            panic!("the WebDriver client found no CA certificates ({e}); install ca-certificates")
        })
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap_or_else(|e| panic!("chromedriver could not start {}: {e}", browser.display()));
    let outcome = AssertUnwindSafe(body(client.clone())).catch_unwind().await;
    let closed = client.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    closed.unwrap();
}

/// Evaluates `expression` in the page (`arguments` available) and returns its value.
pub(crate) async fn eval(client: &Client, expression: &str, args: Vec<Value>) -> Value {
    client
        .execute(&format!("return ({expression});"), args)
        .await
        .unwrap_or_else(|e| panic!("evaluating {expression}: {e}"))
}
