//! The example registry's demo partner airline (`shared/registry/services/partner.py`) on
//! a free port, for tests of account links: an OAuth server and the MCP server it protects.
//! The helper plays the user's browser at its sign-in page and reads what the server saw.

// Test support: a partner that cannot start is a test failure with a plain message.
#![allow(clippy::panic, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixtures::{copy_dir, registry_dir};
use crate::python_service::PythonService;

/// Where the shipped registry expects the partner, and sends the browser back to.
const SHIPPED_URL: &str = "url: http://127.0.0.1:8943/mcp";
const SHIPPED_REDIRECT: &str = "redirect_uri: http://127.0.0.1:8787/v1/links/callback";

/// One HTTP/1.1 exchange (`Connection: close`): the status, the head and the body.
pub fn exchange(
    addr: &str,
    method: &str,
    target: &str,
    body: Option<(&str, &str)>,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connecting");
    let (kind, text) = body.unwrap_or(("text/plain", ""));
    let request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(request.as_bytes()).expect("sending");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reading");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, head.to_owned(), body.to_owned())
}

/// A header of a response head.
pub fn header_of<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The partner, killed when dropped.
pub struct Partner {
    service: PythonService,
}

impl Partner {
    /// Starts it on a free port and waits until it listens.
    pub fn start() -> Partner {
        Partner {
            service: PythonService::start("partner.py"),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.service.port()
    }

    /// Stops it (an authorization server that is down).
    pub fn stop(self) {
        drop(self.service);
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    /// What it saw: codes, tokens, refreshes, refused grants, tool calls, refused calls.
    pub fn stats(&self) -> Value {
        let (_, _, body) = exchange(&self.addr(), "GET", "/stats", None);
        serde_json::from_str(&body).expect("the partner's JSON")
    }

    /// Changes how it behaves (`access_ttl`, `wrong_audience`, `refuse_refresh`).
    pub fn control(&self, settings: &Value) {
        let body = settings.to_string();
        let (status, _, _) = exchange(
            &self.addr(),
            "POST",
            "/control",
            Some(("application/json", &body)),
        );
        assert_eq!(status, 200);
    }

    /// Plays the user at the sign-in page `url`: opens it and answers (`allow` or
    /// `deny`); the address the browser is sent back to (the redirect URI with the code
    /// and the state, or the error).
    pub fn sign_in(&self, url: &str, decision: &str) -> String {
        let target = url
            .strip_prefix(&format!("http://{}", self.addr()))
            .expect("a sign-in page of this partner");
        let (status, _, page) = exchange(&self.addr(), "GET", target, None);
        assert_eq!(status, 200, "the sign-in page: {page}");
        let mut form: Vec<(String, String)> = Vec::new();
        for input in page.split("<input type=\"hidden\" ").skip(1) {
            let field = |name: &str| {
                let start = input.find(&format!("{name}=\""))? + name.len() + 2;
                let end = input[start..].find('"')? + start;
                Some(unescape(&input[start..end]))
            };
            if let (Some(n), Some(v)) = (field("name"), field("value")) {
                form.push((n, v));
            }
        }
        form.push(("decision".to_owned(), decision.to_owned()));
        let body: String = form
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let (status, head, _) = exchange(
            &self.addr(),
            "POST",
            "/authorize",
            Some(("application/x-www-form-urlencoded", &body)),
        );
        assert_eq!(status, 302, "the sign-in's answer");
        header_of(&head, "location").expect("a redirect").to_owned()
    }

    /// A copy of the shipped registry in `into/registry` whose `get_partner_miles` uses
    /// this partner and sends the browser back to Baton at `baton_addr`; its path.
    pub fn registry_copy(&self, into: &Path, baton_addr: &str) -> PathBuf {
        let copy = into.join("registry");
        if !copy.exists() {
            copy_dir(&registry_dir(), &copy);
        }
        let tools = copy.join("tools.yaml");
        let text = std::fs::read_to_string(&tools).expect("reading tools.yaml");
        assert!(
            text.contains(SHIPPED_URL) && text.contains(SHIPPED_REDIRECT),
            "get_partner_miles moved"
        );
        let text = text
            .replace(SHIPPED_URL, &format!("url: http://{}/mcp", self.addr()))
            .replace(
                SHIPPED_REDIRECT,
                &format!("redirect_uri: http://{baton_addr}/v1/links/callback"),
            );
        std::fs::write(&tools, text).expect("writing tools.yaml");
        copy
    }
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Form-encodes `text` (RFC 3986 unreserved characters kept).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
