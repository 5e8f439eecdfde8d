//! Baton's test doubles, built on the core's ports only, for every crate's tests (and only
//! as a dev-dependency; the scripted model, the heap journal and the configured connector are
//! product adapters in `baton-inproc`):
//!
//! - [`registry`]: the test registry the engine's and the HTTP edge's tests share;
//! - [`store`]: the store conformance suite every journal adapter runs
//!   ([`store_conformance!`]);
//! - [`recall`]: the memory store conformance suite ([`memory_store_conformance!`]).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod pictures;
pub mod recall;
pub mod registry;
pub mod store;

pub use store::StoreFixture;

/// The directory of the crate under test, read when the test runs: cargo sets
/// `CARGO_MANIFEST_DIR` for the test process too. The compile-time value would be wrong
/// when a test binary built in one checkout is reused by another through a shared target
/// directory (cargo does not rebuild a crate for moving); the test must read the files of
/// the checkout it runs in. Without the variable, the working directory, which cargo also
/// sets to the crate's.
pub fn crate_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from)
}

/// The workspace root of the checkout the test runs in: the nearest folder above
/// [`crate_dir`] that holds `Cargo.lock`. Shared test code (used by more than one crate's
/// tests) finds the repository's files from here.
pub fn workspace_root() -> std::path::PathBuf {
    let dir = crate_dir();
    dir.ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map_or(dir.clone(), std::path::Path::to_path_buf)
}

/// The Python of the venv `./infra/a2a.sh` builds (the official A2A SDK, which serves the
/// example registry's store agent): `BATON_A2A_PYTHON`, else where the script puts it.
/// Fails the test, saying how to install it, when it is missing: A2A tests do not skip.
pub fn a2a_python() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("BATON_A2A_PYTHON").filter(|p| !p.is_empty()) {
        return std::path::PathBuf::from(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let python = cache.join("baton/a2a/venv/bin/python");
    assert!(
        python.exists(),
        "the official A2A SDK for Python is missing ({} does not exist): run ./infra/a2a.sh, or set BATON_A2A_PYTHON",
        python.display()
    );
    python
}

/// A free loopback port for a server that a test starts as another process, chosen below
/// the kernel's range of ephemeral ports. A port the kernel hands out (a bind to port 0)
/// can be handed again to any process that listens on port 0 before the child binds it,
/// and the test then talks to a stranger; below the range only another explicit choice
/// like this one can take it.
pub fn port_for_a_child() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const LOWEST: u16 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let span = u64::from(ephemeral.saturating_sub(LOWEST));
    let random = RandomState::new();
    let attempts = if span == 0 { 0 } else { 1_000u32 };
    for attempt in 0..attempts {
        let port = LOWEST + u16::try_from(random.hash_one(attempt) % span).unwrap_or(0);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    // No room below the range (or none free): one the kernel hands out.
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_workspace_root_is_above_the_crate_and_holds_the_lock_file() {
        let root = super::workspace_root();
        assert!(root.join("Cargo.lock").is_file(), "{}", root.display());
        assert!(super::crate_dir().starts_with(&root));
        assert!(root.join("shared/testkit/Cargo.toml").is_file());
    }

    #[test]
    fn a_port_for_a_child_is_free_and_below_the_ephemeral_range() {
        let port = super::port_for_a_child();
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
        if let Ok(range) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range") {
            let low: u16 = range.split_whitespace().next().unwrap().parse().unwrap();
            assert!((10_000..low).contains(&port), "{port} in {range}");
        }
    }
}
