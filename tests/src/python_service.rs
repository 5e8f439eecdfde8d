//! A demo service of the example registry (`shared/registry/services/*.py`, Python's
//! standard library only) on a free port, killed when dropped: what the ledger and the
//! partner airline are started with.

// Test support: a service that cannot start is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fixtures::registry_dir;

/// One running service.
pub struct PythonService {
    child: Child,
    port: u16,
}

impl PythonService {
    /// Starts `services/<script>` on a free port and waits until it listens.
    pub fn start(script: &str) -> PythonService {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new("python3")
            .arg(registry_dir().join("services").join(script))
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {script} with python3: {e}"));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(child.try_wait().ok().flatten().is_none(), "{script} exited");
            assert!(Instant::now() < deadline, "{script} did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        PythonService { child, port }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PythonService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
