//! The example registry's demo points ledger (`shared/registry/services/ledger.py`) on a
//! free port, for tests that redeem points: it records each redemption under its
//! idempotency key, so a test can count what really ran.

// Test support: a ledger that cannot start is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixtures::{copy_dir, registry_dir};
use crate::python_service::PythonService;

/// Where the shipped registry expects the ledger.
const SHIPPED_URL: &str = "url: http://127.0.0.1:8942/redemptions";

/// The ledger, killed when dropped.
pub struct Ledger {
    service: PythonService,
}

impl Ledger {
    /// Starts it on a free port and waits until it listens.
    pub fn start() -> Ledger {
        Ledger {
            service: PythonService::start("ledger.py"),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.service.port()
    }

    /// Every redemption it recorded, oldest first.
    pub fn redemptions(&self) -> Vec<Value> {
        let mut stream =
            TcpStream::connect(("127.0.0.1", self.port())).expect("connecting to the ledger");
        stream
            .write_all(b"GET /redemptions HTTP/1.1\r\nHost: ledger\r\nConnection: close\r\n\r\n")
            .expect("asking the ledger");
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("reading the ledger");
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .expect("a body");
        let parsed: Value = serde_json::from_str(body).expect("the ledger's JSON");
        parsed["redemptions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// A copy of the shipped registry in `into/registry` whose `redeem_points` uses this
    /// ledger; its path.
    pub fn registry_copy(&self, into: &Path) -> PathBuf {
        let copy = into.join("registry");
        copy_dir(&registry_dir(), &copy);
        let tools = copy.join("tools.yaml");
        let text = std::fs::read_to_string(&tools).expect("reading tools.yaml");
        assert!(text.contains(SHIPPED_URL), "redeem_points moved");
        let url = format!("url: http://127.0.0.1:{}/redemptions", self.port());
        std::fs::write(&tools, text.replace(SHIPPED_URL, &url)).expect("writing tools.yaml");
        copy
    }
}
